// Hash routing with Zulip's fragments: #narrow/…, #feed, #recent, #inbox, overlays.

import { computed, signal } from '@preact/signals';
import { hashToNarrow, narrowToHash, type Narrow } from './narrow';
import { slugContext, userSettings } from './store';

export type Route =
  | { view: 'narrow'; narrow: Narrow }
  | { view: 'recent' }
  | { view: 'inbox' }
  | { view: 'overlay'; overlay: string; under: Route; args: string[] };

export const hash = signal(typeof location === 'undefined' ? '' : location.hash);

const OVERLAYS = new Set(['channels', 'streams', 'settings', 'organization', 'keyboard-shortcuts', 'search-operators', 'drafts']);

let lastView: Route | undefined;

export function parseRoute(h: string): Route {
  const clean = h.replace(/^#/, '');
  const [head = '', ...rest] = clean.split('/');
  if (head === '' ) return homeRoute();
  if (head === 'narrow') {
    const narrow = hashToNarrow(clean, slugContext);
    return narrow === undefined ? homeRoute() : { view: 'narrow', narrow };
  }
  if (head === 'feed' || head === 'all_messages') return { view: 'narrow', narrow: [] };
  if (head === 'recent' || head === 'recent_topics') return { view: 'recent' };
  if (head === 'inbox') return { view: 'inbox' };
  if (OVERLAYS.has(head)) return { view: 'overlay', overlay: head === 'streams' ? 'channels' : head, under: lastView ?? homeRoute(), args: rest };
  return homeRoute();
}

/**
 * The view the user's `web_home_view` names: the Inbox (the default, and for a value
 * this client does not know), recent conversations or the combined feed.
 */
export function homeRoute(): Route {
  const v = userSettings.value.web_home_view;
  if (v === 'recent_topics') return { view: 'recent' };
  if (v === 'all_messages') return { view: 'narrow', narrow: [] };
  return { view: 'inbox' };
}

export const route = computed<Route>(() => {
  // Re-parsed when the user store changes too, since slugs resolve names.
  const r = parseRoute(hash.value);
  if (r.view !== 'overlay') lastView = r;
  return r;
});

/** The view under any overlay. */
export const baseRoute = computed<Route>(() => {
  const r = route.value;
  return r.view === 'overlay' ? r.under : r;
});

export function go(h: string): void {
  if (location.hash === h || (h === '#' && location.hash === '')) return;
  location.hash = h;
}

export function goNarrow(narrow: Narrow): void {
  go(narrow.length === 0 ? '#feed' : narrowToHash(narrow, slugContext));
}

export function closeOverlay(): void {
  const under = route.value.view === 'overlay' ? route.value.under : route.value;
  if (under.view === 'recent') go('#recent');
  else if (under.view === 'inbox') go('#inbox');
  else if (under.view === 'narrow') goNarrow(under.narrow);
}

export function startRouting(): void {
  window.addEventListener('hashchange', () => {
    hash.value = location.hash;
  });
}
