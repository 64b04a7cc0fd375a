// pages/specs/manage.js: managing a specification from its page — rename
// it, link (change, unlink) its repository, export it to GitHub issues and
// follow the export, and delete it after a confirmation in the page. The
// session view puts manageBar's element under the session's heading and
// tells it each new state of the session.

import { api, list } from '../../api.js';
import { h, mount, errorBox, toast, field, button, when } from '../../ui.js';

const POLL_MS = 1000;
const REPO_PAGES = 5; // at most 5 × 100 connected repositories are offered

let reposCache = null; // the promise of the connected repositories, per page load

// connectedRepos returns {items, state, err}: the caller's connected
// repositories (state 'ok', or 'none' when there are none), or why there
// are none to offer: 'not_configured' (no GitHub on this server),
// 'not_connected' (GitHub not connected yet) or 'error' (err).
export function connectedRepos(again) {
  if (reposCache && !again) return reposCache;
  reposCache = (async () => {
    const items = [];
    let cursor = null;
    try {
      for (let i = 0; i < REPO_PAGES; i++) {
        const page = await list('/scm/repos', { limit: 100, cursor });
        items.push(...((page && page.items) || []));
        cursor = page && page.next_cursor;
        if (!cursor) break;
      }
    } catch (err) {
      reposCache = null; // tried again next time
      if (err.status === 503 || err.status === 404 || err.status === 501) return { items: [], state: 'not_configured', err };
      if (err.status === 412) return { items: [], state: 'not_connected', err };
      return { items: [], state: 'error', err };
    }
    return { items, state: items.length ? 'ok' : 'none' };
  })();
  return reposCache;
}

// noRepos says, in words, why no repository can be picked.
function noRepos(r) {
  switch (r.state) {
    case 'not_configured':
      return h('p', { class: 'notice spec-no-repos' }, 'GitHub is not configured on this server, so a specification cannot be linked to a repository or exported to issues.');
    case 'not_connected':
      return h('p', { class: 'notice spec-no-repos' }, 'GitHub is not connected yet: ', h('a', { href: '#/repos' }, 'connect it on the Repositories page'), ', then pick one of its repositories here.');
    case 'none':
      return h('p', { class: 'notice spec-no-repos' }, 'No repositories are connected: ', h('a', { href: '#/repos' }, 'connect GitHub on the Repositories page'), ' to see them here.');
    default:
      return h('div', { class: 'spec-no-repos' }, h('p', {}, 'The connected repositories could not be listed.'), errorBox(r.err));
  }
}

// repoName is the full name of repository id among r's items, or null.
const repoName = (r, id) => ((r.items || []).find((x) => x.id === id) || {}).full_name || null;

// conflictText says a 409 of the specification API in words.
function conflictText(err, doing) {
  const code = err && err.problem && err.problem.code;
  if (code === 'generation_running') return `A stage is being generated: wait until it is done (or has failed), then ${doing} again.`;
  if (code === 'export_running') return `An export of this specification to GitHub issues is queued or running: wait until it is done, then ${doing} again.`;
  if (code === 'stage_not_ready') return 'Generate the epics and stories first (and the PRPs, to export them too): there is nothing to export yet.';
  return null;
}

// failure is err as shown in a panel: a 409 or a 412 explained in words
// (with the server's detail), anything else as the usual error box.
function failure(err, doing) {
  const words = err && err.status === 409 ? conflictText(err, doing)
    : err && err.status === 412 ? 'GitHub is not connected (or its connection broke): connect it again on the Repositories page.' : null;
  if (!words) return errorBox(err);
  return h('div', { class: 'error spec-conflict', role: 'alert', dataset: { code: (err.problem && err.problem.code) || '' } },
    h('strong', {}, words), ' ', h('small', {}, `(${err.status}: ${err.message})`));
}

// manageBar returns {el, update(session, view), stop()} for session id: el
// holds the session's repository (and, on the PRPs view, what it means for
// them) and the Rename, Repository, Export to GitHub issues and Delete
// buttons, each opening its form in the page; refresh() fetches the session
// again (after a change).
export function manageBar(id, refresh) {
  const path = `/pse/sessions/${encodeURIComponent(id)}`;
  let s = null;
  let open = null; // the panel shown: rename, repo, export, delete
  let exportCtl = null; // stops following an export when the page is left
  let lastExport = null; // {e, repo}: the export started from this page, shown again when the panel reopens
  const repoLine = h('p', { class: 'spec-repo-line', id: 'spec-repo-line' });
  const prpsLine = h('div', { class: 'spec-prps-slot' });
  let prpsKey = null; // what prpsLine says
  const buttons = {};
  const slot = h('div', { class: 'spec-manage-panel', id: 'spec-manage-panel' });
  const bar = h('div', { class: 'row spec-manage', role: 'group', 'aria-label': 'Manage this specification' });
  const el = h('div', { class: 'spec-manage-wrap' }, repoLine, prpsLine, bar, slot);
  slot.addEventListener('keydown', (ev) => { if (ev.key === 'Escape' && open) { ev.preventDefault(); close(); } });

  const panels = {
    rename: { label: 'Rename', draw: renamePanel },
    repo: { label: 'Repository…', draw: repoPanel },
    export: { label: 'Export to GitHub issues', draw: exportPanel },
    delete: { label: 'Delete…', draw: deletePanel, cls: 'spec-delete-open' },
  };
  for (const [k, p] of Object.entries(panels)) {
    buttons[k] = h('button', { type: 'button', id: `spec-${k}-open`, class: p.cls, 'aria-expanded': 'false', 'aria-controls': slot.id, onclick: () => toggle(k) }, p.label);
    bar.append(buttons[k]);
  }

  function toggle(k) {
    if (open === k) { close(); return; }
    open = k;
    for (const [b, btn] of Object.entries(buttons)) btn.setAttribute('aria-expanded', String(b === k));
    mount(slot, panels[k].draw());
    const first = slot.querySelector('input, select, textarea, button.primary, button.danger');
    if (first) first.focus();
  }
  function close() {
    const was = open;
    open = null;
    for (const btn of Object.values(buttons)) btn.setAttribute('aria-expanded', 'false');
    mount(slot);
    if (was && buttons[was].isConnected) buttons[was].focus();
  }

  // drawRepoLine names the linked repository (a link to its page), or says
  // none is.
  async function drawRepoLine() {
    if (!s.repo_id) {
      mount(repoLine, h('span', { class: 'muted' }, 'Repository: none linked — '),
        h('button', { type: 'button', class: 'link-button', id: 'spec-repo-link-one', onclick: () => { if (open !== 'repo') toggle('repo'); } }, 'link one'),
        h('span', { class: 'muted' }, ' to ground the PRPs in its files and commands.'));
      buttons.repo.textContent = 'Link a repository…';
      return;
    }
    const want = s.repo_id;
    buttons.repo.textContent = 'Change repository…';
    if (!repoLine.dataset.repo || repoLine.dataset.repo !== want) mount(repoLine, 'Repository: …');
    const r = await connectedRepos();
    if (!s || s.repo_id !== want) return;
    repoLine.dataset.repo = want;
    const name = repoName(r, want);
    mount(repoLine, 'Repository: ', name
      ? h('a', { href: `#/repos/${encodeURIComponent(want)}`, class: 'spec-repo-name' }, name)
      : h('span', { class: 'spec-repo-name' }, r.state === 'ok' || r.state === 'none'
        ? 'a repository that is no longer connected' : 'linked (the connected repositories cannot be listed now)'));
  }

  // repoPicker is a select of the connected repositories (with "none"
  // first when none is given) and an owner/name field that wins when
  // filled; value() is the id picked ('' for none), or throws.
  function repoPicker(r, current, idPrefix, noneLabel) {
    const sel = h('select', { id: `${idPrefix}-select` },
      noneLabel ? h('option', { value: '' }, noneLabel) : null,
      r.items.map((x) => h('option', { value: x.id, selected: x.id === current }, x.full_name)));
    const typed = h('input', { id: `${idPrefix}-name`, placeholder: 'owner/name', maxlength: 200, autocomplete: 'off', spellcheck: 'false', list: `${idPrefix}-names` });
    const names = h('datalist', { id: `${idPrefix}-names` }, r.items.map((x) => h('option', { value: x.full_name })));
    return {
      nodes: [field('Connected repository', sel), field('Or type its owner/name', typed, 'One of the repositories GitHub is connected for, e.g. demo/storefront.'), names],
      value() {
        const t = typed.value.trim();
        if (!t) return sel.value;
        const hit = r.items.find((x) => x.full_name.toLowerCase() === t.toLowerCase());
        if (!hit) throw new Error(`“${t}” is not one of the connected repositories: connect it on the Repositories page first, or pick one above.`);
        return hit.id;
      },
    };
  }

  function renamePanel() {
    const err = h('div', { 'aria-live': 'assertive' });
    const name = h('input', { id: 'spec-rename-name', name: 'name', maxlength: 200, required: true, value: s.name, autocomplete: 'off' });
    const form = h('form', { class: 'card spec-manage-form', id: 'spec-rename-form', 'aria-label': 'Rename the specification' },
      field('New name', name, 'Up to 200 characters, on one line.'),
      h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', id: 'spec-rename-save' }, 'Save name'),
        h('button', { type: 'button', onclick: close }, 'Cancel')), err);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const submit = form.querySelector('#spec-rename-save');
      if (submit.disabled) return;
      mount(err);
      const v = name.value.trim();
      if (!v) { mount(err, errorBox(new Error('Give the specification a name.'))); return; }
      submit.disabled = true;
      try {
        const next = await api('PATCH', path, { name: v });
        toast(`Renamed to “${next.name}”.`);
        close();
        await refresh();
      } catch (e) { mount(err, failure(e, 'rename it')); } finally { submit.disabled = false; }
    });
    return form;
  }

  function repoPanel() {
    const err = h('div', { 'aria-live': 'assertive' });
    const body = h('div', {}, h('p', { class: 'loading', role: 'status' }, 'Loading the connected repositories…'));
    const form = h('form', { class: 'card spec-manage-form', id: 'spec-repo-form', 'aria-label': 'The specification’s repository' },
      h('h3', {}, s.repo_id ? 'Change the repository' : 'Link a repository'),
      h('p', { class: 'muted' }, 'PRPs generated afterwards name its real files and the commands it shows (Makefile, package scripts, CI); regenerate the PRPs to ground them in it.'),
      body, err);
    connectedRepos(true).then((r) => { // listed afresh: a repository may have been connected since
      if (r.state !== 'ok') {
        mount(body, noRepos(r), s.repo_id ? h('div', { class: 'row' },
          button('Unlink the repository', () => save(''), { id: 'spec-link-repo-unlink', errEl: err }),
          h('button', { type: 'button', onclick: close }, 'Cancel')) : h('button', { type: 'button', onclick: close }, 'Close'));
        return;
      }
      const picker = repoPicker(r, s.repo_id, 'spec-link-repo', 'None (not linked)');
      mount(body, picker.nodes, h('div', { class: 'row' },
        h('button', { type: 'submit', class: 'primary', id: 'spec-link-repo-save' }, 'Save repository'),
        s.repo_id ? button('Unlink', () => save(''), { id: 'spec-link-repo-unlink', errEl: err }) : null,
        h('button', { type: 'button', onclick: close }, 'Cancel')));
      form.onsubmit = async (ev) => {
        ev.preventDefault();
        mount(err);
        let v;
        try { v = picker.value(); } catch (e) { mount(err, errorBox(e)); return; }
        const submit = form.querySelector('#spec-link-repo-save');
        submit.disabled = true;
        try { await save(v); } catch (e) { mount(err, failure(e, 'link it')); } finally { submit.disabled = false; }
      };
      const first = body.querySelector('select');
      if (first && open === 'repo') first.focus();
    });
    async function save(repoID) {
      const next = await api('PUT', `${path}/repository`, { repo_id: repoID || null });
      const r = await connectedRepos();
      toast(next.repo_id ? `Linked to ${repoName(r, next.repo_id) || 'the repository'}.` : 'The repository is unlinked.');
      close();
      await refresh();
    }
    form.addEventListener('submit', (ev) => ev.preventDefault());
    return form;
  }

  function exportPanel() {
    const err = h('div', { 'aria-live': 'assertive' });
    const body = h('div', {}, h('p', { class: 'loading', role: 'status' }, 'Loading the connected repositories…'));
    const progress = h('div', { class: 'spec-issue-export', id: 'spec-issue-export', 'aria-live': 'polite' });
    const form = h('form', { class: 'card spec-manage-form', id: 'spec-export-form', 'aria-label': 'Export to GitHub issues' },
      h('h3', {}, 'Export to GitHub issues'),
      h('p', { class: 'muted' }, 'One issue per story (its acceptance criteria and the requirements it traces to), a tracking issue per epic listing its stories, optionally one per PRP; all labelled devpilot. Exporting again to the same repository updates those issues instead of creating others.'),
      body, err, progress);
    const arts = s.artifacts || [];
    const has = (st) => arts.some((a) => a.stage === st);
    connectedRepos(true).then((r) => {
      if (r.state !== 'ok') { mount(body, noRepos(r)); return; }
      const picker = repoPicker(r, s.repo_id || (r.items[0] && r.items[0].id), 'spec-export-repo', null);
      const prps = h('input', { type: 'checkbox', id: 'spec-export-prps', disabled: !has('prps') }); // off, as the API's default
      mount(body, picker.nodes,
        h('label', { class: 'check' }, prps, ' Also one issue per PRP', has('prps') ? null : h('small', { class: 'muted' }, ' (generate the PRPs first)')),
        !has('stories') ? h('p', { class: 'notice' }, 'The stories are not generated yet: generate them first, there is nothing to export before.') : null,
        h('div', { class: 'row' },
          h('button', { type: 'submit', class: 'primary', id: 'spec-export-start' }, 'Start the export'),
          h('button', { type: 'button', onclick: close }, 'Close')));
      form.onsubmit = async (ev) => {
        ev.preventDefault();
        mount(err);
        let repoID;
        try { repoID = picker.value(); } catch (e) { mount(err, errorBox(e)); return; }
        const submit = form.querySelector('#spec-export-start');
        if (submit.disabled) return;
        submit.disabled = true;
        submit.setAttribute('aria-busy', 'true');
        try {
          const e = await api('POST', `${path}/export/github`, { repo_id: repoID, include_prps: prps.checked });
          toast('The export to GitHub issues has started.');
          follow(e, repoName(r, repoID));
        } catch (e) { mount(err, failure(e, 'export it')); } finally { submit.disabled = false; submit.removeAttribute('aria-busy'); }
      };
    });
    form.addEventListener('submit', (ev) => ev.preventDefault());
    if (lastExport) follow(lastExport.e, lastExport.repo);

    // follow polls export e until it is done or failed, showing its
    // progress and the issues as links.
    async function follow(e, repo) {
      if (exportCtl) exportCtl.abort();
      const ctl = new AbortController();
      exportCtl = ctl;
      let cur = e;
      for (;;) {
        lastExport = { e: cur, repo };
        drawExport(cur, repo);
        if (cur.status === 'done' || cur.status === 'failed') break;
        await new Promise((ok) => setTimeout(ok, POLL_MS));
        if (ctl.signal.aborted || !progress.isConnected) return;
        try {
          cur = await api('GET', `${path}/export/github/${encodeURIComponent(e.export_id)}`, undefined, { signal: ctl.signal });
        } catch (err2) {
          if (ctl.signal.aborted) return;
          mount(err, errorBox(err2));
          return;
        }
      }
      if (cur !== e) toast(cur.status === 'done' ? `Exported: ${cur.issues.length} issue${cur.issues.length === 1 ? '' : 's'} on GitHub.` : 'The export to GitHub issues failed.');
    }

    function drawExport(e, repo) {
      const words = { queued: 'Queued…', running: 'Writing the issues…', done: 'Done', failed: 'Failed' }[e.status] || e.status;
      const cls = { done: 'ok', failed: 'bad', running: 'warn', queued: 'warn' }[e.status] || '';
      const issues = e.issues || [];
      mount(progress,
        h('p', { class: 'row spec-export-state', dataset: { status: e.status } },
          h('span', { class: `badge ${cls} spec-export-status` }, words),
          h('span', { class: 'spec-export-count' }, e.total ? `${e.done} of ${e.total} issues written` : 'counting the issues…'),
          repo ? h('span', { class: 'muted' }, `to ${repo}`) : null,
          h('small', { class: 'muted' }, `updated ${when(e.updated_at)}`)),
        e.total ? h('progress', { max: e.total, value: e.done, 'aria-label': 'Issues written' }) : null,
        e.status === 'failed' ? h('div', { class: 'error', role: 'alert' }, h('strong', {}, 'The export failed: '), e.error || 'no reason was given',
          h('p', {}, 'Start it again: the issues it already wrote are updated, not duplicated.')) : null,
        issues.length ? h('ul', { class: 'spec-export-issues' }, issues.map((i) => h('li', { dataset: { ref: i.ref } },
          h('span', { class: 'badge' }, i.kind), ' ',
          /^https?:\/\//i.test(i.html_url || '') ? h('a', { href: i.html_url, target: '_blank', rel: 'noopener noreferrer' }, `#${i.number}`) : `#${i.number}`,
          ' ', i.ref))) : null);
    }
    return form;
  }

  function deletePanel() {
    const err = h('div', { 'aria-live': 'assertive' });
    const inputs = (s.inputs || []).length;
    const versions = (s.artifacts || []).length;
    const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;
    const box = h('div', { class: 'card spec-delete-confirm', id: 'spec-delete-confirm', role: 'alertdialog', 'aria-labelledby': 'spec-delete-title', 'aria-describedby': 'spec-delete-what' },
      h('h3', { id: 'spec-delete-title' }, `Delete “${s.name}”?`),
      h('div', { id: 'spec-delete-what' },
        h('p', {}, 'This deletes the specification and everything it owns, for good:'),
        h('ul', {},
          h('li', {}, plural(inputs, 'input', 'inputs'), ' (notes, transcripts, documents)'),
          h('li', {}, plural(versions, 'stage version', 'stage versions'), ' (scope, PRD, epics, stories, PRPs, with their traceability)'),
          h('li', {}, 'its digests'),
          h('li', {}, 'the bookkeeping of its exports to GitHub issues (the issues already on GitHub stay there)'))),
      h('div', { class: 'row' },
        button('Delete the specification', async () => {
          mount(err);
          try {
            await api('DELETE', path);
          } catch (e) {
            if (e.status === 404) { toast('It was deleted already.'); location.hash = '#/specs'; return; }
            mount(err, failure(e, 'delete it'));
            return;
          }
          toast(`Specification “${s.name}” deleted.`);
          location.hash = '#/specs';
        }, { class: 'danger', id: 'spec-delete-confirm-btn' }),
        h('button', { type: 'button', id: 'spec-delete-cancel', onclick: close }, 'Keep it')),
      err);
    return box;
  }

  // currentPRPs is the session's latest PRPs artifact, or null.
  function currentPRPs() {
    return (s.artifacts || []).filter((a) => a.stage === 'prps').sort((x, y) => y.version - x.version)[0] || null;
  }

  // prpsNote says what the repository means for the PRPs of artifact: none
  // linked (link one); linked, but the PRPs name no validation command (as
  // those written before it was linked: regenerate them); or grounded in it.
  function prpsNote(artifact) {
    const list = (artifact.data && Array.isArray(artifact.data.prps)) ? artifact.data.prps : [];
    const ungrounded = list.length > 0 && list.every((p) => !(p && p.validation && (p.validation.commands || []).length));
    if (!s.repo_id) {
      return h('p', { class: 'notice spec-prps-repo' }, 'No repository is linked, so these PRPs name no real files or commands: ',
        h('button', { type: 'button', class: 'link-button', id: 'spec-prps-link-one', onclick: () => { if (open !== 'repo') toggle('repo'); } }, 'link one'),
        ', then regenerate the PRPs.');
    }
    const want = s.repo_id;
    const label = h('span', {}, '…');
    connectedRepos().then((r) => { label.textContent = repoName(r, want) || 'the linked repository'; });
    return ungrounded
      ? h('p', { class: 'notice spec-prps-repo' }, 'These PRPs name none of the test or build commands of ', label,
        '. If they were written before the repository was linked, regenerate the PRPs to ground them in its files and commands.')
      : h('p', { class: 'notice spec-prps-repo ok' }, 'The PRPs are grounded in the files and commands of ', label, '.');
  }

  return {
    el,
    // update takes a new state of the session, shown on view.
    update(next, view) {
      const was = s;
      s = next;
      if (!was || was.repo_id !== s.repo_id) drawRepoLine();
      // The delete confirmation names what goes: drawn again when that changes.
      const owned = (x) => [x.name, (x.inputs || []).length, (x.artifacts || []).length].join('|');
      if (open === 'delete' && was && owned(was) !== owned(s)) mount(slot, deletePanel());
      const prps = view === 'prps' ? currentPRPs() : null;
      const key = prps ? `${s.repo_id || ''}|${prps.version}` : '';
      if (key !== prpsKey) { prpsKey = key; mount(prpsLine, prps ? prpsNote(prps) : null); }
    },
    // stop stops following an export (the page is left).
    stop() { if (exportCtl) exportCtl.abort(); },
  };
}
