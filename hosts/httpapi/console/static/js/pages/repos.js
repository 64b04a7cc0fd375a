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
const notConfigured = (err) => err && err.status === 503 && err.problem && err.problem.code === 'not_configured';

// adminMust turns the server's "GitHub is not configured: set X and Y"
// into what an admin must do.
function adminMust(setup) {
  const what = String(setup || '').replace(/^.*?not configured:\s*/i, '').replace(/\.$/, '');
  if (!what) return 'An admin must set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (a GitHub OAuth app).';
  return /^set /i.test(what) ? `An admin must ${what} (a GitHub OAuth app).` : `An admin must fix this: ${what}.`;
}

const plural = (n) => `${n} repositor${n === 1 ? 'y' : 'ies'}`;

// connect starts the OAuth round trip: the authorize call sets the cookie
// that binds the flow to this browser, then the window goes to GitHub,
// which sends it back to the callback and from there to #/repos.
// onNotConfigured is called when the server says GitHub is not configured.
async function connect(onNotConfigured) {
  let r;
  try {
    r = await api('GET', '/scm-oauth/authorize?redirect_after=' + encodeURIComponent('/#/repos'), undefined,
      { headers: { Accept: 'application/json' } });
  } catch (e) {
    if (notConfigured(e)) { onNotConfigured(e.problem.detail); return; }
    throw e;
  }
  if (!/^https?:\/\//i.test(r.authorize_url || '')) throw new Error('The server answered an authorize URL that is not http(s).');
  sessionStorage.setItem(CONNECTING, '1');
  location.assign(r.authorize_url);
}

// render draws the page, with the repository args[0] (or the first) open.
// The connection card shows exactly one state, from GET /scm/connection:
// not configured (what an admin must set), not connected (Connect), or
// connected (login, scopes, how many repositories; broken says reconnect).
export function render(main, args) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const state = h('div', { class: 'gh-state', role: 'status', 'data-state': 'loading' }, loading('Checking the GitHub connection…'));
  const body = h('div', { class: 'repos-body' });
  main.append(h('h1', {}, title),
    h('section', { class: 'card gh-connection', 'aria-label': 'GitHub connection' }, state, errEl),
    body);

  const justConnected = sessionStorage.getItem(CONNECTING);
  sessionStorage.removeItem(CONNECTING);

  const show = (name, ...children) => {
    state.dataset.state = name;
    mount(state, h('div', { class: 'row' }, ...children));
  };
  const showNotConfigured = (setup) => {
    mount(errEl);
    mount(body);
    show('not-configured', h('span', { class: 'badge warn', id: 'gh-badge' }, 'Not configured'),
      h('span', {}, 'GitHub is not configured on this server. ',
        h('span', { class: 'hint', id: 'gh-setup' }, adminMust(setup))));
  };
  const connectBtn = (label, primary) =>
    button(label, () => connect(showNotConfigured), { class: primary ? 'primary' : '', id: 'gh-connect', errEl });

  api('GET', '/scm/connection').then((c) => {
    if (!c.configured) { showNotConfigured(c.setup); return; }
    if (!c.connected) {
      show('not-connected', h('span', { class: 'badge', id: 'gh-badge' }, 'Not connected'),
        h('span', {}, 'Connect your GitHub account to see your repositories.'), connectBtn('Connect GitHub', true));
      return;
    }
    const scopes = (c.scopes || []).length ? c.scopes.join(', ') : 'none named';
    if (c.status === 'broken') {
      show('broken', h('span', { class: 'badge bad', id: 'gh-badge' }, 'Broken'),
        h('span', {}, `GitHub no longer accepts the connection of ${c.login}: reconnect it.`), connectBtn('Reconnect GitHub', true));
      return;
    }
    show('connected', h('span', { class: 'badge ok', id: 'gh-badge' }, 'Connected'),
      h('span', {}, 'GitHub as ', h('strong', { id: 'gh-login' }, c.login), ` · ${plural(c.repositories)} · scopes: `,
        h('code', { id: 'gh-scopes' }, scopes)),
      connectBtn('Reconnect GitHub', false));
    if (justConnected) toast(`GitHub connected: ${plural(c.repositories)}.`);
    mount(body, loading('Loading the repositories…'));
    list('/scm/repos', { limit: 200 }).then((r) => mount(body, search(), repositories(r.items, args[0])),
      (e) => { mount(body); mount(errEl, errorBox(e)); });
  }, (e) => {
    show('error', '');
    mount(errEl, errorBox(e));
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
