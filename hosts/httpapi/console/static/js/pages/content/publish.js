// pages/content/publish.js: publishing a content item for real from its
// dialog. An approved item is published through one of its project's
// targets (POST /content/{id}/publish), now or at a time given in local
// time and sent as RFC 3339; brand findings ask for a "publish anyway"
// reason; the item's publications are listed with their attempts, remote
// URL and, for a scheduled or queued one, Cancel (DELETE
// /content/{id}/publications/{publication_id}). The list is read again
// while a publication is queued or running, until it settles.

import { api, list } from '../../api.js';
import { h, mount, field, button, errorBox, empty, toast, when, confirmAction } from '../../ui.js';

const POLL_MS = 1000;

// PUB_LABELS are the publication statuses as people read them, with their
// badge's severity.
const PUB_LABELS = {
  scheduled: ['Scheduled', ''],
  queued: ['Queued', ''],
  running: ['Publishing…', ''],
  succeeded: ['Published', 'ok'],
  failed: ['Failed', 'bad'],
  cancelled: ['Cancelled', 'warn'],
};

const KIND_LABELS = { webhook: 'Webhook', wordpress: 'WordPress', github_file: 'GitHub file' };

// kindLabel is a target's kind as people read it.
export const kindLabel = (k) => KIND_LABELS[k] || k;

const settling = (p) => p.status === 'queued' || p.status === 'running';

// link is an external link that opens in a new tab and shows its URL.
export const link = (url) => h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url);

// localInput formats d for a datetime-local input (local time, minutes).
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// zoneName is the browser's time zone as people read it.
function zoneName() {
  const off = -new Date().getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const a = Math.abs(off);
  const utc = `UTC${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
  try { return `${Intl.DateTimeFormat().resolvedOptions().timeZone} (${utc})`; } catch (_) { return utc; }
}

// publishedLine is how an item was published: "Published via <target> ·
// <link>" through a target (its name from the succeeded publication), or
// "Published elsewhere · <link>"; null before.
export function publishedLine(item, pubs) {
  if (item.status !== 'published' && !item.published_via) return null;
  if (item.published_via === 'elsewhere') {
    return h('span', { class: 'published-line elsewhere', dataset: { via: 'elsewhere' } },
      h('span', { class: 'badge warn' }, 'Published elsewhere'),
      item.published_url ? [' · ', link(item.published_url)] : null);
  }
  const ok = (pubs || []).find((p) => p.status === 'succeeded');
  return h('span', { class: 'published-line via-target', dataset: { via: 'target' } },
    h('span', { class: 'badge ok' }, ok ? `Published via ${ok.target_name}` : 'Published via a target'),
    item.published_url ? [' · ', link(item.published_url)] : (ok && ok.remote_url ? [' · ', link(ok.remote_url)] : ' · the target reported no URL'));
}

// publishPanel returns {el, line, stop()}: the publishing part of an
// item's dialog (the form that publishes an approved item, and its
// publications) and the line saying how it was published.
// onChanged(item?) is called when a publication was made, cancelled or
// settled, so that the dialog and the board are read again.
export function publishPanel(item, onChanged) {
  let stopped = false;
  let timer = 0;
  let pubs = null;
  const pubsEl = h('div', { class: 'pubs', 'aria-live': 'polite' }, h('p', { class: 'loading', role: 'status' }, 'Loading publications…'));
  const line = h('span', { class: 'published-slot' }, publishedLine(item, null));
  const formErr = h('div', { class: 'publish-errors', 'aria-live': 'assertive' });

  async function load() {
    clearTimeout(timer);
    if (stopped) return;
    let r;
    try {
      r = await list(`/content/${encodeURIComponent(item.id)}/publications`);
    } catch (e) {
      if (!stopped) { mount(pubsEl, errorBox(e)); timer = setTimeout(load, POLL_MS * 3); }
      return;
    }
    if (stopped) return;
    const before = pubs;
    pubs = r.items;
    draw();
    if (pubs.some(settling)) timer = setTimeout(load, POLL_MS);
    for (const p of pubs) {
      if (before && before.some((b) => b.id === p.id && settling(b)) && !settling(p)) {
        toast(p.status === 'succeeded' ? `Published via ${p.target_name}.` : `Publishing via ${p.target_name} ${p.status}.`);
      }
    }
    // A publication that succeeded after the item was read has published
    // it: the item is read again (once: then it is published).
    if (item.status === 'approved' && pubs.some((p) => p.status === 'succeeded' && p.finished_at &&
        new Date(p.finished_at) > new Date(item.updated_at))) {
      stopped = true;
      clearTimeout(timer);
      onChanged();
    }
  }

  function attempts(p) {
    if (!p.attempts || !p.attempts.length) return null;
    return h('details', { class: 'pub-attempts' }, h('summary', {}, `${p.attempts.length} attempt${p.attempts.length > 1 ? 's' : ''}`),
      h('ol', {}, p.attempts.map((a) => h('li', {},
        h('span', { class: `badge ${a.outcome === 'ok' ? 'ok' : 'bad'}` }, a.outcome === 'ok' ? 'OK' : 'Failed'), ' ',
        h('small', {}, when(a.at)), a.error ? [' — ', a.error] : null))));
  }

  function row(p) {
    const [label, sev] = PUB_LABELS[p.status] || [p.status, ''];
    const cancelErr = h('div', { 'aria-live': 'assertive' });
    return h('li', { class: 'pub', dataset: { id: p.id, status: p.status } },
      h('div', { class: 'row pub-head' },
        h('span', { class: `badge ${sev} pub-status` }, label),
        h('strong', {}, p.target_name), h('small', {}, kindLabel(p.target_kind)),
        h('small', {}, p.status === 'scheduled' ? `for ${when(p.at)}` : when(p.finished_at || p.at)),
        (p.status === 'scheduled' || p.status === 'queued')
          ? button('Cancel', async () => {
            if (!await confirmAction({
              title: 'Stop this publication?',
              text: `The publication via “${p.target_name}”${p.status === 'scheduled' ? ` scheduled for ${when(p.at)}` : ''} will not happen. Publish again to schedule another.`,
              confirmLabel: 'Stop publication',
            })) return;
            await api('DELETE', `/content/${encodeURIComponent(item.id)}/publications/${encodeURIComponent(p.id)}`);
            toast(`Publication via ${p.target_name} cancelled.`);
            load();
          }, { class: 'pub-cancel', errEl: cancelErr, 'aria-label': `Cancel the publication via ${p.target_name}` })
          : null),
      p.remote_url ? h('div', { class: 'pub-url' }, 'At ', link(p.remote_url)) : null,
      p.error && p.status !== 'cancelled' ? h('div', { class: 'pub-error' }, h('strong', {}, 'Last error: '), p.error) : null,
      attempts(p), cancelErr);
  }

  function draw() {
    mount(line, publishedLine(item, pubs));
    el.hidden = !shown() && pubs.length === 0;
    mount(pubsEl, pubs.length
      ? h('ul', { class: 'pub-list' }, pubs.map(row))
      : empty(item.status === 'approved' ? 'Not published through a target yet.' : 'No publications.'));
  }

  // form publishes the approved item through a target, now or later.
  function form() {
    const target = h('select', { name: 'publish-target', required: true }, h('option', { value: '' }, 'Loading targets…'));
    const nowRadio = h('input', { type: 'radio', name: 'publish-when', value: 'now', checked: true });
    const laterRadio = h('input', { type: 'radio', name: 'publish-when', value: 'later' });
    const at = h('input', { type: 'datetime-local', name: 'publish-at', value: localInput(new Date(Date.now() + 3600e3)), disabled: true });
    const sync = () => { at.disabled = !laterRadio.checked; };
    nowRadio.addEventListener('change', sync);
    laterRadio.addEventListener('change', sync);
    const noTargets = h('p', { class: 'hint', hidden: true }, 'This project has no publishing targets yet: add one under “Publishing targets” on the Content page.');
    list('/content/targets', { project_id: item.project_id }).then((r) => {
      mount(target, r.items.length ? h('option', { value: '' }, 'Choose a target…') : h('option', { value: '' }, 'No targets'),
        r.items.map((t) => h('option', { value: t.id }, `${t.name} (${kindLabel(t.kind)})`)));
      if (r.items.length === 1) target.value = r.items[0].id;
      noTargets.hidden = r.items.length > 0;
    }, (e) => mount(formErr, errorBox(e)));

    async function send(override) {
      formErr.replaceChildren();
      if (!target.value) { mount(formErr, errorBox(new Error('Choose the target to publish through.'))); target.focus(); return; }
      const body = { target_id: target.value };
      if (laterRadio.checked) {
        const d = new Date(at.value);
        if (!at.value || isNaN(d)) { mount(formErr, errorBox(new Error('Give the date and time to publish at.'))); at.focus(); return; }
        body.at = d.toISOString();
      }
      if (override !== undefined) body.override = { reason: override };
      try {
        const r = await api('POST', `/content/${encodeURIComponent(item.id)}/publish`, body);
        const name = target.selectedOptions[0] ? target.selectedOptions[0].textContent : 'the target';
        toast(r.status === 'scheduled' ? `Scheduled via ${name} for ${when(r.at)}.` : `Publishing via ${name}…`);
        details.open = false;
        onChanged(); // the item's version moves when an override is recorded
        load();
      } catch (e) {
        if (e.status === 409 && e.problem && e.problem.code === 'brand_findings') mount(formErr, anyway(e));
        else if (e.status === 409 && e.problem && e.problem.code === 'banned_words') {
          mount(formErr, h('div', { class: 'error', role: 'alert' }, h('strong', {}, 'It cannot be published: '), e.message,
            h('p', {}, 'This brand makes banned words blocking: edit the text, or change the brand settings.')));
        } else mount(formErr, errorBox(e));
      }
    }

    // anyway asks for the reason to publish despite the brand findings.
    function anyway(err) {
      const reason = h('input', { name: 'publish-override-reason', maxlength: 500, required: true, placeholder: 'Why it may go out as it is' });
      return h('div', { class: 'error', role: 'alert' },
        h('strong', {}, 'The brand checks found problems. '), err.message,
        h('div', { class: 'override' },
          field('Reason (recorded with your name)', reason, '3 to 500 characters.'),
          h('div', { class: 'row' }, button('Publish anyway', () => send(reason.value), { class: 'danger', id: 'publish-override' }))));
    }

    const details = h('details', { class: 'item-publish' },
      h('summary', {}, 'Publish…'),
      h('form', { 'aria-label': 'Publish through a target', onsubmit: (ev) => ev.preventDefault() },
        field('Target', target),
        noTargets,
        h('fieldset', { class: 'publish-when' },
          h('legend', {}, 'When'),
          h('label', { class: 'radio' }, nowRadio, ' Now'),
          h('label', { class: 'radio' }, laterRadio, ' Schedule for'),
          field('Date and time', at, `Your local time, ${zoneName()}.`)),
        h('div', { class: 'row' }, button('Publish', () => send(), { class: 'primary', id: 'item-publish' })),
        formErr));
    return details;
  }

  // shown: the section is for approved and published items, and for any
  // with publications.
  const shown = () => item.status === 'approved' || item.status === 'published';
  const el = h('section', { class: 'item-publishing', 'aria-label': 'Publishing', hidden: !shown() },
    h('h3', {}, 'Publishing'),
    item.status === 'approved' ? form() : null,
    h('h4', {}, 'Publications'),
    pubsEl);
  load();
  return {
    el,
    // line is how the item was published, for the dialog's header.
    line,
    stop() { stopped = true; clearTimeout(timer); },
  };
}
