// pages/tokens.js: the Tokens page (#/tokens): the signed-in user's API
// tokens and console sign-ins (GET /api/v1/tokens), a form to create one (named, expiring; its
// secret is shown once, to copy), and Revoke on each that still works. A user
// whose email is unverified (they joined through an invitation) is told so,
// and offered to prove it with the identity provider (POST /auth/oidc/verify).

import { api, list, token } from '../api.js';
import { h, mount, button, errorBox, loading, empty, field, toast, when, confirmAction } from '../ui.js';
import { me } from '../app.js';

// verifyNotice tells a user whose email is unverified what that means and,
// when the console signs in with an identity provider, offers to prove it.
function verifyNotice() {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const card = h('section', { class: 'card notice', id: 'verify-email', 'aria-label': 'Your email address' },
    h('p', {}, h('strong', {}, 'Your email address is not verified.'),
      ' You joined through an invitation, which does not prove the address is yours, so signing in with your identity provider does not reach this account.'),
    errEl);
  api('GET', '/auth/config').then((cfg) => {
    if (!cfg || !cfg.oidc) return;
    card.insertBefore(button('Verify it with your identity provider', async () => {
      const r = await api('POST', '/auth/oidc/verify?redirect_after=' + encodeURIComponent('/#/tokens'));
      location.assign(r.authorize_url);
    }, { class: 'primary', id: 'verify-email-start', errEl }), errEl);
  }, () => { /* no single sign-on */ });
  return card;
}

export const title = 'Tokens';

const EXPIRIES = [[7, '7 days'], [30, '30 days'], [90, '90 days'], [366, 'a year']];

// render draws the page.
export function render(main) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const made = h('div', { 'aria-live': 'polite' });
  const table = h('div', { class: 'tokens-list' }, loading('Loading your tokens…'));
  const name = h('input', { id: 'token-name', maxlength: 100, required: true, placeholder: 'CI deploys', autocomplete: 'off' });
  const expiry = h('select', { id: 'token-expiry' }, EXPIRIES.map(([d, label]) => h('option', { value: d, selected: d === 30 }, label)));

  async function refresh() {
    try {
      const r = await list('/api/v1/tokens');
      mount(table, r.items.length ? tokensTable(r.items) : empty('No tokens yet: create one below.'));
    } catch (e) {
      mount(table, errorBox(e));
    }
  }

  function tokensTable(items) {
    return h('table', { class: 'tokens' },
      h('thead', {}, h('tr', {}, ['Name', 'Begins with', 'Status', 'Created', 'Expires', 'Last used', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, items.map((t) => h('tr', { dataset: { id: t.id, status: t.status } },
        h('td', {}, t.name, t.kind === 'session' ? h('span', { class: 'badge' }, 'sign-in') : null), h('td', {}, h('code', {}, t.prefix + '…')),
        h('td', {}, h('span', { class: `badge ${t.status === 'active' ? 'ok' : ''}` }, t.status)),
        h('td', {}, when(t.created_at)), h('td', {}, t.expires_at ? when(t.expires_at) : 'never'), h('td', {}, t.last_used_at ? when(t.last_used_at) : '—'),
        h('td', {}, t.status === 'active'
          ? button('Revoke', async () => {
            const mine = (token.get() || '').startsWith(t.prefix);
            const warning = mine ? ' This console is signed in with it: you will be signed out.'
              : t.kind === 'session' ? ' If it is this browser’s sign-in, you will be signed out.' : '';
            if (!await confirmAction({ title: 'Revoke the token?', text: `Revoke “${t.name}”? Whatever uses it stops working at once.${warning}`, confirmLabel: 'Revoke' })) return;
            await api('DELETE', `/api/v1/tokens/${encodeURIComponent(t.id)}`);
            if (made.dataset.id === t.id) mount(made);
            toast(`“${t.name}” is revoked.`);
            await refresh();
          }, { class: 'revoke', errEl })
          : null)))));
  }

  const form = h('form', { class: 'card token-create', 'aria-labelledby': 'token-create-title' },
    h('h2', { id: 'token-create-title' }, 'Create a token'),
    field('Name', name, 'What it is for, to know it again.'),
    field('Expires after', expiry),
    h('button', { type: 'submit', class: 'primary', id: 'token-create' }, 'Create token'),
    made);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(errEl);
    try {
      const t = await api('POST', '/api/v1/tokens', { name: name.value, expires_in_days: Number(expiry.value) });
      const secret = h('input', { id: 'token-secret', readonly: true, value: t.token, spellcheck: 'false', size: 50 });
      made.dataset.id = t.id;
      mount(made, h('div', { class: 'notice token-made', role: 'status' },
        h('p', {}, h('strong', {}, `“${t.name}” is created.`), ' Copy it now: it is not shown again.'),
        secret,
        button('Copy', async () => { await navigator.clipboard.writeText(t.token); toast('Copied.'); })));
      secret.select();
      name.value = '';
      await refresh();
    } catch (e) {
      mount(errEl, errorBox(e));
    }
  });

  main.append(h('h1', {}, title),
    me && me.user.email_verified === false ? verifyNotice() : '',
    h('p', { class: 'muted' }, 'API tokens act as you: for scripts, CI and other clients. Each expires; revoke one the moment it is not needed.'),
    h('section', { class: 'card', 'aria-label': 'Your tokens' }, table, errEl),
    form);
  refresh();
}
