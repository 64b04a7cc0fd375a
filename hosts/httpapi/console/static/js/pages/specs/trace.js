// pages/specs/trace.js: the traceability view of a specification — the
// rows requirement → epic → story → PRP as GET /pse/sessions/{id}/traceability
// answers them, which are the rows of the export's traceability.csv (the
// relation is the server's, core/spec/trace.go: a story is listed under the
// requirements it cites; one citing none of its epic's once, under its
// epic). Uncovered requirements, orphans and dangling references are said
// in words as well as colour; every id is a link to its place.

import { api } from '../../api.js';
import { h, mount, loading, errorBox } from '../../ui.js';
import { idLink } from './links.js';

const arr = (v) => (Array.isArray(v) ? v : []);

// latest returns the current artifact of each stage: the highest version.
export function latest(artifacts) {
  const cur = {};
  for (const a of arr(artifacts)) {
    if (!cur[a.stage] || a.version > cur[a.stage].version) cur[a.stage] = a;
  }
  return cur;
}

const STAGE_NAMES = { prd: 'PRD', epics: 'Epics', stories: 'Stories', prps: 'PRPs' };

// STATUS says each row status in words (the badge's class gives the colour).
const STATUS = {
  complete: ['ok', '✔ Complete'],
  partial: ['', '… Partial'],
  uncovered: ['bad', '✖ Uncovered'],
  pending: ['', '… Pending'],
  orphan: ['warn', '⚠ Orphan'],
};

const COLUMNS = [['requirement', 'Requirement'], ['epic', 'Epic'], ['story', 'Story'], ['prp', 'PRP']];

// cell is one link of a chain: its id as a link and its title; an id that
// names nothing is marked dangling, in words.
function cell(sessionId, it, label) {
  if (!it) return h('td', { class: 'trace-none', dataset: { label } }, h('span', { 'aria-label': 'none' }, '—'));
  if (!it.title) {
    return h('td', { class: 'trace-dangling-cell', dataset: { label } },
      h('strong', { class: 'trace-id' }, it.id), ' ',
      h('span', { class: 'badge bad trace-flag', dataset: { flag: 'dangling' } }, '✖ Dangling: names nothing'));
  }
  return h('td', { dataset: { label } }, h('strong', { class: 'trace-id' }, idLink(sessionId, it.id)), ' ', h('span', { class: 'trace-title' }, it.title));
}

// traceRow is one row of the table, its ids in data attributes.
function traceRow(sessionId, r) {
  const [cls, words] = STATUS[r.status] || ['', r.status];
  const ids = {};
  for (const [k] of COLUMNS) ids[k] = r[k] ? r[k].id : '';
  return h('tr', { class: `trace-row status-${r.status}`, dataset: { status: r.status, ...ids } },
    COLUMNS.map(([k, label]) => cell(sessionId, r[k], label)),
    h('td', { dataset: { label: 'Status' } }, h('span', { class: `badge ${cls} trace-status` }, words)),
    h('td', { class: 'trace-note', dataset: { label: 'Note' } }, r.note || ''));
}

// renderTrace returns the nodes drawing an answer of GET …/traceability
// (with the artifacts, for the checks each stage reported).
export function renderTrace(sessionId, t, artifacts) {
  const title = h('h2', { id: 'trace-title' }, 'Traceability');
  if (!t.prd_generated) {
    return [title, h('p', { class: 'empty' }, 'Generate the PRD (and the stages after it) to trace requirements to epics, stories and PRPs.')];
  }
  const s = t.summary;
  const rows = arr(t.rows);
  const orphans = arr(s.orphans);
  const dangling = arr(s.dangling);
  const uncovered = arr(s.uncovered);
  const findings = orphans.length + dangling.length + uncovered.length;
  const complete = rows.filter((r) => r.status === 'complete').length;
  // The reason an item is an orphan is the note of its row: notes begin
  // with the id they are about.
  const why = (id) => (rows.find((r) => r.status === 'orphan' && r.note.startsWith(id + ' ')) || {}).note || '';
  const current = latest(artifacts);
  const checks = ['prd', 'epics', 'stories', 'prps'].flatMap((st) => arr(current[st] && current[st].checks).map((c) => ({ stage: st, c })));
  const missing = ['epics', 'stories', 'prps'].filter((st) => !current[st]);

  return [title,
    h('p', { class: 'trace-summary' },
      `${s.requirements} requirement${s.requirements === 1 ? '' : 's'} · ${rows.length} row${rows.length === 1 ? '' : 's'}, ${complete} reaching a PRP · `,
      h('span', { class: 'badge ' + (findings ? 'warn' : 'ok') }, findings ? `${findings} finding${findings === 1 ? '' : 's'}` : 'no findings')),
    h('p', { class: 'muted trace-rule' }, 'An epic traces to the requirements it lists and a story to the requirements it cites; a story citing none of its epic’s is listed once, under its epic. These are the rows of traceability.csv in the download.'),
    missing.length ? h('p', { class: 'notice' }, `Not generated yet: ${missing.map((m) => STAGE_NAMES[m]).join(', ')}. The trace stops where the stages stop.`) : null,
    arr(s.stale).length ? h('p', { class: 'notice trace-stale' }, `Stale: ${s.stale.map((m) => STAGE_NAMES[m] || m).join(', ')} (an earlier stage changed after them); regenerate them to trace the current PRD.`) : null,
    findings === 0
      ? h('p', { class: 'trace-clean' }, h('span', { class: 'badge ok' }, '✔ Complete'), ' Every requirement is listed by an epic, every epic and story is reached from a requirement, and every id named exists.')
      : h('div', { class: 'trace-findings' },
        uncovered.length ? h('div', {}, h('h3', {}, `Uncovered requirements (${uncovered.length})`),
          h('ul', { class: 'trace-uncovered' }, uncovered.map((id) => h('li', {}, h('span', { class: 'badge bad' }, '✖ Uncovered'), ' ', idLink(sessionId, id), ': no epic lists it')))) : null,
        orphans.length ? h('div', {}, h('h3', {}, `Orphans (${orphans.length})`),
          h('ul', { class: 'trace-orphans' }, orphans.map((id) => h('li', { dataset: { id } }, h('span', { class: 'badge warn' }, '⚠ Orphan'), ' ', idLink(sessionId, id), ': ', why(id).slice(id.length + 1) || 'reached from no requirement')))) : null,
        dangling.length ? h('div', {}, h('h3', {}, `Dangling references (${dangling.length})`),
          h('ul', { class: 'trace-dangling' }, dangling.map((d) => h('li', { dataset: { from: d.from, ref: d.ref } }, h('span', { class: 'badge bad' }, '✖ Dangling'), ' ', idLink(sessionId, d.from), d.note.slice(d.from.length))))) : null),
    checks.length ? h('details', { class: 'trace-checks' }, h('summary', {}, `Checks reported by devpilot (${checks.length})`),
      h('ul', {}, checks.map((x) => h('li', {}, h('span', { class: 'badge' }, STAGE_NAMES[x.stage]), ' ', x.c)))) : null,
    h('h3', { id: 'trace-table-title' }, 'Requirement → epic → story → PRP'),
    h('div', { class: 'table-wrap trace-wrap' }, h('table', { class: 'trace-table', 'aria-labelledby': 'trace-table-title' },
      h('thead', {}, h('tr', {}, [...COLUMNS.map(([, label]) => label), 'Status', 'Note'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((r) => traceRow(sessionId, r)))))].filter(Boolean);
}

// traceView is the traceability of session sessionId, fetched from the API;
// artifacts are the session's (for the checks each stage reported).
export function traceView(sessionId, artifacts) {
  const el = h('section', { class: 'trace', 'aria-labelledby': 'trace-title', 'aria-busy': 'true' }, loading('Loading the traceability…'));
  api('GET', `/pse/sessions/${encodeURIComponent(sessionId)}/traceability`)
    .then((t) => mount(el, renderTrace(sessionId, t, artifacts)))
    .catch((err) => mount(el, h('h2', { id: 'trace-title' }, 'Traceability'), errorBox(err)))
    .finally(() => el.removeAttribute('aria-busy'));
  return el;
}
