// pages/content/targets.js: a project's publishing targets on the Content
// page (#targets): the list, a form that adds one (a webhook, a WordPress
// site or a file in a GitHub repository) and shows a webhook's signing
// secret this once, with a copy button, and deletion with a confirmation
// in the page. A github_file target commits with its creator's GitHub
// connection, so only an admin or its creator may delete it: for others
// the button is greyed and says why.

import { api, list } from '../../api.js';
import { me } from '../../app.js';
import { h, mount, field, button, errorBox, empty, toast, when, confirmAction } from '../../ui.js';
import { kindLabel } from './publish.js';

// KINDS are the kinds of target with the settings each takes: [key,
// label, input type, hint, default].
const KINDS = {
  webhook: [['url', 'URL', 'url', 'devpilot POSTs the item as JSON here, signed with the target’s secret.', '']],
  wordpress: [
    ['site_url', 'Site URL', 'url', 'The WordPress site, such as https://blog.example.com.', ''],
    ['username', 'Username', 'text', '', ''],
    ['application_password', 'Application password', 'password', 'Sealed when stored; never shown again.', ''],
  ],
  github_file: [
    ['repo_id', 'Repository', 'repo', 'A repository of your GitHub connection.', ''],
    ['path_template', 'Path', 'text', '{slug}, {id} and {date} are filled in.', 'content/{slug}.md'],
    ['branch', 'Branch (optional)', 'text', 'The default branch when empty.', ''],
  ],
};

// summary is a target's settings in one line.
function summary(t) {
  const c = t.config || {};
  switch (t.kind) {
    case 'webhook': return c.url || '';
    case 'wordpress': return `${c.site_url || ''} as ${c.username || '?'}`;
    case 'github_file': return `${c.path_template || ''}${c.branch ? ` on ${c.branch}` : ''}`;
    default: return '';
  }
}

// mayDelete says whether the signed-in user may delete t, and why not.
function mayDelete(t) {
  if (t.kind !== 'github_file' || !me || me.user.role === 'admin' || me.user.id === t.created_by) return [true, ''];
  return [false, 'Only an organisation admin or its creator may delete it: it commits with its creator’s GitHub connection.'];
}

// copyText puts text on the clipboard, also outside a secure context.
async function copyText(text, input) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    input.select();
    if (!document.execCommand('copy')) throw new Error('Copying was refused: select the secret and copy it yourself.');
  }
}

// secretBox shows a new webhook target's signing secret, this once.
function secretBox(t, onDone) {
  const input = h('input', { readonly: true, value: t.secret, class: 'secret-value', name: 'target-secret', spellcheck: 'false', 'aria-label': 'Signing secret' });
  return h('div', { class: 'secret-once', role: 'alert' },
    h('strong', {}, `Signing secret of “${t.name}”`),
    h('p', {}, 'Copy it now: it will not be shown again. Each delivery carries ',
      h('code', {}, 'X-Devpilot-Signature-256: sha256=…'), ', the HMAC-SHA256 of the body with this secret; the receiver checks it.'),
    h('div', { class: 'row secret-row' }, input,
      button('Copy', async () => { await copyText(t.secret, input); toast('Secret copied.'); }, { id: 'target-secret-copy' })),
    h('div', { class: 'row' }, button('I have stored it', onDone, { id: 'target-secret-done' })));
}

// targetsSection is the card of project pid's publishing targets.
export function targetsSection(pid) {
  const listEl = h('div', { class: 'targets-list' }, h('p', { class: 'loading', role: 'status' }, 'Loading targets…'));
  const secretEl = h('div', { class: 'targets-secret' });
  const formErr = h('div', { 'aria-live': 'assertive' });

  async function refresh() {
    try {
      const r = await list('/content/targets', { project_id: pid });
      mount(listEl, r.items.length ? h('ul', { class: 'targets' }, r.items.map(row))
        : empty('No publishing targets yet: add one below to publish approved items for real.'));
    } catch (e) {
      mount(listEl, errorBox(e));
    }
  }

  function row(t) {
    const [ok, why] = mayDelete(t);
    const errEl = h('div', { 'aria-live': 'assertive' });
    const del = button('Delete…', async () => {
      if (!await confirmAction({ title: 'Delete the target?', text: `Delete the target “${t.name}”? Its past publications stay listed; one scheduled through it will fail when its time comes.` })) return;
      await api('DELETE', `/content/targets/${encodeURIComponent(t.id)}`);
      toast(`Deleted the target “${t.name}”.`);
      refresh();
    }, { class: 'danger target-delete', disabled: !ok, title: why || null, 'aria-describedby': why ? `why-${t.id}` : null, errEl });
    return h('li', { class: 'target', dataset: { id: t.id, kind: t.kind } },
      h('div', { class: 'target-text' },
        h('div', { class: 'target-title' }, h('strong', { class: 'target-name' }, t.name), ' ', h('span', { class: 'badge' }, kindLabel(t.kind))),
        h('small', { class: 'target-config' }, summary(t)),
        h('small', {}, `Added ${when(t.created_at)}`),
        why ? h('small', { id: `why-${t.id}`, class: 'target-why' }, why) : null),
      h('div', { class: 'target-actions' }, del),
      errEl);
  }

  // form adds a target; its settings follow the kind chosen.
  function form() {
    const name = h('input', { name: 'target-name', maxlength: 100, required: true, placeholder: 'Company blog' });
    const kind = h('select', { name: 'target-kind' }, Object.keys(KINDS).map((k) => h('option', { value: k }, kindLabel(k))));
    const settings = h('div', { class: 'target-settings' });
    let inputs = {};
    function drawSettings() {
      inputs = {};
      mount(settings, KINDS[kind.value].map(([key, label, type, hint, def]) => {
        let control;
        if (type === 'repo') {
          control = h('select', { name: `target-${key}` }, h('option', { value: '' }, 'Loading repositories…'));
          list('/scm/repos', { limit: 200 }).then((r) => {
            mount(control, h('option', { value: '' }, r.items.length ? 'Choose a repository…' : 'No repositories: connect GitHub on the Repositories page'),
              r.items.map((repo) => h('option', { value: repo.id }, repo.full_name)));
          }, (e) => mount(control, h('option', { value: '' }, e.status === 404 || e.status === 409 ? 'Connect GitHub on the Repositories page first' : `Repositories unavailable: ${e.message}`)));
        } else {
          control = h('input', { name: `target-${key}`, type, value: def, maxlength: 2000, autocomplete: type === 'password' ? 'new-password' : 'off',
            placeholder: type === 'url' ? 'https://…' : '' });
        }
        inputs[key] = control;
        return field(label, control, hint);
      }));
    }
    kind.addEventListener('change', drawSettings);
    drawSettings();

    async function create() {
      formErr.replaceChildren();
      const config = {};
      for (const [key, control] of Object.entries(inputs)) {
        const v = control.value.trim();
        if (v) config[key] = key === 'application_password' ? control.value : v;
      }
      const t = await api('POST', '/content/targets', { project_id: pid, name: name.value.trim(), kind: kind.value, config });
      toast(`Added the target “${t.name}”.`);
      name.value = '';
      drawSettings();
      if (t.secret) {
        mount(secretEl, secretBox(t, () => { secretEl.replaceChildren(); toast('The secret is no longer shown.'); }));
        secretEl.querySelector('input').focus();
      }
      refresh();
    }

    return h('details', { class: 'new-target' }, h('summary', {}, 'Add a target'),
      h('form', { class: 'target-form', 'aria-label': 'Add a publishing target', onsubmit: (ev) => ev.preventDefault() },
        h('div', { class: 'brief-grid' }, field('Name', name), field('Kind', kind)),
        settings,
        h('div', { class: 'row' }, button('Add target', create, { class: 'primary', id: 'target-create', errEl: formErr })),
        formErr));
  }

  refresh();
  return h('section', { class: 'card targets-card', id: 'targets', 'aria-labelledby': 'targets-title' },
    h('h2', { id: 'targets-title' }, 'Publishing targets'),
    h('p', { class: 'hint' }, 'Where approved items of this project are published: a webhook, a WordPress site or a file in a GitHub repository.'),
    secretEl, listEl, form());
}
