// pages/specs/connect.js: the "Connect a coding agent" panel of a
// specification: devpilot's MCP server address (this page's origin + /mcp)
// with a Copy button, how to add it to Claude Code, Cursor, VS Code or any
// MCP client, a link to the Tokens page to create the token the agent signs
// in with, and what to ask the agent: the resources of this specification
// (devpilot://specs/{session}/prps/{PRP-…}) and the implement_prp prompt.
// No token's secret is ever shown here: the snippets hold a placeholder.

import { h, mount, toast } from '../../ui.js';
import { latest } from './trace.js';

// PLACEHOLDER stands for the token in the snippets.
const PLACEHOLDER = '<token>';

// mcpURL is the address of devpilot's MCP endpoint as this page reaches it.
export const mcpURL = () => `${location.origin}/mcp`;

// copyText puts text on the clipboard and says so; a browser that refuses
// selects the text instead, for the person to copy.
async function copyText(text, what, select) {
  try {
    await navigator.clipboard.writeText(text);
    toast(`${what} copied.`);
  } catch (_) {
    if (select) select();
    toast('Copying was refused by the browser: the text is selected, copy it yourself.');
  }
}

// copyButton copies text; label names what it copies, for screen readers.
function copyButton(text, what, id, select) {
  return h('button', { type: 'button', class: 'copy', id, 'aria-label': `Copy ${what.toLowerCase()}`, dataset: { copy: text },
    onclick: () => copyText(text, what, select) }, 'Copy');
}

// snippet is a block of text to paste (a command or a file) with its Copy
// button above it, beside hint.
function snippet(id, what, text, hint, wrap) {
  const pre = h('pre', { class: `mcp-snippet${wrap ? ' wrap' : ''}`, id, tabindex: '0', 'aria-label': what }, h('code', {}, text));
  const select = () => { const r = document.createRange(); r.selectNodeContents(pre); const s = getSelection(); s.removeAllRanges(); s.addRange(r); };
  return h('div', { class: 'mcp-snippet-wrap' }, h('div', { class: 'row mcp-snippet-head' }, h('p', { class: 'muted' }, hint), copyButton(text, what, `${id}-copy`, select)), pre);
}

// tabs shows one of several panels at a time, chosen by tabs (the ARIA
// tabs pattern: arrow keys, Home and End move between the tabs).
function tabs(label, items) {
  const list = h('div', { class: 'mcp-tabs', role: 'tablist', 'aria-label': label });
  const panels = [];
  const btns = items.map(([key, name, body], i) => {
    const b = h('button', { type: 'button', role: 'tab', id: `mcp-tab-${key}`, 'aria-controls': `mcp-panel-${key}`, 'aria-selected': String(i === 0), tabindex: i === 0 ? '0' : '-1' }, name);
    panels.push(h('div', { role: 'tabpanel', id: `mcp-panel-${key}`, 'aria-labelledby': b.id, class: 'mcp-tabpanel', hidden: i !== 0 }, body));
    return b;
  });
  const pick = (i, focus) => {
    btns.forEach((b, j) => { b.setAttribute('aria-selected', String(i === j)); b.tabIndex = i === j ? 0 : -1; panels[j].hidden = i !== j; });
    if (focus) btns[i].focus();
  };
  btns.forEach((b, i) => {
    b.addEventListener('click', () => pick(i, false));
    b.addEventListener('keydown', (ev) => {
      const n = btns.length;
      const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i - 1 + n) % n, Home: 0, End: n - 1 }[ev.key];
      if (to === undefined) return;
      ev.preventDefault();
      pick(to, true);
    });
  });
  list.append(...btns);
  return h('div', { class: 'mcp-client-tabs' }, list, panels);
}

// clients are the ways to add the server at url, one tab each.
function clients(url) {
  const cursor = JSON.stringify({ mcpServers: { devpilot: { url, headers: { Authorization: `Bearer ${PLACEHOLDER}` } } } }, null, 2);
  const vscode = JSON.stringify({
    inputs: [{ type: 'promptString', id: 'devpilot-token', description: 'devpilot API token', password: true }],
    servers: { devpilot: { type: 'http', url, headers: { Authorization: 'Bearer ${input:devpilot-token}' } } },
  }, null, 2);
  const tok = () => h('code', {}, PLACEHOLDER);
  return tabs('MCP clients', [
    ['claude', 'Claude Code', snippet('mcp-claude', 'Claude Code command',
      `claude mcp add --transport http devpilot ${url} --header "Authorization: Bearer ${PLACEHOLDER}"`,
      ['Run in your project, with your token in place of ', tok(), ':'], true)],
    ['cursor', 'Cursor', snippet('mcp-cursor', 'Cursor mcp.json', cursor,
      ['Add to ', h('code', {}, '.cursor/mcp.json'), ' (or ', h('code', {}, '~/.cursor/mcp.json'), '), with your token in place of ', tok(), ':'])],
    ['vscode', 'VS Code', snippet('mcp-vscode', 'VS Code mcp.json', vscode,
      ['Add to ', h('code', {}, '.vscode/mcp.json'), '; VS Code asks for the token once and keeps it out of the file:'])],
    ['any', 'Any MCP client', h('p', { class: 'mcp-any' }, 'Streamable HTTP at ', h('code', {}, url), ', with the header ',
      h('code', {}, `Authorization: Bearer ${PLACEHOLDER}`), '. A client that discovers how to authenticate reads ',
      h('code', {}, `${location.origin}/.well-known/oauth-protected-resource/mcp`), '.')],
  ]);
}

// connectPanel returns {el, update(session)} for session id: el is the
// panel, closed until opened; update redraws what depends on the session
// (its PRPs) when that changes.
export function connectPanel(id) {
  const url = mcpURL();
  const urlInput = h('input', { id: 'mcp-url', readonly: true, value: url, spellcheck: 'false', 'aria-label': 'MCP server URL' });
  const prps = h('div', { class: 'mcp-prps', id: 'mcp-prps' });
  let key = null;
  const session = `devpilot://specs/${id}`;
  const body = h('div', { class: 'mcp-connect-body' },
    h('p', {}, 'Coding agents read this specification and its PRPs from devpilot over the Model Context Protocol, and act through it: ',
      'a change they ask for waits for your approval, in the console or in the agent, like one asked for in chat.'),
    h('div', { class: 'field' }, h('label', { for: urlInput.id }, 'MCP server URL'),
      h('div', { class: 'row mcp-url-row' }, urlInput, copyButton(url, 'MCP server URL', 'mcp-url-copy', () => urlInput.select()))),
    h('p', { class: 'mcp-token-note' }, 'The agent signs in with an API token of yours: ',
      h('a', { href: '#/tokens/mcp', id: 'mcp-token-link' }, 'create one on the Tokens page'),
      '. “Read only” (or Specs: read) lets it read specifications and PRPs; “Read and write” also lets it ask for changes, each waiting for approval. ',
      'The token is shown once, when you create it; it is never shown here.'),
    h('h4', {}, 'Add it to your agent'),
    clients(url),
    h('h4', {}, 'What to ask the agent'),
    prps);
  const el = h('details', { class: 'mcp-connect', id: 'spec-connect' },
    h('summary', {}, h('strong', {}, 'Connect a coding agent'), h('span', { class: 'muted' }, ' · MCP server, Claude Code, Cursor, VS Code')),
    body);

  function update(s) {
    const cur = latest(s.artifacts).prps;
    const items = (cur && cur.data && Array.isArray(cur.data.prps) ? cur.data.prps : []).filter((p) => p && typeof p.id === 'string');
    const next = JSON.stringify(items.map((p) => [p.id, p.title]));
    if (next === key) return;
    key = next;
    const first = items.length ? items[0].id : 'PRP-1.1';
    mount(prps,
      h('p', {}, 'Ask the agent to use the prompt ', h('code', { id: 'mcp-prompt' }, 'implement_prp'), ' with ', h('code', {}, `session: ${id}`),
        ' and ', h('code', {}, `prp: ${first}`), ', for example “Implement ', first, ' of devpilot specification ', id,
        ' with the implement_prp prompt.” The prompt ', h('code', {}, 'review_against_story'), ' (', h('code', {}, 'session'), ', ',
        h('code', {}, 'story'), ') reviews a change against its story.'),
      h('p', { class: 'mcp-resources' }, 'Resources: the specification ', h('code', { class: 'mcp-uri' }, session), ', its traceability table ',
        h('code', { class: 'mcp-uri' }, `${session}/traceability`), items.length ? ' and each PRP:' : '.'),
      items.length
        ? h('div', { class: 'table-wrap' }, h('table', { class: 'mcp-prp-table', id: 'mcp-prp-table' },
          h('thead', {}, h('tr', {}, ['PRP', 'Resource', h('span', { class: 'sr-only' }, 'Copy')].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, items.map((p) => {
            const uri = `${session}/prps/${p.id}`;
            return h('tr', { dataset: { prp: p.id } },
              h('th', { scope: 'row' }, h('strong', {}, p.id), p.title ? h('small', {}, p.title) : null),
              h('td', {}, h('code', { class: 'mcp-uri' }, uri)),
              h('td', {}, copyButton(uri, `Resource of ${p.id}`, null)));
          }))))
        : h('p', { class: 'empty', id: 'mcp-no-prps' }, 'No PRPs yet: once the PRPs stage is generated, each PRP’s resource is listed here.'));
  }

  return { el, update };
}
