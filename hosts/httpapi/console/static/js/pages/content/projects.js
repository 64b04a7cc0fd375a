// pages/content/projects.js: the Content page's project bar. Projects have
// names (GET /content/projects): the picker lists them by name, with the
// current project's id small beside it; "New project" asks for a name and
// an optional description and creates it (POST /content/projects);
// "Rename" changes the current project's name or description (PATCH, on its
// version). Project ids used in this browser before projects had names, and
// ids typed in, still open: a write (brand settings, a brief) gives such an
// id a project named after it.

import { api, list } from '../../api.js';
import { h, mount, field, button, errorBox, toast } from '../../ui.js';
import { PROJECT_ID, recentProjects, rememberProject, ifMatch } from './util.js';

// MAX_PAGES bounds the pages of projects the picker reads (200 each).
const MAX_PAGES = 5;

// loadProjects reads the organisation's projects, by name.
async function loadProjects() {
  const all = [];
  let cursor = '';
  for (let i = 0; i < MAX_PAGES; i++) {
    const r = await list('/content/projects', { limit: 200, cursor });
    all.push(...r.items);
    cursor = r.next_cursor;
    if (!cursor) break;
  }
  return all;
}

// projectBar is the project picker of the page showing project pid ('' for
// none).
export function projectBar(pid) {
  const go = (id) => { location.hash = '#/content/' + encodeURIComponent(id); };
  let current = null; // the current project's record, once read
  const select = h('select', { id: 'project-select' },
    h('option', { value: pid }, pid ? 'Loading projects…' : 'Choose a project…'));
  select.addEventListener('change', () => { if (select.value) go(select.value); });
  const idNote = h('small', { class: 'project-id', id: 'project-id-note' }, pid ? `id ${pid}` : '');
  const errEl = h('div', { 'aria-live': 'assertive' });
  const formEl = h('div', { class: 'project-form-wrap' });

  const renameBtn = button('Rename', () => showForm(current), { id: 'project-rename', hidden: true });
  const newBtn = button('New project', () => showForm(null), { id: 'project-new' });

  // fill lists the projects by name; ids without a project (recent in this
  // browser, or the one open) follow, said to be unnamed.
  function fill(projects) {
    const known = new Set(projects.map((p) => p.id));
    const opts = [];
    if (!pid) opts.push(h('option', { value: '' }, 'Choose a project…'));
    for (const p of projects) opts.push(h('option', { value: p.id, selected: p.id === pid }, p.name));
    const loose = [pid, ...recentProjects()].filter((id, i, a) => id && !known.has(id) && a.indexOf(id) === i);
    for (const id of loose) opts.push(h('option', { value: id, selected: id === pid }, `${id} (no name yet)`));
    select.replaceChildren(...opts);
    current = projects.find((p) => p.id === pid) || null;
    renameBtn.hidden = !current;
    mount(idNote, pid ? (current ? `id ${pid}` : `id ${pid} · named after its id once something is saved`) : '');
  }

  async function reload() {
    try {
      fill(await loadProjects());
    } catch (e) {
      fill([]);
      mount(errEl, errorBox(e));
    }
  }

  // showForm shows the form that creates a project (p null) or renames p.
  function showForm(p) {
    mount(errEl);
    const name = h('input', { name: 'name', id: 'project-name', maxlength: 100, required: true, autocomplete: 'off', value: p ? p.name : '' });
    const desc = h('textarea', { name: 'description', id: 'project-description', rows: 2, maxlength: 2000, value: p ? p.description : '' });
    const cancel = () => { mount(formEl); (p ? renameBtn : newBtn).focus(); };
    const submit = async () => {
      const body = { name: name.value, description: desc.value };
      try {
        if (!p) {
          const made = await api('POST', '/content/projects', body);
          rememberProject(made.id);
          toast(`Project “${made.name}” created`);
          go(made.id);
          return;
        }
        const now = await api('PATCH', '/content/projects/' + encodeURIComponent(p.id), body, { headers: ifMatch(p.version) });
        toast(`Project renamed to “${now.name}”`);
        mount(formEl);
        mount(errEl);
        await reload();
      } catch (e) {
        mount(errEl, errorBox(e));
        name.focus();
      }
    };
    const form = h('form', { class: 'project-form', id: 'project-form', 'aria-label': p ? 'Rename the project' : 'New project' },
      h('div', { class: 'row' },
        field(p ? 'New name' : 'Name', name),
        field('Description (optional)', desc)),
      h('div', { class: 'row' },
        button(p ? 'Save' : 'Create project', submit, { id: 'project-save', class: 'primary' }),
        button('Cancel', cancel, { id: 'project-cancel' })));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); submit(); });
    name.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); submit(); } });
    mount(formEl, form);
    name.focus();
  }

  const other = h('input', { id: 'project-id', placeholder: 'acme or a UUID', spellcheck: 'false', autocomplete: 'off' });
  const open = () => {
    const v = other.value.trim();
    if (!PROJECT_ID.test(v)) {
      mount(errEl, errorBox(new Error('A project id is 1 to 100 letters, digits or . _ : -')));
      other.focus();
      return;
    }
    go(v);
  };
  other.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); open(); } });

  reload();
  return h('section', { class: 'card project-bar', 'aria-label': 'Project' },
    h('div', { class: 'row' },
      h('div', { class: 'field project-pick' }, h('label', { for: 'project-select' }, 'Project'), select, idNote),
      h('div', { class: 'row project-actions' }, renameBtn, newBtn)),
    formEl,
    h('details', { class: 'project-by-id' }, h('summary', {}, 'Open a project by id'),
      h('div', { class: 'row' }, field('Project id', other), button('Open', open, { id: 'project-open' }))),
    errEl);
}
