// Global shortcuts (active outside text fields and dialogs).

import { composeOpen, openCompose, targetFor } from './compose';
import { dmParticipants, narrowToHash } from './narrow';
import { baseRoute, go, route } from './route';
import { me, messages, slugContext, subs, unread, userSettings, userTopics, topicKey } from './store';
import { startEdit } from './ui/Message';
import { closeCompose } from './ui/Compose';
import { currentList, selectedId } from './ui/MessageView';
import { searchFocus } from './ui/SearchBox';

export const SHORTCUTS: [string, string][] = [
  ['C', 'New channel message'],
  ['X', 'New direct message'],
  ['R or Enter', 'Reply to the selected message'],
  ['N', 'Next unread topic'],
  ['J or ↓', 'Next message'],
  ['K or ↑', 'Previous message'],
  ['End', 'Last message'],
  ['A', 'Combined feed'],
  ['Shift+I', 'Inbox'],
  ['T', 'Recent conversations'],
  ['*', 'Starred messages'],
  ['D', 'Drafts'],
  ['E', 'Edit the selected message'],
  ['S', 'Go to the selected message’s conversation'],
  ['Esc', 'Close compose box, dialog or search; else go to the home view'],
  ['/', 'Search'],
  ['?', 'This list of shortcuts'],
  ['Enter (compose)', 'Send, or a new line when Enter-to-send is off (Ctrl+Enter sends)'],
  ['Shift+Enter (compose)', 'New line when Enter sends'],
];

function inField(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return el !== null && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

function activates(t: EventTarget | null): boolean {
  return t instanceof Element && t.closest('a[href], button, summary, [role="button"], [role="link"], [role="menuitem"], [role="tab"], [role="option"]') !== null;
}

function move(delta: number): void {
  const ids = currentList.value?.ids.value ?? [];
  if (ids.length === 0) return;
  const cur = selectedId.value === undefined ? -1 : ids.indexOf(selectedId.value);
  const next = ids[Math.max(0, Math.min(ids.length - 1, (cur < 0 ? ids.length - 1 : cur) + delta))];
  if (next === undefined) return;
  selectedId.value = next;
  // The list renders only the rows near the viewport: it renders this one if need be.
  const list = currentList.value;
  if (list?.reveal !== undefined) list.reveal(next);
  else document.querySelector(`[data-message-id="${next}"]`)?.scrollIntoView({ block: 'nearest' });
  if (delta > 0 && next === ids.at(-1)) void currentList.value?.loadNewer();
  if (delta < 0 && next === ids[0]) void currentList.value?.loadOlder();
}

/** The next channel topic with unread messages after the current one. */
export function nextUnreadTopic(): string | undefined {
  const r = baseRoute.value;
  const chan = r.view === 'narrow' ? r.narrow.find((t) => t.operator === 'channel')?.operand : undefined;
  const topic = r.view === 'narrow' ? r.narrow.find((t) => t.operator === 'topic')?.operand : undefined;
  const order = [...subs.value.values()].filter((s) => !s.is_muted)
    .sort((a, b) => Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name));
  const all: [number, string][] = [];
  for (const s of order) for (const t of unread.topicsOf(s.stream_id)) {
    if (userTopics.value.get(topicKey(s.stream_id, t)) !== 1) all.push([s.stream_id, t]);
  }
  const idx = all.findIndex(([s, t]) => String(s) === chan && t.toLowerCase() === topic?.toLowerCase());
  const next = all[(idx + 1) % Math.max(all.length, 1)];
  if (next === undefined || (idx >= 0 && all.length === 1)) return undefined;
  return narrowToHash([{ operator: 'channel', operand: String(next[0]) }, { operator: 'topic', operand: next[1] }], slugContext);
}

export function startKeyboard(): void {
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'Escape') {
      if (route.value.view === 'overlay') return;
      if (composeOpen.value) { closeCompose(); return; }
      if (inField(e.target)) { (e.target as HTMLElement).blur(); return; }
      if (document.querySelector('.dialog-backdrop, .popover') !== null) return;
      if (userSettings.value.web_escape_navigates_to_home_view !== false) go('#');
      return;
    }
    if (inField(e.target) || route.value.view === 'overlay' || document.querySelector('.dialog-backdrop') !== null) return;
    // Enter and Space on a focused link or button activate it, as everywhere.
    if ((e.key === 'Enter' || e.key === ' ') && activates(e.target)) return;
    const narrow = baseRoute.value.view === 'narrow' ? baseRoute.value.narrow : [];
    const selected = selectedId.value === undefined ? undefined : messages.get(selectedId.value)?.value;
    const act = (f: () => void) => { e.preventDefault(); f(); };
    switch (e.key) {
      case 'c': return act(() => openCompose({ ...targetFor(narrow), ...(targetFor(narrow).type === 'stream' ? { topic: '' } : {}) } as ReturnType<typeof targetFor>));
      case 'x': return act(() => openCompose({ type: 'private', to: [] }));
      case 'r':
      case 'Enter': return act(() => openCompose(targetFor(narrow, selected)));
      case 'n': return act(() => { const h = nextUnreadTopic(); if (h !== undefined) go(h); });
      case 'j':
      case 'ArrowDown': return act(() => move(1));
      case 'k':
      case 'ArrowUp': return act(() => move(-1));
      case 'End': return act(() => move(1e9));
      case 'Home': return act(() => move(-1e9));
      case '/': return act(() => { searchFocus.value++; });
      case '?': return act(() => go('#keyboard-shortcuts'));
      case 'a': return act(() => go('#feed'));
      case 'd': return act(() => go('#drafts'));
      case 'e': return act(() => { if (selected !== undefined) startEdit(selected.id); });
      case 's': return act(() => {
        if (selected === undefined) return;
        go(narrowToHash(selected.type === 'stream'
          ? [{ operator: 'channel', operand: String(selected.stream_id) }, { operator: 'topic', operand: selected.subject }]
          : [{ operator: 'dm', operand: dmParticipants(selected, me.value).join(',') }], slugContext));
      });
      case 't': return act(() => go('#recent'));
      case 'I': return act(() => go('#inbox'));
      case '*': return act(() => go('#narrow/is/starred'));
      default:
    }
  });
}
