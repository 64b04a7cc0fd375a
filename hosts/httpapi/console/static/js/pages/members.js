// pages/members.js: the Members page (#/members), for an organisation's
// admins: its members by email with their roles, Make admin / Make member,
// and Remove (which revokes their tokens at once). Members see that only
// admins may.

import { api, list } from '../api.js';
import { h, mount, button, errorBox, loading, empty, toast, when } from '../ui.js';
import { me } from '../app.js';

export const title = 'Members';

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
        const other = m.role === 'admin' ? 'member' : 'admin';
        return h('tr', { dataset: { id: m.id, role: m.role } },
          h('td', {}, m.email, self ? h('span', { class: 'muted' }, ' (you)') : null),
          h('td', {}, h('span', { class: `badge ${m.role === 'admin' ? 'ok' : ''}` }, m.role)),
          h('td', {}, when(m.created_at)),
          h('td', {}, h('div', { class: 'row-actions' },
            button(`Make ${other}`, async () => {
              await api('PATCH', `/api/v1/members/${encodeURIComponent(m.id)}`, { role: other });
              toast(`${m.email} is now ${other === 'admin' ? 'an admin' : 'a member'}.`);
              await refresh();
            }, { class: 'set-role', errEl }),
            self ? null : button('Remove', async () => {
              if (!window.confirm(`Remove ${m.email} from the organisation? Their tokens stop working at once.`)) return;
              await api('DELETE', `/api/v1/members/${encodeURIComponent(m.id)}`);
              toast(`${m.email} is removed.`);
              await refresh();
            }, { class: 'remove', errEl }))));
      })));
  }

  main.append(
    h('p', { class: 'muted' }, 'Admins manage the members and may read the audit log; removing a member revokes every token of theirs at once.'),
    h('section', { class: 'card', 'aria-label': 'Members' }, body, errEl));
  refresh();
}
