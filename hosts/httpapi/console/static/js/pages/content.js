// pages/content.js: the Content page (#/content/<project id>): a project
// picker by name (content/projects.js), the project's brand settings, its briefs with Generate, and its
// content items as a board by lifecycle status. The page follows the items
// being written on their progress streams (GET /content/{id}/events) and
// reads the board again as each one is done.

import { list, stream } from '../api.js';
import { h, mount, button, errorBox, empty, toast } from '../ui.js';
import { brandSection } from './content/brand.js';
import { briefsSection } from './content/briefs.js';
import { board, itemDialog } from './content/board.js';
import { targetsSection } from './content/targets.js';
import { PROJECT_ID, recentProjects, rememberProject } from './content/util.js';
import { projectBar } from './content/projects.js';

export const title = 'Content';

const RETRY_MS = 2000;
// MAX_STREAMS bounds the items followed at once: a browser holds at most six
// HTTP/1.1 connections to a host, and the page needs some for its requests.
// The others are followed as those end.
const MAX_STREAMS = 3;

// render draws the page for the project in args[0] (or the last one used)
// and returns the cleanup that hangs up its streams.
export function render(main, args) {
  const pid = args[0] && PROJECT_ID.test(args[0]) ? args[0] : recentProjects()[0] || '';
  if (pid) rememberProject(pid);
  main.append(h('h1', {}, title), projectBar(pid));
  if (!pid) {
    main.append(h('section', { class: 'card' }, empty('Pick a project above, or create a new one with a name: brand settings, briefs and drafts belong to a project.')));
    return undefined;
  }

  let stopped = false;
  let timer = 0;
  let wasWriting = 0;
  const following = new Map(); // item id → the AbortController of its stream
  const boardErr = h('div', { 'aria-live': 'assertive' });
  const dialog = itemDialog(() => refresh());
  const b = board((item) => dialog.open(item));
  const boardNote = h('p', { class: 'board-note loading', role: 'status' }, 'Loading content…');

  // follow opens the progress streams of items being written (up to
  // MAX_STREAMS); an item's stream ends once it is written, and the board is
  // read again.
  function follow(items) {
    for (const i of items) {
      if (i.status !== 'generating' || following.has(i.id) || following.size >= MAX_STREAMS) continue;
      const ctl = new AbortController();
      following.set(i.id, ctl);
      let done = false;
      stream(`/content/${encodeURIComponent(i.id)}/events`, undefined, (ev) => {
        if (ev.event === 'item' && ev.data.status !== 'generating') { done = true; ctl.abort(); }
      }, { signal: ctl.signal }).catch(() => {}).finally(() => {
        following.delete(i.id);
        if (stopped) return;
        if (done) refresh();
        else timer = setTimeout(refresh, RETRY_MS); // dropped: read the board, follow again
      });
    }
  }

  // refresh reads the project's items, redraws the board and follows the
  // items being written.
  async function refresh() {
    clearTimeout(timer);
    if (stopped) return;
    try {
      const r = await list('/content', { project_id: pid, limit: 200 });
      if (stopped) return;
      boardErr.replaceChildren();
      b.show(r.items);
      r.items.forEach((i) => dialog.update(i));
      const writing = r.items.filter((i) => i.status === 'generating').length;
      mount(boardNote, writing
        ? h('span', { class: 'loading' }, `Writing ${writing} draft${writing > 1 ? 's' : ''}…`)
        : (r.items.length ? '' : 'No content yet: generate drafts from a brief.'));
      if (writing) follow(r.items);
      else if (wasWriting) toast('The drafts are written: see them on the board.');
      wasWriting = writing;
    } catch (e) {
      if (stopped) return;
      mount(boardErr, errorBox(e));
      timer = setTimeout(refresh, RETRY_MS * 3);
    }
  }

  main.append(
    h('section', { class: 'board-wrap', 'aria-labelledby': 'board-title' },
      h('div', { class: 'row board-head' },
        h('h2', { id: 'board-title' }, 'Content board'),
        button('Refresh', refresh, { id: 'board-refresh' })),
      boardNote, boardErr, b.el),
    h('div', { class: 'content-top' },
      briefsSection(pid, () => refresh()),
      brandSection(pid)),
    targetsSection(pid),
    dialog.el);
  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
    following.forEach((ctl) => ctl.abort());
    if (dialog.el.open) dialog.el.close();
  };
}
