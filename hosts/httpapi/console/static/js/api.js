// api.js: the console's one client of devpilot's HTTP API. A pasted API
// token lives in sessionStorage and goes out only as the Authorization
// header; after a sign-in through the identity provider the browser's
// HttpOnly session cookie authenticates instead, and every write carries the
// session's CSRF token. A problem+json answer becomes a ProblemError; a 401
// from any call returns to sign-in. A GET that cannot reach the server (a
// restart, a network blip) is tried again with backoff until it does, while
// the page shows "Reconnecting…": pages recover without a reload.

import { reconnecting, actionSucceeded } from './ui.js';

const KEY = 'devpilot.token';

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

// csrf is the CSRF token of the cookie session, when signed in by one.
let csrf = null;

// cookieSession returns the caller of the browser's session cookie
// ({user, org, csrf_token}) and keeps its CSRF token, or null when there is
// no live session.
export async function cookieSession() {
  const resp = await fetchRetrying('/auth/session', { headers: { Accept: 'application/json' } });
  if (!resp.ok) { csrf = null; return null; }
  const s = await resp.json();
  csrf = s.csrf_token || null;
  return s;
}

// signedInByCookie reports whether calls authenticate with the session cookie.
export function signedInByCookie() { return !token.get() && csrf !== null; }

// endCookieSession signs the cookie session out on the server.
export async function endCookieSession() {
  if (csrf === null) return;
  try {
    await fetch('/auth/logout', { method: 'POST', headers: { 'X-CSRF-Token': csrf } });
  } finally {
    csrf = null;
  }
}

// ProblemError is a failed call: status, the problem's detail as the message
// (a sentence; without a problem, one saying what the status means), and
// the whole problem (code, errors[]).
export class ProblemError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || statusSentence(status));
    this.status = status;
    this.problem = problem || {};
  }
}

// statusSentence says what an answer of status without a problem means.
function statusSentence(status) {
  if (status === 401) return 'You are not signed in, or your session ended.';
  if (status === 403) return 'You may not do this.';
  if (status === 404) return 'It is not there (any more).';
  if (status === 413) return 'That is too large to send.';
  if (status === 429) return 'Too many requests: wait a moment and try again.';
  if (status >= 500) return 'The server could not do this; try again in a moment.';
  return 'The server refused the request.';
}

// Answers that say the server is not there yet (a proxy in front of a
// restarting devpilot), unless they are devpilot's own problem.
const UNAVAILABLE = new Set([502, 503, 504]);

// sleep waits ms, or rejects with an AbortError when signal aborts.
function sleep(ms, signal) {
  return new Promise((ok, fail) => {
    if (signal && signal.aborted) { fail(new DOMException('aborted', 'AbortError')); return; }
    const t = setTimeout(ok, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); fail(new DOMException('aborted', 'AbortError')); }, { once: true });
  });
}

// fetchRetrying is fetch for a request that is safe to repeat (a GET): a
// network error or an answer of UNAVAILABLE is tried again after 0.5 s,
// doubling to 8 s, until the server answers or init.signal aborts; the
// reconnecting banner shows meanwhile.
export async function fetchRetrying(path, init = {}) {
  let waiting = false;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const resp = await fetch(path, init);
        const problem = (resp.headers.get('Content-Type') || '').startsWith('application/problem+json');
        if (!UNAVAILABLE.has(resp.status) || problem) return resp;
      } catch (e) {
        if (e.name === 'AbortError' || !(e instanceof TypeError)) throw e;
      }
      if (!waiting) { waiting = true; reconnecting(true); }
      await sleep(Math.min(8000, 500 * 2 ** attempt), init.signal);
    }
  } finally {
    if (waiting) reconnecting(false);
  }
}

let unauthorized = () => {};

// onUnauthorized sets what a 401 from any call does (app.js: back to sign-in).
export function onUnauthorized(f) { unauthorized = f; }

function headers(extra, method) {
  const h = new Headers(extra || {});
  const t = token.get();
  if (t) h.set('Authorization', 'Bearer ' + t);
  else if (csrf && method && method !== 'GET' && method !== 'HEAD') h.set('X-CSRF-Token', csrf);
  return h;
}

async function failure(resp) {
  let problem = null;
  try { problem = await resp.json(); } catch (_) { /* not JSON */ }
  if (resp.status === 401) unauthorized();
  return new ProblemError(resp.status, problem);
}

// api calls method path with body (an object sent as JSON, or FormData) and
// returns the JSON answer (null for 204). opts.headers adds headers;
// opts.signal aborts.
export async function api(method, path, body, opts = {}) {
  const h = headers(opts.headers, method);
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    h.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  const init = { method, headers: h, body: payload, signal: opts.signal };
  const resp = await (method === 'GET' ? fetchRetrying(path, init) : fetch(path, init));
  if (!resp.ok) throw await failure(resp);
  if (method !== 'GET' && method !== 'HEAD') actionSucceeded();
  if (resp.status === 204) return null;
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

// download GETs path (a file the API serves as an attachment) with the token
// and saves it through a Blob: a plain link could not send the header. The
// file is named as the answer's Content-Disposition says, else fallback; the
// name is returned.
export async function download(path, fallback) {
  const resp = await fetchRetrying(path, { headers: headers() });
  if (!resp.ok) throw await failure(resp);
  const m = /filename="([^"]+)"/.exec(resp.headers.get('Content-Disposition') || '');
  const name = m ? m[1] : fallback;
  const url = URL.createObjectURL(await resp.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return name;
}

// stream sends a request whose answer is text/event-stream (chat, the
// streaming confirm, resume) and calls onEvent({id, event, data}) for each
// event, data parsed as JSON. It resolves when the stream ends; a dropped
// connection rejects with a TypeError (or an AbortError), so the caller can
// resume from the last id it saw. opts: method (POST when body is given,
// else GET), lastEventId, signal. A 204 (nothing to replay) resolves at once.
// Before the first event, onEvent gets {id: 0, event: 'open', data:
// {session_id}}: the session the answer's X-Session-Id header names, if any.
export async function stream(path, body, onEvent, opts = {}) {
  const method = opts.method || (body !== undefined ? 'POST' : 'GET');
  const h = headers({ Accept: 'text/event-stream' }, method);
  if (opts.lastEventId) h.set('Last-Event-ID', String(opts.lastEventId));
  let payload;
  if (body !== undefined) {
    h.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  const resp = await fetch(path, { method, headers: h, body: payload, signal: opts.signal });
  if (!resp.ok) throw await failure(resp);
  if (resp.status === 204 || !resp.body) return;
  const type = resp.headers.get('Content-Type') || '';
  if (!type.startsWith('text/event-stream')) { // e.g. a confirm answered as JSON
    onEvent({ id: 0, event: 'json', data: await resp.json() });
    return;
  }
  onEvent({ id: 0, event: 'open', data: { session_id: resp.headers.get('X-Session-Id') } });
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
      const ev = parseEvent(block);
      if (ev) onEvent(ev);
    }
  }
}

function parseEvent(block) {
  const ev = { id: 0, event: 'message', data: '' };
  let data = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
    if (field === 'id') ev.id = /^\d+$/.test(value) ? Number(value) : value; // a log stream's ids are text
    else if (field === 'event') ev.event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return null;
  try { ev.data = JSON.parse(data.join('\n')); } catch (_) { ev.data = data.join('\n'); }
  return ev;
}

// list fetches one page of a list endpoint: {items, next_cursor}.
export function list(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  return api('GET', qs ? `${path}?${qs}` : path);
}
