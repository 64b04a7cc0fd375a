// pages/content.js: the Content page.

import { h } from '../ui.js';

export const title = 'Content';

export function render(main) {
  main.append(h('h1', {}, title), h('p', { class: 'empty' }, 'Coming soon.'));
}
