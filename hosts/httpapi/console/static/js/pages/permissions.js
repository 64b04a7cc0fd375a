// pages/permissions.js: the Permissions page (#/permissions): the
// organisation's permission policy, by area, one row per permission with a
// checkbox per role. An admin ticks and unticks roles (each change saved at
// once with PUT /api/v1/permissions/{name}); the admin role cannot be taken
// from a permission that guards the policy itself. Others see the policy
// read-only, with what their own role may do.

import { api } from '../api.js';
import { h, mount, errorBox, loading, toast } from '../ui.js';
import { me } from '../app.js';

export const title = 'Permissions';

const AREAS = { cloud: 'Cloud', content: 'Content', spec: 'Specifications', scm: 'Repositories', mcp: 'MCP servers', policy: 'Policy' };

// render draws the page.
export function render(main) {
  const admin = !!me && me.user.role === 'admin';
  const role = me ? me.user.role : '';
  main.append(h('h1', {}, title));
  main.append(h('p', { class: 'muted perm-intro' }, admin
    ? 'Which roles may run each write, from the API, the assistant and voice alike. A refused write names the permission it needs.'
    : `Which roles may run each write. You are ${role === 'admin' || role === 'operator' ? 'an' : 'a'} ${role}; only an admin changes this.`));
  const errEl = h('div', { 'aria-live': 'assertive' });
  const body = h('div', { class: 'perm-list' }, loading('Loading the permissions…'));
  main.append(errEl, body);

  async function refresh() {
    try {
      const r = await api('GET', '/api/v1/permissions');
      mount(body, ...areas(r.data, r.roles));
    } catch (e) {
      mount(body, errorBox(e));
    }
  }

  function areas(perms, roles) {
    const byArea = new Map();
    for (const p of perms) {
      if (!byArea.has(p.area)) byArea.set(p.area, []);
      byArea.get(p.area).push(p);
    }
    return [...byArea].map(([area, ps]) => h('section', { class: 'card perm-area', dataset: { area } },
      h('h2', {}, AREAS[area] || area),
      h('div', { class: 'perm-scroll' }, h('table', { class: 'permissions' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Permission'),
          roles.map((r) => h('th', { scope: 'col', class: 'perm-role' }, r)))),
        h('tbody', {}, ps.map((p) => row(p, roles)))))));
  }

  function row(p, roles) {
    const boxes = roles.map((r) => {
      const locked = !admin || (p.guarded && r === 'admin');
      const box = h('input', { type: 'checkbox', checked: p.roles.includes(r), disabled: locked,
        'aria-label': `${r} may ${p.description.toLowerCase()} (${p.name})`, dataset: { role: r } });
      box.addEventListener('change', () => save(p, boxes));
      return box;
    });
    const yours = p.roles.includes(role);
    return h('tr', { dataset: { permission: p.name } },
      h('th', { scope: 'row' },
        h('code', {}, p.name),
        p.default ? h('span', { class: 'badge perm-default' }, 'default') : h('span', { class: 'badge warn perm-changed' }, 'changed'),
        !admin ? h('span', { class: `badge ${yours ? 'ok' : ''} perm-yours` }, yours ? 'you may' : 'not you') : null,
        h('div', { class: 'muted perm-desc' }, p.description),
        p.tools.length ? h('div', { class: 'muted perm-tools' }, 'Assistant tools: ', p.tools.join(', ')) : null),
      boxes.map((b) => h('td', { class: 'perm-role' }, b)));
  }

  async function save(p, boxes) {
    mount(errEl);
    const roles = boxes.filter((b) => b.checked).map((b) => b.dataset.role);
    boxes.forEach((b) => { b.disabled = true; });
    try {
      await api('PUT', `/api/v1/permissions/${encodeURIComponent(p.name)}`, { roles });
      toast(`${p.name}: ${roles.length ? roles.join(', ') : 'nobody'}.`);
    } catch (e) {
      mount(errEl, errorBox(e));
    }
    await refresh();
  }

  refresh();
}
