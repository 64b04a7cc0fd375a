// md.js: Markdown (stage documents, content bodies, assistant text) rendered
// to DOM nodes with createElement and textContent only. Raw HTML in the
// source stays text; a link is a link only when it is an absolute http(s)
// or mailto URL, or a path or fragment that stays on the console's origin
// once the browser resolves it, so javascript: and /\other.host links
// show as text.

import { h } from './ui.js';

// linkTarget returns the URL a link to href may point at, or null. Every
// href is resolved as the browser would resolve it (new URL against the
// page: backslashes are slashes, tabs and newlines vanish), and the
// resolved URL is what the link gets, so what was checked is what is
// followed.
export function linkTarget(href) {
  let url;
  try {
    url = new URL(href, location.href);
  } catch {
    return null;
  }
  if (/^mailto:/i.test(href)) return url.protocol === 'mailto:' ? url.href : null;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (/^https?:\/\//i.test(href)) return url.href;
  if (!/^[/#]/.test(href)) return null;
  return url.origin === location.origin ? url.href : null;
}

// render returns a fragment holding the rendered Markdown of src.
export function render(src) {
  const frag = document.createDocumentFragment();
  const lines = String(src || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) { i++; continue; }
    let m;
    if ((m = line.match(/^```\s*([\w+-]*)\s*$/))) {
      const code = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) code.push(lines[i]);
      i++;
      frag.append(h('pre', { class: 'code' }, h('code', m[1] ? { 'data-lang': m[1] } : {}, code.join('\n'))));
      continue;
    }
    if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      frag.append(h('h' + Math.min(6, m[1].length + 1), {}, inline(m[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { frag.append(h('hr')); i++; continue; }
    if (/^\s*>/.test(line)) {
      const quote = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quote.push(lines[i].replace(/^\s*>\s?/, ''));
      frag.append(h('blockquote', {}, render(quote.join('\n'))));
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      const rows = [];
      for (; i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i]); i++) rows.push(lines[i]);
      frag.append(table(rows));
      continue;
    }
    if ((m = line.match(/^(\s*)([-*+]|\d+[.)])\s+/))) {
      const ordered = /\d/.test(m[2]);
      const list = h(ordered ? 'ol' : 'ul');
      for (; i < lines.length; i++) {
        const item = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (item) {
          const task = item[2].match(/^\[([ xX])\]\s+(.*)$/);
          list.append(task
            ? h('li', { class: 'task' }, h('input', { type: 'checkbox', disabled: true, checked: task[1] !== ' ', 'aria-label': task[1] !== ' ' ? 'done' : 'not done' }), ' ', inline(task[2]))
            : h('li', {}, inline(item[2])));
        } else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
          list.lastChild.append(' ', inline(lines[i].trim()));
        } else break;
      }
      frag.append(list);
      continue;
    }
    const para = [];
    for (; i < lines.length && !/^\s*$/.test(lines[i]) && !/^(#{1,6}\s|```|\s*>|\s*([-*+]|\d+[.)])\s+)/.test(lines[i]); i++) para.push(lines[i].trim());
    if (para.length === 0) { para.push(lines[i].trim()); i++; }
    frag.append(h('p', {}, inline(para.join(' '))));
  }
  return frag;
}

function table(rows) {
  const cells = (row) => row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  const head = cells(rows[0]);
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, inline(c))))),
    h('tbody', {}, rows.slice(2).map((r) => h('tr', {}, cells(r).map((c) => h('td', {}, inline(c))))))));
}

// inline renders code spans, links, bold and emphasis; everything else is text.
export function inline(text) {
  const out = [];
  const re = /(`+)([^`]|[^`][\s\S]*?[^`])\1|\[([^\]]+)\]\(([^)\s]+)\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(h('code', {}, m[2]));
    else if (m[3] !== undefined) {
      const href = linkTarget(m[4]);
      out.push(href ? h('a', { href, rel: 'noopener noreferrer', target: /^https?:/i.test(m[4]) ? '_blank' : null }, inline(m[3])) : m[0]);
    } else if (m[5] !== undefined || m[6] !== undefined) out.push(h('strong', {}, inline(m[5] ?? m[6])));
    else out.push(h('em', {}, inline(m[7] ?? m[8])));
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
