// pages/repos.js: the Repositories page.

import { h } from '../ui.js';

export const title = 'Repositories';

export function render(main) {
  main.append(h('h1', {}, title), h('p', { class: 'empty' }, 'Coming soon.'));
}
