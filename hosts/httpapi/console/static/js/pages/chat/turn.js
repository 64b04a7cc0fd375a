// pages/chat/turn.js: one assistant turn in the conversation: its streamed
// text, its tool calls as compact cards, and its confirmations as cards with
// Approve / Reject and a live countdown. Model output reaches the DOM only
// as text nodes or through md.render.

import { h, pretty, errorBox, toast } from '../../ui.js';
import { render as md } from '../../md.js';

// userMessage is the user's bubble: plain text, never parsed.
export function userMessage(text) {
  return h('article', { class: 'msg user', 'aria-label': 'You', dataset: { text } },
    h('div', { class: 'msg-who', 'aria-hidden': 'true' }, 'You'),
    h('div', { class: 'msg-body' }, text),
    h('div', { class: 'msg-actions' }));
}

// copyText puts text on the clipboard and says so.
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Copied.');
  } catch (_) {
    toast('Copying was refused by the browser.');
  }
}

// parseJSON reads JSON text (tool arguments, tool messages), or keeps the text.
export function parseJSON(text) {
  if (typeof text !== 'string') return text;
  try { return JSON.parse(text); } catch (_) { return text; }
}

// safeCut is how much of src can be rendered as Markdown while more is still
// coming: up to its last blank line, outside an open code fence.
function safeCut(src) {
  const cut = src.lastIndexOf('\n\n');
  if (cut < 0) return 0;
  const fences = (src.slice(0, cut).match(/^```/gm) || []).length;
  return fences % 2 === 0 ? cut : -1;
}

// Segment is one assistant message's text. While it streams, the finished
// paragraphs are rendered Markdown and the paragraph being written is plain
// text below them, so the text grows in place; finish renders it all.
class Segment {
  constructor() {
    this.src = '';
    this.done = 0;
    this.md = h('div', { class: 'md' });
    this.tail = h('div', { class: 'tail' });
    this.el = h('div', { class: 'msg-text' }, this.md, this.tail);
  }

  append(delta) {
    this.src += delta;
    const cut = safeCut(this.src);
    if (cut > this.done) {
      this.md.replaceChildren(md(this.src.slice(0, cut)));
      this.done = cut;
    }
    this.tail.textContent = this.src.slice(this.done).replace(/^\n+/, '');
  }

  finish() {
    this.md.replaceChildren(md(this.src));
    this.done = this.src.length;
    this.tail.textContent = '';
  }
}

const fmtLeft = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  const m = Math.floor(s / 60);
  return m >= 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m}:${String(s % 60).padStart(2, '0')}`;
};

// tickCountdowns updates every pending confirmation's countdown under root,
// and marks those whose time ran out as expired.
export function tickCountdowns(root) {
  const now = Date.now();
  for (const el of root.querySelectorAll('.confirm[data-expires]')) {
    const left = Date.parse(el.dataset.expires) - now;
    const out = el.querySelector('.countdown');
    if (left <= 0) {
      delete el.dataset.expires;
      markDecided(el, 'expired');
      continue;
    }
    out.textContent = `Expires in ${fmtLeft(left)}`;
    out.classList.toggle('soon', left < 60000);
  }
}

const statusBadge = { pending: 'warn', approved: 'ok', rejected: 'bad', expired: 'bad' };

// toolVerdict is what the tool card of a write says once its approval was
// refused or ran out: nothing ran.
const toolVerdict = { rejected: 'rejected', expired: 'expired, nothing ran' };

// showVerdict marks the tool card of the call confirmation card asked for.
function showVerdict(card, status) {
  const label = toolVerdict[status];
  const turn = card.closest('.msg.assistant');
  const id = card.dataset.toolCallId;
  if (!label || !turn || !id) return;
  const tool = turn.querySelector(`details.tool[data-tool-call-id="${CSS.escape(id)}"]`);
  if (!tool) return;
  tool.dataset.decision = status;
  const badge = tool.querySelector('summary .badge');
  badge.className = 'badge bad';
  badge.textContent = label;
}

// focusAfter moves the keyboard on after a decision: to the next approval
// waiting, else to the message box.
function focusAfter(card) {
  const next = [...document.querySelectorAll('.confirm[data-status="pending"] button.approve')].find((b) => !card.contains(b));
  if (next && next.disabled) { // while the answer streams: its card now, its button once enabled
    next.dataset.focusNext = 'true';
    next.closest('.confirm').focus();
    return;
  }
  (next || document.getElementById('chat-input') || card).focus();
}

// markDecided shows a confirmation card's final status and drops its buttons.
function markDecided(card, status, note) {
  delete card.dataset.expires;
  card.dataset.status = status;
  const badge = card.querySelector('.confirm-status');
  badge.className = 'badge confirm-status ' + (statusBadge[status] || '');
  badge.textContent = status;
  const verb = { approved: 'Approved: ', rejected: 'Rejected: ', expired: 'Expired: ' }[status];
  if (verb) card.querySelector('.confirm-verb').textContent = verb;
  const actions = card.querySelector('.confirm-actions');
  const hadFocus = (actions && actions.contains(document.activeElement)) || card.dataset.deciding === 'true';
  delete card.dataset.deciding;
  if (actions) actions.remove();
  if (hadFocus) focusAfter(card); // the buttons are gone: move on to what comes next
  const cd = card.querySelector('.countdown');
  if (cd) cd.textContent = note || (status === 'expired' ? 'This approval expired; nothing ran.' : '');
  showVerdict(card, status);
}

// Turn is an assistant bubble in log, fed with stream events (or with stored
// messages when a session is opened). decide(turn, conf, approved, reason)
// is called when a confirmation's Approve or Reject is pressed.
export class Turn {
  constructor(log, decide) {
    this.decide = decide;
    this.segments = new Map(); // message_id → Segment
    this.tools = new Map(); // tool_call_id → card
    this.body = h('div', { class: 'msg-body' });
    this.status = h('p', { class: 'turn-status', role: 'status' });
    this.actions = h('div', { class: 'msg-actions' });
    this.el = h('article', { class: 'msg assistant', 'aria-label': 'Assistant' },
      h('div', { class: 'msg-who', 'aria-hidden': 'true' }, 'Assistant'), this.body, this.status, this.actions);
    log.append(this.el);
  }

  // busy marks the turn as being written (screen readers wait for the end).
  busy(on, what = '') {
    if (on) this.el.setAttribute('aria-busy', 'true'); else this.el.removeAttribute('aria-busy');
    this.el.classList.toggle('streaming', on);
    this.status.textContent = what;
  }

  // content appends a streamed delta to its message's text.
  content(messageId, delta) {
    let seg = this.segments.get(messageId);
    if (!seg) {
      seg = new Segment();
      this.segments.set(messageId, seg);
      this.body.append(seg.el);
    }
    seg.append(delta);
  }

  // text shows a stored message's text, rendered at once.
  text(messageId, text) {
    this.content(messageId, text);
    this.segments.get(messageId).finish();
  }

  // toolCall adds a collapsed card for a tool call.
  toolCall({ tool_call_id: id, name, arguments: args }) {
    if (this.tools.has(id)) return this.tools.get(id);
    const badge = h('span', { class: 'badge' }, 'running…');
    const result = h('div', { class: 'tool-result' });
    const el = h('details', { class: 'tool', dataset: { toolCallId: id } },
      h('summary', {}, h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'), ' ',
        h('code', { class: 'tool-name' }, name), ' ', badge),
      h('div', { class: 'tool-detail' }, h('h4', {}, 'Arguments'), pretty(parseJSON(args) ?? {}), result));
    const card = { el, badge, result };
    this.tools.set(id, card);
    this.body.append(el);
    return card;
  }

  // toolResult marks a tool card ok or failed and fills in its result.
  toolResult(d) {
    const card = this.tools.get(d.tool_call_id) || this.toolCall({ tool_call_id: d.tool_call_id, name: d.name, arguments: undefined });
    card.badge.className = 'badge ' + (d.ok ? 'ok' : 'bad');
    card.badge.textContent = d.ok ? 'ok' : 'failed';
    card.el.dataset.ok = String(!!d.ok);
    if (toolVerdict[card.el.dataset.decision]) { // a refused write's result says why nothing ran
      card.badge.className = 'badge bad';
      card.badge.textContent = toolVerdict[card.el.dataset.decision];
    }
    card.result.replaceChildren(h('h4', {}, d.ok ? 'Result' : 'Error'),
      d.ok ? pretty(d.result ?? null) : h('p', { class: 'tool-error' }, d.error || 'failed'));
  }

  // awaiting marks a tool card as waiting for a decision.
  awaiting(id) {
    const card = this.tools.get(id);
    if (card && !card.el.dataset.ok) {
      card.badge.className = 'badge warn';
      card.badge.textContent = 'needs approval';
    }
  }

  // confirmation adds the card asking to approve or reject a write. conf has
  // confirmation_id (or id), tool_call_id, name, arguments, summary,
  // expires_at and, for a stored one, status.
  confirmation(conf) {
    const id = conf.confirmation_id || conf.id;
    if (this.el.querySelector(`.confirm[data-confirmation-id="${CSS.escape(id)}"]`)) return;
    const status = conf.status || 'pending';
    const head = `confirm-${id}`;
    const reason = h('input', { type: 'text', maxlength: '500', placeholder: 'optional', class: 'confirm-reason' });
    const err = h('div', { class: 'confirm-error' });
    const card = h('section', { class: 'confirm', 'aria-labelledby': head, tabindex: '-1', dataset: { confirmationId: id, status, toolCallId: conf.tool_call_id || '' } },
      h('div', { class: 'confirm-head' },
        h('h3', { id: head }, h('span', { class: 'confirm-verb' }, 'Approval needed: '), h('code', {}, conf.name)), ' ',
        h('span', { class: 'badge confirm-status ' + statusBadge[status] }, status)),
      h('p', { class: 'confirm-summary' }, conf.summary || ''),
      h('details', { class: 'confirm-args' }, h('summary', {}, 'Arguments'), pretty(conf.arguments ?? {})),
      h('p', { class: 'countdown' }),
      err);
    if (status === 'pending') {
      const decide = (approved) => async () => {
        err.replaceChildren();
        for (const b of card.querySelectorAll('.confirm-actions button')) b.disabled = true;
        card.dataset.deciding = 'true'; // pressed here: the keyboard moves on once decided
        try {
          await this.decide(this, { id, card, tool_call_id: conf.tool_call_id }, approved, reason.value.trim());
        } catch (e) {
          err.replaceChildren(errorBox(e));
        } finally {
          delete card.dataset.deciding;
          for (const b of card.querySelectorAll('.confirm-actions button')) b.disabled = false;
        }
      };
      const reasonId = `reason-${id}`;
      reason.id = reasonId;
      // A large scale (the server's summary says so) is approved only once
      // the service's name is typed, as on the Cloud page.
      const named = largeScaleName(conf);
      const approve = h('button', { type: 'button', class: 'primary approve', onclick: decide(true), disabled: named ? true : null }, 'Approve');
      if (named) {
        const typed = h('input', { type: 'text', id: `confirm-name-${id}`, class: 'confirm-name', autocomplete: 'off', spellcheck: 'false', placeholder: named });
        typed.addEventListener('input', () => { approve.disabled = typed.value.trim() !== named; });
        card.append(h('div', { class: 'confirm-name-row' },
          h('label', { for: typed.id }, 'Large change: type the service name ', h('code', {}, named), ' to approve'), ' ', typed));
      }
      card.append(h('div', { class: 'confirm-actions' },
        approve,
        h('button', { type: 'button', class: 'danger reject', onclick: decide(false) }, 'Reject'),
        h('label', { for: reasonId, class: 'confirm-reason-label' }, 'Reason for rejecting'), reason));
      card.dataset.expires = conf.expires_at;
      this.awaiting(conf.tool_call_id);
    } else {
      markDecided(card, status, conf.reason ? `Reason: ${conf.reason}` : '');
    }
    const tool = this.tools.get(conf.tool_call_id);
    if (tool) tool.el.after(card); else this.body.append(card);
    showVerdict(card, status); // a stored decision: the card is in place only now
    tickCountdowns(this.el);
  }

  // decided shows a confirmation's outcome on its card.
  decided(card, status, note) { markDecided(card, status, note); }

  // error shows an error event of the stream.
  error(d) {
    this.failed = true;
    // The reason as a sentence; its code only small, at the end.
    this.body.append(h('div', { class: 'error', role: 'alert' },
      sentence(d.message || 'The assistant failed.'),
      d.retryable ? ' You may try again.' : '',
      d.code ? h('small', { class: 'muted error-code' }, ` (${d.code})`) : null));
  }

  // finish ends the turn: text rendered as Markdown, and why it stopped.
  finish(done) {
    for (const seg of this.segments.values()) seg.finish();
    const why = {
      confirmation_required: 'Waiting for your approval.',
      length: 'The answer was cut at the length limit.',
      error: 'The answer stopped on an error.',
      stopped: 'Stopped: you stopped this answer.',
    };
    this.busy(false, (done && why[done.finish_reason]) || '');
    this.el.dataset.finish = (done && done.finish_reason) || 'ended';
    if (done && done.finish_reason === 'error') this.failed = true;
    if (!this.copy && this.plainText().trim()) {
      this.copy = h('button', { type: 'button', class: 'copy small', onclick: () => copyText(this.plainText()) }, 'Copy');
      this.actions.prepend(this.copy);
    }
  }

  // plainText is the turn's text as streamed (for tests and copying).
  plainText() { return [...this.segments.values()].map((s) => s.src).join(''); }
}

// largeScaleName is the service a scale_service confirmation names when its
// summary marks it a large change, else ''.
function largeScaleName(conf) {
  if (conf.name !== 'scale_service' || !String(conf.summary || '').startsWith('Large change:')) return '';
  let args = conf.arguments;
  if (typeof args === 'string') { try { args = JSON.parse(args); } catch (_) { return ''; } }
  return (args && typeof args.service === 'string') ? args.service : '';
}

// sentence starts text with a capital and ends it with a full stop.
function sentence(text) {
  const t = String(text).trim();
  const head = t.charAt(0).toUpperCase() + t.slice(1);
  return /[.!?…]$/.test(head) ? head : head + '.';
}
