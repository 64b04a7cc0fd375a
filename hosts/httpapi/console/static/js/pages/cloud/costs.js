// pages/cloud/costs.js: the Costs section: a range, a granularity and a
// grouping (a dimension or a tag key), then the total beside the previous
// period's, the forecast to the month's end, the chart, its legend, each
// group beside its previous amount, the table, and a CSV download.

import { api, download } from '../../api.js';
import { h, mount, loading, empty, errorBox, field, toast } from '../../ui.js';
import { url, money } from './common.js';
import { services, drawChart, legend, table, compareTable, changeText } from './chart.js';

// The groupings the API offers (tag:<key> is GROUP_TAG and a key).
const GROUPS = [['SERVICE', 'Service'], ['LINKED_ACCOUNT', 'Linked account'], ['REGION', 'Region'], ['USAGE_TYPE', 'Usage type'],
  ['TAG', 'Tag…'], ['', 'Nothing (totals only)']];

const day = (d) => d.toISOString().slice(0, 10);

// The last range asked for, kept while the tab lives.
let last = null;

// renderCosts shows the costs section of ctx.account in el.
export function renderCosts(el, ctx) {
  const today = new Date();
  const from = new Date(today.getTime() - 29 * 86400000);
  const q = last || { start: day(from), end: day(today), granularity: 'DAILY', group: 'SERVICE', tag: '' };
  const start = h('input', { type: 'date', name: 'start_date', value: q.start, required: true, max: day(today) });
  const end = h('input', { type: 'date', name: 'end_date', value: q.end, required: true, max: day(today) });
  const gran = h('select', { name: 'granularity' },
    h('option', { value: 'DAILY', selected: q.granularity === 'DAILY' }, 'Daily'),
    h('option', { value: 'MONTHLY', selected: q.granularity === 'MONTHLY' }, 'Monthly'));
  const group = h('select', { name: 'group_by' },
    GROUPS.map(([v, label]) => h('option', { value: v, selected: q.group === v }, label)));
  const tag = h('input', { type: 'text', name: 'tag_key', value: q.tag || '', placeholder: 'e.g. team', maxlength: 128, autocomplete: 'off' });
  const tagField = field('Tag key', tag);
  const syncTag = () => { tagField.style.display = group.value === 'TAG' ? '' : 'none'; tag.required = group.value === 'TAG'; };
  group.addEventListener('change', () => { syncTag(); if (group.value === 'TAG') tag.focus(); });
  syncTag();
  const csvBtn = h('button', { type: 'button', id: 'costs-csv', disabled: true }, 'Download CSV');
  const out = h('div', { class: 'costs-out', 'aria-live': 'polite', 'aria-busy': 'false' });
  const form = h('form', { class: 'card costs-form', 'aria-label': 'Cost range' },
    h('div', { class: 'row' },
      field('From', start), field('To (inclusive)', end), field('Granularity', gran), field('Group by', group), tagField,
      h('button', { type: 'submit', class: 'primary', id: 'costs-show' }, 'Show costs'), csvBtn));
  mount(el, h('h2', {}, 'Costs'), form, out);

  let ro = null;
  ctx.onCleanup(() => ro && ro.disconnect());

  // query is the costs query of the range shown.
  const query = (extra = {}) => url('/cloud/costs', {
    account_id: ctx.account.id, start_date: last.start, end_date: last.end, granularity: last.granularity,
    group_by: last.group === 'TAG' ? 'tag:' + last.tag : last.group, include: 'previous,forecast', ...extra,
  });
  csvBtn.addEventListener('click', async () => {
    if (!last) return;
    csvBtn.disabled = true;
    try {
      const name = await download(query({ format: 'csv' }), `costs-${last.start}-to-${last.end}.csv`);
      toast(`Downloaded ${name}`);
    } catch (e) {
      mount(out, errorBox(e));
    } finally { csvBtn.disabled = false; }
  });

  // seq numbers the loads: an answer to an earlier one that arrives after a
  // later one was asked for is dropped, so the page shows what was asked last.
  let seq = 0;
  async function load() {
    const mine = ++seq;
    last = { start: start.value, end: end.value, granularity: gran.value, group: group.value, tag: tag.value.trim() };
    if (ro) { ro.disconnect(); ro = null; }
    out.setAttribute('aria-busy', 'true');
    csvBtn.disabled = true;
    mount(out, loading('Loading costs…'));
    let costs;
    try {
      costs = await api('GET', query(), undefined, { signal: ctx.signal });
    } catch (e) {
      if (mine !== seq) return;
      if (e.name !== 'AbortError') mount(out, errorBox(e));
      out.setAttribute('aria-busy', 'false');
      return;
    }
    if (mine !== seq) return;
    out.setAttribute('aria-busy', 'false');
    csvBtn.disabled = false;
    show(costs, last.granularity);
  }

  function show(costs, granularity) {
    const cur = costs.currency || 'USD';
    const keys = services(costs);
    if (!(costs.periods || []).length) { mount(out, empty('No costs in this range.')); return; }
    const groupName = (GROUPS.find(([v]) => v === last.group) || [])[1] || '';
    const prev = costs.previous;
    const fc = costs.forecast;
    const plot = h('div', { class: 'chart-wrap' });
    const narrow = window.matchMedia('(max-width: 600px)').matches;
    mount(out,
      h('p', { class: 'cost-total', role: 'status' },
        'Total ', h('strong', { id: 'costs-total' }, money(Number(costs.total || 0), cur)),
        ` (${cur}), ${costs.start_date} to ${costs.end_date}`),
      prev ? h('p', { class: 'cost-previous', id: 'costs-previous' },
        `Previous period (${prev.start_date} to ${prev.end_date}): `, h('strong', {}, money(Number(prev.total), cur)), ' · change ',
        changeText(prev, cur)) : null,
      fc ? h('p', { class: 'cost-forecast', id: 'costs-forecast' },
        `Forecast ${fc.start_date} to ${fc.end_date} (to the month's end): `, h('strong', {}, money(Number(fc.amount), cur)),
        fc.lower !== null && fc.upper !== null ? ` (likely ${money(Number(fc.lower), cur)} to ${money(Number(fc.upper), cur)})` : '')
        : costs.forecast_error ? h('p', { class: 'cost-forecast muted' }, `No forecast: ${costs.forecast_error}`) : null,
      h('figure', { class: 'card cost-figure' },
        h('figcaption', {}, `${granularity === 'MONTHLY' ? 'Monthly' : 'Daily'} cost${keys.length ? ' by ' + (last.group === 'TAG' ? `tag ${last.tag}` : groupName.toLowerCase()) : ''}`),
        plot,
        keys.length ? legend(keys, cur) : null),
      (costs.groups || []).length ? compareTable(costs, last.group === 'TAG' ? `Tag ${last.tag}` : groupName) : null,
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
