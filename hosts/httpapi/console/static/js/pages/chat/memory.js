// pages/chat/memory.js: the assistant's memory: the standing instructions it
// follows for this user (GET/POST /api/v1/agent/memory/preferences), edited
// in a modal dialog.

import { api } from '../../api.js';
import { h, mount, loading, errorBox, empty, toast, button, when } from '../../ui.js';

const MAX = 50;

// openMemory shows the memory dialog (appended to host) and loads the list.
export function openMemory(host) {
  const err = h('div');
  const list = h('ol', { class: 'memory-list' });
  const body = h('div', { class: 'memory-body' }, loading());
  const updated = h('p', { class: 'memory-updated' });
  const dialog = h('dialog', { class: 'memory', 'aria-labelledby': 'memory-title' });
  let n = 0;

  const row = (text) => {
    const id = `memory-${++n}`;
    const input = h('textarea', { id, rows: '2', maxlength: '500', class: 'memory-instruction' }, text || '');
    const li = h('li', {},
      h('label', { for: id }, 'Instruction'),
      h('div', { class: 'memory-row' }, input,
        h('button', { type: 'button', class: 'memory-remove', onclick: () => { li.remove(); renumber(); } }, 'Remove')));
    list.append(li);
    renumber();
    return input;
  };
  const renumber = () => {
    [...list.children].forEach((li, i) => {
      li.querySelector('label').textContent = `Instruction ${i + 1}`;
      li.querySelector('.memory-remove').setAttribute('aria-label', `Remove instruction ${i + 1}`);
    });
    if (!list.children.length) list.replaceWith(emptyNote); else if (emptyNote.isConnected) emptyNote.replaceWith(list);
  };
  const emptyNote = empty('No instructions yet. Add one, such as “Answer in French” or “Prefer the staging cluster”.');

  const add = h('button', { type: 'button', class: 'memory-add', onclick: () => {
    if (list.children.length >= MAX) { toast(`At most ${MAX} instructions.`); return; }
    if (emptyNote.isConnected) emptyNote.replaceWith(list);
    row('').focus();
  } }, 'Add instruction');

  const save = button('Save', async () => {
    const prefs = [...list.querySelectorAll('textarea')].map((t) => t.value.trim()).filter(Boolean).map((instruction) => ({ instruction }));
    const out = await api('POST', '/api/v1/agent/memory/preferences', { preferences: prefs });
    toast(`Memory saved: ${out.preferences.length} instruction${out.preferences.length === 1 ? '' : 's'}.`);
    dialog.close();
  }, { class: 'primary', errEl: err });

  mount(dialog,
    h('h2', { id: 'memory-title' }, 'Memory'),
    h('p', { class: 'memory-hint' }, 'Standing instructions the assistant follows in every chat and voice session.'),
    body, err,
    h('div', { class: 'row memory-actions' }, add, h('span', { class: 'memory-gap' }),
      h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel'), save));
  dialog.addEventListener('close', () => dialog.remove());
  host.append(dialog);
  dialog.showModal();

  (async () => {
    try {
      const out = await api('GET', '/api/v1/agent/memory/preferences');
      mount(body, list, updated);
      for (const p of out.preferences) row(p.instruction);
      renumber();
      updated.textContent = out.updated_at ? `Last changed ${when(out.updated_at)}.` : '';
    } catch (e) {
      mount(body, errorBox(e));
    }
  })();
  return dialog;
}
