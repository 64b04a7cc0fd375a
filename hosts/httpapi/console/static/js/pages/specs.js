// pages/specs.js: the Specifications page. #/specs lists the sessions and
// offers a new one; #/specs/{id}[/{stage|trace|inputs}] opens a session (see
// specs/session.js); #/specs/standards manages the organisation's standards.

import { api, list } from '../api.js';
import { h, mount, loading, empty, errorBox, toast, field, button } from '../ui.js';
import { sessionView, statusBadge, STAGE_NAMES } from './specs/session.js';
import { standardsView } from './specs/standards.js';
import { inputRow, createSession } from './specs/inputs.js';

export const title = 'Specifications';

// render draws the page for args ([] | ['new'] | ['standards'] | [id, tab])
// and returns the cleanup that hangs up a session's progress stream.
export function render(main, args) {
  const [first, tab] = args || [];
  const listEl = h('div', { class: 'spec-list' });
  const body = h('section', { class: 'spec-main', 'aria-label': 'Specification' });
  mount(main,
    h('h1', {}, title),
    h('div', { class: 'split specs' },
      h('aside', { class: 'spec-side', 'aria-label': 'Specification sessions' },
        h('div', { class: 'row spec-side-links' },
          h('a', { class: 'button', id: 'spec-new-link', href: '#/specs/new', 'aria-current': !first || first === 'new' ? 'page' : null }, '+ New specification'),
          h('a', { class: 'button', id: 'spec-standards-link', href: '#/specs/standards', 'aria-current': first === 'standards' ? 'page' : null }, 'Standards')),
        h('h2', { class: 'spec-side-title' }, 'Sessions'),
        listEl),
      body));

  const sessions = sessionList(listEl, first && first !== 'new' && first !== 'standards' ? first : null);
  if (!first || first === 'new') {
    createForm(body, sessions);
    return () => {};
  }
  if (first === 'standards') {
    standardsView(body);
    return () => {};
  }
  return sessionView(body, first, tab, (s) => sessions.update(s));
}

// sessionList shows the caller's sessions, a page at a time, and returns
// {update(session)} to refresh one entry in place.
function sessionList(el, openId) {
  const ul = h('ul', { class: 'list spec-sessions' });
  const more = h('div');
  const byId = new Map();
  mount(el, loading('Loading sessions…'));

  function entry(s) {
    const where = s.status === 'generating' ? `generating ${STAGE_NAMES[s.next_stage] || ''}`
      : s.next_stage ? (s.current_stage ? `at ${STAGE_NAMES[s.current_stage]} · next ${STAGE_NAMES[s.next_stage]}` : 'not started') : 'all stages done';
    return h('li', { dataset: { id: s.id } }, h('a', { href: `#/specs/${encodeURIComponent(s.id)}`, 'aria-current': s.id === openId ? 'true' : null },
      h('span', { class: 'spec-item-name' }, s.name), ' ', statusBadge(s.status),
      h('small', { class: 'spec-item-stage' }, where)));
  }

  async function page(cursor) {
    try {
      const ans = await list('/pse/sessions', { limit: 50, cursor });
      if (!cursor) mount(el, ul, more);
      for (const s of ans.items) {
        const li = entry(s);
        byId.set(s.id, li);
        ul.append(li);
      }
      if (!cursor && ans.items.length === 0) mount(el, empty('No specifications yet.'));
      mount(more, ans.next_cursor ? button('Load more', () => page(ans.next_cursor), { id: 'spec-more' }) : null);
    } catch (err) {
      if (cursor) toast(err.message); else mount(el, errorBox(err));
    }
  }
  page(null);
  return {
    update(s) {
      const li = byId.get(s.id);
      if (li) { const n = entry(s); byId.set(s.id, n); li.replaceWith(n); }
    },
  };
}

// createForm is the form that creates a session from a name and inputs.
function createForm(el) {
  const err = h('div', { 'aria-live': 'assertive' });
  const name = h('input', { id: 'spec-name', name: 'name', required: true, maxlength: 200, placeholder: 'e.g. Gift cards' });
  const rows = [];
  const rowsEl = h('div', { class: 'spec-input-rows' });
  const relabel = () => rows.forEach((r, i) => {
    r.el.querySelector('legend').firstChild.textContent = `Input ${i + 1}: `;
    const rm = r.el.querySelector('.spec-input-remove');
    if (rm) rm.setAttribute('aria-label', `Remove input ${i + 1}`);
  });
  const add = (kind, focus) => {
    const row = inputRow(kind, `Input ${rows.length + 1}`, (rowEl) => {
      const i = rows.findIndex((r) => r.el === rowEl);
      rows.splice(i, 1);
      rowEl.remove();
      relabel();
    });
    // the legend's first text names the row; relabel rewrites it after a removal
    const legend = row.el.querySelector('legend');
    legend.replaceChildren(h('span', {}, `Input ${rows.length + 1}: `), legend.textContent.replace(/^[^:]*: /, ''));
    rows.push(row);
    rowsEl.append(row.el);
    relabel();
    if (focus) (row.el.querySelector('input, textarea')).focus();
  };
  add('note', false);
  // The connected repositories, for grounding the PRPs; none when GitHub is
  // not connected (or not configured), and the picker then stays hidden.
  const repo = h('select', { id: 'spec-repo', name: 'repo_id' }, h('option', { value: '' }, 'None'));
  const repoField = field('Repository', repo, 'PRPs name real files of it and the commands it shows (Makefile, package scripts, CI).');
  repoField.hidden = true;
  api('GET', '/scm/repos').then((page) => {
    for (const r of (page && page.items) || []) repo.append(h('option', { value: r.id }, r.full_name));
    repoField.hidden = repo.options.length < 2;
  }).catch(() => {});
  const form = h('form', { class: 'card spec-create', 'aria-labelledby': 'spec-create-title' },
    h('h2', { id: 'spec-create-title' }, 'New specification'),
    h('p', { class: 'muted' }, 'Give it a name and the raw material — notes, meeting transcripts, documents. devpilot turns it into a scope, a PRD, epics, stories and PRPs, one stage at a time.'),
    field('Name', name),
    repoField,
    rowsEl,
    h('div', { class: 'row spec-add-buttons' },
      h('button', { type: 'button', id: 'spec-add-note', onclick: () => add('note', true) }, '+ Note'),
      h('button', { type: 'button', id: 'spec-add-transcript', onclick: () => add('transcript', true) }, '+ Transcript'),
      h('button', { type: 'button', id: 'spec-add-document', onclick: () => add('document', true) }, '+ Document upload')),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', id: 'spec-create-submit' }, 'Create specification')),
    err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(err);
    const submit = form.querySelector('#spec-create-submit');
    let values;
    try {
      if (!name.value.trim()) throw new Error('Name the specification.');
      values = rows.map((r) => r.value());
    } catch (e) { mount(err, errorBox(e)); return; }
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    try {
      const s = await createSession(name.value.trim(), values, repo.value);
      toast(`Specification “${s.name}” created.`);
      location.hash = `#/specs/${encodeURIComponent(s.id)}`;
    } catch (e) {
      mount(err, errorBox(e));
      if (e.session) err.append(h('p', {}, h('a', { href: `#/specs/${encodeURIComponent(e.session.id)}/inputs` }, `Open “${e.session.name}” to add the missing input`)));
    } finally { submit.disabled = false; submit.removeAttribute('aria-busy'); }
  });
  mount(el, form);
}
