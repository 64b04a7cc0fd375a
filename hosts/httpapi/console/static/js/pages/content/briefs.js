// pages/content/briefs.js: a project's briefs, a form for a new one, and
// Generate (POST /content/generate) on each.

import { api, list } from '../../api.js';
import { h, mount, field, button, errorBox, loading, empty, toast, when } from '../../ui.js';
import { splitList } from './util.js';

// briefsSection returns the briefs card of project pid; onGenerated(items)
// is called with the items a Generate started.
export function briefsSection(pid, onGenerated) {
  const listEl = h('div', {}, loading('Loading briefs…'));
  const errEl = h('div', { 'aria-live': 'assertive' });
  let briefs = [];

  function row(b) {
    const variants = h('select', { 'aria-label': `Variants of “${b.title}”`, class: 'variants' },
      [1, 2, 3].map((n) => h('option', { value: n }, `${n} variant${n > 1 ? 's' : ''}`)));
    const meta = [b.format, b.channel, b.length && (b.length.min_words || b.length.max_words)
      ? `${b.length.min_words || 0}–${b.length.max_words || '∞'} words` : null].filter(Boolean).join(' · ');
    return h('li', { class: 'brief', dataset: { id: b.id } },
      h('div', { class: 'brief-text' },
        h('strong', {}, b.title),
        meta ? h('small', {}, meta) : null,
        b.goal ? h('small', {}, b.goal) : null,
        h('small', {}, `Created ${when(b.created_at)}`)),
      h('div', { class: 'row brief-actions' }, variants,
        button('Generate', async () => {
          errEl.replaceChildren();
          const r = await api('POST', '/content/generate', { brief_id: b.id, variants: Number(variants.value) });
          const n = r.items.length;
          toast(`Writing ${n} draft${n > 1 ? 's' : ''} from “${b.title}”…`);
          onGenerated(r.items);
        }, { class: 'primary generate', errEl })));
  }

  function show() {
    mount(listEl, briefs.length
      ? h('ul', { class: 'list briefs', 'aria-label': 'Briefs' }, briefs.map(row))
      : empty('No briefs yet: write one below, then generate drafts from it.'));
    form.parentElement.open = briefs.length === 0 || form.parentElement.open;
  }

  const inputs = {
    title: h('input', { name: 'title', required: true, maxlength: 200 }),
    goal: h('textarea', { name: 'goal', rows: 2, maxlength: 2000 }),
    audience: h('input', { name: 'audience', maxlength: 1000 }),
    channel: h('input', { name: 'channel', maxlength: 50, placeholder: 'blog' }),
    format: h('input', { name: 'format', maxlength: 50, placeholder: 'article' }),
    keywords: h('input', { name: 'keywords', placeholder: 'gift cards, checkout' }),
    cta: h('input', { name: 'cta', maxlength: 200 }),
    min: h('input', { name: 'min_words', type: 'number', min: 0, max: 20000, inputmode: 'numeric' }),
    max: h('input', { name: 'max_words', type: 'number', min: 0, max: 20000, inputmode: 'numeric' }),
    notes: h('textarea', { name: 'notes', rows: 2, maxlength: 5000 }),
  };
  const formErr = h('div', { 'aria-live': 'assertive' });

  async function create() {
    formErr.replaceChildren();
    if (!inputs.title.value.trim()) { inputs.title.focus(); mount(formErr, errorBox(new Error('A brief needs a title.'))); return; }
    const body = {
      project_id: pid,
      title: inputs.title.value.trim(),
      goal: inputs.goal.value.trim(),
      audience: inputs.audience.value.trim(),
      channel: inputs.channel.value.trim(),
      format: inputs.format.value.trim(),
      keywords: splitList(inputs.keywords.value),
      cta: inputs.cta.value.trim(),
      length: { min_words: Number(inputs.min.value || 0), max_words: Number(inputs.max.value || 0) },
      notes: inputs.notes.value.trim(),
    };
    const b = await api('POST', '/content/briefs', body);
    briefs = [b, ...briefs];
    for (const el of Object.values(inputs)) el.value = '';
    form.parentElement.open = false;
    show();
    toast(`Brief “${b.title}” created.`);
    listEl.querySelector('button.generate')?.focus();
  }

  const form = h('form', { class: 'brief-form', 'aria-label': 'New brief' },
    field('Title', inputs.title),
    field('Goal', inputs.goal),
    h('div', { class: 'brief-grid' },
      field('Audience', inputs.audience),
      field('Channel', inputs.channel),
      field('Format', inputs.format),
      field('Call to action', inputs.cta),
      field('Minimum words', inputs.min, '0: no minimum.'),
      field('Maximum words', inputs.max, '0: no maximum.')),
    field('Keywords', inputs.keywords, 'Comma separated.'),
    field('Notes', inputs.notes),
    formErr,
    h('div', { class: 'row' }, button('Create brief', create, { class: 'primary', id: 'brief-create', errEl: formErr })));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); create().catch((e) => mount(formErr, errorBox(e))); });

  const card = h('section', { class: 'card briefs-card', 'aria-labelledby': 'briefs-title' },
    h('h2', { id: 'briefs-title' }, 'Briefs'),
    listEl, errEl,
    h('details', { class: 'new-brief' }, h('summary', {}, 'New brief'), form));

  list('/content/briefs', { project_id: pid, limit: 200 }).then(
    (r) => { briefs = r.items; show(); },
    (e) => mount(listEl, errorBox(e)));
  return card;
}
