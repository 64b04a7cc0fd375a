// pages/repos.js: the Repositories page (#/repos/<repo id>): the GitHub
// connection (connecting is the OAuth round trip through GitHub and back
// here), commit search, the connected repositories, and one repository's
// activity feed, commits and pull requests.

import { api, list } from '../api.js';
import { h, mount, button, errorBox, loading, empty, field, toast } from '../ui.js';
import { link, paged, commitEntry, pullEntry, activityEntry } from './repos/lists.js';

export const title = 'Repositories';

const CONNECTING = 'devpilot.repos.connecting';
const PAGE = 20;

// notConfigured reports whether err says the server has no GitHub settings.
const notConfigured = (err) => err && err.status === 503 && err.problem.code === 'not_configured';

// connect starts the OAuth round trip: the authorize call sets the cookie
// that binds the flow to this browser, then the window goes to GitHub,
// which sends it back to the callback and from there to #/repos.
async function connect(errEl) {
  let r;
  try {
    r = await api('GET', '/scm-oauth/authorize?redirect_after=' + encodeURIComponent('/#/repos'), undefined,
      { headers: { Accept: 'application/json' } });
  } catch (e) {
    if (notConfigured(e)) {
      mount(errEl, h('div', { class: 'error', role: 'alert' }, 'GitHub is not configured on this server.'));
      return;
    }
    throw e;
  }
  if (!/^https?:\/\//i.test(r.authorize_url || '')) throw new Error('The server answered an authorize URL that is not http(s).');
  sessionStorage.setItem(CONNECTING, '1');
  location.assign(r.authorize_url);
}

// render draws the page, with the repository args[0] (or the first) open.
export function render(main, args) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const state = h('p', { class: 'gh-state', role: 'status' }, loading('Checking the GitHub connection…'));
  const connectBtn = button('Connect GitHub', () => connect(errEl), { class: 'primary', id: 'gh-connect', errEl });
  const body = h('div', { class: 'repos-body' });
  main.append(h('h1', {}, title),
    h('section', { class: 'card gh-connection', 'aria-label': 'GitHub connection' },
      h('div', { class: 'row' }, state, connectBtn), errEl),
    body);

  const justConnected = sessionStorage.getItem(CONNECTING);
  sessionStorage.removeItem(CONNECTING);

  list('/scm/repos', { limit: 200 }).then((r) => {
    const n = r.items.length;
    mount(state, h('span', { class: 'badge ok' }, 'Connected'), ` to GitHub: ${n} repositor${n === 1 ? 'y' : 'ies'}.`);
    connectBtn.textContent = 'Reconnect GitHub';
    connectBtn.classList.remove('primary');
    if (justConnected) toast(`GitHub connected: ${n} repositor${n === 1 ? 'y' : 'ies'}.`);
    mount(body, search(), repositories(r.items, args[0]));
  }, (e) => {
    if (e.status === 412) {
      mount(state, 'GitHub is not connected yet: connect it to see your repositories.');
    } else if (notConfigured(e)) {
      mount(state, 'GitHub is not configured on this server.');
      connectBtn.hidden = true;
    } else if (e.status === 502 && e.problem.code === 'connection_broken') {
      mount(state, h('span', { class: 'badge bad' }, 'Broken'), ' GitHub refused the connection: reconnect it.');
      mount(errEl, errorBox(e));
    } else {
      mount(state, '');
      mount(errEl, errorBox(e));
    }
  });
}

// search is the commit search form and its results.
function search() {
  const q = h('input', { type: 'search', name: 'q', maxlength: 256, placeholder: 'fix, checkout, author:ana-lopez', id: 'commit-q' });
  const results = h('div', { class: 'search-results' });
  const run = () => {
    const v = q.value.trim();
    if (!v) { q.focus(); return; }
    mount(results, h('h3', { id: 'search-title' }, `Commits matching “${v}”`),
      paged('/scm/commits/search', { q: v, limit: PAGE }, (c) => commitEntry(c, true),
        { label: 'Search results', emptyText: 'No commit matches.', id: 'commit-results' }).el);
  };
  const form = h('form', { class: 'card commit-search', role: 'search', 'aria-label': 'Commit search' },
    h('div', { class: 'row' }, field('Search commits', q), h('button', { type: 'submit', class: 'primary' }, 'Search')),
    results);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); run(); });
  return form;
}

// repositories is the repository list beside the open repository.
function repositories(repos, wanted) {
  if (!repos.length) return h('section', { class: 'card' }, empty('The connection sees no repositories.'));
  const detail = h('div', { class: 'repo-detail' });
  const links = new Map();
  const select = (r, focus) => {
    for (const [id, a] of links) a.setAttribute('aria-current', id === r.id ? 'true' : 'false');
    history.replaceState(null, '', '#/repos/' + encodeURIComponent(r.id));
    mount(detail, repository(r));
    if (focus) detail.querySelector('h2').focus();
  };
  const nav = h('nav', { class: 'repo-nav', 'aria-label': 'Repositories' },
    h('ul', { class: 'list repo-list' }, repos.map((r) => {
      const a = h('a', { href: '#/repos/' + encodeURIComponent(r.id), dataset: { id: r.id } },
        h('strong', {}, r.full_name), r.private ? h('span', { class: 'badge' }, 'private') : null,
        r.description ? h('small', {}, r.description) : null);
      a.addEventListener('click', (ev) => { ev.preventDefault(); select(r, true); });
      links.set(r.id, a);
      return h('li', {}, a);
    })));
  select(repos.find((r) => r.id === wanted) || repos[0], false);
  return h('div', { class: 'split repos-split' }, nav, detail);
}

// repository is one repository: its activity feed, commits and pull requests.
function repository(r) {
  const base = `/scm/repos/${encodeURIComponent(r.id)}`;
  const activity = paged(base + '/activity', { limit: PAGE }, activityEntry,
    { label: 'Activity', emptyText: 'No activity yet.', id: 'activity' });
  const commits = paged(base + '/commits', { limit: PAGE }, commitEntry,
    { label: 'Commits', emptyText: 'No commits.', id: 'commits' });
  const pulls = paged(base + '/pulls', { limit: PAGE }, pullEntry,
    { label: 'Pull requests', emptyText: 'No pull requests.', id: 'pulls' });
  return h('article', { class: 'repo', 'aria-labelledby': 'repo-title', dataset: { id: r.id } },
    h('header', { class: 'repo-head' },
      h('h2', { id: 'repo-title', tabindex: -1 }, link(r.html_url, r.full_name)),
      r.description ? h('p', {}, r.description) : null,
      h('p', { class: 'row' },
        h('span', { class: 'badge' }, r.default_branch || 'main'),
        r.private ? h('span', { class: 'badge warn' }, 'private') : h('span', { class: 'badge' }, 'public'))),
    h('section', { class: 'card repo-activity', 'aria-labelledby': 'activity-title' },
      h('div', { class: 'row section-head' }, h('h3', { id: 'activity-title' }, 'Activity'),
        button('Refresh', () => activity.reload(), { id: 'activity-refresh', 'aria-label': 'Refresh the activity' })),
      activity.el),
    h('div', { class: 'repo-lists' },
      h('section', { class: 'card', 'aria-labelledby': 'commits-title' }, h('h3', { id: 'commits-title' }, 'Commits'), commits.el),
      h('section', { class: 'card', 'aria-labelledby': 'pulls-title' }, h('h3', { id: 'pulls-title' }, 'Pull requests'), pulls.el)));
}
