// pages/cloud/logfollow.js: a log panel for a service or a function: the
// newest lines, a filter (a CloudWatch filter pattern), and Follow, which
// streams new lines as they arrive (GET …/logs/stream, Server-Sent Events)
// until Pause. New lines are appended; the panel scrolls with them unless
// the reader scrolled up.

import { api, stream } from '../../api.js';
import { h, mount, errorBox, problemText } from '../../ui.js';
import { url } from './common.js';

// MAX_LINES bounds the lines a panel keeps (the oldest go first).
const MAX_LINES = 2000;

// logPanel returns a panel for the log at path (such as
// /infrastructure/serverless/functions/x/logs) with the query params, and
// start(), which loads the newest lines (call it when the panel opens), and
// stop(), which ends a follow.
export function logPanel(path, params, ctx) {
  const filter = h('input', { type: 'search', name: 'filter', class: 'log-filter', placeholder: 'Filter pattern, e.g. ERROR', maxlength: 1024,
    'aria-label': 'Filter pattern (CloudWatch syntax)', autocomplete: 'off', spellcheck: 'false' });
  const followBtn = h('button', { type: 'button', class: 'log-follow', 'aria-pressed': 'false' }, 'Follow');
  const refreshBtn = h('button', { type: 'button', class: 'log-refresh' }, 'Refresh');
  const state = h('span', { class: 'log-state muted', role: 'status' });
  const pre = h('pre', { class: 'log', tabindex: '0', 'aria-label': 'Log lines', 'aria-live': 'off' });
  const note = h('div', { class: 'log-note' });
  const form = h('form', { class: 'log-bar', role: 'search' }, filter, h('button', { type: 'submit' }, 'Apply'), refreshBtn, followBtn, state);
  const el = h('div', { class: 'log-panel' }, form, note, pre);

  let following = null; // the AbortController of the follow, when on
  let lastId = '';
  const seen = new Set();

  const atBottom = () => pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
  function append(items, fresh) {
    const stick = fresh || atBottom();
    const frag = document.createDocumentFragment();
    for (const it of items) {
      if (it.id) {
        if (seen.has(it.id)) continue;
        seen.add(it.id);
      }
      frag.append(h('span', { class: 'log-line' + (fresh ? '' : ' new') }, `${it.timestamp || ''}  ${it.message || ''}\n`));
    }
    pre.append(frag);
    while (pre.childElementCount > MAX_LINES) pre.firstElementChild.remove();
    if (!pre.childElementCount) pre.replaceChildren(h('span', { class: 'log-empty muted' }, 'No log lines in this window.\n'));
    else pre.querySelector('.log-empty')?.remove();
    if (stick) pre.scrollTop = pre.scrollHeight;
  }
  function clear() { pre.replaceChildren(); seen.clear(); lastId = ''; mount(note); }

  async function load() {
    stop();
    state.textContent = 'Loading…';
    try {
      const r = await api('GET', url(path, { ...params, limit: 50, filter: filter.value }), undefined, { signal: ctx.signal });
      clear();
      append(r.items || [], true);
      state.textContent = '';
    } catch (e) {
      if (e.name === 'AbortError') return;
      state.textContent = '';
      mount(note, errorBox(e));
    }
  }

  async function follow() {
    stop();
    const ac = new AbortController();
    following = ac;
    const onLeave = () => ac.abort();
    ctx.signal?.addEventListener('abort', onLeave, { once: true });
    followBtn.textContent = 'Pause';
    followBtn.setAttribute('aria-pressed', 'true');
    el.classList.add('following');
    mount(note);
    let fresh = true;
    clear();
    while (following === ac) {
      state.textContent = 'Following…';
      let ended = false;
      try {
        await stream(url(path + '/stream', { ...params, filter: filter.value }), undefined, (ev) => {
          if (ev.event === 'log') {
            append([ev.data], fresh);
            lastId = ev.data.id || lastId;
          } else if (ev.event === 'end') {
            ended = true; // the stream's time is up: reconnect after the last line
          } else if (ev.event === 'error') {
            mount(note, h('p', { class: 'error', role: 'alert' }, ev.data.detail || 'The log could not be read.'));
            ac.abort();
          }
        }, { signal: ac.signal, lastEventId: lastId });
        fresh = false;
        if (!ended) await new Promise((r) => setTimeout(r, 2000)); // dropped: retry, not at once
      } catch (e) {
        if (ac.signal.aborted) break;
        if (e.status) { // refused (400, 404…): say why and stop
          mount(note, h('p', { class: 'error', role: 'alert' }, problemText(e)));
          break;
        }
        state.textContent = 'Reconnecting…';
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    if (following === ac) stop();
  }

  function stop() {
    if (following) following.abort();
    following = null;
    followBtn.textContent = 'Follow';
    followBtn.setAttribute('aria-pressed', 'false');
    el.classList.remove('following');
    if (state.textContent === 'Following…' || state.textContent === 'Reconnecting…') state.textContent = 'Paused';
  }

  followBtn.addEventListener('click', () => (following ? stop() : follow()));
  refreshBtn.addEventListener('click', () => load());
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (following) follow(); else load();
  });
  ctx.onCleanup?.(stop);
  return { el, start: () => { if (!following) load(); }, stop };
}
