// pages/specs/session.js: one specification session — its stage stepper
// (scope → prd → epics → stories → prps) with "Generate next" and live
// status, each stage's document and data, its inputs, and the traceability
// view. The page follows the session's progress stream (GET …/events): each
// new state the server announces is fetched whole; the cleanup that
// sessionView returns hangs up.

import { api, stream, download } from '../../api.js';
import { manageBar } from './manage.js';
import { connectPanel } from './connect.js';
import { h, mount, loading, empty, errorBox, toast, button, when, details, pretty } from '../../ui.js';
import { render as md } from '../../md.js';
import { traceView, latest } from './trace.js';
import { linkIds } from './links.js';
import { inputRow, addInput, size, KINDS } from './inputs.js';
import { STAGES } from './standards.js';
import { editor, historyView, madeBy, savedNote } from './edit.js';

export const STAGE_NAMES = { scope: 'Scope', prd: 'PRD', epics: 'Epics', stories: 'Stories', prps: 'PRPs' };
const RECONNECT_MS = 2000;

// statusBadge is a session status as a badge whose text says it.
export function statusBadge(status) {
  const cls = { ready: 'ok', generating: 'warn', failed: 'bad' }[status] || '';
  return h('span', { class: `badge ${cls} spec-status-badge`, dataset: { status } }, status);
}

// sessionView shows session id in el, on view tab (a stage, 'trace' or
// 'inputs'; default the latest stage), and calls onChange(session) whenever
// it learns a new state of it. It returns the cleanup.
export function sessionView(el, id, tab, onChange) {
  const path = `/pse/sessions/${encodeURIComponent(id)}`;
  const ctl = new AbortController();
  let timer = null;
  let s = null; // the session
  let view = STAGES.includes(tab) || tab === 'trace' || tab === 'inputs' ? tab : null;
  let version = {}; // stage → version chosen in the version picker (null: the latest)
  let pending = null; // the stage being generated, as the server said last
  let lastId = 0; // the progress stream's last event id
  let fetching = 0; // the number of the latest refresh, so that only it draws
  let panelKey = null; // what the panel shows (see draw)
  let stepperKey = null; // what the stepper shows
  let editing = null; // the stage whose document is open in the editor
  let editorEl = null; // its panel, kept while the author looks at other views
  let saved = null; // the last edit saved: { stage, artifact, stale: [stage names] }

  const head = h('div', { class: 'spec-head' });
  const status = h('p', { class: 'spec-status', role: 'status', 'aria-live': 'polite' });
  const stepper = h('nav', { class: 'spec-stepper-wrap', 'aria-label': 'Stages' });
  const actions = h('div', { class: 'row spec-actions' });
  const actionErr = h('div', { 'aria-live': 'assertive' });
  const panel = h('div', { class: 'spec-panel' });
  const manage = manageBar(id, () => refresh()); // rename, repository, export to issues, delete
  const connect = connectPanel(id); // how a coding agent reaches this specification over MCP
  mount(el, loading('Loading the specification…'));

  // say updates the live status only when its text changes, so that a
  // screen reader does not hear the same words at every poll.
  const say = (...children) => {
    const next = h('span', {}, ...children);
    if (next.textContent !== status.textContent) mount(status, ...next.childNodes);
  };
  const stop = () => { clearTimeout(timer); timer = null; };
  const cleanup = () => { stop(); ctl.abort(); manage.stop(); };

  async function refresh() {
    const mine = ++fetching;
    let next;
    try {
      next = await api('GET', path, undefined, { signal: ctl.signal });
    } catch (err) {
      if (ctl.signal.aborted || mine !== fetching) return;
      if (!s) { mount(el, errorBox(err)); return; }
      say('Could not refresh the status: ', err.message, ' — it is fetched again at the next change.');
      return;
    }
    if (ctl.signal.aborted || mine !== fetching) return;
    const was = s && s.status;
    s = next;
    if (was === 'generating' && s.status !== 'generating') {
      if (s.status === 'ready') {
        const done = pending || s.current_stage;
        toast(`The ${STAGE_NAMES[done] || done} stage is ready.`);
        if (done) { view = done; delete version[done]; }
      } else if (s.status === 'failed') {
        toast(`Generating ${STAGE_NAMES[s.error && s.error.stage] || 'the stage'} failed.`);
      }
      pending = null;
    }
    draw();
    onChange(s);
  }

  // follow reads the session's progress stream until the page is left:
  // every state that is not the one shown is fetched whole (with its
  // artifacts). A dropped stream is opened again, from the last event.
  async function follow() {
    while (!ctl.signal.aborted) {
      try {
        await stream(`${path}/events`, undefined, (ev) => {
          if (ev.event !== 'session') return;
          lastId = ev.id;
          const p = ev.data;
          if (p.status === 'generating' && p.generating) pending = p.generating;
          if (!s || p.status !== s.status || p.current_stage !== s.current_stage || p.updated_at !== s.updated_at) refresh();
        }, { signal: ctl.signal, lastEventId: lastId });
      } catch (err) {
        if (ctl.signal.aborted) return;
        if (!s && err.status) { mount(el, errorBox(err)); return; } // refused (404, 401): not worth retrying
      }
      if (ctl.signal.aborted) return;
      await new Promise((resolve) => { timer = setTimeout(resolve, RECONNECT_MS); });
    }
  }

  // generate starts stage (the next when null), going on through the stage
  // through when given; the progress stream shows the rest.
  async function generate(stage, through) {
    mount(actionErr);
    const body = {};
    if (stage) body.stage = stage;
    if (through) body.through = through;
    const ans = await api('POST', `${path}/generate`, Object.keys(body).length ? body : undefined);
    pending = ans.stage;
    s = { ...s, status: 'generating' };
    toast(through && ans.through ? `Generating ${STAGE_NAMES[ans.stage]} through ${STAGE_NAMES[ans.through]}…` : `Generating ${STAGE_NAMES[ans.stage]}…`);
    draw();
    onChange(s);
    refresh(); // the state the call left; the stream announces the rest
  }

  // draw renders the session's current state, keeping the focus where it was.
  function draw() {
    const focused = document.activeElement && el.contains(document.activeElement) ? document.activeElement.id : null;
    const current = latest(s.artifacts);
    if (!view) view = s.current_stage || 'inputs';
    if (!el.contains(head)) mount(el, head, manage.el, connect.el, status, stepper, actions, actionErr, panel);
    manage.update(s, view);
    connect.update(s);

    mount(head,
      h('h2', { class: 'spec-name' }, s.name), ' ', statusBadge(s.status),
      h('p', { class: 'muted spec-meta' }, `Created ${when(s.created_at)} · updated ${when(s.updated_at)}`));

    if (s.status === 'generating') {
      say(h('span', { class: 'spinner', 'aria-hidden': 'true' }), `Generating ${STAGE_NAMES[pending || s.next_stage] || 'the next stage'}…`);
    } else if (s.status === 'failed' && s.error) {
      say(h('span', { class: 'error spec-error' },
        h('strong', {}, `Generating ${STAGE_NAMES[s.error.stage] || s.error.stage} failed`), ` (${s.error.code}): `, s.error.message,
        ' You can generate again.'));
    } else if (!s.current_stage) {
      say((s.inputs || []).length ? 'Ready to generate the scope.' : 'Add an input (a note, transcript or document), then generate the scope.');
    } else if (!s.next_stage) {
      say(h('span', { class: 'badge ok' }, '✔ Complete'), ' All five stages are generated.');
    } else {
      say(`${STAGE_NAMES[s.current_stage]} is the latest stage; next: ${STAGE_NAMES[s.next_stage]}.`);
    }

    const steps = STAGES.map((st) => {
      const a = current[st];
      const running = s.status === 'generating' && (pending || s.next_stage) === st;
      const failed = s.status === 'failed' && s.error && s.error.stage === st;
      if (running) return ['running', 'generating…'];
      if (failed) return ['failed', 'failed'];
      if (a && a.stale) return ['stale', `v${a.version} · stale`];
      if (a) return ['done', `v${a.version}`];
      if (s.next_stage === st) return ['next', 'next'];
      return ['todo', 'not generated'];
    });
    // Like the panel, the stepper is rebuilt only when it changes.
    const stepKey = JSON.stringify([steps, view, (s.inputs || []).length]);
    if (stepKey !== stepperKey) {
      stepperKey = stepKey;
      mount(stepper, h('ol', { class: 'stepper' }, STAGES.map((st, i) => {
        const [cls, state] = steps[i];
        return h('li', { class: `step ${cls}`, dataset: { stage: st, state: cls } },
          h('button', { type: 'button', id: `step-${st}`, class: 'step-btn', 'aria-current': view === st ? 'step' : null, onclick: () => show(st) },
            h('span', { class: 'step-num', 'aria-hidden': 'true' }, cls === 'done' ? '✔' : cls === 'failed' ? '✖' : cls === 'stale' ? '!' : String(i + 1)),
            h('span', { class: 'step-text' }, h('span', { class: 'step-name' }, STAGE_NAMES[st]), h('span', { class: 'step-state' }, state))));
      })),
      h('div', { class: 'spec-views', role: 'group', 'aria-label': 'Views' },
        h('button', { type: 'button', id: 'spec-view-trace', 'aria-pressed': String(view === 'trace'), onclick: () => show('trace') }, 'Traceability'),
        h('button', { type: 'button', id: 'spec-view-inputs', 'aria-pressed': String(view === 'inputs'), onclick: () => show('inputs') }, `Inputs (${(s.inputs || []).length})`)));
    }

    const busy = s.status === 'generating';
    const nextLabel = busy ? 'Generating…' : s.next_stage ? `Generate next: ${STAGE_NAMES[s.next_stage]}` : 'All stages generated';
    const gen = button(nextLabel, () => generate(null), { class: s.next_stage ? 'primary' : null, id: 'spec-generate-next', errEl: actionErr });
    gen.disabled = busy || !s.next_stage;
    // "Generate all" takes the session through the PRPs from one click.
    const all = button('Generate all remaining stages', () => generate(null, 'prps'), { id: 'spec-generate-all', errEl: actionErr });
    all.disabled = busy || !s.next_stage || s.next_stage === 'prps';
    // The export: every current stage as files, stale ones marked.
    const save = (format) => async () => toast(`Saved ${await download(`${path}/export?format=${format}`, `spec.${format}`)}.`);
    const exports = h('span', { class: 'row spec-export', role: 'group', 'aria-label': 'Download the specification' },
      button('Download (zip)', save('zip'), { id: 'spec-export-zip', errEl: actionErr }),
      button('Markdown', save('md'), { id: 'spec-export-md', errEl: actionErr }));
    mount(actions, gen, all, exports);

    // The panel is redrawn only when what it shows changes, so polling does
    // not close an open details or wipe a half-typed input.
    const arts = (s.artifacts || []).map((a) => `${a.stage}${a.version}${a.stale ? 's' : ''}`).join();
    const key = [view, version[view], arts, (s.inputs || []).length, busy].join('|');
    // An open editor is never redrawn under its author: a newer version
    // shows as a 412 when they save.
    if (key !== panelKey && !(editing === view && panel.querySelector('.stage-edit'))) {
      panelKey = key;
      if (view === 'trace') mount(panel, traceView(id, s.artifacts));
      else if (view === 'inputs') mount(panel, inputsPanel());
      else mount(panel, stagePanel(view, current));
    }

    if (focused) {
      const f = document.getElementById(focused);
      if (f && !f.disabled) f.focus({ preventScroll: true });
    }
  }

  function show(v) {
    view = v;
    history.replaceState(null, '', `#/specs/${encodeURIComponent(id)}/${v}`);
    draw();
  }

  function stagePanel(st, current) {
    const cur = current[st];
    const all = (s.artifacts || []).filter((a) => a.stage === st).sort((x, y) => y.version - x.version);
    const busy = s.status === 'generating';
    const title = h('h3', { id: 'stage-title' }, STAGE_NAMES[st]);
    if (!cur) {
      return h('section', { class: 'stage', 'aria-labelledby': 'stage-title' }, title,
        empty(s.next_stage === st ? 'Not generated yet: use “Generate next” above.' : 'Not generated yet: generate the stages before it first.'));
    }
    const chosen = all.find((a) => a.version === version[st]) || cur;
    let picker = null;
    if (all.length > 1) {
      const sel = h('select', { id: 'stage-version', onchange: () => { version[st] = Number(sel.value); draw(); } },
        all.map((a) => h('option', { value: a.version, selected: a.version === chosen.version }, `v${a.version}${a === cur ? ' (current)' : ''}`)));
      picker = h('span', { class: 'field inline' }, h('label', { for: sel.id }, 'Version'), sel);
    }
    const regen = button(`Regenerate ${STAGE_NAMES[st]}`, () => generate(st), { id: 'stage-regenerate', errEl: actionErr });
    regen.disabled = busy;
    const later = STAGES.slice(STAGES.indexOf(st) + 1).filter((x) => current[x]);
    if (editing === st) return editPanel(st, cur);
    // Only the current version is edited; the editor opens on it.
    const edit = button(`Edit ${STAGE_NAMES[st]}`, () => {
      editing = st; editorEl = null; saved = null; delete version[st]; panelKey = null; draw();
      const first = panel.querySelector('.stage-edit input, .stage-edit textarea');
      if (first) first.focus();
    }, { id: 'stage-edit' });
    edit.disabled = busy;
    const history = details(`Versions (${all.length}) and compare`, h('div', {}), { class: 'stage-versions', id: 'stage-versions' });
    history.addEventListener('toggle', () => {
      if (!history.open || history.dataset.loaded) return;
      history.dataset.loaded = '1';
      history.lastChild.replaceWith(historyView(path, st, cur.version, (v) => { version[st] = v; draw(); }));
    });
    return h('section', { class: 'stage', 'aria-labelledby': 'stage-title', dataset: { stage: st, version: chosen.version } },
      h('div', { class: 'row stage-head' }, title,
        h('span', { class: 'badge stage-version' }, `version ${chosen.version}`),
        chosen.stale ? h('span', { class: 'badge warn stage-stale' }, '⚠ stale') : chosen === cur ? h('span', { class: 'badge ok' }, 'current') : h('span', { class: 'badge' }, 'superseded'),
        picker),
      h('p', { class: 'muted stage-madeby' }, `${madeBy(chosen)} · ${when(chosen.created_at)}`),
      saved && saved.stage === st && saved.artifact.version === chosen.version ? savedNote(saved.artifact, saved.stale) : null,
      chosen.stale ? h('p', { class: 'notice stage-stale-note' }, 'Stale: an earlier stage was regenerated after this version, so it may not match it. Regenerate this stage (or use “Generate next”) to bring it up to date.') : null,
      chosen !== cur ? h('p', { class: 'notice' }, `An older version: the current one is v${cur.version}.`) : null,
      h('div', { class: 'row' }, regen, edit,
        h('small', { class: 'muted' }, later.length ? `Regenerating or editing makes version ${cur.version + 1} and marks ${later.map((x) => STAGE_NAMES[x]).join(', ')} stale.` : `Regenerating or editing makes version ${cur.version + 1}.`)),
      (chosen.checks || []).length ? h('div', { class: 'stage-checks', role: 'note' }, h('strong', {}, 'Traceability checks'),
        h('ul', {}, chosen.checks.map((c) => h('li', {}, '⚠ ', c)))) : null,
      linkIds(h('article', { class: 'doc spec-doc', 'aria-label': `${STAGE_NAMES[st]} document` }, md(chosen.content)), id),
      history,
      details('Structured data (JSON)', pretty(chosen.data), { class: 'stage-data' }));
  }

  // editPanel is stage st's current version in the editor (edit.js).
  function editPanel(st, cur) {
    if (editorEl) return editorEl;
    const close = () => { editing = null; editorEl = null; panelKey = null; draw(); };
    editorEl = h('section', { class: 'stage', 'aria-labelledby': 'stage-title', dataset: { stage: st, version: cur.version, editing: 'true' } },
      h('div', { class: 'row stage-head' }, h('h3', { id: 'stage-title' }, `Edit ${STAGE_NAMES[st]}`),
        h('span', { class: 'badge stage-version' }, `from version ${cur.version}`)),
      editor(path, st, cur.version, cur.data, {
        onDone: async (art) => {
          if (art) {
            const later = STAGES.slice(STAGES.indexOf(st) + 1).filter((x) => latest(s.artifacts)[x]).map((x) => STAGE_NAMES[x]);
            saved = { stage: st, artifact: art, stale: later };
            delete version[st];
            toast(`${STAGE_NAMES[st]} saved as version ${art.version}.`);
            editing = null;
            editorEl = null;
            panelKey = null;
            await refresh();
            const h3 = document.getElementById('stage-title');
            if (h3) h3.scrollIntoView({ block: 'start' });
            return;
          }
          close();
        },
        onTheirs: async () => {
          editing = null;
          editorEl = null;
          delete version[st];
          panelKey = null;
          await refresh();
          toast(`Loaded the latest ${STAGE_NAMES[st]}.`);
        },
      }));
    return editorEl;
  }

  function inputsPanel() {
    const items = s.inputs || [];
    const slot = h('div', { class: 'spec-add-slot' });
    const err = h('div', { 'aria-live': 'assertive' });
    const open = (kind) => {
      const row = inputRow(kind, 'New input', null);
      const form = h('form', { class: 'card spec-add' }, row.el,
        h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', id: 'spec-add-submit' }, 'Add input'),
          h('button', { type: 'button', onclick: () => { mount(slot); mount(err); } }, 'Cancel')), err);
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const submit = form.querySelector('button[type="submit"]');
        submit.disabled = true;
        try {
          const inp = await addInput(id, row.value());
          toast(`Input “${inp.title}” added.`);
          await refresh();
        } catch (e) { mount(err, errorBox(e)); } finally { submit.disabled = false; }
      });
      mount(slot, form);
      const first = form.querySelector('input, textarea');
      if (first) first.focus();
    };
    return h('section', { class: 'spec-inputs', 'aria-labelledby': 'inputs-title' },
      h('h3', { id: 'inputs-title' }, 'Inputs'),
      items.length === 0 ? empty('No inputs yet.') : h('div', { class: 'table-wrap' }, h('table', { class: 'spec-inputs-table' },
        h('thead', {}, h('tr', {}, ['Kind', 'Title', 'Type', 'Size', 'Added'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, items.map((i) => h('tr', {},
          h('td', {}, h('span', { class: 'badge' }, i.kind)), h('td', {}, i.title), h('td', {}, i.content_type),
          h('td', {}, size(i.size)), h('td', {}, when(i.created_at))))))),
      h('p', { class: 'muted' }, 'New inputs are used by the next generation; regenerate a stage to take them into account.'),
      h('div', { class: 'row' }, Object.entries(KINDS).map(([k, label]) =>
        h('button', { type: 'button', class: 'spec-add-kind', dataset: { kind: k }, onclick: () => open(k) }, `Add ${label.toLowerCase()}`))),
      slot);
  }

  follow();
  return cleanup;
}
