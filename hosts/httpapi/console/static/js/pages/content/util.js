// pages/content/util.js: small helpers the Content page's parts share.

// splitList turns "a, b ,c" (or one per line with sep '\n') into ['a','b','c'].
export function splitList(text, sep = ',') {
  return String(text || '').split(sep).map((s) => s.trim()).filter(Boolean);
}

// ifMatch is the If-Match header naming version v.
export const ifMatch = (v) => ({ 'If-Match': `"${v}"` });

// isConflict reports whether err is a stale-version refusal (412).
export const isConflict = (err) => err && err.status === 412;

// STATUSES are the content lifecycle's statuses, in board order, with labels.
export const STATUSES = [
  ['generating', 'Generating'],
  ['draft', 'Draft'],
  ['in_review', 'In review'],
  ['approved', 'Approved'],
  ['published', 'Published'],
  ['archived', 'Archived'],
  ['failed', 'Failed'],
];

// statusLabel is a status as people read it.
export function statusLabel(st) {
  const s = STATUSES.find(([k]) => k === st);
  return s ? s[1] : st;
}

// MOVES are the status changes a person may make from each status (the
// API's lifecycle), with the button's label; archive is offered everywhere
// but archived. An approved item is published through a target, or marked
// published elsewhere with its URL (the item dialog's own form).
export const MOVES = {
  draft: [['in_review', 'Send to review']],
  in_review: [['approved', 'Approve'], ['draft', 'Back to draft']],
  approved: [['draft', 'Back to draft']],
};

// checkLabel is a brand check as a short badge text, and its severity.
export function checkLabel(c) {
  switch (c.kind) {
    case 'banned_word': return [`Banned word: ${c.term || '?'}`, 'bad'];
    case 'preferred_term': return [`Preferred term: ${c.term || '?'}`, 'warn'];
    case 'length': return ['Length', 'warn'];
    default: return [c.kind, 'warn'];
  }
}

// newProjectID is a fresh UUID (v4) for a project, also outside a secure
// context where crypto.randomUUID is missing.
export function newProjectID() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((n) => n.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// PROJECT_ID is what the API accepts as a project id.
export const PROJECT_ID = /^[A-Za-z0-9._:-]{1,100}$/;

const RECENT = 'devpilot.content.projects';

// recentProjects returns the project ids used lately in this browser, newest first.
export function recentProjects() {
  try {
    const v = JSON.parse(localStorage.getItem(RECENT) || '[]');
    return Array.isArray(v) ? v.filter((p) => typeof p === 'string' && PROJECT_ID.test(p)) : [];
  } catch (_) { return []; }
}

// rememberProject puts id first in the recent projects (ten at most).
export function rememberProject(id) {
  const list = [id, ...recentProjects().filter((p) => p !== id)].slice(0, 10);
  localStorage.setItem(RECENT, JSON.stringify(list));
}
