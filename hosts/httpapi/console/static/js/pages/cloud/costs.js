// pages/cloud/costs.js: the Costs section: a range, a granularity and a
// grouping, then the chart, its legend and its table, with the total.

import { api } from '../../api.js';
import { h, mount, loading, empty, errorBox, field } from '../../ui.js';
import { url, money } from './common.js';
import { services, drawChart, legend, table } from './chart.js';

const day = (d) => d.toISOString().slice(0, 10);

// The last range asked for, kept while the tab lives.
let last = null;

// renderCosts shows the costs section of ctx.account in el.
export function renderCosts(el, ctx) {
  const today = new Date();
  const from = new Date(today.getTime() - 29 * 86400000);
  const q = last || { start: day(from), end: day(today), granularity: 'DAILY', group: 'SERVICE' };
  const start = h('input', { type: 'date', name: 'start_date', value: q.start, required: true, max: day(today) });
  const end = h('input', { type: 'date', name: 'end_date', value: q.end, required: true, max: day(today) });
  const gran = h('select', { name: 'granularity' },
    h('option', { value: 'DAILY', selected: q.granularity === 'DAILY' }, 'Daily'),
    h('option', { value: 'MONTHLY', selected: q.granularity === 'MONTHLY' }, 'Monthly'));
  const group = h('select', { name: 'group_by' },
    h('option', { value: 'SERVICE', selected: q.group === 'SERVICE' }, 'Service'),
    h('option', { value: '', selected: q.group === '' }, 'Nothing (totals only)'));
  const out = h('div', { class: 'costs-out', 'aria-live': 'polite', 'aria-busy': 'false' });
  const form = h('form', { class: 'card costs-form', 'aria-label': 'Cost range' },
    h('div', { class: 'row' },
      field('From', start), field('To (inclusive)', end), field('Granularity', gran), field('Group by', group),
      h('button', { type: 'submit', class: 'primary', id: 'costs-show' }, 'Show costs')));
  mount(el, h('h2', {}, 'Costs'), form, out);

  let ro = null;
  ctx.onCleanup(() => ro && ro.disconnect());

  async function load() {
    last = { start: start.value, end: end.value, granularity: gran.value, group: group.value };
    if (ro) { ro.disconnect(); ro = null; }
    out.setAttribute('aria-busy', 'true');
    mount(out, loading('Loading costs…'));
    let costs;
    try {
      costs = await api('GET', url('/cloud/costs', {
        account_id: ctx.account.id, start_date: last.start, end_date: last.end,
        granularity: last.granularity, group_by: last.group,
      }), undefined, { signal: ctx.signal });
    } catch (e) {
      if (e.name !== 'AbortError') mount(out, errorBox(e));
      out.setAttribute('aria-busy', 'false');
      return;
    }
    out.setAttribute('aria-busy', 'false');
    show(costs, last.granularity);
  }

  function show(costs, granularity) {
    const cur = costs.currency || 'USD';
    const keys = services(costs);
    if (!(costs.periods || []).length) { mount(out, empty('No costs in this range.')); return; }
    const plot = h('div', { class: 'chart-wrap' });
    const narrow = window.matchMedia('(max-width: 600px)').matches;
    mount(out,
      h('p', { class: 'cost-total', role: 'status' },
        'Total ', h('strong', { id: 'costs-total' }, money(Number(costs.total || 0), cur)),
        ` (${cur}), ${costs.start_date} to ${costs.end_date}`),
      h('figure', { class: 'card cost-figure' },
        h('figcaption', {}, `${granularity === 'MONTHLY' ? 'Monthly' : 'Daily'} cost${keys.length ? ' by service' : ''}`),
        plot,
        keys.length ? legend(keys, cur) : null),
      h('details', { class: 'cost-data', open: narrow }, h('summary', {}, 'The numbers as a table'),
        table(costs, keys, granularity)));
    // Draw at the width there is, and again when it changes.
    let width = 0;
    const draw = () => {
      const w = Math.floor(plot.clientWidth);
      if (w <= 0 || w === width) return;
      width = w;
      plot.replaceChildren(drawChart(costs, keys, w, granularity));
    };
    draw();
    ro = new ResizeObserver(() => requestAnimationFrame(draw));
    ro.observe(plot);
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (start.value && end.value && start.value > end.value) {
      mount(out, h('p', { class: 'error', role: 'alert' }, 'The start date is after the end date.'));
      start.focus();
      return;
    }
    load();
  });
  load();
}
