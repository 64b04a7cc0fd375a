// pages/repos/lists.js: the Repositories page's paged lists (commits, pull
// requests, activity, search results) and how one entry of each looks.

import { list } from '../../api.js';
import { h, mount, button, errorBox, loading, empty, when } from '../../ui.js';

// link is an http(s) URL from GitHub as a link, anything else as text, so
// that provider data can never make a javascript: link.
export function link(url, text) {
  return /^https?:\/\//i.test(url || '')
    ? h('a', { href: url, rel: 'noopener noreferrer', target: '_blank' }, text)
    : text;
}

const firstLine = (s) => String(s || '').split('\n')[0];

// commitEntry is one commit: short SHA, first line of the message, author,
// time, and with showRepo its repository (in search results).
export function commitEntry(c, showRepo = false) {
  return h('li', { class: 'entry commit', dataset: { sha: c.sha } },
    h('div', { class: 'entry-main' },
      link(c.html_url, h('code', {}, String(c.sha || '').slice(0, 7))), ' ',
      h('span', { class: 'message' }, firstLine(c.message))),
    h('small', {},
      [showRepo ? c.repository : '', c.author_login || c.author_name, when(c.committed_at)].filter(Boolean).join(' · ')));
}

// pullEntry is one pull request: number, title, state, branches.
export function pullEntry(p) {
  const [state, cls] = p.merged ? ['merged', 'ok'] : p.draft ? ['draft', ''] : p.state === 'open' ? ['open', 'warn'] : [p.state, 'bad'];
  return h('li', { class: 'entry pull', dataset: { number: p.number } },
    h('div', { class: 'entry-main' },
      h('span', { class: `badge ${cls}` }, state), ' ',
      link(p.html_url, `#${p.number}`), ' ',
      h('span', { class: 'message' }, p.title)),
    h('small', {}, `${p.author_login} · ${p.head_ref} → ${p.base_ref} · updated ${when(p.updated_at)}`));
}

// activityEntry is one entry of a repository's activity feed.
export function activityEntry(a) {
  return h('li', { class: 'entry activity', dataset: { id: a.id, kind: a.kind } },
    h('div', { class: 'entry-main' },
      h('span', { class: 'badge kind' }, a.action ? `${a.kind} · ${a.action}` : a.kind), ' ',
      h('span', { class: 'message' }, a.summary || `${a.actor} ${a.kind}`),
      a.url ? [' ', link(a.url, 'view')] : null),
    h('small', {},
      [a.actor, a.ref, a.sha ? a.sha.slice(0, 7) : '', when(a.at)].filter(Boolean).join(' · '), ' ',
      h('span', { class: `badge source ${a.source === 'webhook' ? 'ok' : ''}` }, a.source === 'webhook' ? 'webhook' : 'GitHub API')));
}

// paged is a list endpoint shown page by page with "Load more": it returns
// {el, reload()}. entry(item) draws an item; label names the list for
// screen readers.
export function paged(path, params, entry, { label, emptyText, id }) {
  const ul = h('ul', { class: 'entries', 'aria-label': label, id });
  const note = h('div', { class: 'paged-note', 'aria-live': 'polite' });
  const more = h('div', { class: 'row more' });
  let gen = 0;

  async function page(cursor) {
    const mine = gen;
    const r = await list(path, { ...params, cursor });
    if (mine !== gen) return; // reloaded meanwhile
    note.replaceChildren();
    if (cursor === undefined) ul.replaceChildren();
    ul.append(...r.items.map((item) => entry(item)));
    if (!ul.children.length) mount(note, empty(emptyText));
    mount(more, r.next_cursor ? button('Load more', () => page(r.next_cursor), { class: 'load-more', 'aria-label': `Load more ${label.toLowerCase()}` }) : null);
  }

  // reload reads the list again from its first page; what is shown stays
  // until the new page arrives, so the page does not jump.
  async function reload() {
    gen++;
    const mine = gen;
    if (!ul.children.length) mount(note, loading());
    ul.setAttribute('aria-busy', 'true');
    try { await page(undefined); } catch (e) { if (mine === gen) mount(note, errorBox(e)); }
    if (mine === gen) ul.removeAttribute('aria-busy');
  }
  reload();
  return { el: h('div', { class: 'paged' }, ul, note, more), reload };
}
