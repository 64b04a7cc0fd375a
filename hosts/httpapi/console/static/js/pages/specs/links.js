// pages/specs/links.js: requirement, epic, story and PRP ids as links to
// the place that defines them. An id (core/spec's formats: REQ-n and NFR-n
// in the PRD, EP-n in the epics, ST-n.m in the stories, PRP-n.m in the
// PRPs) links to #/specs/{session}/{stage}/{id}; the stage's document gives
// the heading that defines the item ("ST-1.1: …") the element id
// spec-item-{id}, and the page scrolls to it and highlights it once it is
// shown. Everything is built with DOM nodes: text stays text, and nothing
// inside code (or an existing link) is touched.

import { h } from '../../ui.js';

// STAGE_OF is the stage that defines each kind of id.
const STAGE_OF = { REQ: 'prd', NFR: 'prd', EP: 'epics', ST: 'stories', PRP: 'prps' };
// An id as it appears in text: REQ-, NFR- and EP- take one number, ST- and
// PRP- two (core/spec/stages.go and schemas).
const ID_TEXT = /\b(?:(?:REQ|NFR|EP)-[1-9][0-9]*(?![.][0-9])|(?:ST|PRP)-[1-9][0-9]*\.[1-9][0-9]*)\b/g;
const ID_WHOLE = /^(?:(?:REQ|NFR|EP)-[1-9][0-9]*|(?:ST|PRP)-[1-9][0-9]*\.[1-9][0-9]*)$/;
// Where ids are left alone.
const SKIP = new Set(['PRE', 'CODE', 'A', 'SCRIPT', 'STYLE', 'TEXTAREA', 'INPUT', 'SELECT', 'BUTTON']);

// stageOf is the stage defining id, or null when id is not one.
export function stageOf(id) {
  if (!ID_WHOLE.test(String(id))) return null;
  return STAGE_OF[String(id).split('-')[0]];
}

// anchorId is the element id of the heading defining id.
export const anchorId = (id) => `spec-item-${id}`;

// itemHref is the console address of id's place in session sessionId.
export function itemHref(sessionId, id) {
  return `#/specs/${encodeURIComponent(sessionId)}/${stageOf(id)}/${encodeURIComponent(id)}`;
}

// idLink is a link to id's place (text defaults to the id), or the text
// alone when id is not one.
export function idLink(sessionId, id, text) {
  if (!stageOf(id)) return document.createTextNode(text || String(id));
  return h('a', { href: itemHref(sessionId, id), class: 'spec-id-link', dataset: { ref: id }, onclick: follow }, text || id);
}

// follow lands on the item at once when it is already on the page (the
// same stage), keeping the address in step; otherwise the browser follows
// the link and the page is drawn at the item's stage.
function follow(ev) {
  const a = ev.currentTarget;
  const target = document.getElementById(anchorId(a.dataset.ref));
  if (!target || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  ev.preventDefault();
  history.pushState(null, '', a.getAttribute('href'));
  highlight(target, true);
}

// highlight marks target as the item landed on (one at a time), scrolled to
// and focused when scroll.
function highlight(target, scroll) {
  for (const old of document.querySelectorAll('.spec-target')) old.classList.remove('spec-target');
  target.classList.add('spec-target');
  if (!scroll) return;
  target.scrollIntoView({ block: 'center' });
  target.focus({ preventScroll: true });
}

// landed is the address already landed on, so that a later redraw of the
// same document marks the item again without scrolling the reader away.
let landed = '';

// land scrolls to the item the address names (#/specs/{id}/{stage}/{item})
// once container, which holds it, is on the page.
function land(container) {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map((p) => { try { return decodeURIComponent(p); } catch { return ''; } });
  const item = parts[0] === 'specs' ? parts[3] : null;
  if (!item || !stageOf(item)) return;
  let tries = 0;
  const attempt = () => {
    if (!container.isConnected) {
      if (++tries < 100) setTimeout(attempt, 20);
      return;
    }
    const target = container.querySelector('#' + CSS.escape(anchorId(item)));
    if (!target) return;
    const first = landed !== location.hash;
    landed = location.hash;
    highlight(target, first);
  };
  setTimeout(attempt, 0);
}

// linkIds turns every id in the text of container (a rendered stage
// document, or any view) into a link to its place, gives each heading that
// defines an item ("EP-2: …") its anchor, and lands on the item the
// address names. It returns container.
export function linkIds(container, sessionId) {
  const defined = new Set();
  for (const hd of container.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    const m = hd.textContent.match(/^\s*([A-Z]+-[0-9.]+):\s/);
    if (m && stageOf(m[1]) && !defined.has(m[1])) {
      defined.add(m[1]);
      hd.id = anchorId(m[1]);
      hd.tabIndex = -1;
      hd.classList.add('spec-item');
      hd.dataset.item = m[1];
    }
  }
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let p = node.parentElement; p && p !== container.parentElement; p = p.parentElement) {
        if (SKIP.has(p.tagName)) return NodeFilter.FILTER_REJECT;
      }
      ID_TEXT.lastIndex = 0;
      return ID_TEXT.test(node.data) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
    },
  });
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
  for (const node of nodes) {
    const heading = node.parentElement && node.parentElement.closest('.spec-item');
    const own = heading ? heading.dataset.item : null;
    const frag = document.createDocumentFragment();
    let at = 0;
    ID_TEXT.lastIndex = 0;
    for (let m = ID_TEXT.exec(node.data); m; m = ID_TEXT.exec(node.data)) {
      if (m[0] === own) continue; // the item's own heading: its anchor, not a link
      frag.append(document.createTextNode(node.data.slice(at, m.index)), idLink(sessionId, m[0]));
      at = m.index + m[0].length;
    }
    if (at === 0) continue;
    frag.append(document.createTextNode(node.data.slice(at)));
    node.replaceWith(frag);
  }
  land(container);
  return container;
}
