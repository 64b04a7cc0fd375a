// pages/mcp.js: the MCP page (#/mcp), for an organisation's admins: the
// remote MCP servers whose tools the assistant may call (name, URL, the
// names of the headers it sends, tool count, last error), a form to add one
// (header values are write-only: sealed by the server, never shown again),
// Test (reached or not, latency, tool count), Delete after a confirmation in
// the page, and each server's tools with their hints (read-only,
// destructive), whether a call waits for approval, and the policy an admin
// sets (default, always confirm, disabled). A member is told plainly that
// only admins may see it. It reads GET|POST /api/v1/mcp/servers,
// DELETE /api/v1/mcp/servers/{id}, POST …/{id}/test, GET …/{id}/tools and
// PUT …/{id}/tools/{name}/policy.

import { api, list } from '../api.js';
import { h, mount, button, errorBox, loading, empty, field, toast, when, confirmAction } from '../ui.js';
import { me } from '../app.js';

export const title = 'MCP';
// adminOnly keeps the page out of a member's menu.
export const adminOnly = true;

const BASE = '/api/v1/mcp/servers';
const NAME = /^[a-z][a-z0-9_]{0,31}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/; // an HTTP token (RFC 9110)
const MAX_HEADERS = 16;
const POLICIES = [['default', 'Default'], ['always_confirm', 'Always confirm'], ['disabled', 'Disabled']];

const serverPath = (s) => `${BASE}/${encodeURIComponent(s.id)}`;
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// render draws the page.
export function render(main) {
  main.append(h('h1', {}, 'MCP servers'));
  if (!me || me.user.role !== 'admin') {
    main.append(h('section', { class: 'card', id: 'mcp-refused' },
      empty('Only an organisation admin may see and change the MCP servers the assistant uses. Ask an admin of your organisation if you need one added.')));
    return;
  }
  main.append(h('p', { class: 'muted mcp-intro' },
    'Remote MCP servers whose tools the assistant may use, for everyone in the organisation. Their tools appear in chat as ',
    h('code', {}, 'server__tool'), '. A tool the server does not mark read-only waits for a person’s approval, like any write; ',
    'mark a tool “always confirm” to make a read wait too, or “disabled” to hide it from the assistant.'));
  const listErr = h('div', { 'aria-live': 'assertive' });
  const servers = h('div', { class: 'mcp-servers', id: 'mcp-servers' }, loading('Loading the MCP servers…'));
  const more = h('div');
  const listCard = h('section', { class: 'mcp-list', 'aria-labelledby': 'mcp-list-title' },
    h('h2', { id: 'mcp-list-title', class: 'sr-only' }, 'Servers'), listErr, servers, more);
  main.append(listCard, addForm(() => refresh()));

  // refresh lists the servers again, keeping what each card had open (its
  // tools, its last test). Only the latest of overlapping refreshes draws.
  let drawing = 0;
  async function refresh() {
    const mine = ++drawing;
    try {
      const r = await list(BASE, { limit: 200 });
      if (mine !== drawing) return;
      const open = new Map([...servers.querySelectorAll('.mcp-server')].map((c) => [c.dataset.id, c]));
      mount(servers, r.items.length ? r.items.map((s) => serverCard(s, open.get(s.id), refresh)) : empty('No MCP servers yet: add one below.'));
      mount(more, r.next_cursor ? button('Load more', async () => {
        const next = await list(BASE, { limit: 200, cursor: r.next_cursor });
        servers.append(...next.items.map((s) => serverCard(s, null, refresh)));
        if (!next.next_cursor) mount(more);
      }, { id: 'mcp-more', errEl: listErr }) : null);
    } catch (e) {
      if (mine === drawing) mount(servers, errorBox(e));
    }
  }
  refresh();
}

// serverCard is one server: its facts, Test, Tools and Delete. was is the
// card it replaces, whose open tools and test result it keeps.
function serverCard(s, was, refresh) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const result = h('div', { class: 'mcp-test-result', role: 'status', 'aria-live': 'polite' });
  const toolsId = `mcp-tools-${s.id}`;
  const tools = h('div', { class: 'mcp-tools', id: toolsId });
  const headers = s.header_names || [];
  const toolsBtn = h('button', { type: 'button', class: 'mcp-tools-toggle', 'aria-expanded': 'false', 'aria-controls': toolsId,
    'aria-label': `Tools of ${s.name}` }, 'Tools');
  const card = h('article', { class: 'card mcp-server', dataset: { id: s.id, name: s.name }, 'aria-labelledby': `mcp-server-${s.id}` },
    h('div', { class: 'row mcp-server-head' },
      h('h2', { id: `mcp-server-${s.id}` }, h('code', {}, s.name)),
      s.last_error ? h('span', { class: 'badge bad mcp-state' }, '✖ last call failed') : h('span', { class: 'badge ok mcp-state' }, '✔ no errors')),
    h('dl', { class: 'mcp-server-facts' },
      h('dt', {}, 'URL'), h('dd', { class: 'mcp-url' }, s.url),
      h('dt', {}, 'Headers'), h('dd', { class: 'mcp-header-names' }, headers.length
        ? [headers.map((n) => h('code', {}, n)), h('small', { class: 'muted' }, ' values sealed, not shown')] : h('span', { class: 'muted' }, 'none')),
      h('dt', {}, 'Tools'), h('dd', { class: 'mcp-tool-count' }, String(s.tool_count ?? '—')),
      s.last_error ? [h('dt', {}, 'Last error'), h('dd', { class: 'mcp-last-error' }, s.last_error)] : null,
      h('dt', {}, 'Added'), h('dd', {}, when(s.created_at))),
    h('div', { class: 'row mcp-server-actions', role: 'group', 'aria-label': `Manage ${s.name}` },
      button('Test', async () => {
        mount(result, loading(`Testing ${s.name}…`));
        let r;
        try {
          r = await api('POST', `${serverPath(s)}/test`);
        } catch (e) {
          mount(result);
          throw e;
        }
        mount(result, testResult(s, r));
        toast(r.ok ? `${s.name} answered.` : `${s.name} could not be reached.`);
        await refresh();
      }, { class: 'mcp-test', 'aria-label': `Test ${s.name}`, errEl }),
      toolsBtn,
      button('Delete…', async () => {
        const n = s.tool_count || 0;
        const ok = await confirmAction({
          title: 'Delete the MCP server?',
          text: `Delete “${s.name}” (${s.url})? The assistant stops offering its ${plural(n, 'tool', 'tools')} (${s.name}__…) at once, `
            + `its sealed header values${headers.length ? ` (${headers.join(', ')})` : ''} and its tool policies are deleted, and this cannot be undone.`,
          confirmLabel: 'Delete server',
        });
        if (!ok) return;
        await api('DELETE', serverPath(s));
        toast(`“${s.name}” is deleted.`);
        await refresh();
      }, { class: 'mcp-delete', 'aria-label': `Delete ${s.name}`, errEl })),
    errEl, result, tools);

  // showTools lists the tools; quiet keeps what is shown until the answer
  // is in (a redraw of the card, not a click).
  let asked = 0;
  async function showTools(quiet) {
    const mine = ++asked;
    toolsBtn.setAttribute('aria-expanded', 'true');
    if (!quiet) mount(tools, loading(`Loading the tools of ${s.name}…`));
    try {
      const r = await api('GET', `${serverPath(s)}/tools`);
      if (mine === asked && toolsBtn.getAttribute('aria-expanded') === 'true') mount(tools, toolsTable(s, r));
    } catch (e) {
      if (mine === asked && toolsBtn.getAttribute('aria-expanded') === 'true') mount(tools, errorBox(e));
    }
  }
  toolsBtn.addEventListener('click', () => {
    if (toolsBtn.getAttribute('aria-expanded') === 'true') {
      asked++;
      toolsBtn.setAttribute('aria-expanded', 'false');
      mount(tools);
      return;
    }
    showTools(false);
  });
  if (was) {
    const keep = was.querySelector('.mcp-test-result');
    if (keep && keep.childNodes.length) mount(result, ...keep.childNodes);
    if (was.querySelector('.mcp-tools-toggle[aria-expanded="true"]')) {
      const shown = was.querySelector('.mcp-tools');
      if (shown) mount(tools, ...shown.childNodes);
      showTools(true);
    }
  }
  return card;
}

// testResult says the answer of a test in words.
function testResult(s, r) {
  if (r.ok) {
    return h('p', { class: 'mcp-test-ok' }, h('span', { class: 'ok' }, '✔ Reached'), ` ${s.name} in ${r.latency_ms} ms: it offers ${plural(r.tool_count, 'tool', 'tools')}.`);
  }
  return h('div', { class: 'error mcp-test-failed', role: 'alert' },
    h('strong', {}, `${s.name} could not be reached`), r.latency_ms != null ? ` (after ${r.latency_ms} ms)` : '', ': ', r.error || 'no reason given.');
}

// toolsTable lists a server's tools with their policy selects.
function toolsTable(s, r) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const note = r.error ? h('p', { class: 'notice mcp-tools-error' }, `The server could not list its tools just now: ${r.error}`) : null;
  if (!r.items.length) return h('div', {}, note, empty(`${s.name} offers no tools${r.error ? ' that devpilot knows of' : ''}.`));
  return h('div', {}, note, errEl,
    h('div', { class: 'table-wrap' }, h('table', { class: 'mcp-tools-table' },
      h('caption', { class: 'sr-only' }, `Tools of ${s.name}`),
      h('thead', {}, h('tr', {}, ['Tool', 'Hints', 'Approval', 'Policy'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, r.items.map((t) => toolRow(s, t, errEl))))));
}

// toolRow is one tool; its policy select saves at once.
function toolRow(s, t, errEl) {
  const approval = h('td', { class: 'mcp-approval', dataset: { label: 'Approval' } });
  const drawApproval = (it) => mount(approval, it.policy === 'disabled'
    ? h('span', { class: 'badge' }, 'hidden from the assistant')
    : it.needs_approval ? h('span', { class: 'badge warn' }, 'needs approval') : h('span', { class: 'badge ok' }, 'runs at once'));
  drawApproval(t);
  const sel = h('select', { class: 'mcp-policy', 'aria-label': `Policy of ${t.name}` },
    POLICIES.map(([v, label]) => h('option', { value: v, selected: v === t.policy }, label)));
  let saved = t.policy;
  sel.addEventListener('change', async () => {
    const want = sel.value;
    sel.disabled = true;
    try {
      const it = await api('PUT', `${serverPath(s)}/tools/${encodeURIComponent(t.remote_name)}/policy`, { policy: want });
      saved = it.policy;
      sel.value = it.policy;
      drawApproval(it);
      mount(errEl);
      toast(`${t.name}: ${POLICIES.find(([v]) => v === it.policy)[1].toLowerCase()}.`);
    } catch (e) {
      sel.value = saved;
      mount(errEl, errorBox(e));
    } finally {
      sel.disabled = false;
      sel.focus();
    }
  });
  return h('tr', { dataset: { name: t.name, remote: t.remote_name } },
    h('th', { scope: 'row' }, h('code', {}, breakable(t.name)), t.description ? h('small', {}, t.description) : null),
    h('td', { class: 'mcp-hints', dataset: { label: 'Hints' } },
      t.read_only ? h('span', { class: 'badge ok' }, 'read-only') : h('span', { class: 'badge' }, 'may write'),
      t.destructive ? h('span', { class: 'badge bad' }, 'destructive') : null),
    approval,
    h('td', { class: 'mcp-policy-cell', dataset: { label: 'Policy' } }, sel));
}

// breakable is a tool's name with a line-break opportunity after each _,
// so a narrow column breaks it between words.
const breakable = (name) => String(name).split(/(?<=_)/).flatMap((part, i) => (i ? [h('wbr'), part] : [part]));

// addForm is the form that adds a server: name, URL and header rows.
function addForm(onAdded) {
  const errEl = h('div', { 'aria-live': 'assertive' });
  const name = h('input', { id: 'mcp-name', name: 'name', required: true, maxlength: 32, placeholder: 'linear', autocomplete: 'off', spellcheck: 'false' });
  const url = h('input', { id: 'mcp-url-input', name: 'url', type: 'url', required: true, placeholder: 'https://mcp.example.com/mcp', autocomplete: 'off', spellcheck: 'false' });
  const rows = h('div', { class: 'mcp-header-rows' });
  const addRow = (focus) => {
    if (rows.children.length >= MAX_HEADERS) { toast(`At most ${MAX_HEADERS} headers.`); return; }
    const n = h('input', { class: 'mcp-header-name', autocomplete: 'off', spellcheck: 'false', placeholder: 'Authorization' });
    const v = h('input', { class: 'mcp-header-value', type: 'password', autocomplete: 'new-password', spellcheck: 'false', placeholder: 'Bearer …' });
    const row = h('div', { class: 'mcp-header-row' }, field('Header name', n), field('Value', v));
    const rm = h('button', { type: 'button', class: 'mcp-header-remove', onclick: () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      relabel();
      (next ? next.querySelector('input') : addBtn).focus();
    } }, 'Remove');
    row.append(rm);
    rows.append(row);
    relabel();
    if (focus) n.focus();
  };
  const relabel = () => [...rows.children].forEach((r, i) => {
    r.querySelector('.mcp-header-remove').setAttribute('aria-label', `Remove header ${i + 1}`);
    r.querySelector('.mcp-header-name').setAttribute('aria-label', `Header ${i + 1} name`);
    r.querySelector('.mcp-header-value').setAttribute('aria-label', `Header ${i + 1} value`);
  });
  const addBtn = h('button', { type: 'button', id: 'mcp-header-add', onclick: () => addRow(true) }, '+ Header');
  const form = h('form', { class: 'card mcp-add', id: 'mcp-add', 'aria-labelledby': 'mcp-add-title', novalidate: true },
    h('h2', { id: 'mcp-add-title' }, 'Add an MCP server'),
    field('Name', name, 'Lower-case letters, digits and _, starting with a letter (up to 32): it prefixes its tools’ names, as in linear__create_issue.'),
    field('URL', url, 'Its Streamable HTTP endpoint. devpilot calls only public addresses.'),
    h('fieldset', { class: 'mcp-headers' }, h('legend', {}, 'Headers (optional)'),
      h('p', { class: 'hint' }, 'Sent with every request, such as an API key. Values are sealed and never shown again: after saving, only the names show.'),
      rows, addBtn),
    h('div', { class: 'row' }, h('button', { type: 'submit', class: 'primary', id: 'mcp-add-submit' }, 'Add server')),
    errEl);

  // values reads the form, or throws an error naming what to fix.
  function values() {
    const fail = (msg, el) => { const e = new Error(msg); e.el = el; throw e; };
    const n = name.value.trim();
    if (!NAME.test(n)) fail('Name the server with lower-case letters, digits and _, starting with a letter (up to 32).', name);
    const u = url.value.trim();
    let parsed = null;
    try { parsed = new URL(u); } catch (_) { /* said below */ }
    if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) fail('Enter the server’s address as an http:// or https:// URL.', url);
    const headers = {};
    const seen = new Set();
    for (const row of rows.children) {
      const hn = row.querySelector('.mcp-header-name');
      const hv = row.querySelector('.mcp-header-value');
      const key = hn.value.trim();
      if (!key && !hv.value) continue;
      if (!HEADER_NAME.test(key)) fail(key ? `“${key}” is not a header name: use letters, digits and - only.` : 'Name the header whose value you entered.', hn);
      if (seen.has(key.toLowerCase())) fail(`The header ${key} is there twice.`, hn);
      if (!hv.value) fail(`Enter the value of ${key}.`, hv);
      seen.add(key.toLowerCase());
      headers[key] = hv.value;
    }
    return { name: n, url: u, ...(seen.size ? { headers } : {}) };
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(errEl);
    let body;
    try { body = values(); } catch (e) { mount(errEl, errorBox(e)); if (e.el) e.el.focus(); return; }
    const submit = form.querySelector('#mcp-add-submit');
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    try {
      const s = await api('POST', BASE, body);
      toast(`“${s.name}” is added${s.tool_count != null ? ` with ${plural(s.tool_count, 'tool', 'tools')}` : ''}.`);
      name.value = '';
      url.value = '';
      rows.replaceChildren();
      await onAdded();
    } catch (e) {
      mount(errEl, errorBox(e));
    } finally {
      submit.disabled = false;
      submit.removeAttribute('aria-busy');
    }
  });
  return form;
}
