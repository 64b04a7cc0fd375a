// pages/chat.js: the Assistant page.

import { h } from '../ui.js';

export const title = 'Assistant';

export function render(main) {
  main.append(h('h1', {}, title), h('p', { class: 'empty' }, 'Coming soon.'));
}
