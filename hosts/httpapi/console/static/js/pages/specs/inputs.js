// pages/specs/inputs.js: the raw material of a specification — notes,
// transcripts (an optional title and text) and uploaded documents (.md,
// .txt, a PDF with a text layer, a Word .docx: the server extracts their
// text) — as
// form rows, and sending them: a new session's files go as multipart, its
// text inputs as JSON; an input added later goes alone, either way.

import { api } from '../../api.js';
import { h, field } from '../../ui.js';

export const KINDS = { note: 'Note', transcript: 'Transcript', document: 'Document upload' };
const ACCEPT = '.md,.markdown,.txt,.pdf,.docx,text/markdown,text/plain,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let seq = 0;

// inputRow is one input's fieldset: kind is note, transcript or document.
// It returns {el, kind, value()} where value() is {kind, title, content}
// or {kind:'document', file}, or throws an Error saying what is missing.
export function inputRow(kind, label, onRemove) {
  const n = ++seq;
  const id = (s) => `spec-in-${n}-${s}`;
  let controls;
  let value;
  if (kind === 'document') {
    const file = h('input', { type: 'file', id: id('file'), name: 'file', accept: ACCEPT, class: 'spec-file' });
    controls = [field('File', file, '.md or .txt (UTF-8, up to 1 MiB), or a PDF with a text layer (.pdf) or a Word document (.docx) up to 20 MiB, whose text is extracted. A scanned PDF without text is refused.')];
    value = () => {
      if (!file.files || file.files.length === 0) throw new Error(`${label}: choose a file to upload.`);
      return { kind, file: file.files[0] };
    };
  } else {
    const title = h('input', { id: id('title'), name: 'title', maxlength: 200, class: 'spec-in-title', placeholder: `Derived from the ${kind === 'note' ? 'note' : 'transcript'}’s first line when left empty` });
    const text = h('textarea', { id: id('content'), name: 'content', rows: 5, class: 'spec-in-content' });
    controls = [
      field('Title (optional)', title),
      field(kind === 'note' ? 'Note (Markdown or text)' : 'Transcript text', text),
    ];
    value = () => {
      if (!text.value.trim()) throw new Error(`${label}: the text is empty.`);
      const v = { kind, content: text.value };
      if (title.value.trim()) v.title = title.value.trim(); // left out: the server derives it
      return v;
    };
  }
  const el = h('fieldset', { class: 'spec-input', dataset: { kind } },
    h('legend', {}, `${label}: ${KINDS[kind]}`),
    h('div', { class: 'spec-input-fields' }, controls),
    onRemove ? h('button', { type: 'button', class: 'spec-input-remove', 'aria-label': `Remove ${label}`, onclick: () => onRemove(el) }, 'Remove') : null);
  return { el, kind, value };
}

// createSession creates a session named name from the values of input rows,
// linked to the repository repoID when given (its PRPs are then grounded in
// it), and returns it. Files (if any) go in one multipart request, so a file the
// API refuses leaves nothing behind; text inputs then follow as JSON.
export async function createSession(name, values, repoID) {
  const files = values.filter((v) => v.file);
  const texts = values.filter((v) => !v.file);
  if (files.length === 0) {
    return api('POST', '/pse/sessions', repoID ? { name, inputs: texts, repo_id: repoID } : { name, inputs: texts });
  }
  const form = new FormData();
  form.append('name', name);
  if (repoID) form.append('repo_id', repoID);
  form.append('kind', 'document');
  for (const v of files) form.append('file', v.file, v.file.name);
  const session = await api('POST', '/pse/sessions', form);
  for (const [i, v] of texts.entries()) {
    try {
      await addInput(session.id, v);
    } catch (err) {
      err.message = `The session was created, but input ${i + 1} of ${texts.length} (${v.title || v.kind}) was not added: ${err.message}`;
      err.session = session;
      throw err;
    }
  }
  return session;
}

// addInput adds one input value to session id and returns the input.
export function addInput(id, v) {
  const path = `/pse/sessions/${encodeURIComponent(id)}/inputs`;
  if (v.file) {
    const form = new FormData();
    form.append('kind', 'document');
    form.append('file', v.file, v.file.name);
    return api('POST', path, form);
  }
  return api('POST', path, v.title ? { kind: v.kind, title: v.title, content: v.content } : { kind: v.kind, content: v.content });
}

// size formats a byte count for people.
export function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
