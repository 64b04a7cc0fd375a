// pages/cloud/common.js: helpers shared by the Cloud page's sections.

import { h } from '../../ui.js';

// P is the API prefix of every cloud call.
export const P = '/api/v1';

// url joins path and the query parameters that are set.
export function url(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  return qs ? `${P}${path}?${qs}` : P + path;
}

// seg escapes one path segment (a cluster, service or function name).
export const seg = (s) => encodeURIComponent(s);

// money formats an amount in currency for people.
export function money(amount, currency = 'USD') {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch (_) { // an unknown currency code
    return `${Number(amount).toFixed(2)} ${currency}`;
  }
}

const good = new Set(['ok', 'ACTIVE', 'SUCCEED', 'COMPLETED', 'PRIMARY', 'Active']);
const bad = new Set(['failed', 'FAILED', 'INACTIVE', 'CANCELLED', 'refused', 'error', 'Failed']);

// badge is a status as a coloured pill: ok, bad, or warn (anything in between).
export function badge(status, label) {
  const s = String(status || 'unknown');
  const cls = good.has(s) ? 'ok' : bad.has(s) ? 'bad' : 'warn';
  return h('span', { class: `badge ${cls}` }, label || s);
}

// short returns the last part of an ARN (task-definition/checkout:7 → checkout:7).
export const short = (arn) => String(arn || '').split('/').pop();
