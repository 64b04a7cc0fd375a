// pages/content/brand.js: a project's brand settings, edited as a form and
// saved with If-Match, so that a stale form is refused (412) and shown as a
// version conflict rather than overwriting someone else's change.

import { api } from '../../api.js';
import { h, mount, field, button, errorBox, loading, toast, when } from '../../ui.js';
import { splitList, ifMatch, isConflict } from './util.js';

const EXAMPLE_SEP = /\n\s*---\s*\n/;

// brandSection returns the brand settings card of project pid.
export function brandSection(pid) {
  const body = h('div', {}, loading('Loading brand settings…'));
  const summaryText = h('span', {}, 'Brand settings');
  const card = h('details', { class: 'card brand', id: 'brand' }, h('summary', {}, summaryText), body);
  let brand = null;

  const inputs = {
    name: h('input', { name: 'name', maxlength: 200 }),
    voice: h('textarea', { name: 'voice', rows: 2, maxlength: 2000 }),
    tone: h('input', { name: 'tone', placeholder: 'friendly, plain' }),
    audience: h('input', { name: 'audience', maxlength: 1000 }),
    values: h('textarea', { name: 'values', rows: 2 }),
    banned_words: h('input', { name: 'banned_words', placeholder: 'synergy, leverage' }),
    preferred_terms: h('textarea', { name: 'preferred_terms', rows: 2, placeholder: 'utilize => use' }),
    style_guide: h('textarea', { name: 'style_guide', rows: 3, maxlength: 20000 }),
    examples: h('textarea', { name: 'examples', rows: 3 }),
    banned_words_blocking: h('input', { type: 'checkbox', name: 'banned_words_blocking', id: 'brand-banned-blocking' }),
  };
  const status = h('div', { class: 'brand-status', 'aria-live': 'polite' });
  const errEl = h('div', { 'aria-live': 'assertive' });

  function fill(b) {
    brand = b;
    inputs.name.value = b.name || '';
    inputs.voice.value = b.voice || '';
    inputs.tone.value = (b.tone || []).join(', ');
    inputs.audience.value = b.audience || '';
    inputs.values.value = (b.values || []).join('\n');
    inputs.banned_words.value = (b.banned_words || []).join(', ');
    inputs.banned_words_blocking.checked = !!b.banned_words_blocking;
    inputs.preferred_terms.value = Object.entries(b.preferred_terms || {}).map(([k, v]) => `${k} => ${v}`).join('\n');
    inputs.style_guide.value = b.style_guide || '';
    inputs.examples.value = (b.examples || []).join('\n---\n');
    summaryText.textContent = b.version
      ? `Brand settings: ${b.name || 'unnamed'} · version ${b.version}`
      : 'Brand settings (not set yet)';
    mount(status, b.version
      ? h('small', {}, `Version ${b.version}, saved ${when(b.updated_at)}`)
      : h('small', {}, 'This project has no brand settings yet: these are the defaults.'));
    if (!b.version) card.open = true;
  }

  function read() {
    const preferred = {};
    for (const line of splitList(inputs.preferred_terms.value, '\n')) {
      const m = line.match(/^(.+?)\s*(?:=>|→|=)\s*(.+)$/);
      if (!m) throw new Error(`Preferred terms: write each as “avoid => use”, not “${line}”.`);
      preferred[m[1].trim()] = m[2].trim();
    }
    return {
      name: inputs.name.value.trim(),
      voice: inputs.voice.value.trim(),
      tone: splitList(inputs.tone.value),
      audience: inputs.audience.value.trim(),
      values: splitList(inputs.values.value, '\n'),
      banned_words: splitList(inputs.banned_words.value),
      banned_words_blocking: inputs.banned_words_blocking.checked,
      preferred_terms: preferred,
      style_guide: inputs.style_guide.value,
      examples: inputs.examples.value.split(EXAMPLE_SEP).map((s) => s.trim()).filter(Boolean),
    };
  }

  async function load() {
    errEl.replaceChildren();
    fill(await api('GET', `/content/brands/${encodeURIComponent(pid)}`));
  }

  function conflict(edited) {
    return h('div', { class: 'error conflict', role: 'alert' },
      h('strong', {}, 'Version conflict. '),
      `Someone else changed these settings after you opened them (you edited version ${edited}). `,
      'Your changes were not saved. Reload to see theirs, then make your change again.',
      h('div', { class: 'row' }, button('Reload settings', async () => { await load(); toast('Brand settings reloaded.'); },
        { class: 'primary', errEl })));
  }

  async function save() {
    errEl.replaceChildren();
    let body;
    try { body = read(); } catch (e) { mount(errEl, errorBox(e)); return; }
    const edited = brand.version;
    try {
      fill(await api('PUT', `/content/brands/${encodeURIComponent(pid)}`, body, { headers: ifMatch(edited) }));
      toast(`Brand settings saved (version ${brand.version}).`);
    } catch (e) {
      mount(errEl, isConflict(e) ? conflict(edited) : errorBox(e));
    }
  }

  const form = h('form', { class: 'brand-form', 'aria-label': 'Brand settings' },
    h('div', { class: 'brand-grid' },
      field('Brand name', inputs.name),
      field('Audience', inputs.audience),
      field('Voice', inputs.voice),
      field('Tone', inputs.tone, 'Comma separated.'),
      field('Values', inputs.values, 'One per line.'),
      field('Banned words', inputs.banned_words, 'Comma separated; drafts using one are flagged.'),
      field('Preferred terms', inputs.preferred_terms, 'One per line: avoid => use.'),
      field('Style guide', inputs.style_guide),
      field('Examples', inputs.examples, 'Separate examples with a line holding ---.')),
    h('div', { class: 'brand-blocking' },
      h('label', { for: 'brand-banned-blocking' }, inputs.banned_words_blocking,
        ' Banned words block: an item using one cannot be approved or published, even with a reason')),
    status, errEl,
    h('div', { class: 'row' }, button('Save brand settings', save, { class: 'primary', id: 'brand-save', errEl })));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); save(); });

  load().then(() => mount(body, form), (e) => mount(body, errorBox(e)));
  return card;
}
