// pages/cloud/chart.js: the costs chart, drawn as SVG by this code (no
// library): one stacked bar per period, one rect per service in it, each
// rect labelled with its service, period and amount; a legend; and the same
// numbers as a table for screen readers and small screens.

import { h } from '../../ui.js';
import { money } from './common.js';

const NS = 'http://www.w3.org/2000/svg';

// A palette that stays apart for the common kinds of colour blindness
// (Okabe–Ito, then a few more).
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000',
  '#8C564B', '#7F7F7F', '#17BECF', '#BCBD22'];

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// services returns the group keys of the costs answer, largest total first,
// each with its total over the range and its colour.
export function services(costs) {
  const totals = new Map();
  for (const p of costs.periods || []) {
    for (const g of p.groups || []) totals.set(g.key, (totals.get(g.key) || 0) + Number(g.amount || 0));
  }
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([key, total], i) => ({ key, total, colour: COLOURS[i % COLOURS.length] }));
}

// periodLabel names a period for people: its start day, or its month.
export function periodLabel(p, granularity) {
  if (granularity === 'MONTHLY') {
    const d = new Date(p.start + 'T00:00:00Z');
    return isNaN(d) ? p.start : d.toLocaleDateString(undefined, { month: 'short', year: 'numeric', timeZone: 'UTC' });
  }
  return p.start === p.end ? p.start : `${p.start} – ${p.end}`;
}

// niceStep is a round step for about n ticks up to max.
function niceStep(max, n) {
  const raw = max / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// drawChart returns the SVG of costs, width pixels wide: stacked bars of
// the services in keys order (each {key, colour}).
export function drawChart(costs, keys, width, granularity) {
  const periods = costs.periods || [];
  const currency = costs.currency || 'USD';
  const height = 280;
  const m = { top: 12, right: 12, bottom: 44, left: 64 };
  const iw = Math.max(40, width - m.left - m.right);
  const ih = height - m.top - m.bottom;
  const max = Math.max(0, ...periods.map((p) => (p.groups || []).reduce((a, g) => a + Math.max(0, Number(g.amount || 0)), 0)));
  const step = max > 0 ? niceStep(max, 4) : 1;
  const top = max > 0 ? Math.ceil(max / step) * step : 1;
  const y = (v) => m.top + ih - (v / top) * ih;
  const slot = iw / Math.max(1, periods.length);
  const bw = Math.max(1, Math.min(48, slot * 0.72));
  const order = new Map(keys.map((k, i) => [k.key, i]));
  const colour = new Map(keys.map((k) => [k.key, k.colour]));

  const svg = s('svg', {
    class: 'cost-chart', width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'group', 'aria-label': `Costs by service per period, in ${currency}`,
  });
  // The amount axis and its grid.
  const axis = s('g', { class: 'axis', 'aria-hidden': 'true' });
  for (let v = 0; v <= top + step / 2; v += step) {
    axis.append(s('line', { x1: m.left, x2: m.left + iw, y1: y(v), y2: y(v), class: v === 0 ? 'base' : 'grid' }));
    axis.append(s('text', { x: m.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, money(v, currency)));
  }
  // Period labels: as many as fit.
  const every = Math.max(1, Math.ceil(70 / slot));
  periods.forEach((p, i) => {
    if (i % every !== 0) return;
    const label = granularity === 'MONTHLY' ? periodLabel(p, granularity) : p.start.slice(5);
    axis.append(s('text', { x: m.left + slot * i + slot / 2, y: m.top + ih + 18, 'text-anchor': 'middle' }, label));
  });
  svg.append(axis);

  // The bars: one group per period, one rect per service.
  periods.forEach((p, i) => {
    const g = s('g', { class: 'period', 'data-period': p.start });
    const x = m.left + slot * i + (slot - bw) / 2;
    let acc = 0;
    const groups = [...(p.groups || [])].sort((a, b) => (order.get(a.key) ?? 99) - (order.get(b.key) ?? 99));
    for (const grp of groups) {
      const amt = Math.max(0, Number(grp.amount || 0));
      const y1 = y(acc);
      const y2 = y(acc + amt);
      acc += amt;
      const label = `${grp.key}, ${periodLabel(p, granularity)}: ${money(Number(grp.amount || 0), currency)}`;
      g.append(s('rect', {
        class: 'mark', x: x.toFixed(2), y: y2.toFixed(2), width: bw.toFixed(2), height: Math.max(0, y1 - y2).toFixed(2),
        fill: colour.get(grp.key) || '#999', role: 'img', 'aria-label': label,
        'data-service': grp.key, 'data-amount': grp.amount,
      }, s('title', {}, label)));
    }
    // A period with no groups (group by none) is one bar of its total.
    if (groups.length === 0 && Number(p.total) > 0) {
      const label = `Total, ${periodLabel(p, granularity)}: ${money(Number(p.total), currency)}`;
      g.append(s('rect', {
        class: 'mark', x: x.toFixed(2), y: y(Number(p.total)).toFixed(2), width: bw.toFixed(2),
        height: (y(0) - y(Number(p.total))).toFixed(2), fill: COLOURS[0], role: 'img', 'aria-label': label,
        'data-service': '', 'data-amount': p.total,
      }, s('title', {}, label)));
    }
    svg.append(g);
  });
  return svg;
}

// legend lists the services with their colour and total.
export function legend(keys, currency) {
  return h('ul', { class: 'legend', 'aria-label': 'Legend' }, keys.map((k) => {
    const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = k.colour;
    return h('li', {}, sw, h('span', { class: 'svc' }, k.key), ' ', h('span', { class: 'amt' }, money(k.total, currency)));
  }));
}

// table is the chart's numbers: a row per period, a column per service.
export function table(costs, keys, granularity) {
  const cur = costs.currency || 'USD';
  return h('div', { class: 'table-wrap' }, h('table', { class: 'cost-table' },
    h('caption', {}, `Costs ${costs.start_date} to ${costs.end_date}, in ${cur}`),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Period'),
      keys.map((k) => h('th', { scope: 'col' }, k.key)),
      h('th', { scope: 'col' }, 'Total'))),
    h('tbody', {}, (costs.periods || []).map((p) => {
      const by = new Map((p.groups || []).map((g) => [g.key, g.amount]));
      return h('tr', {},
        h('th', { scope: 'row' }, periodLabel(p, granularity)),
        keys.map((k) => h('td', { class: 'num' }, by.has(k.key) ? money(Number(by.get(k.key)), cur) : '–')),
        h('td', { class: 'num' }, money(Number(p.total || 0), cur)));
    })),
    h('tfoot', {}, h('tr', {},
      h('th', { scope: 'row' }, 'Total'),
      keys.map((k) => h('td', { class: 'num' }, money(k.total, cur))),
      h('td', { class: 'num' }, h('strong', {}, money(Number(costs.total || 0), cur)))))));
}

// changeText writes a change ({change, change_percent}) as "+$1.20 (+12.5%)".
export function changeText(c, cur) {
  const n = Number(c.change || 0);
  const sign = n > 0 ? '+' : n < 0 ? '−' : '±';
  const pct = c.change_percent === null || c.change_percent === undefined ? '' : ` (${sign}${Math.abs(Number(c.change_percent)).toFixed(1)}%)`;
  return `${sign}${money(Math.abs(n), cur)}${pct}`;
}

// compareTable lists each group's total over the range beside the previous
// period's and the change, largest first.
export function compareTable(costs, groupName) {
  const cur = costs.currency || 'USD';
  const hasPrev = !!costs.previous;
  return h('div', { class: 'table-wrap' }, h('table', { class: 'cost-table cost-compare', id: 'costs-compare' },
    h('caption', {}, `By ${groupName.toLowerCase() || 'group'}: ${costs.start_date} to ${costs.end_date}` +
      (hasPrev ? `, beside ${costs.previous.start_date} to ${costs.previous.end_date}` : '')),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, groupName || 'Group'),
      h('th', { scope: 'col', class: 'num' }, 'This period'),
      hasPrev ? h('th', { scope: 'col', class: 'num' }, 'Previous period') : null,
      hasPrev ? h('th', { scope: 'col', class: 'num' }, 'Change') : null)),
    h('tbody', {}, costs.groups.map((g) => h('tr', { 'data-key': g.key },
      h('th', { scope: 'row' }, g.key === '' ? h('em', {}, '(none)') : g.key),
      h('td', { class: 'num' }, money(Number(g.amount), cur)),
      hasPrev ? h('td', { class: 'num' }, money(Number(g.previous), cur)) : null,
      hasPrev ? h('td', { class: 'num ' + (Number(g.change) > 0 ? 'up' : Number(g.change) < 0 ? 'down' : '') }, changeText(g, cur)) : null)))));
}
