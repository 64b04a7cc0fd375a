// pages/cloud.js: the Cloud page.

import { h } from '../ui.js';

export const title = 'Cloud';

export function render(main) {
  main.append(h('h1', {}, title), h('p', { class: 'empty' }, 'Coming soon.'));
}
