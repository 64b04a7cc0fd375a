// pages/cloud/apps.js: the Apps section: the hosted (Amplify) apps of every
// account of the org, deploying one behind a confirmation dialog, each
// branch's builds (paged), and a build's status and step logs, refreshed
// while the build runs.

import { api } from '../../api.js';
import { h, mount, loading, empty, errorBox, field, toast, when, details } from '../../ui.js';
import { url, seg, badge } from './common.js';
import { confirmDialog } from './dialog.js';

const DONE = new Set(['SUCCEED', 'FAILED', 'CANCELLED']);

// renderApps shows the apps in el; buildId, when given with appId, opens
// that build (#/cloud/apps/APP/BUILD).
export async function renderApps(el, ctx, appId, buildId) {
  const list = h('div', { class: 'app-list' }, loading('Loading apps…'));
  mount(el, h('h2', {}, 'Apps'), list);
  let r;
  try {
    r = await api('GET', url('/deployments/apps'), undefined, { signal: ctx.signal });
  } catch (e) {
    if (e.name !== 'AbortError') mount(list, errorBox(e));
    return;
  }
  const names = new Map(ctx.accounts.map((a) => [a.id, a.name]));
  const failed = r.failed_accounts || [];
  const apps = r.items || [];
  mount(list,
    failed.length ? h('div', { class: 'notice', role: 'status' },
      h('strong', {}, 'Some accounts could not be listed:'),
      h('ul', {}, failed.map((f) => h('li', {}, `${f.name || f.account_id}: ${f.error || f.code}`)))) : null,
    apps.length ? apps.map((a) => appCard(a, ctx, names, a.id === appId ? buildId : null)) : empty('No hosted apps in any account.'));
}

function appCard(a, ctx, names, buildId) {
  const id = `app-${a.id}`.replace(/[^A-Za-z0-9_-]/g, '-');
  const builds = h('div', { class: 'builds' });
  const card = h('article', { class: 'card app', id, 'data-app': a.id, 'aria-labelledby': id + '-name' },
    h('div', { class: 'row head' }, h('h3', { id: id + '-name' }, a.name || a.id), h('span', { class: 'badge' }, a.platform || 'WEB')),
    h('dl', { class: 'kv' },
      h('div', {}, h('dt', {}, 'App id'), h('dd', {}, h('code', {}, a.id))),
      h('div', {}, h('dt', {}, 'Account'), h('dd', {}, names.get(a.account_id) || a.account_id || '')),
      a.repository ? h('div', {}, h('dt', {}, 'Repository'), h('dd', {}, a.repository)) : null,
      a.default_domain ? h('div', {}, h('dt', {}, 'Domain'), h('dd', {}, a.default_domain)) : null,
      h('div', {}, h('dt', {}, 'Branches'), h('dd', {}, (a.branches || []).join(', ') || '–')),
      a.updated_at ? h('div', {}, h('dt', {}, 'Updated'), h('dd', {}, when(a.updated_at))) : null),
    h('div', { class: 'row actions' },
      h('button', { type: 'button', class: 'primary', 'data-action': 'deploy', onClick: () => deployDialog(a, ctx, names, builds) }, 'Deploy…')),
    buildLists(a, ctx, builds),
    builds);
  if (buildId) showBuild(builds, a, ctx, buildId);
  return card;
}

// buildLists shows the builds of each of the app's branches, newest first,
// a page at a time; Open shows one in builds.
function buildLists(a, ctx, builds) {
  const branches = a.branches || [];
  if (branches.length === 0) return h('p', { class: 'empty' }, 'No branches, so no builds.');
  return h('div', { class: 'branch-builds' }, branches.map((b) => branchBuilds(a, ctx, b, builds)));
}

function branchBuilds(a, ctx, branch, builds) {
  const rows = h('tbody', {});
  const more = h('div', { class: 'row more' });
  const state = h('div', { 'aria-live': 'polite' }, loading('Loading builds…'));
  const table = h('div', { class: 'table-scroll' }, h('table', { class: 'builds-table' },
    h('caption', { class: 'sr-only' }, `Builds of ${a.name || a.id}, branch ${branch}`),
    h('thead', {}, h('tr', {}, ['Build', 'Status', 'Commit', 'Started', 'Ended'].map((c) => h('th', { scope: 'col' }, c)))),
    rows));
  const load = async (cursor) => {
    mount(more);
    let r;
    try {
      r = await api('GET', url(`/deployments/apps/${seg(a.id)}/builds`, { account_id: a.account_id, branch, limit: 10, cursor }), undefined, { signal: ctx.signal });
    } catch (e) {
      if (e.name !== 'AbortError') mount(state, errorBox(e));
      return;
    }
    mount(state);
    for (const b of r.items || []) {
      rows.append(h('tr', { 'data-build': b.id },
        // The build's id opens it: first, so it stays on screen on a phone.
        h('td', {}, h('button', { type: 'button', 'data-action': 'open-build', 'aria-label': `Open build ${b.id} of ${branch}`,
          onClick: () => showBuild(builds, a, ctx, b.id, null, branch) }, `Open ${b.id}`)),
        h('td', {}, badge(b.status)),
        h('td', { class: 'commit' }, h('code', {}, String(b.commit_id || '').slice(0, 12)), b.commit_message ? ' ' + b.commit_message : ''),
        h('td', {}, when(b.started_at)),
        h('td', {}, b.ended_at ? when(b.ended_at) : '–')));
    }
    if (!rows.firstChild) mount(state, h('p', { class: 'empty' }, 'No builds of this branch yet.'));
    if (r.next_cursor) {
      const btn = h('button', { type: 'button', 'data-action': 'more-builds' }, 'More builds');
      btn.addEventListener('click', () => {
        const last = rows.lastElementChild;
        load(r.next_cursor).then(() => (last?.nextElementSibling || last)?.querySelector('button')?.focus());
      });
      mount(more, btn);
    }
  };
  load();
  return details(`Builds of ${branch}`, [table, state, more], { class: 'branch-builds-list', open: true, dataset: { branch } });
}

function deployDialog(a, ctx, names, builds) {
  const branches = a.branches || [];
  const branch = h('select', { name: 'branch' }, branches.map((b) => h('option', { value: b }, b)));
  confirmDialog({
    id: 'app-deploy-dialog',
    title: `Deploy ${a.name || a.id}`,
    body: [h('p', {}, `Build and deploy app ${a.name || a.id} (account ${names.get(a.account_id) || a.account_id}) from its branch's latest commit?`),
      branches.length > 1 ? field('Branch', branch) : h('p', {}, `Branch: ${branches[0] || '(the app\'s only one)'}`)],
    confirmLabel: 'Deploy',
    onConfirm: async () => {
      const body = { account_id: a.account_id };
      if (branches.length > 1) body.branch = branch.value;
      const r = await api('POST', url(`/deployments/apps/${seg(a.id)}/deploy`), body);
      toast(`Build ${r.job_id || ''} of ${a.name || a.id} (${r.branch}) started: ${r.status}.`);
      return r;
    },
  }).then((r) => {
    if (!r) return;
    // The build gets an address of its own, without leaving the page.
    history.replaceState(null, '', `#/cloud/apps/${seg(a.id)}/${seg(r.build_id)}`);
    showBuild(builds, a, ctx, r.build_id, r);
  });
}

// showBuild shows build buildId of app a in el, polling every 2 s until it
// finishes (or the page is left).
function showBuild(el, a, ctx, buildId, started, branch) {
  const status = h('span', { class: 'build-status' }, badge('PENDING', started ? started.status : '…'));
  const steps = h('div', { class: 'steps', 'aria-live': 'polite' }, loading('Loading the build…'));
  const box = h('section', { class: 'build', 'data-build': buildId, 'aria-label': `Build ${buildId}` },
    h('h4', {}, 'Build ', h('code', {}, buildId), started && started.job_id ? ` (job ${started.job_id}, branch ${started.branch})` : branch ? ` (branch ${branch})` : ''),
    h('p', { role: 'status' }, 'Status ', status),
    steps);
  // One build at a time: opening another replaces it, so failed look-ups do
  // not stack up.
  el.replaceChildren(box);
  let timer = null;
  let stopped = false;
  ctx.onCleanup(() => { stopped = true; clearTimeout(timer); });
  const poll = async () => {
    timer = null;
    if (stopped || !box.isConnected) return;
    let r;
    try {
      r = await api('GET', url(`/deployments/apps/${seg(a.id)}/builds/${seg(buildId)}/logs`, { account_id: branch ? a.account_id : undefined, branch }), undefined, { signal: ctx.signal });
    } catch (e) {
      if (e.name !== 'AbortError') mount(steps, errorBox(e));
      return;
    }
    mount(status, badge(r.status), DONE.has(r.status) ? null : h('span', { class: 'sub' }, ' refreshing every 2 s'));
    const open = new Set([...steps.querySelectorAll('details[open]')].map((d) => d.dataset.step));
    mount(steps, (r.steps || []).length === 0 ? h('p', { class: 'empty' }, 'No steps yet.') :
      h('ol', { class: 'step-list' }, r.steps.map((s) => h('li', {}, details([h('span', { class: 'step-name' }, s.name), ' ', badge(s.status)],
        s.log ? h('pre', { class: 'log' }, s.log) : h('p', { class: 'empty' }, 'No log.'),
        { open: open.has(s.name) || null, dataset: { step: s.name } })))));
    if (!DONE.has(r.status) && !stopped) timer = setTimeout(poll, 2000);
  };
  poll();
}
