// pages/join.js: the join page (#/join/SECRET), reachable without signing
// in: an invitee accepts an organisation's invitation (POST
// /api/v1/invitations/accept) with their email and a name for their first
// API token, which the console keeps (in this tab, as sign-in does) before
// going to the chat. The secret comes in the URL's fragment, which the
// browser never sends to a server.

import { api, token } from '../api.js';
import { h, mount, errorBox, field, toast } from '../ui.js';

export const title = 'Join';

// render draws the page for the secret in args[0].
export function render(main, args) {
  const secret = (args && args[0]) || '';
  const err = h('div', { 'aria-live': 'assertive' });
  const email = h('input', { id: 'join-email', type: 'email', name: 'email', autocomplete: 'email', required: true, placeholder: 'you@example.com' });
  const name = h('input', { id: 'join-token-name', name: 'token_name', maxlength: 100, autocomplete: 'off', placeholder: 'console' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'join-submit' }, 'Join');
  // method post: should the script not handle the submit, nothing lands in a URL.
  const form = h('form', { class: 'card signin join', method: 'post', 'aria-labelledby': 'join-title' },
    h('h1', { id: 'join-title' }, 'Join devpilot'),
    h('p', {}, 'You were invited to an organisation on devpilot. Say who you are to accept.'),
    field('Email', email, 'The address you were invited at, if the invitation names one.'),
    field('Name of your first API token', name, 'Optional. The console signs you in with it, in this tab only; make more on the Tokens page.'),
    submit,
    err);
  if (!secret) {
    mount(main, h('section', { class: 'card signin' }, h('h1', {}, 'Join devpilot'),
      h('p', { class: 'empty' }, 'This link holds no invitation: ask an admin of your organisation for a new one.')));
    return;
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    mount(err);
    submit.disabled = true;
    try {
      const body = { secret, email: email.value.trim() };
      if (name.value.trim()) body.token_name = name.value.trim();
      const r = await api('POST', '/api/v1/invitations/accept', body);
      token.set(r.token);
      toast(`Welcome to ${r.org.name}.`);
      location.hash = '#/chat';
    } catch (e) {
      mount(err, errorBox(e));
    } finally {
      submit.disabled = false;
    }
  });
  mount(main, form);
  email.focus();
}
