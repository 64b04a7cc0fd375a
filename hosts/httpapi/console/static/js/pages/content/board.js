// pages/content/board.js: content items as a board by lifecycle status,
// and an item's dialog: its body rendered as Markdown (never as HTML), its
// brand checks, editing, status moves and deletion, each write sent with
// If-Match so that a stale one shows as a conflict.

import { api } from '../../api.js';
import { h, mount, field, button, errorBox, toast, when, confirmAction } from '../../ui.js';
import { render as md } from '../../md.js';
import { STATUSES, MOVES, statusLabel, checkLabel, ifMatch, isConflict } from './util.js';
import { publishPanel } from './publish.js';
import { madeBy } from './who.js';

// checkBadges are an item's brand checks as badges ("checks passed" when none).
function checkBadges(item) {
  if (item.status === 'generating') return [h('span', { class: 'badge' }, 'Writing…')];
  if (item.status === 'failed') return [h('span', { class: 'badge bad' }, 'Failed')];
  if (!item.checks || item.checks.length === 0) return [h('span', { class: 'badge ok' }, 'Brand checks passed')];
  return item.checks.map((c) => {
    const [label, sev] = checkLabel(c);
    return h('span', { class: `badge ${sev} check`, title: c.message, dataset: { kind: c.kind } }, label);
  });
}

// board returns {el, show(items)}: the board, and how to redraw it;
// open(item) is called when a card is opened.
export function board(open) {
  const cols = new Map();
  const el = h('div', { class: 'board', role: 'region', 'aria-label': 'Content items by status', tabindex: 0 },
    STATUSES.map(([st, label]) => {
      const count = h('span', { class: 'badge count' }, '0');
      const ul = h('ul', { class: 'board-list', 'aria-labelledby': `col-${st}` });
      cols.set(st, { ul, count });
      return h('section', { class: 'board-col', dataset: { status: st } },
        h('h3', { id: `col-${st}` }, label, ' ', count), ul);
    }));

  function card(item) {
    return h('li', { class: 'content-card', dataset: { id: item.id, status: item.status } },
      h('button', { type: 'button', class: 'card-open', onclick: () => open(item) }, item.title || 'Untitled draft'),
      h('div', { class: 'checks' }, checkBadges(item)),
      h('small', { title: `Updated ${when(item.updated_at)}` }, item.variant ? `Variant ${item.variant} · ` : '', `version ${item.version}`),
      madeBy(item) ? h('small', { class: 'made-by' }, madeBy(item)) : null,
      item.published_via ? h('small', { class: 'card-published', dataset: { via: item.published_via } },
        item.published_via === 'elsewhere' ? 'Published elsewhere' : 'Published via a target') : null);
  }

  function show(items) {
    for (const [st, { ul, count }] of cols) {
      const mine = items.filter((i) => i.status === st);
      count.textContent = String(mine.length);
      count.setAttribute('aria-label', `${mine.length} item${mine.length === 1 ? '' : 's'}`);
      mount(ul, mine.length ? mine.map(card) : h('li', { class: 'empty' }, 'None'));
    }
  }
  return { el, show };
}

// itemDialog returns {el, open(item), update(item)}: a modal dialog showing
// one item. onChanged() is called after a write so the board can refresh.
export function itemDialog(onChanged) {
  const dlg = h('dialog', { class: 'content-item', 'aria-labelledby': 'item-title' });
  let item = null;
  let panel = null; // the publishing panel, which polls while a publication runs
  dlg.addEventListener('close', () => { if (panel) panel.stop(); });

  function conflict() {
    return h('div', { class: 'error conflict', role: 'alert' },
      h('strong', {}, 'Version conflict. '),
      `Someone else changed this item after you opened it (you edited version ${item.version}). `,
      'Nothing was saved. Reload to see theirs.',
      h('div', { class: 'row' }, button('Reload item', reload, { class: 'primary' })));
  }

  async function reload() {
    show(await api('GET', `/content/${item.id}`));
    toast('Item reloaded.');
  }

  async function put(body, errEl, done) {
    errEl.replaceChildren();
    try {
      const next = await api('PUT', `/content/${item.id}`, body, { headers: ifMatch(item.version) });
      show(next);
      toast(done(next));
      onChanged();
    } catch (e) {
      if (isConflict(e)) mount(errEl, conflict());
      else if (e.status === 409 && e.problem.code === 'brand_findings') mount(errEl, anyway(body, errEl, done, e));
      else mount(errEl, errorBox(e));
    }
  }

  // anyway asks for the reason to approve or publish despite the brand
  // findings the server listed, and sends body again with it.
  function anyway(body, errEl, done, err) {
    const reason = h('input', { name: 'override-reason', maxlength: 500, required: true, placeholder: 'Why it may go out as it is' });
    return h('div', { class: 'error', role: 'alert' },
      h('strong', {}, 'The brand checks found problems. '), err.message,
      h('form', { 'aria-label': 'Go ahead anyway', class: 'override' },
        field('Reason (recorded with your name)', reason, '3 to 500 characters.'),
        h('div', { class: 'row' },
          button(body.status === 'approved' ? 'Approve anyway' : 'Publish anyway',
            () => put({ ...body, override: { reason: reason.value } }, errEl, done), { class: 'danger', id: 'item-override' }))));
  }

  // elsewhere is the form that marks an approved item published elsewhere,
  // with the URL it is at.
  function elsewhere(errEl) {
    const url = h('input', { name: 'published-url', type: 'url', maxlength: 2048, placeholder: 'https://…' });
    return h('details', { class: 'item-elsewhere' }, h('summary', {}, 'Mark as published elsewhere…'),
      h('form', { 'aria-label': 'Mark as published elsewhere' },
        field('Where it is published', url, 'Publishing through a target sets this by itself.'),
        h('div', { class: 'row' }, button('Mark as published', () => put({ status: 'published', published_url: url.value.trim() }, errEl,
          () => 'Marked as published.'), { class: 'primary', id: 'item-published-elsewhere' }))));
  }

  function show(it) {
    item = it;
    if (panel) panel.stop();
    panel = it.status === 'generating' || it.status === 'failed' ? null : publishPanel(it, async () => {
      onChanged();
      if (dlg.open && item && item.id === it.id) {
        try { show(await api('GET', `/content/${it.id}`)); } catch (_) { /* the board shows errors */ }
      }
    });
    const errEl = h('div', { class: 'item-errors', 'aria-live': 'assertive' });
    const editable = ['draft', 'in_review', 'approved'].includes(it.status);
    const title = h('input', { name: 'title', value: it.title, maxlength: 200 });
    const body = h('textarea', { name: 'body', rows: 12, value: it.body });
    const delBtn = button('Delete…', async () => {
      if (!await confirmAction({ title: 'Delete the item?', text: `Delete “${it.title || 'this item'}” for good? This cannot be undone.` })) return;
      await api('DELETE', `/content/${it.id}`);
      dlg.close();
      toast(`Deleted “${it.title || 'the item'}”.`);
      onChanged();
    }, { class: 'danger', id: 'item-delete', errEl });

    const moves = [...(MOVES[it.status] || []), ...(it.status !== 'archived' ? [['archived', 'Archive']] : [])];
    mount(dlg,
      h('header', { class: 'item-head' },
        h('h2', { id: 'item-title' }, it.title || 'Untitled draft'),
        h('button', { type: 'button', class: 'close', 'aria-label': 'Close', onclick: () => dlg.close() }, '×')),
      h('p', { class: 'row item-meta' },
        h('span', { class: 'badge status' }, statusLabel(it.status)),
        h('small', {}, `Version ${it.version}`),
        madeBy(it) ? h('small', { class: 'made-by' }, madeBy(it)) : null,
        panel ? h('small', {}, panel.line) : null,
        it.override ? h('small', {}, `Brand findings overridden: ${it.override.reason}`) : null,
        h('small', {}, `Updated ${when(it.updated_at)}`)),
      it.error ? h('div', { class: 'error', role: 'alert' }, h('strong', {}, 'Generation failed: '), it.error.message, ` (${it.error.code})`) : null,
      h('section', { 'aria-label': 'Brand checks', class: 'item-checks' },
        h('h3', {}, 'Brand checks'),
        it.status === 'generating' ? h('p', { class: 'loading', role: 'status' }, 'This draft is still being written…')
          : (it.checks || []).length
            ? h('ul', {}, it.checks.map((c) => h('li', {}, h('span', { class: `badge ${checkLabel(c)[1]}` }, checkLabel(c)[0]), ' ', c.message)))
            : h('p', {}, h('span', { class: 'badge ok' }, 'Passed'), ' Nothing in this draft goes against the brand.')),
      h('article', { class: 'content-body', 'aria-label': 'Body' }, md(it.body)),
      moves.length ? h('div', { class: 'row item-moves', role: 'group', 'aria-label': 'Move to' },
        moves.map(([to, label]) => button(label, () => put({ status: to }, errEl, (n) => `Moved to ${statusLabel(n.status)}.`),
          { class: to === 'archived' ? '' : 'primary', dataset: { to } }))) : null,
      panel ? panel.el : null,
      it.status === 'approved' ? elsewhere(errEl) : null,
      editable ? h('details', { class: 'item-edit' }, h('summary', {}, 'Edit title and body'),
        h('form', { 'aria-label': 'Edit item' },
          field('Title', title),
          field('Body', body, 'Markdown.'),
          h('div', { class: 'row' }, button('Save changes', () => put({ title: title.value, body: body.value }, errEl,
            (n) => `Saved (version ${n.version}).`), { class: 'primary', id: 'item-save' })))) : null,
      errEl,
      h('div', { class: 'row item-foot' }, delBtn));
  }

  return {
    el: dlg,
    // open shows item in the dialog, fetched afresh.
    async open(it) {
      delete dlg.dataset.loaded;
      show(it);
      if (!dlg.open) dlg.showModal();
      const shown = item;
      try {
        const fresh = await api('GET', `/content/${it.id}`);
        // Redrawn only when it changed since the board was read, and no
        // write redrew it meanwhile: a redraw drops what was typed.
        if (item === shown && fresh.version !== shown.version) show(fresh);
        dlg.dataset.loaded = it.id;
      } catch (e) {
        mount(dlg, errorBox(e), h('button', { type: 'button', onclick: () => dlg.close() }, 'Close'));
      }
    },
    // update redraws the dialog when it shows item it and that item was
    // still being written.
    update(it) {
      if (dlg.open && item && item.id === it.id && item.status === 'generating' && it.status !== 'generating') show(it);
    },
  };
}
