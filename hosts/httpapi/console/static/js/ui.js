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
// errorBox shows a failure as the server wrote it: the problem's detail as
// a sentence, the reason for each field it names as a list, and the HTTP
// status only small and muted at the end (not as an "Error 409:" prefix).
// It marks itself as the failure of the action under way (see
// actionSucceeded), so that the next success of that action clears it.
export function errorBox(err) {
  const p = (err && err.problem) || {};
  const status = err && err.status;
  const box = h('div', { class: 'error', role: 'alert' },
    h('span', { class: 'error-text' }, (err && err.message) || String(err)),
    (p.errors || []).length ? h('ul', { class: 'error-fields' }, p.errors.map((e) => h('li', {}, `${e.field}: ${e.reason}`))) : null,
    status ? h('small', { class: 'error-status', title: `HTTP status ${status}${p.code ? ' (' + p.code + ')' : ''}` }, String(status)) : null);
  return box;
}

// The action under way: the form last submitted or the container of the
// button last clicked, and the error boxes it showed then. When a write to
// the API succeeds (api.js calls actionSucceeded), those error boxes go:
// an error does not outlive the next success of the same action. Error
// boxes drawn since (the action's own new failure) stay.
let acting = null;
function scopeOf(el) {
  if (!el || !el.closest) return null;
  const s = el.closest('form, dialog, [role="dialog"], [role="alertdialog"], section, .card, tr');
  // A table's row is too small: its errors are shown beside the table.
  return s && s.tagName === 'TR' ? (scopeOf(s.parentElement) || s) : s;
}
function startAction(scope, form) {
  acting = scope ? { scope, form, around: form && scopeOf(form.parentElement), stale: errorsIn(scope) } : null;
}
document.addEventListener('submit', (ev) => startAction(scopeOf(ev.target), ev.target), true);
document.addEventListener('click', (ev) => {
  const b = ev.target && ev.target.closest ? ev.target.closest('button, [role="button"], input[type="submit"]') : null;
  if (b) startAction(scopeOf(b));
}, true);

// errorsIn lists the error boxes shown in el.
function errorsIn(el) { return el && el.isConnected ? [...el.querySelectorAll('.error[role="alert"]')] : []; }

// removeAll removes those of els still in the page.
function removeAll(els) { for (const e of els) if (e.isConnected) e.remove(); }

// actionSucceeded says a write of the action under way succeeded: the error
// boxes shown when it began go (api.js calls it after every successful
// write).
export function actionSucceeded() {
  if (!acting) return;
  removeAll(acting.stale);
  if (acting.form) focusAfter(acting.form, acting.around);
}

// focusAfter keeps the keyboard where the person is after a form's write
// succeeded and the page has redrawn: a form emptied for the next entry
// gets its first field; a form the redraw removed (focus lost with it)
// hands focus to the first field of a form drawn in its place, else to the
// first control left in the section around it, else to main. Focus the
// page put somewhere on purpose is left alone. The page is not scrolled:
// the focus moves, what the person looks at stays.
const CONTROLS = 'input:not([type="hidden"]):not([disabled]), select:not([disabled]), textarea:not([disabled]), button:not([disabled]), a[href]';
function focusAfter(form, scope) {
  setTimeout(() => {
    const lost = !document.activeElement || document.activeElement === document.body || !document.activeElement.isConnected;
    if (form.isConnected) {
      const fields = [...form.querySelectorAll('input:not([type="hidden"]):not([type="checkbox"]):not([type="radio"]):not([disabled]), textarea:not([disabled])')];
      const emptied = fields.length > 0 && fields.every((f) => f.value === '');
      const onForm = form.contains(document.activeElement);
      if ((lost || (onForm && emptied)) && fields.length) fields[0].focus({ preventScroll: true });
      return;
    }
    if (!lost) return;
    const around = scope && scope.isConnected ? scope : null;
    const next = around && (around.querySelector('form input:not([type="hidden"]):not([disabled]), form textarea:not([disabled])') || around.querySelector(CONTROLS));
    const main = document.getElementById('main');
    if (next) next.focus({ preventScroll: true });
    else if (main) { if (!main.hasAttribute('tabindex')) main.setAttribute('tabindex', '-1'); main.focus({ preventScroll: true }); }
  }, 50);
}

// problemText is a failure as one line: the server's detail and the reason
// given for each field it names.
export function problemText(err) {
  const p = (err && err.problem) || {};
  const fields = (p.errors || []).map((e) => `${e.field}: ${e.reason}`);
  const msg = (err && err.message) || String(err);
  return fields.length ? `${msg} (${fields.join('; ')})` : msg;
}

// toast says something briefly in the page's polite live region. The
// region is moved into the top-most open modal dialog while one is open: a
// modal dialog sits in the top layer, above everything else in the page,
// and makes the rest of it inert. The toast never takes focus and lets
// clicks through (pointer-events: none).
let toastEl = null;
export function toast(msg) {
  if (!toastEl) toastEl = document.getElementById('toast');
  if (!toastEl) return;
  const modals = [...document.querySelectorAll('dialog[open]')].filter((d) => d.matches(':modal'));
  const host = modals.length ? modals[modals.length - 1] : document.body;
  if (toastEl.parentNode !== host) {
    host.append(toastEl);
    if (host !== document.body) {
      host.addEventListener('close', () => { document.body.append(toastEl); }, { once: true });
    }
  }
  toastEl.textContent = msg;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { toastEl.textContent = ''; }, 5000);
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
// shows the handler's error in errEl (or a toast); a later success clears
// that error. Focus stays on the button when it is still there; when the
// handler redrew it away (a row deleted, a list refreshed), focus goes to
// the control now where it was (the next row's), else to the nearest
// control that is left: never lost to the page's body.
export function button(label, handler, props = {}) {
  const { errEl, ...attrs } = props;
  const b = h('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', async (ev) => {
    ev.preventDefault();
    if (b.disabled) return;
    const place = placeOf(b);
    const stale = errorsIn(errEl);
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try {
      await handler(ev);
      removeAll(stale); // the errors shown before this success (not any the handler showed itself)
    } catch (err) {
      if (errEl) mount(errEl, errorBox(err)); else toast(err.message || String(err));
    } finally {
      b.disabled = false;
      b.removeAttribute('aria-busy');
      refocus(b, place);
    }
  });
  return b;
}

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

function visible(el) { return el.getClientRects().length > 0; }

// placeOf remembers where el is: its ancestors, and its index among the
// controls of each.
function placeOf(el) {
  const out = [];
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    out.push([a, [...a.querySelectorAll(FOCUSABLE)].indexOf(el)]);
  }
  return out;
}

// refocus gives focus back after el's action, when focus was lost (on the
// body, or on an element no longer in the page).
export function refocus(el, place = []) {
  const f = document.activeElement;
  if (f && f !== document.body && f.isConnected && f !== el) return; // the action put it somewhere
  if (el.isConnected && visible(el)) { if (f !== el) el.focus(); return; }
  for (const [a, i] of place) {
    if (!a.isConnected) continue;
    const cs = [...a.querySelectorAll(FOCUSABLE)].filter(visible);
    if (cs.length) { cs[Math.min(Math.max(i, 0), cs.length - 1)].focus(); return; }
  }
  const m = document.getElementById('main');
  if (m) m.focus({ preventScroll: true });
}

// confirmAction asks in the page, in a modal dialog, before something is
// destroyed: title, text naming what goes, Cancel (focused first) and a
// danger button labelled confirmLabel. Escape cancels. It resolves to true
// when confirmed, false otherwise; focus goes back to the control that
// opened it.
let dialogs = 0;
export function confirmAction({ title, text, confirmLabel = 'Delete', danger = true }) {
  const opener = document.activeElement;
  const id = `confirm-${++dialogs}`;
  const cancel = h('button', { type: 'button', class: 'confirm-cancel', value: 'cancel' }, 'Cancel');
  const ok = h('button', { type: 'submit', class: `confirm-ok ${danger ? 'danger' : 'primary'}`, value: 'ok' }, confirmLabel);
  const form = h('form', { method: 'dialog' },
    h('h2', { id: id + '-title' }, title),
    h('p', { id: id + '-text', class: 'confirm-text' }, text),
    h('div', { class: 'row confirm-actions' }, cancel, ok));
  const dlg = h('dialog', { class: 'confirm-dialog', role: 'alertdialog', 'aria-labelledby': id + '-title', 'aria-describedby': id + '-text' }, form);
  document.body.append(dlg);
  return new Promise((resolve) => {
    cancel.addEventListener('click', () => dlg.close('cancel'));
    dlg.addEventListener('close', () => {
      const yes = dlg.returnValue === 'ok';
      dlg.remove();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(yes);
    });
    dlg.showModal();
    cancel.focus();
  });
}

// details is a collapsed card: summary line, and body shown when opened.
export function details(summary, body, props = {}) {
  return h('details', props, h('summary', {}, summary), body);
}

// pretty is JSON shown as preformatted text.
export const pretty = (v) => h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
