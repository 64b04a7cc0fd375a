// pages/cloud.js: the Cloud page: costs, containers, functions, apps,
// accounts and the audit log of the org's cloud accounts, one section at a
// time (#/cloud/<section>/<args…>). The sections live in pages/cloud/.

import { api } from '../api.js';
import { h, mount, loading, empty, errorBox, field } from '../ui.js';
import { me } from '../app.js';
import { url } from './cloud/common.js';
import { renderCosts } from './cloud/costs.js';
import { renderContainers } from './cloud/containers.js';
import { renderFunctions } from './cloud/functions.js';
import { renderApps } from './cloud/apps.js';
import { renderAccounts, renderAudit } from './cloud/accounts.js';

export const title = 'Cloud';

const SECTIONS = [
  ['costs', 'Costs', renderCosts],
  ['containers', 'Containers', renderContainers],
  ['functions', 'Functions', renderFunctions],
  ['apps', 'Apps', renderApps],
  ['accounts', 'Accounts', renderAccounts],
  ['audit', 'Audit log', renderAudit],
];
// Sections that work on one account (the chooser's).
const PER_ACCOUNT = new Set(['costs', 'containers', 'functions', 'audit']);
const KEY = 'devpilot.cloud.account';

// render draws the Cloud page's section args[0] (costs by default) in main
// and returns the cleanup that stops its requests and timers.
export function render(main, args) {
  const name = SECTIONS.some(([n]) => n === args[0]) ? args[0] : 'costs';
  const aborter = new AbortController();
  const cleanups = [];
  const cleanup = () => {
    aborter.abort();
    for (const f of cleanups.splice(0)) { try { f(); } catch (_) { /* ignore */ } }
    for (const d of document.querySelectorAll('dialog.cloud-dialog')) d.close();
  };
  const chooser = h('div', { class: 'account-chooser' });
  const section = h('section', { class: 'cloud-section', 'data-section': name }, loading());
  mount(main,
    h('div', { class: 'cloud-head' },
      h('h1', {}, title),
      chooser),
    h('nav', { class: 'cloud-tabs', 'aria-label': 'Cloud sections' }, SECTIONS.map(([n, label]) =>
      h('a', { href: `#/cloud/${n}`, 'aria-current': n === name ? 'page' : null }, label))),
    section);

  const ctx = {
    me, admin: Boolean(me && me.user && me.user.role === 'admin'),
    signal: aborter.signal,
    onCleanup: (f) => cleanups.push(f),
    accounts: [], account: null,
    // reload redraws this section after the accounts changed.
    reload: () => { cleanup(); const again = render(main, args); leaveWith = again; },
  };
  let leaveWith = null;

  (async () => {
    try {
      ctx.accounts = (await api('GET', url('/cloud/accounts', { limit: 200 }), undefined, { signal: aborter.signal })).items || [];
    } catch (e) {
      if (e.name !== 'AbortError') mount(section, errorBox(e));
      return;
    }
    const saved = sessionStorage.getItem(KEY);
    ctx.account = ctx.accounts.find((a) => a.id === saved) || ctx.accounts[0] || null;
    if (ctx.accounts.length > 1) {
      const sel = h('select', { name: 'account' }, ctx.accounts.map((a) =>
        h('option', { value: a.id, selected: a === ctx.account }, `${a.name} (${a.region})${a.read_only ? ' · read-only' : ''}`)));
      sel.addEventListener('change', () => { sessionStorage.setItem(KEY, sel.value); ctx.reload(); });
      mount(chooser, field('Account', sel));
    } else if (ctx.account) {
      mount(chooser, h('p', { class: 'sub' }, 'Account ', h('strong', {}, ctx.account.name),
        ` · ${ctx.account.region}`, ctx.account.read_only ? [' ', h('span', { class: 'badge warn' }, 'read-only')] : null));
    }
    if (PER_ACCOUNT.has(name) && !ctx.account) {
      mount(section, empty('No cloud account yet.'), h('p', {}, h('a', { href: '#/cloud/accounts' }, ctx.admin ? 'Add one in Accounts.' : 'An admin adds one in Accounts.')));
      return;
    }
    const [, , draw] = SECTIONS.find(([n]) => n === name);
    try {
      await draw(section, ctx, ...args.slice(1));
    } catch (e) {
      if (e.name !== 'AbortError') mount(section, errorBox(e));
    }
  })();

  return () => { if (leaveWith) leaveWith(); else cleanup(); };
}
