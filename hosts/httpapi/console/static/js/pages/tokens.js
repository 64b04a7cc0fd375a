// pages/tokens.js: the Tokens page (#/tokens): the signed-in user's API
// tokens and console sign-ins (GET /api/v1/tokens) with each token's scopes, a form to create
// one (named, expiring, scoped: read and write, read only, or per area; its
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

// The areas a token's scope may name (the API's Scope), with their names here.
const AREAS = [['assistant', 'Assistant'], ['spec', 'Specs'], ['cloud', 'Cloud'], ['content', 'Content'], ['voice', 'Voice'], ['scm', 'Repositories']];

// scopePicker is the form's choice of scopes: read and write (what the
// token's user can do), read only, or per area; value() is the scopes to
// send, or null when per area names none.
function scopePicker() {
  const kinds = [['all', 'Read and write', 'Everything you can do.'], ['read', 'Read only', 'Reads everything, changes nothing.'],
    ['areas', 'Per area', 'Choose what it may do in each area.']];
  const radios = kinds.map(([v]) => h('input', { type: 'radio', name: 'token-scope', value: v, id: `token-scope-${v}`, checked: v === 'all' }));
  const selects = AREAS.map(([a, label]) => h('select', { id: `token-scope-${a}`, 'aria-label': `${label} access` },
    h('option', { value: '' }, 'none'), h('option', { value: `${a}:read` }, 'read'), h('option', { value: `${a}:write` }, 'read and write')));
  const note = h('p', { class: 'token-areas-note', 'aria-live': 'polite' });
  const grid = h('div', { class: 'token-areas', hidden: true },
    AREAS.map(([, label], i) => h('label', { class: 'token-area' }, h('span', {}, label), selects[i])), note);
  const fs = h('fieldset', { class: 'token-scopes' }, h('legend', {}, 'What it may do'),
    kinds.map(([, label, hint], i) => h('label', { class: 'token-scope', for: radios[i].id }, radios[i], h('span', {}, h('strong', {}, label), ' ', h('small', {}, hint)))),
    grid);
  const kind = () => radios.find((r) => r.checked).value;
  radios.forEach((r) => r.addEventListener('change', () => { grid.hidden = kind() !== 'areas'; }));
  selects.forEach((sel) => sel.addEventListener('change', () => mount(note)));
  return {
    el: fs,
    value() {
      if (kind() === 'all') return ['read', 'write'];
      if (kind() === 'read') return ['read'];
      const picked = selects.map((s) => s.value).filter(Boolean);
      mount(note, picked.length ? null : 'Choose what it may do in at least one area.');
      if (!picked.length) selects[0].focus();
      return picked.length ? picked : null;
    },
    reset() { radios[0].checked = true; grid.hidden = true; mount(note); selects.forEach((s) => { s.value = ''; }); },
  };
}

// scopesCell shows a token's scopes; a console sign-in is not scoped.
function scopesCell(t) {
  if (t.kind === 'session') return h('span', { class: 'muted' }, 'all (sign-in)');
  const scopes = t.scopes || ['read', 'write'];
  if (scopes.includes('write')) return h('code', { class: 'scope' }, 'read and write');
  return h('span', { class: 'scopes' }, scopes.map((sc) => h('code', { class: 'scope' }, sc === 'read' ? 'read only' : sc)));
}

// render draws the page; #/tokens/mcp (the link of a specification's
// "Connect a coding agent" panel) names the new token for a coding agent,
// read only, and puts the keyboard in the form.
export function render(main, args) {
  const forAgent = (args || [])[0] === 'mcp';
  const errEl = h('div', { 'aria-live': 'assertive' });
  const made = h('div', { 'aria-live': 'polite' });
  const table = h('div', { class: 'tokens-list' }, loading('Loading your tokens…'));
  const name = h('input', { id: 'token-name', maxlength: 100, required: true, placeholder: 'CI deploys', autocomplete: 'off' });
  const expiry = h('select', { id: 'token-expiry' }, EXPIRIES.map(([d, label]) => h('option', { value: d, selected: d === 30 }, label)));
  const scopes = scopePicker();

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
      h('thead', {}, h('tr', {}, ['Name', 'Begins with', 'Scopes', 'Status', 'Created', 'Expires', 'Last used', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, items.map((t) => h('tr', { dataset: { id: t.id, status: t.status } },
        h('td', {}, t.name, t.kind === 'session' ? h('span', { class: 'badge' }, 'sign-in') : null), h('td', {}, h('code', {}, t.prefix + '…')),
        h('td', { class: 'token-scopes-cell' }, scopesCell(t)),
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
    scopes.el,
    h('button', { type: 'submit', class: 'primary', id: 'token-create' }, 'Create token'),
    made);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(errEl);
    const picked = scopes.value();
    if (!picked) return;
    try {
      const t = await api('POST', '/api/v1/tokens', { name: name.value, expires_in_days: Number(expiry.value), scopes: picked });
      const secret = h('input', { id: 'token-secret', readonly: true, value: t.token, spellcheck: 'false', size: 50 });
      made.dataset.id = t.id;
      mount(made, h('div', { class: 'notice token-made', role: 'status' },
        h('p', {}, h('strong', {}, `“${t.name}” is created.`), ' Copy it now: it is not shown again.'),
        secret,
        button('Copy', async () => { await navigator.clipboard.writeText(t.token); toast('Copied.'); })));
      secret.select();
      name.value = '';
      scopes.reset();
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
  if (forAgent) {
    name.value = 'Coding agent (MCP)';
    // Read only to begin with: the least an agent needs to read PRPs.
    const ro = form.querySelector('#token-scope-read');
    ro.checked = true;
    ro.dispatchEvent(new Event('change'));
    form.insertBefore(h('p', { class: 'notice', id: 'token-for-agent' },
      'For a coding agent: “Read only” (chosen) lets it read specifications and PRPs; “Read and write” also lets it ask for changes, each waiting for approval. ',
      'Copy the token when it is shown, into the agent’s MCP settings.'), name.closest('.field'));
    // after the shell has focused the page (app.js route)
    setTimeout(() => { name.focus({ preventScroll: true }); form.scrollIntoView({ block: 'start' }); }, 0);
  }
  refresh();
}
