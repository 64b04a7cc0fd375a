// pagecontext.js: where the user is in the console, for the assistant's
// request context (context.current_page and context.selected_project_id of
// POST /api/v1/agent/chat; docs/api.md, "Assistant"), which routes the tools a turn is
// offered. The Assistant is a page of its own (#/chat), so a chat names the
// last other page this tab showed (such as #/specs/ID or #/cloud/services),
// and the spec session or content project that page had in view.

import { recentProjects } from './pages/content/util.js';

const KEY = 'devpilot.lastPage';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const OWN = new Set(['', 'chat', 'signin', 'join']);
const MAX_PAGE = 500;

// remember keeps the route shown now, unless it is the Assistant's or a
// signed-out page.
function remember() {
  const route = location.hash || '';
  if (!OWN.has(route.replace(/^#\/?/, '').split('/')[0])) sessionStorage.setItem(KEY, route.slice(0, MAX_PAGE));
}
window.addEventListener('hashchange', remember);
remember();

// pageContext is the context of a chat or a voice session sent now:
// {current_page, selected_project_id?}.
export function pageContext() {
  const page = sessionStorage.getItem(KEY) || location.hash || '#/chat';
  const [name, id] = page.replace(/^#\/?/, '').split('/').map((s) => { try { return decodeURIComponent(s); } catch (_) { return s; } });
  const ctx = { current_page: page };
  let project = '';
  if (name === 'specs') project = id || '';
  else if (name === 'content') project = id || recentProjects()[0] || '';
  if (UUID.test(project)) ctx.selected_project_id = project;
  return ctx;
}
