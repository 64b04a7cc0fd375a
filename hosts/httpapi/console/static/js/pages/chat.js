// pages/chat.js: the Assistant page: the caller's chat sessions, and a chat
// that streams the assistant's answer, its tool calls and the writes it asks
// to approve. #/chat is a new chat, #/chat/ID opens session ID.
//
// Every event of a session has an id, strictly increasing. The page keeps the
// last one it has shown: when a stream drops (a network error), it resumes
// from there with GET /api/v1/agent/sessions/{id}/stream and Last-Event-ID,
// and ignores any event whose id it has already shown, so no text is doubled.
// It never sends the chat again: only the user's Retry does, after a send
// that got no event at all. The new chat's id (the X-Session-Id header,
// else the first event's session_id) goes into the URL at once, and while a
// turn is on its way the tab remembers it, so a reload lands on the chat and
// follows the rest of the turn.
//
// While a turn runs (st.turn), Stop asks the server to end it
// (POST /api/v1/agent/sessions/{id}/stop); the stream then ends with
// done{finish_reason:"stopped"} and the turn says it was stopped.

import { api, list, stream } from '../api.js';
import { h, mount, loading, empty, errorBox, toast, when, button, reconnecting, problemText, confirmAction } from '../ui.js';
import { Turn, userMessage, parseJSON, tickCountdowns } from './chat/turn.js';
import { micButton } from './chat/mic.js';
import { openMemory } from './chat/memory.js';
import { pageContext } from '../pagecontext.js';

export const title = 'Assistant';

const SESSIONS = '/api/v1/agent/sessions';
const RESUME_TRIES = 5;
// INFLIGHT is where the tab keeps {id, lastId} of the turn on its way.
const INFLIGHT = 'devpilot.chat.inflight';
const inflight = {
  get: () => { try { return JSON.parse(sessionStorage.getItem(INFLIGHT) || 'null'); } catch (_) { return null; } },
  set: (id, lastId) => sessionStorage.setItem(INFLIGHT, JSON.stringify({ id, lastId })),
  clear: () => sessionStorage.removeItem(INFLIGHT),
};

// sessionLabel is a session's title, or a fallback naming when it began.
const sessionLabel = (s) => (s.title && s.title.trim()) || `Untitled chat · ${when(s.created_at)}`;

// render draws the page; it returns the cleanup that stops its streams,
// timers and recording.
export function render(main, args) {
  const ctl = new AbortController();
  const st = { id: args[0] || null, lastId: 0, busy: false, session: null, turn: null, lastTurn: null };

  // The sessions list.
  const sessionsBody = h('div', { class: 'chat-sessions-body' }, loading());
  const search = h('input', { type: 'search', id: 'chat-search', name: 'q', maxlength: '200', autocomplete: 'off',
    placeholder: 'Search titles and messages' });
  const aside = h('aside', { class: 'chat-sessions', 'aria-label': 'Chats' },
    h('div', { class: 'row chat-sessions-head' },
      h('h2', {}, 'Chats'),
      h('a', { class: 'button primary', href: '#/chat', id: 'chat-new' }, 'New chat'),
      h('button', { type: 'button', id: 'chat-memory', onclick: () => openMemory(main) }, 'Memory')),
    h('div', { class: 'chat-search', role: 'search' },
      h('label', { for: 'chat-search', class: 'chat-search-label' }, 'Search chats'), search),
    sessionsBody);

  // The conversation.
  const heading = h('h1', { id: 'chat-title' }, st.id ? 'Chat' : 'New chat');
  const headErr = h('div');
  const actions = h('div', { class: 'row chat-actions' });
  const log = h('div', { class: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', tabindex: '0' });
  const input = h('textarea', { id: 'chat-input', name: 'message', rows: '3', maxlength: '32000', required: true,
    placeholder: 'Ask devpilot… e.g. “what runs in production?”', 'aria-describedby': 'chat-input-hint' });
  const sendErr = h('div', { class: 'chat-send-error' });
  const mic = micButton((text) => {
    input.value = input.value.trim() ? `${input.value.trimEnd()} ${text}` : text;
    input.focus();
  }, sendErr);
  const send = h('button', { type: 'submit', class: 'primary', id: 'chat-send' }, 'Send');
  // Stop shows while a turn of the open chat runs (sent here, or followed
  // after a reload), once the chat has its id.
  const stopBtn = h('button', { type: 'button', class: 'danger', id: 'chat-stop', hidden: true,
    'aria-label': 'Stop the answer', onclick: () => stopTurn() }, 'Stop');
  const form = h('form', { class: 'chat-composer', 'aria-label': 'Message the assistant' },
    h('label', { for: 'chat-input', class: 'chat-input-label' }, 'Message'),
    input,
    h('div', { class: 'row chat-composer-bar' },
      h('small', { id: 'chat-input-hint', class: 'chat-hint' }, 'Enter sends · Shift+Enter adds a line'),
      mic.el, stopBtn, send),
    sendErr);
  const section = h('section', { class: 'chat-main', 'aria-labelledby': 'chat-title' },
    h('div', { class: 'chat-head' }, heading, actions), headErr, log, form);
  mount(main, h('div', { class: 'split chat-page' }, aside, section));

  // Scrolling: follow the answer while the reader is at the bottom.
  const atBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  const follow = (f) => {
    const stick = atBottom();
    f();
    if (stick) log.scrollTop = log.scrollHeight;
  };

  // setBusy disables sending and deciding while a stream runs.
  const setBusy = (on) => {
    st.busy = on;
    send.disabled = on;
    send.setAttribute('aria-busy', String(on));
    for (const b of log.querySelectorAll('.confirm-actions button')) b.disabled = on;
    const next = on ? null : log.querySelector('.confirm-actions button[data-focus-next]');
    if (next) { delete next.dataset.focusNext; next.focus(); } // the approval after the one just decided
  };

  // showStop offers Stop while a turn runs in a chat that has its id.
  const showStop = () => {
    const on = !!(st.turn && st.id);
    if (!on && stopBtn.contains(document.activeElement)) input.focus();
    stopBtn.hidden = !on;
    if (!on) stopBtn.disabled = false;
  };

  // stopTurn asks the server to stop the running turn; its stream then ends
  // with done{finish_reason:"stopped"}. A 409 (the turn had ended) is fine.
  async function stopTurn() {
    const turn = st.turn;
    if (!turn || !st.id || stopBtn.disabled) return;
    stopBtn.disabled = true;
    turn.busy(true, 'Stopping…');
    try {
      await api('POST', `${SESSIONS}/${encodeURIComponent(st.id)}/stop`);
    } catch (e) {
      if (e.status !== 409) {
        stopBtn.disabled = false;
        turn.busy(true, '');
        toast(`Could not stop the answer: ${problemText(e)}`);
      }
    }
  }

  const sessionItem = (s) => h('li', {},
    h('a', { href: `#/chat/${encodeURIComponent(s.id)}`, 'aria-current': s.id === st.id ? 'true' : null, dataset: { sessionId: s.id } },
      h('span', { class: 'chat-session-title' }, sessionLabel(s)),
      h('span', { class: 'chat-session-meta' },
        h('time', { datetime: s.updated_at }, when(s.updated_at)),
        s.pending_confirmations ? h('span', { class: 'badge warn' }, `${s.pending_confirmations} pending`) : null)));

  // loadSessions lists the caller's chats, newest activity first, a page
  // at a time; those matching the search box when it has text. An answer
  // that a later call overtook is dropped.
  let listing = 0;
  async function loadSessions() {
    const mine = ++listing;
    const q = search.value.trim();
    try {
      const out = await list(SESSIONS, { limit: 50, q });
      if (mine !== listing) return;
      const items = out.items || [];
      if (!items.length) { mount(sessionsBody, empty(q ? `No chat mentions “${q}”.` : 'No chats yet.')); return; }
      const ul = h('ul', { class: 'list chat-session-list' }, items.map(sessionItem));
      mount(sessionsBody, ul);
      let cursor = out.next_cursor;
      if (cursor) {
        const more = button('Older chats', async () => {
          const next = await list(SESSIONS, { limit: 50, cursor, q });
          ul.append(...(next.items || []).map(sessionItem));
          cursor = next.next_cursor;
          if (!cursor) more.remove();
        }, { class: 'chat-more' });
        sessionsBody.append(more);
      }
    } catch (e) {
      if (mine === listing) mount(sessionsBody, errorBox(e));
    }
  }
  let searchTimer = null;
  search.addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(loadSessions, 250); });

  // showHeader names the open session and offers its actions.
  function showHeader() {
    const s = st.session;
    heading.textContent = s ? sessionLabel(s) : (st.id ? 'Chat' : 'New chat');
    if (!st.id) { mount(actions); return; }
    const del = button('Delete', async () => {
      if (!await confirmAction({ title: 'Delete the chat?', text: `Delete “${heading.textContent}” and its messages for good? This cannot be undone.` })) return;
      await api('DELETE', `${SESSIONS}/${encodeURIComponent(st.id)}`);
      toast('Chat deleted.');
      location.hash = '#/chat';
    }, { class: 'danger', id: 'chat-delete', errEl: headErr });
    mount(actions,
      button('Generate title', async () => {
        const out = await api('POST', '/api/v1/agent/generate-title', { session_id: st.id });
        st.session = { ...(st.session || {}), title: out.title };
        heading.textContent = out.title;
        toast(`Title: ${out.title}`);
        loadSessions();
      }, { id: 'chat-title-gen', errEl: headErr }),
      del);
  }

  // openSession renders a stored session's history.
  async function openSession() {
    mount(log, loading('Loading the conversation…'));
    try {
      const s = await api('GET', `${SESSIONS}/${encodeURIComponent(st.id)}`, undefined, { signal: ctl.signal });
      st.session = s;
      showHeader();
      renderHistory(s);
      refreshActions();
      log.scrollTop = log.scrollHeight;
    } catch (e) {
      if (e.name !== 'AbortError') mount(log, errorBox(e));
    }
  }

  // renderHistory lays out stored messages as turns: a user message, then
  // the assistant's text, tool cards and confirmations up to the next one.
  function renderHistory(s) {
    log.replaceChildren();
    let turn = null;
    const turns = [];
    for (const m of s.messages || []) {
      if (m.role === 'user') {
        log.append(userMessage(m.content));
        turn = null;
      } else if (m.role === 'assistant') {
        if (!turn) { turn = new Turn(log, decide); turns.push(turn); }
        if (m.content) turn.text(m.id, m.content);
        for (const c of m.tool_calls || []) turn.toolCall({ tool_call_id: c.id, name: c.name, arguments: c.arguments });
      } else if (m.role === 'tool') {
        if (!turn) { turn = new Turn(log, decide); turns.push(turn); }
        const o = parseJSON(m.content);
        const ok = !!(o && typeof o === 'object' && o.ok);
        turn.toolResult({ tool_call_id: m.tool_call_id, name: m.name, ok, result: o && o.result,
          error: (o && typeof o === 'object' && o.error) || (ok ? undefined : String(m.content)) });
      }
    }
    for (const c of s.confirmations || []) {
      let t = turns.find((x) => x.tools.has(c.tool_call_id)) || turns[turns.length - 1];
      if (!t) { t = new Turn(log, decide); turns.push(t); }
      t.confirmation(c);
    }
    for (const t of turns) t.finish(null);
    if (turns.length) turns[turns.length - 1].finish({ finish_reason: s.pending_confirmations ? 'confirmation_required' : 'stop' });
    st.lastTurn = turns[turns.length - 1] || null;
    if (!log.children.length) log.append(empty('This chat is empty.'));
  }

  // run feeds a stream's events into turn, resuming after a dropped
  // connection (with the reconnecting banner), and ends the turn at done.
  // With refusals, a problem answered before any event (such as a 409), or a
  // request that never reached the server, is thrown instead of shown in the
  // turn; for a message being sent (st.sending) it is undone instead. quiet
  // leaves the toast and the reload of a cut turn to the caller.
  async function run(turn, start, refusals = false, quiet = false) {
    const before = turn.status.textContent;
    const sending = st.sending; // a message being sent: refused, it goes back in the box
    st.sending = null;
    let opened = false; // the answer's headers arrived
    setBusy(true);
    turn.busy(true, 'Thinking…');
    st.turn = turn;
    showStop();
    let finished = false;
    let seen = false;
    let waiting = false; // the reconnecting banner is shown for this run
    const back = () => { if (waiting) { waiting = false; reconnecting(false); } };
    // say shows what the turn is doing, unless the user is stopping it.
    const say = (what) => turn.busy(true, stopBtn.disabled && !stopBtn.hidden ? 'Stopping…' : what);
    const onEvent = (ev) => {
      if (ev.event === 'open') {
        opened = true;
        if (ev.data.session_id && !st.id) adopt(ev.data.session_id);
        return;
      }
      seen = true;
      back();
      if (ev.id && ev.id <= st.lastId) return; // shown already (a replay)
      if (ev.id) st.lastId = ev.id;
      const d = ev.data || {};
      if (d.session_id && !st.id) adopt(d.session_id);
      if (st.id) inflight.set(st.id, st.lastId);
      follow(() => {
        switch (ev.event) {
          case 'content': turn.content(d.message_id, d.delta || ''); say('Writing…'); break;
          case 'tool_call': turn.toolCall(d); say(`Calling ${d.name}…`); break;
          case 'tool_result': turn.toolResult(d); break;
          case 'confirmation_required': // decided once the stream has ended
            turn.confirmation(d);
            for (const b of log.querySelectorAll('.confirm-actions button')) b.disabled = true;
            break;
          case 'error': turn.error(d); break;
          case 'done': finished = true; turn.finish(d); break;
          case 'json': // a confirm answered as JSON (no stream): the decision only
            finished = true;
            turn.finish(null);
            break;
          default: break;
        }
      });
    };
    let call = start;
    for (let tries = 0, calls = 0; ; calls++) {
      const from = st.lastId;
      try {
        await call(onEvent);
        // Ended without done: resume, unless a resume brought nothing new
        // (a 204: no turn is running and nothing is left to replay).
        if (finished || !st.id || tries >= RESUME_TRIES || (calls > 0 && st.lastId === from)) break;
      } catch (e) {
        if (e.name === 'AbortError') { back(); return; }
        if ((refusals || sending) && !seen && (e.status || (e instanceof TypeError && calls === 0 && !opened))) {
          // Refused, or never reached the server: nothing to resume.
          setBusy(false);
          st.turn = null;
          showStop();
          turn.busy(false, before);
          if (sending) { unsent(sending, turn, e); return; }
          throw e;
        }
        if (!(e instanceof TypeError) || !st.id || tries >= RESUME_TRIES) {
          turn.error({ code: e.status ? String(e.status) : 'network', message: problemText(e) });
          break;
        }
      }
      // The connection dropped before done: resume from the last event
      // shown, trying again a few times while no event gets through.
      tries = st.lastId > from ? 1 : tries + 1;
      turn.busy(true, 'Connection lost; reconnecting…');
      if (!waiting) { waiting = true; reconnecting(true); }
      await new Promise((ok) => setTimeout(ok, Math.min(4000, 250 * 2 ** tries)));
      if (ctl.signal.aborted) { back(); return; }
      const sid = st.id;
      call = (cb) => stream(`${SESSIONS}/${encodeURIComponent(sid)}/stream`, undefined, cb,
        { lastEventId: st.lastId, signal: ctl.signal });
    }
    back();
    setBusy(false);
    st.turn = null;
    showStop();
    inflight.clear();
    if (quiet) {
      if (!finished) turn.finish(null);
    } else if (!finished) {
      turn.finish(null);
      if (st.id) { toast('The answer ended early; showing what was stored.'); await openSession(); }
    } else if (turn.failed) {
      toast('The answer stopped on an error.');
    } else if (turn.el.dataset.finish === 'stopped') {
      toast('You stopped the answer.');
    } else {
      toast(turn.el.dataset.finish === 'confirmation_required' ? 'The assistant is waiting for your approval.' : 'The assistant has answered.');
    }
    refreshActions();
    loadSessions();
  }

  // adopt makes a chat that just got its session the open session, without
  // reloading the page.
  function adopt(id) {
    st.id = id;
    st.session = { id, title: '', created_at: new Date().toISOString() };
    history.replaceState(null, '', `#/chat/${encodeURIComponent(id)}`);
    inflight.set(id, st.lastId);
    showHeader();
    showStop();
  }

  // unsent undoes a send that got no answer: its text goes back in the box,
  // with the server's reason and Retry.
  function unsent({ message, bubble, welcome }, turn, e) {
    bubble.remove();
    turn.el.remove();
    if (!log.children.length) log.append(...welcome);
    if (!input.value.trim()) input.value = message;
    mount(sendErr, errorBox(e), h('div', { class: 'row' },
      h('button', { type: 'button', class: 'primary', id: 'chat-retry', onclick: () => sendMessage() }, 'Retry')));
    toast('Your message was not sent.');
    input.focus();
  }

  // decide approves or rejects a confirmation and continues the turn in
  // place with the streaming confirm. While other confirmations of the turn
  // are pending, the stream reports this decision and ends waiting. A refusal
  // (409 decided already, 410 expired) is thrown for the card to show.
  async function decide(turn, conf, approved, reason) {
    if (st.busy) throw new Error('Wait for the answer being written to finish.');
    const body = { session_id: st.id, confirmation_id: conf.id, approved };
    if (!approved && reason) body.reason = reason;
    const note = reason ? `Reason: ${reason}` : '';
    try {
      await run(turn, (cb) => stream('/api/v1/agent/confirm', body, (ev) => {
        if (conf.card.dataset.status === 'pending') turn.decided(conf.card, approved ? 'approved' : 'rejected', note);
        cb(ev);
      }, { signal: ctl.signal }), true);
    } catch (e) {
      if (e.status === 410) turn.decided(conf.card, 'expired');
      else if (e.status === 409) turn.decided(conf.card, (String(e.message).match(/approved|rejected|expired/) || ['decided'])[0]);
      throw e;
    }
  }

  // sendMessage posts the message box's text as a new turn. A send the
  // server refused, or that never reached it, puts the text back in the box
  // with the server's reason and Retry.
  async function sendMessage() {
    const message = input.value.trim();
    if (!message || st.busy) return;
    sendErr.replaceChildren();
    const welcome = [...log.querySelectorAll('.empty, .chat-welcome')];
    welcome.forEach((el) => el.remove());
    const bubble = userMessage(message);
    follow(() => log.append(bubble));
    st.sending = { message, bubble, welcome };
    input.value = '';
    const turn = new Turn(log, decide);
    log.scrollTop = log.scrollHeight;
    // The page the user came from routes the tools (pagecontext.js).
    const body = st.id ? { message, session_id: st.id, context: pageContext() } : { message, context: pageContext() };
    await run(turn, (cb) => stream('/api/v1/agent/chat', body, cb, { signal: ctl.signal }));
  }

  // resend sends text as a new message: what Regenerate (the last
  // question again) does.
  function resend(text) {
    if (st.busy) return;
    input.value = text;
    sendMessage();
  }

  // refreshActions offers Regenerate on the last answer and Edit on the
  // last question (both send a new message; nothing is rewritten).
  function refreshActions() {
    for (const b of log.querySelectorAll('.msg-actions .regen, .msg-actions .edit')) b.remove();
    const users = log.querySelectorAll('.msg.user');
    const lastUser = users[users.length - 1];
    if (!lastUser) return;
    const text = lastUser.dataset.text || '';
    lastUser.querySelector('.msg-actions').append(h('button', { type: 'button', class: 'edit small', onclick: () => {
      input.value = text;
      input.focus();
      input.setSelectionRange(text.length, text.length);
      toast('Edit the message, then send it as a new one.');
    } }, 'Edit'));
    const turns = log.querySelectorAll('.msg.assistant');
    const lastTurn = turns[turns.length - 1];
    if (lastTurn && lastTurn.compareDocumentPosition(lastUser) & Node.DOCUMENT_POSITION_PRECEDING) {
      lastTurn.querySelector('.msg-actions').append(h('button', { type: 'button', class: 'regen small', onclick: () => resend(text) }, 'Regenerate'));
    }
  }

  // followInflight resumes a turn that was on its way when the page was left
  // (a reload): the rest of its events, then the stored conversation.
  async function followInflight(lastId) {
    const turn = new Turn(log, decide);
    st.lastId = lastId;
    const sid = st.id;
    await run(turn, (cb) => stream(`${SESSIONS}/${encodeURIComponent(sid)}/stream`, undefined, cb,
      { lastEventId: lastId, signal: ctl.signal }), false, true);
    if (ctl.signal.aborted) return;
    await openSession();
    if (turn.el.dataset.finish === 'stopped' && st.lastTurn) { // the stored history does not say so
      st.lastTurn.finish({ finish_reason: 'stopped' });
      toast('You stopped the answer.');
    }
  }

  form.addEventListener('submit', (ev) => { ev.preventDefault(); sendMessage(); });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); sendMessage(); }
  });

  showHeader();
  loadSessions();
  const pending = inflight.get();
  if (st.id && pending && pending.id === st.id) openSession().then(() => followInflight(pending.lastId || 0));
  else if (st.id) openSession();
  else log.append(h('div', { class: 'chat-welcome' },
    h('p', {}, 'Ask about your services, costs, specifications, content or repositories.'),
    h('p', { class: 'empty' }, 'Changes such as scaling or deploying run only after you approve them here.')));

  const ticker = setInterval(() => tickCountdowns(log), 1000);
  return () => {
    ctl.abort();
    clearInterval(ticker);
    mic.stop();
  };
}
