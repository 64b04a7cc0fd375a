// pages/chat/mic.js: the microphone button. It records with MediaRecorder,
// uploads the recording to /audio/transcribe when stopped, and hands the
// text back.

import { api } from '../../api.js';
import { h, errorBox } from '../../ui.js';

const TYPES = [
  ['audio/webm;codecs=opus', 'webm'], ['audio/webm', 'webm'],
  ['audio/ogg;codecs=opus', 'ogg'], ['audio/ogg', 'ogg'], ['audio/mp4', 'm4a'],
];

function pickType() {
  for (const [type, ext] of TYPES) if (MediaRecorder.isTypeSupported(type)) return { type, ext };
  return { type: '', ext: 'webm' };
}

// micButton returns {el, stop}: a button and its status line. onText(text)
// receives each transcription; errEl shows failures. stop ends a recording
// without uploading it (when the page is left).
export function micButton(onText, errEl) {
  const status = h('span', { class: 'mic-status', role: 'status' });
  const elapsed = h('span', { class: 'mic-time', 'aria-hidden': 'true' }); // ticks silently
  const btn = h('button', { type: 'button', class: 'mic', 'aria-pressed': 'false', title: 'Record a voice message' },
    h('span', { class: 'mic-dot', 'aria-hidden': 'true' }, '●'), h('span', { class: 'mic-label' }, ' Record'));
  const el = h('span', { class: 'mic-wrap' }, btn, elapsed, status);
  if (!window.MediaRecorder || !navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    btn.disabled = true;
    status.textContent = 'Recording is not supported by this browser.';
    return { el, stop() {} };
  }

  let rec = null;
  let stream = null;
  let timer = null;
  let discard = false;

  const setRecording = (on) => {
    btn.setAttribute('aria-pressed', String(on));
    btn.classList.toggle('recording', on);
    btn.querySelector('.mic-label').textContent = on ? ' Stop' : ' Record';
    btn.title = on ? 'Stop recording and transcribe' : 'Record a voice message';
  };

  const release = () => {
    clearInterval(timer);
    elapsed.textContent = '';
    if (stream) for (const t of stream.getTracks()) t.stop();
    stream = null;
    rec = null;
    setRecording(false);
  };

  async function upload(blob, ext) {
    if (!blob.size) { status.textContent = 'Nothing was recorded.'; return; }
    status.textContent = 'Transcribing…';
    btn.disabled = true;
    try {
      const form = new FormData();
      form.append('file', blob, `recording.${ext}`);
      const out = await api('POST', '/audio/transcribe', form);
      status.textContent = 'Transcribed into the message box.';
      onText((out && out.text) || '');
    } catch (e) {
      status.textContent = 'Transcription failed.';
      errEl.replaceChildren(errorBox(e));
    } finally {
      btn.disabled = false;
    }
  }

  async function start() {
    errEl.replaceChildren();
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (e) {
      status.textContent = '';
      errEl.replaceChildren(errorBox(new Error(`The microphone is not available: ${e.message || e.name}`)));
      return;
    }
    const { type, ext } = pickType();
    const chunks = [];
    rec = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    discard = false;
    rec.addEventListener('dataavailable', (ev) => { if (ev.data && ev.data.size) chunks.push(ev.data); });
    rec.addEventListener('stop', () => {
      const blob = new Blob(chunks, { type: (rec && rec.mimeType) || type || 'audio/webm' });
      release();
      if (!discard) upload(blob, ext);
    });
    rec.start(250);
    setRecording(true);
    const began = Date.now();
    const show = () => {
      const s = Math.floor((Date.now() - began) / 1000);
      elapsed.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
    };
    status.textContent = 'Recording… press Stop to transcribe.';
    show();
    timer = setInterval(show, 1000);
  }

  btn.addEventListener('click', () => {
    if (rec && rec.state === 'recording') rec.stop(); else if (!rec) start();
  });

  return {
    el,
    stop() {
      discard = true;
      if (rec && rec.state === 'recording') rec.stop(); else release();
    },
  };
}
