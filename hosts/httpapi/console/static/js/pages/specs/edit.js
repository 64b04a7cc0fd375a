// pages/specs/edit.js: a stage's document edited by hand, as a form shaped
// like the stage (core/spec/schemas): text fields and text areas for what
// the Markdown shows, one-per-line text areas for lists of strings, and
// lists of items (requirements, epics, stories, PRPs, …) to add to and
// remove from. Saving PUTs the whole document on the version it was opened
// from (If-Match): someone else's newer version is a 412 with "Load theirs";
// a document the schema or the id rules refuse is a 422 whose problems are
// shown next to their fields. Also here: who made a version (madeBy), and a
// stage's versions with the comparison of two of them (historyView).

import { api } from '../../api.js';
import { h, mount, button, errorBox, when, empty, loading } from '../../ui.js';
import { me } from '../../app.js';

// The field kinds: text (one line), area (a paragraph), lines (a list of
// strings, one per line), ids (a list of ids, separated by commas or
// spaces), choice (one of options), int, object (fields of a nested object)
// and list (items, each an object of fields). A list's prefix numbers new
// items' ids; its name is the field that names an item in its heading.
const text = (key, label) => ({ key, label, kind: 'text' });
const area = (key, label) => ({ key, label, kind: 'area' });
const lines = (key, label) => ({ key, label, kind: 'lines' });
const ids = (key, label) => ({ key, label, kind: 'ids' });
const choice = (key, label, options) => ({ key, label, kind: 'choice', options });
const int = (key, label, min = 1) => ({ key, label, kind: 'int', min });
const object = (key, label, fields) => ({ key, label, kind: 'object', fields });
const list = (key, label, item, fields, opts = {}) => ({ key, label, kind: 'list', item, fields, ...opts });

const criteria = list('acceptance_criteria', 'Acceptance criteria', 'Criterion',
  [area('given', 'Given'), area('when', 'When'), area('then', 'Then')]);

// SHAPES are the stages' documents as forms.
export const SHAPES = {
  scope: [
    text('title', 'Title'), area('problem', 'Problem'),
    list('users', 'Users', 'User', [text('persona', 'Persona'), area('needs', 'Needs')], { name: 'persona' }),
    lines('goals', 'Goals'),
    list('success_metrics', 'Success metrics', 'Metric', [text('metric', 'Metric'), text('target', 'Target')], { name: 'metric' }),
    lines('in_scope', 'In scope'), lines('out_of_scope', 'Out of scope'), lines('constraints', 'Constraints'),
    list('risks', 'Risks', 'Risk', [area('risk', 'Risk'), area('mitigation', 'Mitigation')], { name: 'risk' }),
    lines('open_questions', 'Open questions'),
  ],
  prd: [
    text('title', 'Title'), area('summary', 'Summary'),
    list('functional_requirements', 'Functional requirements', 'Requirement', [
      text('id', 'Id'), text('title', 'Title'), area('description', 'Description'),
      choice('priority', 'Priority', ['must', 'should', 'could']),
      list('sources', 'Sources', 'Source', [text('input', 'Input (1, 2, … or digest)'), area('quote', 'Quote')]),
    ], { prefix: 'REQ-', name: 'title' }),
    list('non_functional_requirements', 'Non-functional requirements', 'Quality', [
      text('id', 'Id'), text('category', 'Category'), area('description', 'Description'),
    ], { prefix: 'NFR-', name: 'category' }),
    list('user_journeys', 'User journeys', 'Journey', [
      text('name', 'Name'), text('persona', 'Persona'), lines('steps', 'Steps'), ids('requirement_ids', 'Requirements (REQ-n)'),
    ], { name: 'name' }),
    list('success_metrics', 'Success metrics', 'Metric', [
      text('metric', 'Metric'), text('target', 'Target'), ids('validates', 'Validates (REQ-n, NFR-n)'),
    ], { name: 'metric' }),
    lines('non_goals', 'Non-goals'), lines('assumptions', 'Assumptions'),
    list('glossary', 'Glossary', 'Term', [text('term', 'Term'), area('definition', 'Definition')], { name: 'term' }),
    lines('edge_cases', 'Edge cases'),
    list('clarifications', 'Clarifications', 'Question', [area('question', 'Question'), area('impact', 'Impact')], { name: 'question' }),
  ],
  epics: [
    list('epics', 'Epics', 'Epic', [
      text('id', 'Id'), text('title', 'Title'), area('goal', 'Goal'), ids('requirement_ids', 'Requirements (REQ-n)'),
      ids('depends_on', 'Depends on (EP-n)'), int('order', 'Order'),
    ], { prefix: 'EP-', name: 'title' }),
  ],
  stories: [
    list('stories', 'Stories', 'Story', [
      text('id', 'Id (ST-epic.n)'), text('epic_id', 'Epic (EP-n)'), text('title', 'Title'),
      text('as_a', 'As a'), area('i_want', 'I want'), area('so_that', 'So that'), criteria,
      ids('requirement_ids', 'Requirements (REQ-n)'), choice('estimate', 'Estimate (points)', [1, 2, 3, 5, 8, 13]),
      area('independent_test', 'Independent test'), lines('edge_cases', 'Edge cases'), ids('depends_on', 'Depends on (ST-e.n)'),
    ], { name: 'title' }),
  ],
  prps: [
    list('prps', 'PRPs', 'PRP', [
      text('id', 'Id (PRP-e.n)'), text('story_id', 'Story (ST-e.n)'), text('title', 'Title'),
      area('goal', 'Goal'), area('deliverable', 'Deliverable'), lines('why', 'Why'), criteria,
      object('context', 'Context', [
        list('references', 'References', 'Reference', [
          choice('kind', 'Kind', ['file', 'url', 'doc']), text('target', 'Target'), text('section', 'Section'), area('why', 'Why'),
        ], { name: 'target' }),
        lines('codebase', 'Codebase'), lines('gotchas', 'Gotchas'),
      ]),
      list('tasks', 'Tasks', 'Task', [
        text('id', 'Id (Tn)'), choice('action', 'Action', ['create', 'modify']), text('path', 'Path'), text('pattern', 'Pattern'),
        area('details', 'Details'), ids('depends_on', 'Depends on (Tn)'), text('validation', 'Validation command'),
      ], { prefix: 'T', name: 'path' }),
      object('validation', 'Validation', [
        list('commands', 'Commands', 'Command', [
          choice('level', 'Level', ['syntax', 'unit', 'integration', 'domain']), text('command', 'Command'), text('expect', 'Expect'),
        ], { name: 'command' }),
        area('none_reason', 'Why there are no commands'),
      ]),
      lines('success_checklist', 'Success checklist'), lines('anti_patterns', 'Anti-patterns'),
    ], { name: 'title' }),
  ],
};

// madeBy says who made a version (an artifact or an item of its versions):
// the sandbox's scripted model, a model by its name, or the person who
// edited it.
export function madeBy(v) {
  const g = v.generated_by || {};
  if (g.kind === 'user') {
    const you = me && me.user && me.user.id === g.user_id ? ' (you)' : '';
    return `Edited by ${g.user_name || 'a teammate'}${you}`;
  }
  if (g.sandbox) return 'Generated by the sandbox model (scripted, not a real model)';
  return `Generated by ${g.model || v.model || 'the model'}`;
}

const clone = (v) => JSON.parse(JSON.stringify(v));

// blank is a new value of field f: every field the schema requires, empty.
function blank(f) {
  switch (f.kind) {
    case 'lines': case 'ids': case 'list': return [];
    case 'choice': return f.options[0];
    case 'int': return f.min;
    case 'object': return blankItem(f.fields, []);
    default: return '';
  }
}

// blankItem is a new item of a list of fields; an id field is numbered
// after the list's highest (prefix) or left for the author.
function blankItem(fields, items, prefix) {
  const out = {};
  for (const f of fields) out[f.key] = blank(f);
  if ('id' in out && prefix) {
    const re = new RegExp(`^${prefix}(\\d+)$`);
    const n = Math.max(0, ...items.map((it) => { const m = re.exec(it.id || ''); return m ? Number(m[1]) : 0; }));
    out.id = `${prefix}${n + 1}`;
  }
  if ('order' in out) out.order = items.length + 1;
  return out;
}

const NAMES = { scope: 'Scope', prd: 'PRD', epics: 'Epics', stories: 'Stories', prps: 'PRPs' };

// friendly says a schema problem in words: the stages' schemas require text
// with a non-space character, lists with items, and values from a set.
function friendly(msg) {
  if (msg.includes('does not match pattern') && msg.replace(/\\\\/g, '\\').includes('^[\\s\\S]*\\S[\\s\\S]*$')) return 'Must not be empty.';
  let m = /^minItems: got (\d+), want (\d+)$/.exec(msg);
  if (m) return `Needs at least ${m[2]} ${Number(m[2]) === 1 ? 'item' : 'items'}.`;
  m = /^missing propert(?:y|ies) (.*)$/.exec(msg);
  if (m) return `Missing ${m[1]}.`;
  return msg;
}

let seq = 0;
const nextId = () => `se-${++seq}`;

// editor is the form for stage st's document data (version base of the
// session at path). onDone(saved) closes it: saved is the new version, or
// null on Cancel; onTheirs() loads the version someone else saved.
export function editor(path, st, base, data, { onDone, onTheirs }) {
  const model = clone(data || {});
  const controls = new Map(); // JSON pointer → control (or list fieldset)
  const errs = h('div', { class: 'edit-errors', 'aria-live': 'assertive' });

  // fieldEl renders field f of obj (at pointer at) and registers its control.
  function fieldEl(f, obj, at) {
    const ptr = `${at}/${f.key}`;
    const id = nextId();
    const common = { id, name: f.key, dataset: { path: ptr } };
    let control;
    switch (f.kind) {
      case 'text':
        control = h('input', { ...common, type: 'text', value: obj[f.key] ?? '', oninput: (e) => { obj[f.key] = e.target.value; } });
        break;
      case 'area':
        control = h('textarea', { ...common, rows: 3, oninput: (e) => { obj[f.key] = e.target.value; } });
        control.value = obj[f.key] ?? '';
        break;
      case 'lines':
        control = h('textarea', { ...common, rows: Math.min(8, Math.max(2, (obj[f.key] || []).length + 1)),
          oninput: (e) => { obj[f.key] = e.target.value.split('\n').map((s) => s.trim()).filter(Boolean); } });
        control.value = (obj[f.key] || []).join('\n');
        break;
      case 'ids':
        control = h('input', { ...common, type: 'text', value: (obj[f.key] || []).join(', '),
          oninput: (e) => { obj[f.key] = e.target.value.split(/[\s,]+/).filter(Boolean); } });
        break;
      case 'choice':
        control = h('select', { ...common, onchange: (e) => {
          obj[f.key] = typeof f.options[0] === 'number' ? Number(e.target.value) : e.target.value;
        } }, f.options.map((o) => h('option', { value: String(o), selected: String(o) === String(obj[f.key]) }, String(o))));
        break;
      case 'int':
        control = h('input', { ...common, type: 'number', min: f.min, step: 1, value: obj[f.key] ?? f.min,
          oninput: (e) => { obj[f.key] = e.target.value === '' ? e.target.value : Number(e.target.value); } });
        break;
      case 'object': {
        if (!obj[f.key] || typeof obj[f.key] !== 'object') obj[f.key] = blank(f);
        const set = h('fieldset', { class: 'edit-object', dataset: { path: ptr } }, h('legend', {}, f.label),
          f.fields.map((g) => fieldEl(g, obj[f.key], ptr)));
        controls.set(ptr, set);
        return set;
      }
      case 'list':
        return listEl(f, obj, ptr);
      default:
        return null;
    }
    controls.set(ptr, control);
    const hint = f.kind === 'lines' ? 'One per line.' : f.kind === 'ids' ? 'Separated by commas.' : null;
    return h('div', { class: `field edit-field edit-${f.kind}` }, h('label', { for: id }, f.label), control,
      hint ? h('small', {}, hint) : null);
  }

  // listEl renders the list f of obj: its items, each removable, and Add.
  function listEl(f, obj, ptr) {
    if (!Array.isArray(obj[f.key])) obj[f.key] = [];
    const items = obj[f.key];
    const box = h('div', { class: 'edit-items' });
    const set = h('fieldset', { class: 'edit-list', dataset: { path: ptr, list: f.key } });
    const title = (it, i) => {
      const name = f.name && typeof it[f.name] === 'string' ? it[f.name] : '';
      const label = it.id ? `${f.item} ${it.id}` : `${f.item} ${i + 1}`;
      return name ? `${label} · ${name.length > 60 ? name.slice(0, 57) + '…' : name}` : label;
    };
    const draw = () => {
      for (const k of [...controls.keys()]) if (k.startsWith(ptr + '/')) controls.delete(k);
      mount(box, items.length ? items.map((it, i) => {
        const at = `${ptr}/${i}`;
        const legend = h('legend', {}, title(it, i));
        const item = h('fieldset', { class: 'edit-item', dataset: { path: at, id: it.id || '' } }, legend,
          f.fields.map((g) => fieldEl(g, it, at)),
          h('div', { class: 'row edit-item-actions' },
            h('button', { type: 'button', class: 'edit-remove', onclick: () => { items.splice(i, 1); draw(); } },
              `Remove ${it.id || f.item.toLowerCase()}`)));
        // The heading follows the item's id and name as they are typed.
        item.addEventListener('input', () => { legend.textContent = title(it, i); });
        controls.set(at, item);
        return item;
      }) : empty(`No ${f.label.toLowerCase()}.`));
    };
    draw();
    const add = h('button', { type: 'button', class: 'edit-add', dataset: { list: f.key }, onclick: () => {
      items.push(blankItem(f.fields, items, f.prefix));
      draw();
      const last = box.lastElementChild;
      const first = last && last.querySelector('input:not([name="id"]), textarea, input');
      if (first) first.focus();
    } }, `Add ${f.item.toLowerCase()}`);
    controls.set(ptr, set);
    mount(set, h('legend', {}, `${f.label} (${items.length})`), box, add);
    set.addEventListener('click', () => { set.firstChild.textContent = `${f.label} (${items.length})`; });
    return set;
  }

  // placeOf names a control for the list of problems: its item's heading
  // and its label, or a list's or item's heading.
  function placeOf(target) {
    const legendOf = (el) => { const l = el && el.querySelector(':scope > legend'); return l ? l.textContent : ''; };
    const fieldDiv = target.closest('.field');
    const item = (fieldDiv || target.parentElement || target).closest('.edit-item');
    const parts = [];
    if (item && item !== target) parts.push(legendOf(item));
    parts.push(fieldDiv ? fieldDiv.querySelector('label').textContent : legendOf(target));
    return parts.filter(Boolean).join(' › ');
  }

  // showProblems puts each of the 422's problems next to its field (the
  // nearest one its pointer names) and lists them all at the top.
  function showProblems(err) {
    for (const el of form.querySelectorAll('.field-error')) el.remove();
    for (const el of form.querySelectorAll('[aria-invalid]')) { el.removeAttribute('aria-invalid'); el.removeAttribute('aria-describedby'); }
    const problems = ((err.problem && err.problem.errors) || []).map((e) => e.reason || '');
    const items = [];
    let first = null;
    for (const reason of problems) {
      const m = /^at '([^']*)':\s*(.*)$/s.exec(reason);
      let ptr = m ? m[1] : null;
      const msg = friendly(m ? m[2] : reason);
      let target = null;
      while (ptr !== null && ptr !== '' && ptr !== '/' && !(target = controls.get(ptr))) ptr = ptr.slice(0, ptr.lastIndexOf('/'));
      const where = target ? placeOf(target) : null;
      if (!target) { items.push(h('li', {}, msg)); continue; }
      const goTo = (t) => () => { t.scrollIntoView({ block: 'center' }); (t.matches('input, textarea, select') ? t : t.querySelector('input, textarea, select') || t).focus({ preventScroll: true }); };
      items.push(h('li', {}, h('button', { type: 'button', class: 'problem-link', onclick: goTo(target) }, `${where}:`), ' ', msg));
      const id = nextId();
      const note = h('p', { class: 'field-error', id, role: 'note' }, '⚠ ', msg);
      if (target.matches('input, textarea, select')) {
        target.setAttribute('aria-invalid', 'true');
        target.setAttribute('aria-describedby', id);
        target.after(note);
      } else {
        const legend = target.querySelector(':scope > legend');
        if (legend) legend.after(note); else target.prepend(note);
      }
      if (!first) first = target;
    }
    mount(errs, h('div', { class: 'error', role: 'alert' },
      h('strong', {}, `The ${NAMES[st] || st} was not saved: ${items.length === 1 ? 'one problem' : `${items.length} problems`}.`),
      h('ul', {}, items)));
    if (first) { first.scrollIntoView({ block: 'center' }); if (first.focus) first.focus({ preventScroll: true }); }
  }

  // Save and Cancel are at the top and the bottom of a form that can be long.
  const actions = (where) => [
    h('button', { type: 'submit', class: 'primary stage-save', id: where === 'top' ? 'stage-save-top' : 'stage-save' }, `Save as version ${base + 1}`),
    h('button', { type: 'button', class: 'stage-cancel', id: where === 'top' ? 'stage-cancel-top' : 'stage-cancel', onclick: () => onDone(null) }, 'Cancel')];
  const form = h('form', { class: 'stage-edit card', 'aria-label': `Edit the ${st}`, novalidate: true },
    h('div', { class: 'row edit-actions' }, h('p', { class: 'muted' },
      `Editing version ${base}. Saving makes version ${base + 1}, written by you; the stages after this one become stale.`), actions('top')),
    errs,
    (SHAPES[st] || []).map((f) => fieldEl(f, model, '')),
    h('div', { class: 'row edit-actions' }, actions('bottom')));
  const saves = () => form.querySelectorAll('.stage-save');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const b of saves()) { b.disabled = true; b.setAttribute('aria-busy', 'true'); }
    try {
      const saved = await api('PUT', `${path}/stages/${encodeURIComponent(st)}`, { data: model }, { headers: { 'If-Match': `"${base}"` } });
      onDone(saved);
    } catch (err) {
      if (err.status === 412) {
        mount(errs, h('div', { class: 'notice stage-conflict', role: 'alert' },
          h('strong', {}, 'Someone else changed this stage. '),
          `${err.message.replace(/[.]?$/, '.')} Your edits are not saved: load their version (yours are dropped), or copy what you need first.`,
          h('div', { class: 'row' }, button('Load theirs', () => onTheirs(), { id: 'stage-load-theirs', class: 'primary' }))));
        errs.scrollIntoView({ block: 'center' });
      } else if (err.status === 422 && err.problem && err.problem.code === 'invalid_document') {
        showProblems(err);
      } else {
        mount(errs, errorBox(err));
        errs.scrollIntoView({ block: 'center' });
      }
    } finally {
      for (const b of saves()) { b.disabled = false; b.removeAttribute('aria-busy'); }
    }
  });
  return form;
}

// historyView lists the versions of stage st (GET …/versions): each with
// when and who made it and a View button (onView(version)), and compares
// two of them (GET …/diff).
export function historyView(path, st, current, onView) {
  const out = h('div', { class: 'stage-history' }, loading('Loading the versions…'));
  const base = `${path}/stages/${encodeURIComponent(st)}`;
  api('GET', `${base}/versions`).then(({ items }) => {
    if (!items.length) { mount(out, empty('No versions yet.')); return; }
    const pick = (id, label, chosen) => {
      const sel = h('select', { id }, items.map((v) => h('option', { value: v.version, selected: v.version === chosen }, `v${v.version}`)));
      return [sel, h('span', { class: 'field inline' }, h('label', { for: id }, label), sel)];
    };
    const [fromSel, fromEl] = pick('diff-from', 'Compare', items.length > 1 ? items[1].version : items[0].version);
    const [toSel, toEl] = pick('diff-to', 'with', items[0].version);
    const result = h('div', { class: 'diff-result', 'aria-live': 'polite' });
    const compare = button('Compare', async () => {
      mount(result, loading('Comparing…'));
      try {
        const d = await api('GET', `${base}/diff?from=${encodeURIComponent(fromSel.value)}&to=${encodeURIComponent(toSel.value)}`);
        mount(result, diffView(d));
      } catch (err) { mount(result, errorBox(err)); }
    }, { id: 'diff-compare' });
    mount(out,
      h('ol', { class: 'versions-list', 'aria-label': 'Versions, newest first' }, items.map((v) => h('li', { class: 'version-row', dataset: { version: v.version } },
        h('span', { class: 'version-num' }, h('strong', {}, `v${v.version}`),
          v.version === current ? h('span', { class: 'badge ok' }, 'current') : null,
          v.stale ? h('span', { class: 'badge warn' }, 'stale') : null),
        h('span', { class: 'version-by' }, madeBy(v)),
        h('span', { class: 'version-when muted' }, when(v.created_at)),
        h('button', { type: 'button', class: 'version-view', onclick: () => onView(v.version) }, `View v${v.version}`)))),
      items.length > 1 ? h('div', { class: 'row diff-pick' }, fromEl, toEl, compare) : h('p', { class: 'muted' }, 'One version so far: edit or regenerate the stage to have two to compare.'),
      result);
  }).catch((err) => mount(out, errorBox(err)));
  return out;
}

// itemLabel is a diff item as words: its id, and its title or text.
function itemLabel(it) {
  const v = it.item;
  if (typeof v === 'string') return v;
  const name = v && (v.title || v.name || v.persona || v.metric || v.term || v.question || v.risk || v.category || v.description);
  return name && name !== it.id ? `${it.id} — ${name}` : it.id;
}

const SECTION = (s) => s.replace(/_/g, ' ');

// diffView shows a diff: the items added, removed and changed (by id and
// section), then the Markdown's lines added and removed, each marked with a
// symbol and a word as well as a colour.
export function diffView(d) {
  const rows = [
    ...d.added.map((it) => h('li', { class: 'diff-add', dataset: { id: it.id, change: 'added' } },
      h('span', { class: 'diff-mark', 'aria-hidden': 'true' }, '+'), h('strong', {}, 'Added '), `${itemLabel(it)} `, h('small', { class: 'muted' }, `(${SECTION(it.section)})`))),
    ...d.removed.map((it) => h('li', { class: 'diff-del', dataset: { id: it.id, change: 'removed' } },
      h('span', { class: 'diff-mark', 'aria-hidden': 'true' }, '−'), h('strong', {}, 'Removed '), `${itemLabel(it)} `, h('small', { class: 'muted' }, `(${SECTION(it.section)})`))),
    ...d.changed.map((c) => h('li', { class: 'diff-chg', dataset: { id: c.id, change: 'changed' } },
      h('span', { class: 'diff-mark', 'aria-hidden': 'true' }, '~'), h('strong', {}, 'Changed '),
      c.section === 'document' ? 'the document’s ' : `${c.id}: `, c.fields.map(SECTION).join(', '), ' ',
      c.section === 'document' ? null : h('small', { class: 'muted' }, `(${SECTION(c.section)})`))),
  ];
  const text = (d.text_diff || '').split('\n').filter((l, i, all) => !(l === '' && i === all.length - 1)).map((l) => {
    if (l.startsWith('+++') || l.startsWith('---')) return h('span', { class: 'diff-line diff-file' }, l);
    if (l.startsWith('@@')) return h('span', { class: 'diff-line diff-hunk' }, l);
    if (l.startsWith('+')) return h('ins', { class: 'diff-line diff-add', title: 'added line' }, h('span', { class: 'sr-only' }, 'added: '), l);
    if (l.startsWith('-')) return h('del', { class: 'diff-line diff-del', title: 'removed line' }, h('span', { class: 'sr-only' }, 'removed: '), l);
    return h('span', { class: 'diff-line' }, l);
  });
  const counts = `${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`;
  return h('section', { class: 'diff', 'aria-label': `Changes from version ${d.from} to version ${d.to}` },
    h('h4', {}, `From v${d.from} to v${d.to}: ${counts}`),
    rows.length ? h('ul', { class: 'diff-items' }, rows) : empty('The two versions hold the same items.'),
    h('h4', {}, 'The document, line by line'),
    h('p', { class: 'muted diff-legend' }, h('span', { class: 'diff-add' }, '+ added line'), ' · ', h('span', { class: 'diff-del' }, '− removed line')),
    text.length ? h('pre', { class: 'diff-text' }, text) : empty('The Markdown is the same.'));
}

// savedNote says what a save made: the new version, and the later stages
// it marked stale.
export function savedNote(saved, staleNames) {
  return h('p', { class: 'notice stage-saved', role: 'status' },
    h('strong', {}, `Saved as version ${saved.version}`), ` — ${madeBy(saved)}. `,
    staleNames.length ? `${staleNames.join(', ')} ${staleNames.length === 1 ? 'is' : 'are'} now stale: regenerate to follow this edit.` : '');
}
