// pages/cloud/containers.js: the Containers section: the account's ECS
// clusters, the services of the chosen one with their counts and
// deployments, Deploy and Scale behind a confirmation dialog, and logs.

import { api } from '../../api.js';
import { h, mount, loading, empty, errorBox, field, toast, when, button, details } from '../../ui.js';
import { url, seg, badge, short } from './common.js';
import { confirmDialog } from './dialog.js';
import { logPanel } from './logfollow.js';

// renderContainers shows the clusters of ctx.account in el, and the
// services of cluster (the first one when not given).
export async function renderContainers(el, ctx, cluster) {
  const side = h('nav', { class: 'clusters', 'aria-label': 'Clusters' }, loading('Loading clusters…'));
  const body = h('section', { class: 'services', 'aria-labelledby': 'services-title' });
  mount(el, h('h2', {}, 'Containers'), h('div', { class: 'split' }, side, body));
  let clusters;
  try {
    clusters = (await api('GET', url('/infrastructure/containers/clusters', { account_id: ctx.account.id }), undefined, { signal: ctx.signal })).items || [];
  } catch (e) {
    if (e.name !== 'AbortError') mount(side, errorBox(e));
    return;
  }
  if (clusters.length === 0) { mount(side, empty('No clusters in this account.')); return; }
  const current = clusters.find((c) => c.name === cluster) || clusters[0];
  mount(side, h('ul', { class: 'list' }, clusters.map((c) => h('li', {},
    h('a', { href: `#/cloud/containers/${seg(c.name)}`, 'aria-current': c.name === current.name ? 'true' : null },
      h('span', { class: 'name' }, c.name), ' ', badge(c.status),
      h('small', { class: 'sub' }, `${c.active_services ?? 0} service${c.active_services === 1 ? '' : 's'} · ${c.running_tasks ?? 0} running · ${c.pending_tasks ?? 0} pending tasks`))))));
  await showServices(body, ctx, current.name);
}

async function showServices(body, ctx, cluster) {
  const list = h('div', { class: 'service-grid' }, loading('Loading services…'));
  mount(body, h('h3', { id: 'services-title' }, `Services of ${cluster}`), list);
  // reload redraws the services; after a change, focus goes back to the
  // button of the service that was changed.
  const reload = async (service, action) => {
    let svcs;
    try {
      svcs = (await api('GET', url(`/infrastructure/containers/clusters/${seg(cluster)}/services`, { account_id: ctx.account.id }), undefined, { signal: ctx.signal })).items || [];
    } catch (e) {
      if (e.name !== 'AbortError') mount(list, errorBox(e));
      return;
    }
    if (svcs.length === 0) { mount(list, empty('No services in this cluster.')); return; }
    mount(list, svcs.map((s) => serviceCard(s, ctx, cluster, reload)));
    if (service) {
      const b = [...list.querySelectorAll('article.service')].find((a) => a.dataset.service === service);
      if (b) b.querySelector(`[data-action="${action}"]`).focus();
    }
  };
  await reload();
}

function serviceCard(s, ctx, cluster, reload) {
  const id = `svc-${cluster}-${s.name}`.replace(/[^A-Za-z0-9_-]/g, '-');
  const logs = logPanel(`/infrastructure/containers/services/${seg(s.name)}/logs`, { account_id: ctx.account.id, cluster }, ctx);
  const logBox = details('Logs', logs.el, { class: 'svc-logs' });
  logBox.addEventListener('toggle', () => (logBox.open ? logs.start() : logs.stop()));
  const deps = s.deployments || [];
  return h('article', { class: 'card service', id, 'data-service': s.name, 'aria-labelledby': id + '-name' },
    h('div', { class: 'row head' }, h('h4', { id: id + '-name' }, s.name), badge(s.status)),
    h('dl', { class: 'counts' },
      h('div', {}, h('dt', {}, 'Desired'), h('dd', { class: 'desired' }, String(s.desired_count ?? 0))),
      h('div', {}, h('dt', {}, 'Running'), h('dd', { class: 'running' }, String(s.running_count ?? 0))),
      h('div', {}, h('dt', {}, 'Pending'), h('dd', { class: 'pending' }, String(s.pending_count ?? 0)))),
    whyShort(s),
    h('p', { class: 'taskdef' }, 'Task definition ', h('code', {}, short(s.task_definition))),
    serviceEvents(s),
    details(`Deployments (${deps.length})`, h('ul', { class: 'deployments' }, deps.map((d) => h('li', {},
      badge(d.status), ' ', badge(d.rollout_state || 'unknown'), ' ',
      h('code', {}, short(d.task_definition)),
      ` · ${d.running_count ?? 0}/${d.desired_count ?? 0} running · ${when(d.created_at)}`)))),
    h('div', { class: 'row actions' },
      h('button', { type: 'button', class: 'primary', 'data-action': 'scale', onClick: () => scaleDialog(s, ctx, cluster, reload) }, 'Scale…'),
      h('button', { type: 'button', 'data-action': 'deploy', onClick: () => deployDialog(s, ctx, cluster, reload) }, 'Deploy…')),
    logBox);
}

// whyShort says why a service runs fewer tasks than it wants: its stopped
// tasks' reasons, else its newest event; nothing when it is not short.
function whyShort(s) {
  const missing = (s.desired_count ?? 0) - (s.running_count ?? 0) - (s.pending_count ?? 0);
  if (missing <= 0) return null;
  const stopped = s.stopped_tasks || [];
  const events = s.events || [];
  const head = h('strong', {}, `${missing} task${missing === 1 ? '' : 's'} short of the desired count.`);
  if (stopped.length === 0 && events.length === 0) return h('div', { class: 'notice why-short', role: 'status' }, head, ' ECS gives no reason yet.');
  return h('div', { class: 'notice why-short', role: 'status' }, head,
    stopped.length ? h('ul', { class: 'stopped-tasks' }, stopped.map((t) => h('li', {},
      `Task ${t.task_id.slice(0, 8)} stopped ${when(t.stopped_at)}: `, h('span', { class: 'reason' }, t.stopped_reason || t.stop_code || 'no reason given'),
      t.stop_code ? ` (${t.stop_code})` : '',
      (t.containers || []).length ? h('small', { class: 'sub' }, ' — ' + t.containers.join('; ')) : null)))
      : h('p', {}, 'Latest event: ', h('span', { class: 'reason' }, events[0].message)));
}

// serviceEvents lists a service's newest ECS events, closed by default.
function serviceEvents(s) {
  const events = s.events || [];
  if (events.length === 0) return null;
  return details(`Events (${events.length})`, h('ul', { class: 'events' }, events.map((e) => h('li', {},
    h('time', { datetime: e.created_at }, when(e.created_at)), ' ', e.message))), { class: 'svc-events' });
}

// largeScale mirrors the server's rule for the counts it can see: more than
// twice or less than half the desired count (0 counting as 1; scaling to 0
// has its own box). The server also asks above a configured size; its 422
// naming confirm_name shows the name field then.
function largeScale(from, to) {
  if (to === 0 || to === from) return false;
  const base = Math.max(from, 1);
  return to > base * 2 || to * 2 < from;
}

function scaleDialog(s, ctx, cluster, reload) {
  const count = h('input', { type: 'number', name: 'desired_count', min: '0', max: '1000', step: '1', required: true, value: String(s.desired_count ?? 0), inputmode: 'numeric' });
  const zero = h('input', { type: 'checkbox', name: 'confirm_scale_to_zero' });
  const zeroField = h('div', { class: 'check', hidden: true }, h('label', {}, zero, ' Yes, stop every task of this service (scale to 0)'));
  const name = h('input', { name: 'confirm_name', autocomplete: 'off', spellcheck: 'false', placeholder: s.name });
  const nameField = h('div', { class: 'confirm-name', hidden: true },
    h('p', { class: 'notice' }, 'This is a large change. Type the service name ', h('code', {}, s.name), ' to confirm.'),
    field('Service name', name));
  let askName = false;
  const sync = () => {
    zeroField.hidden = count.value !== '0';
    nameField.hidden = !(askName || largeScale(s.desired_count ?? 0, Number(count.value)));
  };
  count.addEventListener('input', sync);
  confirmDialog({
    id: 'scale-dialog',
    title: `Scale ${s.name}`,
    body: [
      h('p', {}, `Service ${s.name} in cluster ${cluster} (account ${ctx.account.name}) runs ${s.running_count ?? 0} of ${s.desired_count ?? 0} desired tasks.`),
      field('Desired tasks (0–1000)', count), zeroField, nameField],
    confirmLabel: 'Scale',
    onConfirm: async () => {
      const n = Number(count.value);
      if (count.value === '' || !Number.isInteger(n) || n < 0 || n > 1000) throw new Error('The desired count is a whole number from 0 to 1000.');
      if (n === 0 && !zero.checked) throw new Error('Scaling to 0 stops the service: tick the box to confirm.');
      const body = { account_id: ctx.account.id, cluster, desired_count: n };
      if (n === 0) body.confirm_scale_to_zero = true;
      if (!nameField.hidden) {
        if (name.value.trim() !== s.name) { name.focus(); throw new Error(`Type the service name, ${s.name}, to make this large change.`); }
        body.confirm_name = name.value.trim();
      }
      let r;
      try {
        r = await api('POST', url(`/infrastructure/containers/services/${seg(s.name)}/scale`), body);
      } catch (e) {
        if (!body.confirm_name && (e.problem?.errors || []).some((f) => f.field === 'confirm_name')) {
          askName = true;
          sync();
          name.focus();
        }
        throw e;
      }
      toast(`${s.name} in ${cluster}: desired count is now ${r.desired_count}.`);
      return r;
    },
  }).then((r) => { if (r) reload(s.name, 'scale'); });
}

function deployDialog(s, ctx, cluster, reload) {
  confirmDialog({
    id: 'deploy-dialog',
    title: `Deploy ${s.name}`,
    body: h('p', {}, `Start a new deployment of ${s.name} in cluster ${cluster} (account ${ctx.account.name}) with task definition `,
      h('code', {}, short(s.task_definition)), '? Its tasks are replaced one by one.'),
    confirmLabel: 'Deploy',
    onConfirm: async () => {
      const r = await api('POST', url(`/infrastructure/containers/services/${seg(s.name)}/deploy`), { account_id: ctx.account.id, cluster });
      toast(`Deployment ${r.deployment_id} of ${s.name}: ${r.status}.`);
      return r;
    },
  }).then((r) => { if (r) reload(s.name, 'deploy'); });
}
