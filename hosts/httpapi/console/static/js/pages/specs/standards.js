// pages/specs/standards.js: the organisation's standards, which every
// generation of the stages they apply to follows. Admins add, edit and
// delete them; members read them.

import { api, list } from '../../api.js';
import { h, mount, loading, empty, errorBox, toast, field, button, when, confirmAction } from '../../ui.js';
import { render as md } from '../../md.js';
import { me } from '../../app.js';

export const STAGES = ['scope', 'prd', 'epics', 'stories', 'prps'];

const isAdmin = () => !!(me && me.user && me.user.role === 'admin');

// standardsView renders the standards section into el.
export function standardsView(el) {
  const listEl = h('div', { class: 'std-list' }, loading('Loading standards…'));
  const formSlot = h('div');
  mount(el,
    h('h2', { id: 'std-title' }, 'Standards'),
    h('p', { class: 'muted' }, 'Rules every generation of the stages they apply to follows (naming, security, accessibility, …).'),
    isAdmin() ? formSlot : h('p', { class: 'notice', role: 'note' }, 'Only an organisation admin can change standards; you can read them.'),
    listEl);

  async function reload() {
    try {
      const items = [];
      let cursor = null;
      do { // standards are few; the list is one page, but follow a cursor should one come
        const page = await list('/pse/standards', { limit: 200, cursor });
        items.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor);
      mount(listEl, items.length === 0
        ? empty(isAdmin() ? 'No standards yet: add the first one above.' : 'Your organisation has no standards yet.')
        : h('ul', { class: 'list std-items', 'aria-label': 'Standards' }, items.map(item)));
    } catch (err) {
      mount(listEl, errorBox(err));
    }
  }

  function item(s) {
    const actions = isAdmin() ? h('div', { class: 'row' },
      button('Edit', () => { showForm(s); formSlot.querySelector('input').focus(); }, { class: 'std-edit' }),
      deleteButton(s)) : null;
    return h('li', { class: 'card std', dataset: { id: s.id } },
      h('div', { class: 'row std-head' },
        h('h3', { class: 'std-name' }, s.title),
        h('span', { class: 'std-applies' }, 'Applies to: ', s.applies_to.map((st) => h('span', { class: 'badge' }, st))),
        h('small', { class: 'muted' }, 'Updated ', when(s.updated_at))),
      h('div', { class: 'doc std-body' }, md(s.body)),
      actions);
  }

  // deleteButton asks once more in the page (no window.confirm) before deleting.
  function deleteButton(s) {
    return button('Delete', async () => {
      if (!await confirmAction({ title: 'Delete the standard?', text: `Delete the standard “${s.title}”? Specifications stop being checked against it.` })) return;
      await api('DELETE', `/pse/standards/${encodeURIComponent(s.id)}`);
      toast(`Standard “${s.title}” deleted.`);
      await reload();
    }, { class: 'std-delete' });
  }

  function showForm(existing) {
    const err = h('div', { 'aria-live': 'assertive' });
    const title = h('input', { name: 'std-title', required: true, maxlength: 200, value: existing ? existing.title : '' });
    const body = h('textarea', { name: 'std-body', required: true, maxlength: 20000, rows: 5 }, existing ? existing.body : '');
    const boxes = STAGES.map((s) => h('input', { type: 'checkbox', name: 'std-stage', value: s, checked: existing ? existing.applies_to.includes(s) : true }));
    const form = h('form', { class: 'card std-form', 'aria-label': existing ? 'Edit standard' : 'Add a standard' },
      h('h3', {}, existing ? `Edit “${existing.title}”` : 'Add a standard'),
      field('Title', title),
      field('Body (Markdown)', body, 'What generations must follow.'),
      h('fieldset', { class: 'std-stages' }, h('legend', {}, 'Applies to'),
        boxes.map((b) => h('label', { class: 'check' }, b, ' ', b.value))),
      h('div', { class: 'row' },
        h('button', { type: 'submit', class: 'primary' }, existing ? 'Save standard' : 'Add standard'),
        existing ? h('button', { type: 'button', onclick: () => showForm(null) }, 'Cancel') : null),
      err);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const applies = boxes.filter((b) => b.checked).map((b) => b.value);
      if (applies.length === 0) { mount(err, errorBox(new Error('Choose at least one stage the standard applies to.'))); return; }
      const submit = form.querySelector('button[type="submit"]');
      submit.disabled = true;
      try {
        const req = { title: title.value, body: body.value, applies_to: applies };
        if (existing) await api('PUT', `/pse/standards/${encodeURIComponent(existing.id)}`, req);
        else await api('POST', '/pse/standards', req);
        toast(existing ? `Standard “${req.title}” saved.` : `Standard “${req.title}” added.`);
        showForm(null);
        await reload();
      } catch (e) {
        mount(err, errorBox(e));
      } finally { submit.disabled = false; }
    });
    mount(formSlot, form);
  }

  if (isAdmin()) showForm(null);
  reload();
}
