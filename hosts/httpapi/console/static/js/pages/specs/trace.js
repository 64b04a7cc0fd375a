// pages/specs/trace.js: the traceability view of a specification —
// requirement → epic → story → PRP — built from the structured data of the
// current prd, epics, stories and prps artifacts (core/spec/schemas), with
// orphans (something nothing serves or delivers) and dangling references (an
// id that does not exist) marked in words as well as colour.

import { h } from '../../ui.js';

const arr = (v) => (Array.isArray(v) ? v : []);

// latest returns the current artifact of each stage: the highest version.
export function latest(artifacts) {
  const cur = {};
  for (const a of arr(artifacts)) {
    if (!cur[a.stage] || a.version > cur[a.stage].version) cur[a.stage] = a;
  }
  return cur;
}

// traceModel turns the current artifacts into the tree and its findings:
// {reqs, nfrs, epics, stories, prps, orphans, dangling, unreachable, have}.
// A stage without an artifact is not checked against (have says which exist).
export function traceModel(current) {
  const data = (s) => (current[s] && current[s].data) || null;
  const prd = data('prd');
  const have = { prd: !!prd, epics: !!data('epics'), stories: !!data('stories'), prps: !!data('prps') };
  const reqs = arr(prd && prd.functional_requirements);
  const nfrs = arr(prd && prd.non_functional_requirements);
  const epics = arr(data('epics') && data('epics').epics);
  const stories = arr(data('stories') && data('stories').stories);
  const prps = arr(data('prps') && data('prps').prps);

  const reqIds = new Set(reqs.map((r) => r.id));
  const epicIds = new Set(epics.map((e) => e.id));
  const storyIds = new Set(stories.map((s) => s.id));

  const orphans = []; // {id, reason}
  const dangling = []; // {from, ref, reason}
  const mark = {}; // id → [{kind:'orphan'|'dangling', text}]
  const note = (id, kind, text) => { (mark[id] = mark[id] || []).push({ kind, text }); };

  if (have.prd && have.epics) {
    for (const e of epics) {
      for (const r of arr(e.requirement_ids)) {
        if (!reqIds.has(r)) { dangling.push({ from: e.id, ref: r, reason: `${e.id} names ${r}, which is not a requirement of the PRD` }); note(e.id, 'dangling', `names unknown ${r}`); }
      }
      for (const d of arr(e.depends_on)) {
        if (!epicIds.has(d)) { dangling.push({ from: e.id, ref: d, reason: `${e.id} depends on ${d}, which is not an epic` }); note(e.id, 'dangling', `depends on unknown ${d}`); }
      }
    }
    for (const r of reqs) {
      if (!epics.some((e) => arr(e.requirement_ids).includes(r.id))) { orphans.push({ id: r.id, reason: `${r.id} is served by no epic` }); note(r.id, 'orphan', 'no epic serves it'); }
    }
  }
  if (have.epics && have.stories) {
    for (const s of stories) {
      if (!epicIds.has(s.epic_id)) { dangling.push({ from: s.id, ref: s.epic_id, reason: `${s.id} belongs to ${s.epic_id}, which is not an epic` }); note(s.id, 'dangling', `belongs to unknown ${s.epic_id}`); }
    }
    for (const e of epics) {
      if (!stories.some((s) => s.epic_id === e.id)) { orphans.push({ id: e.id, reason: `${e.id} has no story` }); note(e.id, 'orphan', 'no story delivers it'); }
    }
  }
  if (have.prd && have.stories) {
    for (const s of stories) {
      for (const r of arr(s.requirement_ids)) {
        if (!reqIds.has(r)) { dangling.push({ from: s.id, ref: r, reason: `${s.id} names ${r}, which is not a requirement of the PRD` }); note(s.id, 'dangling', `names unknown ${r}`); }
      }
    }
  }
  if (have.stories && have.prps) {
    for (const p of prps) {
      if (!storyIds.has(p.story_id)) { dangling.push({ from: p.id, ref: p.story_id, reason: `${p.id} implements ${p.story_id}, which is not a story` }); note(p.id, 'dangling', `implements unknown ${p.story_id}`); }
    }
    for (const s of stories) {
      if (!prps.some((p) => p.story_id === s.id)) { orphans.push({ id: s.id, reason: `${s.id} has no PRP` }); note(s.id, 'orphan', 'no PRP implements it'); }
    }
  }

  // What the tree from the requirements cannot reach: epics serving no known
  // requirement, stories of an unknown epic, PRPs of an unknown story.
  const unreachable = [
    ...epics.filter((e) => have.prd && !arr(e.requirement_ids).some((r) => reqIds.has(r))),
    ...stories.filter((s) => have.epics && !epicIds.has(s.epic_id)),
    ...prps.filter((p) => have.stories && !storyIds.has(p.story_id)),
  ];
  return { reqs, nfrs, epics, stories, prps, orphans, dangling, unreachable, mark, have };
}

function flags(model, id) {
  return (model.mark[id] || []).map((f) => h('span', { class: 'badge ' + (f.kind === 'orphan' ? 'warn' : 'bad') + ' trace-flag', dataset: { flag: f.kind } },
    f.kind === 'orphan' ? '⚠ Orphan: ' : '✖ Dangling: ', f.text));
}

function node(model, kind, item, label, children) {
  const marked = (model.mark[item.id] || []).length > 0;
  return h('li', { class: 'trace-node' + (marked ? ' flagged' : ''), dataset: { kind, id: item.id } },
    h('div', { class: 'trace-item' },
      h('span', { class: 'trace-kind' }, kind), ' ',
      h('strong', { class: 'trace-id' }, item.id), ' ', h('span', {}, label || ''), ' ', flags(model, item.id)),
    children && children.length ? h('ul', { class: 'trace-children' }, children) : null);
}

function prpNodes(model, story) {
  return model.prps.filter((p) => p.story_id === story.id).map((p) => node(model, 'PRP', p, p.title));
}

function storyNodes(model, epic) {
  return model.stories.filter((s) => s.epic_id === epic.id).map((s) => node(model, 'Story', s, s.title, prpNodes(model, s)));
}

function epicNodes(model, req) {
  return model.epics.filter((e) => arr(e.requirement_ids).includes(req.id)).map((e) => node(model, 'Epic', e, e.title, storyNodes(model, e)));
}

// traceView renders the traceability of a session's artifacts.
export function traceView(artifacts) {
  const current = latest(artifacts);
  const model = traceModel(current);
  if (!model.have.prd) {
    return h('section', { class: 'trace', 'aria-labelledby': 'trace-title' },
      h('h2', { id: 'trace-title' }, 'Traceability'),
      h('p', { class: 'empty' }, 'Generate the PRD (and the stages after it) to trace requirements to epics, stories and PRPs.'));
  }
  const stale = ['prd', 'epics', 'stories', 'prps'].filter((s) => current[s] && current[s].stale);
  const counts = `${model.reqs.length} requirements · ${model.epics.length} epics · ${model.stories.length} stories · ${model.prps.length} PRPs`;
  const findings = model.orphans.length + model.dangling.length;
  const missing = ['epics', 'stories', 'prps'].filter((s) => !model.have[s]);

  const findingsList = findings === 0
    ? h('p', { class: 'trace-clean' }, h('span', { class: 'badge ok' }, '✔ Complete'), ' Every requirement is served by an epic, every epic by a story and every story by a PRP; every id named exists.')
    : h('div', { class: 'trace-findings' },
      model.orphans.length ? h('div', {}, h('h3', {}, `Orphans (${model.orphans.length})`),
        h('ul', { class: 'trace-orphans' }, model.orphans.map((o) => h('li', {}, h('span', { class: 'badge warn' }, '⚠ Orphan'), ' ', o.reason)))) : null,
      model.dangling.length ? h('div', {}, h('h3', {}, `Dangling references (${model.dangling.length})`),
        h('ul', { class: 'trace-dangling' }, model.dangling.map((d) => h('li', {}, h('span', { class: 'badge bad' }, '✖ Dangling'), ' ', d.reason)))) : null);

  const checks = ['prd', 'epics', 'stories', 'prps'].flatMap((s) => arr(current[s] && current[s].checks).map((c) => ({ stage: s, c })));

  return h('section', { class: 'trace', 'aria-labelledby': 'trace-title' },
    h('h2', { id: 'trace-title' }, 'Traceability'),
    h('p', { class: 'trace-summary' }, counts, ' · ',
      h('span', { class: 'badge ' + (findings ? 'warn' : 'ok') }, findings ? `${findings} finding${findings === 1 ? '' : 's'}` : 'no findings')),
    missing.length ? h('p', { class: 'notice' }, `Not generated yet: ${missing.join(', ')}. The trace stops where the stages stop.`) : null,
    stale.length ? h('p', { class: 'notice' }, `Stale: ${stale.join(', ')} (an earlier stage was regenerated after them); regenerate them to trace the current PRD.`) : null,
    findingsList,
    checks.length ? h('details', { class: 'trace-checks' }, h('summary', {}, `Checks reported by devpilot (${checks.length})`),
      h('ul', {}, checks.map((x) => h('li', {}, h('span', { class: 'badge' }, x.stage), ' ', x.c)))) : null,
    h('h3', { id: 'trace-tree-title' }, 'Requirement → epic → story → PRP'),
    h('ul', { class: 'trace-tree', 'aria-labelledby': 'trace-tree-title' },
      model.reqs.map((r) => node(model, 'Requirement', r, r.title, epicNodes(model, r)))),
    model.unreachable.length ? h('div', {},
      h('h3', {}, 'Not reachable from a requirement'),
      h('ul', { class: 'trace-tree trace-unreachable' }, model.unreachable.map((x) => {
        const kind = /^EP-/.test(x.id) ? 'Epic' : /^ST-/.test(x.id) ? 'Story' : 'PRP';
        const kids = kind === 'Epic' ? storyNodes(model, x) : kind === 'Story' ? prpNodes(model, x) : [];
        return node(model, kind, x, x.title, kids);
      }))) : null,
    model.nfrs.length ? h('details', {}, h('summary', {}, `Non-functional requirements (${model.nfrs.length})`),
      h('ul', {}, model.nfrs.map((n) => h('li', {}, h('strong', {}, n.id), ` (${n.category}) `, n.description)))) : null);
}
