// ui.js: building the DOM without HTML strings. h(tag, props, ...children)
// makes an element; string children become text nodes, so whatever the API
// returns is shown as text, never parsed.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// mount replaces el's children.
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// loading, empty and errorBox are the three states of a view with no data.
export const loading = (what = 'Loading…') => h('p', { class: 'loading', role: 'status' }, what);
export const empty = (what) => h('p', { class: 'empty' }, what);
export function errorBox(err) {
  const p = (err && err.problem) || {};
  return h('div', { class: 'error', role: 'alert' },
    h('strong', {}, err && err.status ? `Error ${err.status}: ` : 'Error: '),
    (err && err.message) || String(err),
    (p.errors || []).length ? h('ul', {}, p.errors.map((e) => h('li', {}, `${e.field}: ${e.reason}`))) : null);
}

// problemText is a failure as one line: the server's detail and the reason
// given for each field it names.
export function problemText(err) {
  const p = (err && err.problem) || {};
  const fields = (p.errors || []).map((e) => `${e.field}: ${e.reason}`);
  const msg = (err && err.message) || String(err);
  return fields.length ? `${msg} (${fields.join('; ')})` : msg;
}

// toast says something briefly in the page's polite live region.
export function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.textContent = ''; }, 5000);
}

// reconnecting counts what is waiting for the server (requests tried again,
// a chat stream resuming) and shows the "Reconnecting…" banner while any is.
let waitingForServer = 0;
export function reconnecting(on) {
  waitingForServer = Math.max(0, waitingForServer + (on ? 1 : -1));
  let el = document.getElementById('reconnecting');
  if (!el) {
    el = h('div', { id: 'reconnecting', class: 'reconnecting', role: 'status', hidden: true }, 'Reconnecting…');
    document.body.append(el);
  }
  el.hidden = waitingForServer === 0;
}

// when formats an RFC 3339 time for people.
export function when(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return isNaN(d) ? String(ts) : d.toLocaleString();
}

// field is a labelled form control.
export function field(label, control, hint) {
  const id = control.id || ('f-' + Math.random().toString(36).slice(2));
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('small', {}, hint) : null);
}

// button makes a button that shows busy while its async handler runs, and
// shows the handler's error in errEl (or a toast).
export function button(label, handler, props = {}) {
  const { errEl, ...attrs } = props;
  const b = h('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', async (ev) => {
    ev.preventDefault();
    if (b.disabled) return;
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try { await handler(ev); } catch (err) {
      if (errEl) mount(errEl, errorBox(err)); else toast(err.message || String(err));
    } finally { b.disabled = false; b.removeAttribute('aria-busy'); }
  });
  return b;
}

// details is a collapsed card: summary line, and body shown when opened.
export function details(summary, body, props = {}) {
  return h('details', props, h('summary', {}, summary), body);
}

// pretty is JSON shown as preformatted text.
export const pretty = (v) => h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
