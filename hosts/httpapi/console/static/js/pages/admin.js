// pages/admin.js: the Admin page (#/admin), for an organisation's admins:
// this month's token budget and what is left of it (editable, or back to
// the server's default), the month's usage by user and by feature beside
// the budget, and the assistant's tool policies (a read marked "always
// confirm" waits for a person's approval, as a write always does). A member
// is told plainly that only admins may see it. It reads GET /api/v1/usage,
// GET|PUT /api/v1/usage/budget, GET /api/v1/members, GET /api/v1/agent/tools
// and PUT /api/v1/agent/tools/{name}.

import { api, list } from '../api.js';
import { h, mount, button, errorBox, loading, empty, field, toast } from '../ui.js';
import { me } from '../app.js';

export const title = 'Admin';
// adminOnly keeps the page out of a member's menu.
export const adminOnly = true;

const num = (n) => Number(n || 0).toLocaleString('en');
const day = (ts) => String(ts || '').slice(0, 10);
// lastDay is the day before an exclusive period end.
const lastDay = (ts) => new Date(Date.parse(ts) - 86400000).toISOString().slice(0, 10);

// render draws the page.
export function render(main) {
  main.append(h('h1', {}, title));
  if (!me || me.user.role !== 'admin') {
    main.append(h('section', { class: 'card', id: 'admin-refused' },
      empty('Only an organisation admin may see usage, budgets and tool policies. Ask an admin of your organisation if you need a change.')));
    return;
  }
  const budgetCard = h('section', { class: 'card admin-budget', 'aria-labelledby': 'budget-title' },
    h('h2', { id: 'budget-title' }, 'Token budget this month'), loading('Loading the budget…'));
  const usageCard = h('section', { class: 'card admin-usage', 'aria-labelledby': 'usage-title' },
    h('h2', { id: 'usage-title' }, 'Usage this month'), loading('Loading the usage…'));
  const toolsCard = h('section', { class: 'card admin-tools', 'aria-labelledby': 'tools-title' },
    h('h2', { id: 'tools-title' }, 'Tool policies'), loading('Loading the tools…'));
  main.append(h('div', { class: 'admin-grid' }, budgetCard, usageCard), toolsCard);

  // refresh redraws the budget and the usage, which shows what is left.
  async function refresh() {
    let b;
    try {
      b = await api('GET', '/api/v1/usage/budget');
    } catch (e) {
      mount(budgetCard, h('h2', { id: 'budget-title' }, 'Token budget this month'), errorBox(e));
      return;
    }
    drawBudget(b);
    await drawUsage(b);
  }

  function drawBudget(b) {
    const limit = b.monthly_tokens;
    const left = limit == null ? null : Math.max(0, limit - b.used);
    const pct = limit ? Math.min(100, Math.round((b.used / limit) * 100)) : 0;
    const errEl = h('div', { 'aria-live': 'assertive' });
    const input = h('input', { type: 'number', id: 'budget-tokens', min: 0, step: 1000, inputmode: 'numeric', value: limit == null ? '' : String(limit), placeholder: 'e.g. 5000000' });
    const form = h('form', { class: 'budget-edit' },
      field('Monthly token budget', input, 'Tokens (prompt and completion) the organisation may use each calendar month (UTC); 0 blocks every model call.'),
      h('div', { class: 'row' },
        h('button', { type: 'submit', class: 'primary', id: 'budget-save' }, 'Save budget'),
        b.source === 'org'
          ? button('Use the server default', () => save(null), { id: 'budget-default', errEl })
          : null),
      errEl);
    async function save(value) {
      const r = await api('PUT', '/api/v1/usage/budget', { monthly_tokens: value });
      toast(value == null ? 'The budget is the server default again.' : `The budget is ${num(r.monthly_tokens)} tokens a month.`);
      await refresh();
      document.getElementById('budget-tokens')?.focus();
    }
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const raw = input.value.trim();
      if (!/^\d+$/.test(raw)) {
        mount(errEl, h('div', { class: 'error', role: 'alert' }, 'Enter the budget as a whole number of tokens, 0 or more.'));
        input.focus();
        return;
      }
      mount(errEl);
      try { await save(Number(raw)); } catch (e) { mount(errEl, errorBox(e)); }
    });
    mount(budgetCard,
      h('h2', { id: 'budget-title' }, 'Token budget this month'),
      h('p', { class: 'budget-period' }, `${day(b.period_start)} to ${lastDay(b.period_end)} (UTC)`),
      h('dl', { class: 'budget-figures' },
        h('div', {}, h('dt', {}, 'Budget'), h('dd', { id: 'budget-limit' }, limit == null ? 'No limit' : `${num(limit)} tokens`,
          h('small', {}, b.source === 'org' ? ' set for this organisation' : ' the server default'))),
        h('div', {}, h('dt', {}, 'Used'), h('dd', { id: 'budget-used' }, `${num(b.used)} tokens`)),
        h('div', {}, h('dt', {}, 'Left'), h('dd', { id: 'budget-left', class: left === 0 ? 'bad' : '' }, left == null ? 'No limit' : `${num(left)} tokens`))),
      limit ? h('meter', { id: 'budget-meter', min: 0, max: limit, low: Math.round(limit * 0.75), high: Math.round(limit * 0.9), optimum: 0,
        value: Math.min(b.used, limit), 'aria-label': `${pct}% of the budget used` }) : null,
      form);
  }

  async function drawUsage(b) {
    const from = day(b.period_start);
    try {
      const [byUser, byFeature, members] = await Promise.all([
        api('GET', `/api/v1/usage?group_by=user&from=${from}`),
        api('GET', `/api/v1/usage?group_by=feature&from=${from}`),
        list('/api/v1/members', { limit: 200 }).then((r) => r.items, () => []),
      ]);
      const names = new Map(members.map((m) => [m.id, m.email]));
      const limit = b.monthly_tokens;
      const table = (id, label, rows, name) => rows.length
        ? h('div', { class: 'table-wrap' }, h('table', { class: 'usage-table', id },
          h('caption', {}, label),
          h('thead', {}, h('tr', {}, [label.replace(/^By /, '').replace(/^./, (c) => c.toUpperCase()), 'Calls', 'Tokens', limit ? 'Of budget' : 'Share'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, rows.map((g) => h('tr', { dataset: { key: g.key } },
            h('th', { scope: 'row' }, name(g.key)), h('td', {}, num(g.calls)), h('td', {}, num(g.total_tokens)),
            h('td', {}, pctOf(g.total_tokens, limit || byUser.total.total_tokens)))))))
        : empty(`No usage ${label.toLowerCase()} yet this month.`);
      mount(usageCard,
        h('h2', { id: 'usage-title' }, 'Usage this month'),
        h('p', { id: 'usage-total' }, `${num(byUser.total.total_tokens)} tokens in ${num(byUser.total.calls)} model calls since ${from}`,
          limit != null ? `; ${num(Math.max(0, limit - b.used))} left of the budget.` : '.'),
        table('usage-by-user', 'By user', byUser.groups, (k) => names.get(k) || (k ? `former member ${k.slice(0, 8)}…` : 'no user (background work)')),
        table('usage-by-feature', 'By feature', byFeature.groups, (k) => k || 'other'));
    } catch (e) {
      mount(usageCard, h('h2', { id: 'usage-title' }, 'Usage this month'), errorBox(e));
    }
  }

  async function drawTools() {
    let tools;
    try {
      tools = (await api('GET', '/api/v1/agent/tools')).items;
    } catch (e) {
      mount(toolsCard, h('h2', { id: 'tools-title' }, 'Tool policies'), errorBox(e));
      return;
    }
    const errEl = h('div', { 'aria-live': 'assertive' });
    mount(toolsCard,
      h('h2', { id: 'tools-title' }, 'Tool policies'),
      h('p', { class: 'hint' }, 'What the assistant may call in chat and by voice. A write always waits for a person to approve it; mark a read “always confirm” to make it wait too.'),
      errEl,
      h('div', { class: 'table-wrap' }, h('table', { class: 'tools-table', id: 'tool-policies' },
        h('thead', {}, h('tr', {}, ['Tool', 'Effect', 'Always confirm'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, tools.map((t) => {
          const box = h('input', { type: 'checkbox', class: 'always-confirm', checked: t.always_confirm, disabled: t.effect === 'write',
            'aria-label': `Always confirm ${t.name}` });
          const said = h('span', {}, t.effect === 'write' ? ' always' : t.always_confirm ? ' yes' : ' no');
          box.addEventListener('change', async () => {
            const want = box.checked;
            box.disabled = true;
            try {
              await api('PUT', `/api/v1/agent/tools/${encodeURIComponent(t.name)}`, { always_confirm: want });
              mount(errEl);
              toast(want ? `${t.name} now waits for approval.` : `${t.name} runs without approval.`);
            } catch (e) {
              box.checked = !want;
              mount(errEl, errorBox(e));
            } finally {
              box.disabled = t.effect === 'write';
              said.textContent = box.checked ? ' yes' : ' no';
              box.focus();
            }
          });
          return h('tr', { dataset: { name: t.name, effect: t.effect } },
            h('th', { scope: 'row' }, h('code', {}, t.name), h('small', {}, t.description)),
            h('td', {}, h('span', { class: `badge ${t.effect === 'write' ? 'warn' : ''}` }, t.effect)),
            h('td', {}, h('label', { class: 'check' }, box, said)));
        })))));
  }

  refresh();
  drawTools();
}

// pctOf is n as a share of whole, for a table cell.
function pctOf(n, whole) {
  if (!whole) return '—';
  const p = (n / whole) * 100;
  return p > 0 && p < 0.1 ? '<0.1%' : `${p.toFixed(p < 10 ? 1 : 0)}%`;
}
