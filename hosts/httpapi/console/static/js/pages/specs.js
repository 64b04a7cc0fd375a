// pages/specs.js: the Specifications page.

import { h } from '../ui.js';

export const title = 'Specifications';

export function render(main) {
  main.append(h('h1', {}, title), h('p', { class: 'empty' }, 'Coming soon.'));
}
