// pages/cloud/accounts.js: the Accounts section (list, test connection,
// add and delete for admins) and the Audit section (an account's log of
// writes, paged).

import { api } from '../../api.js';
import { h, mount, loading, empty, errorBox, field, toast, when, button, pretty, details } from '../../ui.js';
import { url, seg, badge } from './common.js';
import { confirmDialog } from './dialog.js';

// renderAccounts shows the org's accounts in el; admins may add and delete.
// ctx.reload() redraws the whole page (the account chooser changes too).
export function renderAccounts(el, ctx) {
  mount(el, h('h2', {}, 'Accounts'),
    ctx.accounts.length ? h('div', { class: 'account-list' }, ctx.accounts.map((a) => accountCard(a, ctx))) : empty('No cloud account yet.'),
    ctx.admin ? addForm(ctx) : h('p', { class: 'empty' }, 'Only an admin of the organisation adds or deletes accounts.'));
}

function accountCard(a, ctx) {
  const id = `acct-${a.id}`;
  const out = h('div', { class: 'test-out', role: 'status' });
  const auth = a.auth || {};
  const statusBadge = h('span', { class: 'status' }, badge(a.status, `status: ${a.status}`));
  const tested = h('dd', {}, a.last_tested_at ? when(a.last_tested_at) : 'never');
  const lastErr = h('dd', {}, a.last_error || '');
  const lastErrRow = h('div', { hidden: !a.last_error }, h('dt', {}, 'Last error'), lastErr);
  // test runs the connection test, shows its answer, and redraws the
  // account's status from what the test recorded.
  const test = h('button', { type: 'button', 'data-action': 'test' }, 'Test connection');
  test.addEventListener('click', async () => {
    test.disabled = true;
    test.setAttribute('aria-busy', 'true');
    mount(out, loading('Testing…'));
    try {
      const r = await api('POST', url(`/cloud/accounts/${seg(a.id)}/test`), undefined, { signal: ctx.signal });
      mount(out, r.ok
        ? h('p', { class: 'ok-line' }, badge('ok', 'Connected'), ` in ${r.latency_ms} ms as `, h('code', {}, r.arn || ''), ` (AWS account ${r.account_id || '?'})`)
        : h('p', { class: 'error' }, badge('failed', 'Failed'), ` ${r.error || 'the test failed'}${r.latency_ms !== undefined ? ` (${r.latency_ms} ms)` : ''}`));
      const fresh = await api('GET', url(`/cloud/accounts/${seg(a.id)}`), undefined, { signal: ctx.signal });
      mount(statusBadge, badge(fresh.status, `status: ${fresh.status}`));
      tested.textContent = fresh.last_tested_at ? when(fresh.last_tested_at) : 'never';
      lastErr.textContent = fresh.last_error || '';
      lastErrRow.hidden = !fresh.last_error;
    } catch (e) {
      if (e.name !== 'AbortError') mount(out, errorBox(e));
    } finally { test.disabled = false; test.removeAttribute('aria-busy'); }
  });
  const del = ctx.admin ? h('button', { type: 'button', class: 'danger', 'data-action': 'delete', onClick: () => confirmDialog({
    id: 'delete-account-dialog',
    title: `Delete account ${a.name}?`,
    body: h('p', {}, `devpilot forgets account ${a.name} (${a.region}) and its credentials. Nothing in AWS changes.`),
    confirmLabel: 'Delete', danger: true,
    onConfirm: async () => { await api('DELETE', url(`/cloud/accounts/${seg(a.id)}`)); return true; },
  }).then((ok) => { if (ok) { toast(`Account ${a.name} deleted.`); ctx.reload(); } }) }, 'Delete…') : null;
  return h('article', { class: 'card account', id, 'data-account': a.id, 'aria-labelledby': id + '-name' },
    h('div', { class: 'row head' },
      h('h3', { id: id + '-name' }, a.name),
      statusBadge,
      a.read_only ? h('span', { class: 'badge warn read-only' }, 'read-only') : h('span', { class: 'badge' }, 'read-write')),
    h('dl', { class: 'kv' },
      h('div', {}, h('dt', {}, 'Provider'), h('dd', {}, `${(a.provider || 'aws').toUpperCase()} · ${a.region}`)),
      auth.mode === 'assume_role'
        ? [h('div', {}, h('dt', {}, 'Role'), h('dd', {}, h('code', {}, auth.role_arn || ''))),
          h('div', {}, h('dt', {}, 'External id'), h('dd', {}, h('code', {}, auth.external_id || '')))]
        : h('div', {}, h('dt', {}, 'Access key'), h('dd', {}, h('code', {}, auth.access_key_id || ''))),
      h('div', {}, h('dt', {}, 'Last tested'), tested),
      lastErrRow),
    h('div', { class: 'row actions' }, test, del, h('a', { href: `#/cloud/audit/${seg(a.id)}` }, 'Audit log')),
    out);
}

function addForm(ctx) {
  const err = h('div', { 'aria-live': 'assertive' });
  const name = h('input', { name: 'name', required: true, maxlength: '100', autocomplete: 'off' });
  const region = h('input', { name: 'region', required: true, value: 'us-east-1', autocomplete: 'off' });
  const mode = h('select', { name: 'mode' },
    h('option', { value: 'assume_role' }, 'Assume a role (recommended)'),
    h('option', { value: 'access_key' }, 'Access key'));
  const roleArn = h('input', { name: 'role_arn', placeholder: 'arn:aws:iam::123456789012:role/devpilot', spellcheck: 'false', autocomplete: 'off' });
  const extId = h('input', { name: 'external_id', readonly: true, value: '…', spellcheck: 'false' });
  const keyId = h('input', { name: 'access_key_id', spellcheck: 'false', autocomplete: 'off' });
  const secret = h('input', { name: 'secret_access_key', type: 'password', autocomplete: 'new-password' });
  const readOnly = h('input', { type: 'checkbox', name: 'read_only', id: 'acct-read-only' });
  const roleBox = h('div', { class: 'role-box' },
    field('Role ARN', roleArn),
    field('External id of your organisation', extId,
      'Put it in the role\'s trust policy as the condition sts:ExternalId; devpilot sends it when it assumes the role.'));
  const keyBox = h('div', { class: 'key-box', hidden: true }, field('Access key id', keyId), field('Secret access key', secret, 'Sealed at rest; never shown again.'));
  const sync = () => {
    const role = mode.value === 'assume_role';
    roleBox.hidden = !role; keyBox.hidden = role;
    roleArn.required = role; keyId.required = !role; secret.required = !role;
  };
  mode.addEventListener('change', sync);
  sync();
  api('GET', url('/cloud/external-id'), undefined, { signal: ctx.signal })
    .then((r) => { extId.value = r.external_id; })
    .catch((e) => { if (e.name !== 'AbortError') { extId.value = ''; mount(err, errorBox(e)); } });
  const form = h('form', { class: 'add-account', 'aria-label': 'Add an account' },
    h('div', { class: 'grid2' }, field('Name', name), field('Region', region)),
    field('Authentication', mode), roleBox, keyBox,
    h('div', { class: 'check' }, h('label', { for: 'acct-read-only' }, readOnly, ' Read-only: refuse every write on this account')),
    err,
    h('button', { type: 'submit', class: 'primary' }, 'Add account'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const btn = form.querySelector('button[type=submit]');
    btn.disabled = true;
    const auth = mode.value === 'assume_role'
      ? { mode: 'assume_role', role_arn: roleArn.value.trim() }
      : { mode: 'access_key', access_key_id: keyId.value.trim(), secret_access_key: secret.value };
    try {
      const a = await api('POST', url('/cloud/accounts'), { provider: 'aws', name: name.value.trim(), region: region.value.trim(), auth, read_only: readOnly.checked });
      secret.value = '';
      toast(`Account ${a.name} added: test its connection.`);
      ctx.reload();
    } catch (e) {
      mount(err, errorBox(e));
    } finally { btn.disabled = false; }
  });
  return details('Add an account', form, { class: 'add-account-box' });
}

// renderAudit shows the audit log of the account accountId (ctx.account
// when not given) in el, newest first, a page at a time.
export async function renderAudit(el, ctx, accountId) {
  const account = ctx.accounts.find((a) => a.id === accountId) || ctx.account;
  const rows = h('tbody');
  const more = h('div', { class: 'more' });
  const status = h('p', { class: 'sub', role: 'status' });
  mount(el, h('h2', {}, `Audit log of ${account.name}`),
    h('p', { class: 'sub' }, 'Every write through the API or the assistant, newest first.'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'audit' },
      h('caption', { class: 'sr-only' }, `Audit log of ${account.name}`),
      h('thead', {}, h('tr', {}, ['When', 'Action', 'Resource', 'Outcome', 'Who', 'Arguments'].map((c) => h('th', { scope: 'col' }, c)))),
      rows)),
    status, more);
  const self = ctx.me && ctx.me.user ? ctx.me.user.id : null;
  let shown = 0;
  const page = async (cursor) => {
    mount(more, loading('Loading the audit log…'));
    let r;
    try {
      r = await api('GET', url(`/cloud/accounts/${seg(account.id)}/audit`, { limit: 25, cursor }), undefined, { signal: ctx.signal });
    } catch (e) {
      if (e.name !== 'AbortError') mount(more, errorBox(e));
      return;
    }
    for (const it of r.items || []) {
      rows.append(h('tr', { 'data-action': it.action },
        h('td', {}, when(it.at)),
        h('td', {}, h('code', {}, it.action)),
        h('td', {}, it.resource),
        h('td', {}, badge(it.outcome), it.error ? h('div', { class: 'sub' }, it.error) : null),
        h('td', {}, it.user_id === self ? 'you' : h('code', {}, it.user_id)),
        h('td', {}, it.arguments ? details('Show', pretty(it.arguments)) : '–')));
    }
    shown += (r.items || []).length;
    status.textContent = shown ? `${shown} entr${shown === 1 ? 'y' : 'ies'} shown.` : '';
    if (shown === 0) mount(more, empty('Nothing recorded yet.'));
    else if (r.next_cursor) mount(more, button('Load older entries', () => page(r.next_cursor), { id: 'audit-more' }));
    else mount(more, h('p', { class: 'empty' }, 'That is the whole log.'));
  };
  await page();
}
