// pages/cloud/functions.js: the Functions section: the account's Lambda
// functions; invoking one with a JSON payload (checked before it is sent)
// and an optional dry run; its logs.

import { api } from '../../api.js';
import { h, mount, loading, empty, errorBox, field, toast, when, button, details, pretty } from '../../ui.js';
import { url, seg, badge } from './common.js';
import { confirmDialog } from './dialog.js';
import { logPanel } from './logfollow.js';

// renderFunctions shows the functions of ctx.account in el, with the
// invoke panel of fn (the first function when not given).
export async function renderFunctions(el, ctx, fn) {
  const side = h('nav', { class: 'functions', 'aria-label': 'Functions' }, loading('Loading functions…'));
  const body = h('section', { class: 'function', 'aria-labelledby': 'function-title' });
  mount(el, h('h2', {}, 'Functions'), h('div', { class: 'split' }, side, body));
  let fns;
  try {
    fns = (await api('GET', url('/infrastructure/serverless/functions', { account_id: ctx.account.id }), undefined, { signal: ctx.signal })).items || [];
  } catch (e) {
    if (e.name !== 'AbortError') mount(side, errorBox(e));
    return;
  }
  if (fns.length === 0) { mount(side, empty('No functions in this account.')); return; }
  const current = fns.find((f) => f.name === fn) || fns[0];
  mount(side, h('ul', { class: 'list' }, fns.map((f) => h('li', {},
    h('a', { href: `#/cloud/functions/${seg(f.name)}`, 'aria-current': f.name === current.name ? 'true' : null },
      h('span', { class: 'name' }, f.name), h('small', { class: 'sub' }, `${f.runtime || ''} · ${f.memory_mb ?? '?'} MB`))))));
  showFunction(body, ctx, current);
}

function showFunction(body, ctx, f) {
  const payload = h('textarea', { name: 'payload', rows: '6', spellcheck: 'false', class: 'code', 'aria-describedby': 'payload-error' }, '{}');
  const jsonErr = h('p', { id: 'payload-error', class: 'field-error', 'aria-live': 'polite' });
  const dry = h('input', { type: 'checkbox', name: 'dry_run', id: 'invoke-dry-run' });
  const result = h('div', { class: 'invoke-result', 'aria-live': 'polite' });
  const check = () => {
    try {
      const v = JSON.parse(payload.value);
      payload.removeAttribute('aria-invalid');
      jsonErr.textContent = '';
      return { ok: true, value: v };
    } catch (e) {
      payload.setAttribute('aria-invalid', 'true');
      jsonErr.textContent = `Not valid JSON: ${e.message}`;
      return { ok: false };
    }
  };
  payload.addEventListener('input', check);
  const form = h('form', { class: 'card invoke', 'aria-label': `Invoke ${f.name}` },
    field('Payload (JSON)', payload), jsonErr,
    h('div', { class: 'check' }, h('label', { for: 'invoke-dry-run' }, dry, ' Dry run (check the call is allowed; run nothing)')),
    h('button', { type: 'submit', class: 'primary', id: 'invoke-button' }, 'Invoke'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const p = check();
    if (!p.ok) { payload.focus(); return; }
    // A real invocation runs the function: it is confirmed first, like a
    // scale or a deploy; a dry run runs nothing.
    if (!dry.checked) {
      const size = new Blob([JSON.stringify(p.value)]).size;
      const go = await confirmDialog({
        id: 'invoke-dialog',
        title: `Invoke ${f.name}`,
        body: h('p', {}, `Run function ${f.name} (account ${ctx.account.name}) now with a ${size}-byte payload? It does whatever the function does, for real.`),
        confirmLabel: 'Invoke',
        onConfirm: async () => true,
      });
      if (!go) return;
    }
    const btn = form.querySelector('button[type=submit]');
    btn.disabled = true;
    btn.setAttribute('aria-busy', 'true');
    mount(result, loading(dry.checked ? 'Dry run…' : 'Invoking…'));
    try {
      const r = await api('POST', url(`/infrastructure/serverless/functions/${seg(f.name)}/invoke`), { account_id: ctx.account.id, payload: p.value, dry_run: dry.checked });
      mount(result, invokeResult(r, dry.checked));
      toast(`${f.name}: ${dry.checked ? 'dry run ' : ''}status ${r.status_code}${r.function_error ? ', ' + r.function_error : ''}.`);
    } catch (e) {
      if (e.name !== 'AbortError') mount(result, errorBox(e));
    } finally { btn.disabled = false; btn.removeAttribute('aria-busy'); }
  });

  const logs = logPanel(`/infrastructure/serverless/functions/${seg(f.name)}/logs`, { account_id: ctx.account.id }, ctx);
  const logBox = details('Logs', logs.el, { class: 'fn-logs' });
  logBox.addEventListener('toggle', () => (logBox.open ? logs.start() : logs.stop()));

  mount(body,
    h('h3', { id: 'function-title' }, f.name),
    h('p', { class: 'meta' }, [f.runtime, f.memory_mb ? `${f.memory_mb} MB` : null, f.timeout_seconds ? `timeout ${f.timeout_seconds} s` : null,
      f.last_modified ? `changed ${when(f.last_modified)}` : null].filter(Boolean).join(' · ')),
    form, result, logBox);
}

function invokeResult(r, dry) {
  const failed = Boolean(r.function_error);
  return h('div', { class: 'card', id: 'invoke-out' },
    h('div', { class: 'row' },
      h('strong', {}, dry ? 'Dry run' : 'Invoked'),
      h('span', {}, 'Status ', badge(r.status_code >= 200 && r.status_code < 300 && !failed ? 'ok' : 'failed', String(r.status_code))),
      failed ? h('span', {}, 'Function error ', badge('failed', r.function_error)) : null),
    r.payload !== null && r.payload !== undefined ? [h('h4', {}, 'Payload'), pretty(r.payload)] : h('p', { class: 'empty' }, 'No payload returned.'),
    r.log_tail ? [h('h4', {}, 'Log tail'), h('pre', { class: 'log' }, r.log_tail)] : null);
}
