// pages/members.js: the Members page (#/members), for an organisation's
// admins: its members by email with their roles (an "unverified" badge on
// those who joined through an invitation), Make admin / Make member,
// and Remove (which revokes their tokens at once); an Invite form, whose
// join link is shown once, to copy; and the pending invitations, each with
// Revoke. Members see that only admins may.

import { api, list } from '../api.js';
import { h, mount, button, errorBox, loading, empty, field, toast, when, confirmAction } from '../ui.js';
import { me } from '../app.js';

export const title = 'Members';
// adminOnly keeps the page out of a member's menu.
export const adminOnly = true;

const INVITE_EXPIRIES = [[1, '1 day'], [7, '7 days'], [14, '14 days'], [30, '30 days']];

// render draws the page.
export function render(main) {
  main.append(h('h1', {}, title));
  if (!me || me.user.role !== 'admin') {
    main.append(h('section', { class: 'card' }, empty('Only an organisation admin may see and manage its members.')));
    return;
  }
  const errEl = h('div', { 'aria-live': 'assertive' });
  const body = h('div', { class: 'members-list' }, loading('Loading the members…'));

  async function refresh() {
    try {
      const items = [];
      let next = null;
      do {
        const r = await list('/api/v1/members', { limit: 200, cursor: next });
        items.push(...r.items);
        next = r.next_cursor;
      } while (next);
      mount(body, items.length ? table(items) : empty('No members.'));
    } catch (e) {
      mount(body, errorBox(e));
    }
  }

  function table(items) {
    return h('table', { class: 'members' },
      h('thead', {}, h('tr', {}, ['Email', 'Role', 'Member since', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, items.map((m) => {
        const self = m.id === me.user.id;
        const others = ['admin', 'operator', 'member'].filter((r) => r !== m.role);
        return h('tr', { dataset: { id: m.id, role: m.role } },
          h('td', {}, m.email,
            m.email_verified === false ? h('span', { class: 'badge warn unverified', title: 'Joined through an invitation: the address was never proven theirs, so signing in with the identity provider does not reach this account.' }, 'unverified') : null,
            self ? h('span', { class: 'muted' }, ' (you)') : null),
          h('td', {}, h('span', { class: `badge ${m.role === 'admin' ? 'ok' : ''}` }, m.role)),
          h('td', {}, when(m.created_at)),
          h('td', {}, h('div', { class: 'row-actions' },
            others.map((other) => button(`Make ${other}`, async () => {
              await api('PATCH', `/api/v1/members/${encodeURIComponent(m.id)}`, { role: other });
              toast(`${m.email} is now ${other === 'member' ? 'a' : 'an'} ${other}.`);
              await refresh();
            }, { class: 'set-role', dataset: { role: other }, errEl })),
            self ? null : button('Remove', async () => {
              if (!await confirmAction({ title: 'Remove the member?', text: `Remove ${m.email} from the organisation? Their tokens stop working at once.`, confirmLabel: 'Remove' })) return;
              await api('DELETE', `/api/v1/members/${encodeURIComponent(m.id)}`);
              toast(`${m.email} is removed.`);
              await refresh();
            }, { class: 'remove', errEl }))));
      })));
  }

  const invites = h('div', { class: 'invitations-list' }, loading('Loading the invitations…'));
  const inviteErr = h('div', { 'aria-live': 'assertive' });
  const made = h('div', { 'aria-live': 'polite' });
  const email = h('input', { id: 'invite-email', type: 'email', autocomplete: 'off', placeholder: 'someone@example.com' });
  const role = h('select', { id: 'invite-role' }, h('option', { value: 'member', selected: true }, 'member'), h('option', { value: 'operator' }, 'operator'), h('option', { value: 'admin' }, 'admin'));
  const expiry = h('select', { id: 'invite-expiry' }, INVITE_EXPIRIES.map(([d, label]) => h('option', { value: d, selected: d === 7 }, label)));

  async function refreshInvites() {
    try {
      const r = await list('/api/v1/invitations', { limit: 200 });
      const pending = r.items.filter((i) => i.status === 'pending');
      mount(invites, pending.length ? invitesTable(pending) : empty('No pending invitations.'));
    } catch (e) {
      mount(invites, errorBox(e));
    }
  }

  function invitesTable(items) {
    return h('table', { class: 'invitations' },
      h('thead', {}, h('tr', {}, ['For', 'Role', 'Begins with', 'Expires', ''].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, items.map((i) => h('tr', { dataset: { id: i.id } },
        h('td', {}, i.email || h('span', { class: 'muted' }, 'anyone with the link')),
        h('td', {}, h('span', { class: `badge ${i.role === 'admin' ? 'ok' : ''}` }, i.role)),
        h('td', {}, h('code', {}, i.prefix + '…')),
        h('td', {}, when(i.expires_at)),
        h('td', {}, button('Revoke', async () => {
          if (!await confirmAction({ title: 'Revoke the invitation?', text: `Revoke the invitation${i.email ? ' for ' + i.email : ''}? Its link stops working at once.`, confirmLabel: 'Revoke' })) return;
          await api('DELETE', `/api/v1/invitations/${encodeURIComponent(i.id)}`);
          if (made.dataset.id === i.id) mount(made);
          toast('The invitation is revoked.');
          await refreshInvites();
        }, { class: 'revoke', errEl: inviteErr }))))));
  }

  const form = h('form', { class: 'card invite-create', 'aria-labelledby': 'invite-title' },
    h('h2', { id: 'invite-title' }, 'Invite someone'),
    h('div', { class: 'row' },
      field('Email', email, 'Optional: without one, anyone with the link may join.'),
      field('Role', role),
      field('Link expires after', expiry)),
    h('button', { type: 'submit', class: 'primary', id: 'invite-create' }, 'Create invitation link'),
    made, inviteErr);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(inviteErr);
    try {
      const body = { role: role.value, expires_in_days: Number(expiry.value) };
      if (email.value.trim()) body.email = email.value.trim();
      const r = await api('POST', '/api/v1/invitations', body);
      const url = new URL(r.join_url, location.origin).href;
      const link = h('input', { id: 'invite-link', readonly: true, value: url, spellcheck: 'false', size: 60 });
      made.dataset.id = r.invitation.id;
      mount(made, h('div', { class: 'notice invite-made', role: 'status' },
        h('p', {}, h('strong', {}, r.invitation.email ? `An invitation for ${r.invitation.email} is created.` : 'An invitation for anyone with the link is created.'),
          ' Copy the link now and send it to them: it is not shown again, and it works once.'),
        link,
        button('Copy link', async () => { await navigator.clipboard.writeText(url); toast('Copied.'); }, { id: 'invite-copy' })));
      link.select();
      email.value = '';
      await refreshInvites();
    } catch (e) {
      mount(inviteErr, errorBox(e));
    }
  });

  main.append(
    h('p', { class: 'muted' }, 'Admins manage the members and may read the audit log; removing a member revokes every token of theirs at once.'),
    h('section', { class: 'card', 'aria-label': 'Members' }, body, errEl),
    form,
    h('section', { class: 'card invitations-card', 'aria-label': 'Pending invitations' }, h('h2', {}, 'Pending invitations'), invites));
  refresh();
  refreshInvites();
}
