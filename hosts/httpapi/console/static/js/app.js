// app.js: the console's shell: sign-in, navigation by the URL's fragment
// (#/chat, #/specs/ID, …), and the pages under pages/; #/join/SECRET (an
// invitation) is open without signing in. A page module exports
// title and render(main, args), which may return a function to call when the
// page is left (to stop a stream).

import { api, token, onUnauthorized, cookieSession, endCookieSession } from './api.js';
import { h, mount, button, errorBox, field, toast } from './ui.js';
import * as chat from './pages/chat.js';
import * as specs from './pages/specs.js';
import * as cloud from './pages/cloud.js';
import * as content from './pages/content.js';
import * as repos from './pages/repos.js';
import * as tokens from './pages/tokens.js';
import * as members from './pages/members.js';
import * as admin from './pages/admin.js';
import * as permissions from './pages/permissions.js';
import * as mcp from './pages/mcp.js';
import * as join from './pages/join.js';

const pages = { chat, specs, cloud, content, repos, tokens, members, permissions, mcp, admin };
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const menuToggle = document.getElementById('menu-toggle');
let leave = null;

// me is the signed-in caller ({user, org}), or null.
export let me = null;

async function signOut() {
  token.clear();
  me = null;
  try { await endCookieSession(); } catch (_) { /* signed out anyway */ }
  location.hash = '#/signin';
}

onUnauthorized(() => {
  token.clear();
  me = null;
  if (!main.querySelector('form.signin')) { // the sign-in form shows its own refusal
    sessionStorage.setItem('devpilot.notice', 'Your session ended: sign in again.');
    location.hash = '#/signin';
  }
});

async function signIn(value) {
  token.set(value.trim());
  me = await api('GET', '/api/v1/me');
  location.hash = '#/chat';
}

async function signInPage(failure) {
  nav.hidden = true;
  signedOutShell();
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  const err = h('div', { 'aria-live': 'assertive' });
  const notice = failure ? `Sign-in failed: ${failure}` : sessionStorage.getItem('devpilot.notice');
  sessionStorage.removeItem('devpilot.notice');
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, placeholder: 'dp_…', spellcheck: 'false' });
  // method post: should the script not handle the submit, the token still never lands in a URL.
  const form = h('form', { class: 'card signin', method: 'post', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to devpilot'),
    notice ? h('p', { class: 'notice', role: 'status' }, notice) : null,
    field('API token', input, 'Created with devpilot token create. It is kept in this tab only.'),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try { await signIn(input.value); } catch (e) { token.clear(); mount(err, errorBox(e)); }
  });
  mount(main, form);
  input.focus();
  try {
    const cfg = await api('GET', '/auth/config');
    if (cfg && cfg.oidc) {
      const sso = h('div', { class: 'sso' },
        h('a', { class: 'button primary', id: 'sso-signin', href: cfg.login_url + '?redirect_after=' + encodeURIComponent('/#/chat') },
          'Sign in with your identity provider'),
        h('p', { class: 'hint' }, 'or paste an API token'));
      form.insertBefore(sso, input.closest('.field') || form.children[notice ? 2 : 1]);
      sso.querySelector('a').focus();
    }
  } catch (_) { /* no single sign-on */ }
  try {
    const sb = await api('GET', '/api/v1/sandbox');
    if (sb && sb.demo_token) {
      form.insertBefore(h('div', { class: 'demo' },
        h('p', {}, 'This devpilot runs in sandbox mode, with demo data and fake providers.'),
        button('Use the demo user', () => signIn(sb.demo_token), { class: 'primary', id: 'demo-signin', errEl: err })), form.children[1]);
    }
  } catch (_) { /* not a sandbox */ }
}

// joinPage shows the page that accepts an invitation, without the
// navigation of a signed-in user.
function joinPage(args) {
  nav.hidden = true;
  signedOutShell();
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  document.title = `${join.title} · devpilot`;
  main.replaceChildren();
  try { join.render(main, args); } catch (e) { mount(main, errorBox(e)); }
}

function renderNav(current) {
  nav.hidden = false;
  menuToggle.hidden = false;
  document.getElementById('signout').hidden = false;
  // A page that exports adminOnly is in an admin's menu only.
  const isAdmin = me && me.user && me.user.role === 'admin';
  mount(nav, Object.entries(pages).filter(([, p]) => isAdmin || !p.adminOnly).map(([name, p]) =>
    h('a', { href: '#/' + name, 'aria-current': name === current ? 'page' : null }, p.title)));
  if (me) document.getElementById('who').textContent = `${me.user.email} · ${me.org.name}`;
}

// routing counts route's calls: one that a later call overtook while it
// waited draws nothing more.
let routing = 0;

async function route() {
  const mine = ++routing;
  if (leave) { try { leave(); } catch (_) { /* ignore */ } leave = null; }
  const [name, ...args] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (name === 'join') { joinPage(args); return; } // reachable signed out: an invitee has no token yet
  if (name === 'signin') { await signInPage(args[0] === 'failed' ? args.slice(1).join('/') : null); return; }
  if (token.get()) {
    try { me = await api('GET', '/api/v1/me'); } catch (e) { if (e.status !== 401 && mine === routing) mount(main, errorBox(e)); return; }
  } else {
    let s = null;
    try { s = await cookieSession(); } catch (_) { /* offline: sign in */ }
    if (mine !== routing) return;
    if (!s) { location.hash = '#/signin'; return; }
    me = { user: s.user, org: s.org };
  }
  if (mine !== routing) return;
  const page = pages[name] || pages.chat;
  renderNav(pages[name] ? name : 'chat');
  document.title = `${page.title} · devpilot`;
  main.replaceChildren();
  try {
    const r = await page.render(main, args);
    if (typeof r === 'function') leave = r;
  } catch (e) {
    mount(main, errorBox(e));
  }
  main.focus({ preventScroll: true });
}

// The menu under 640 px: the header shows the Menu button, which opens the
// navigation below it (app.css); Escape, choosing a page, or a click
// elsewhere closes it, and focus returns to the button.
function openMenu(open, focusButton = false) {
  const top = menuToggle.closest('.top');
  top.classList.toggle('open', open);
  menuToggle.setAttribute('aria-expanded', String(open));
  if (open) { const first = nav.querySelector('a[aria-current="page"]') || nav.querySelector('a'); if (first) first.focus(); }
  else if (focusButton) menuToggle.focus();
}

// signedOutShell hides what only a signed-in user has: the menu.
function signedOutShell() {
  openMenu(false);
  menuToggle.hidden = true;
}

menuToggle.addEventListener('click', () => openMenu(menuToggle.getAttribute('aria-expanded') !== 'true'));
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && menuToggle.getAttribute('aria-expanded') === 'true') { ev.preventDefault(); openMenu(false, true); }
});
document.addEventListener('click', (ev) => {
  if (menuToggle.getAttribute('aria-expanded') === 'true' && !ev.target.closest('.top')) openMenu(false);
});
nav.addEventListener('click', (ev) => { if (ev.target.closest('a')) openMenu(false); });

document.getElementById('signout').addEventListener('click', async () => { await signOut(); toast('Signed out.'); });
window.addEventListener('hashchange', route);
route();
