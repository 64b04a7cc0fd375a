// pages/cloud/dialog.js: a modal confirmation built on <dialog>.

import { h, mount, errorBox } from '../../ui.js';

let seq = 0;

// confirmDialog opens a modal <dialog> titled title, with body (nodes) and
// Cancel / confirmLabel buttons. onConfirm runs on confirm; when it throws,
// its error is shown in the dialog, which stays open; when it returns, the
// dialog closes. Focus goes to the first field on open (else Cancel for a
// danger dialog, the confirm button otherwise) and back to the element that
// had it on close. It resolves to onConfirm's value, or to
// null when cancelled.
export function confirmDialog({ title, body, confirmLabel = 'Confirm', danger = false, onConfirm, id }) {
  const opener = document.activeElement;
  const headingId = `dlg-title-${++seq}`;
  const err = h('div', { 'aria-live': 'assertive' });
  const cancel = h('button', { type: 'button', value: 'cancel' }, 'Cancel');
  const ok = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, confirmLabel);
  const form = h('form', { method: 'dialog' },
    h('h2', { id: headingId }, title),
    h('div', { class: 'dlg-body' }, body),
    err,
    h('div', { class: 'row dlg-actions' }, cancel, ok));
  const dlg = h('dialog', { class: 'cloud-dialog', 'aria-labelledby': headingId, id }, form);
  document.body.append(dlg);
  return new Promise((resolve) => {
    let result = null;
    const close = () => dlg.close();
    dlg.addEventListener('close', () => {
      dlg.remove();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(result);
    });
    cancel.addEventListener('click', close);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (ok.disabled) return;
      ok.disabled = true;
      ok.setAttribute('aria-busy', 'true');
      try {
        result = await onConfirm(dlg);
        close();
      } catch (e) {
        mount(err, errorBox(e));
      } finally {
        ok.disabled = false;
        ok.removeAttribute('aria-busy');
      }
    });
    dlg.showModal();
    // A destructive confirmation with nothing to type starts on Cancel, as
    // ui.js confirmAction does: Enter alone never destroys.
    const first = form.querySelector('input, select, textarea');
    (first || (danger ? cancel : ok)).focus();
  });
}
