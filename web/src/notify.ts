// Browser notifications for DMs and mentions while the tab is hidden, and the
// document title with the unread count.

import { effect } from '@preact/signals';
import { setNotifier } from './events';
import { narrowToHash } from './narrow';
import { baseRoute, go } from './route';
import { channelName, me, realm, slugContext, subs, topicDisplay, unread, unreadVersion, track, userSettings } from './store';
import type { Message } from './types';
import { narrowTitle } from './ui/MessageView';

function plainText(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  return (doc.body.textContent ?? '').trim().slice(0, 300);
}

export function notifiable(m: Message, myId: number): boolean {
  if (m.sender_id === myId || m.flags.includes('read')) return false;
  if (m.flags.includes('mentioned')) return true;
  if (m.type === 'private') return userSettings.value.enable_desktop_notifications !== false;
  const sub = subs.value.get(m.stream_id ?? 0);
  if (sub?.is_muted) return false;
  if (sub?.desktop_notifications === true) return true;
  if (sub?.desktop_notifications === null && userSettings.value.enable_stream_desktop_notifications === true) return true;
  return (m.flags.includes('stream_wildcard_mentioned') || m.flags.includes('topic_wildcard_mentioned')) &&
    userSettings.value.wildcard_mentions_notify === true;
}

export function notificationTitle(m: Message): string {
  if (m.type === 'stream') return `${m.sender_full_name} (#${channelName(m.stream_id)} > ${topicDisplay(m.subject)})`;
  const others = typeof m.display_recipient === 'string' ? [] : m.display_recipient.filter((r) => r.id !== m.sender_id && r.id !== me.value);
  if (others.length === 0) return `${m.sender_full_name} (to you)`;
  return `${m.sender_full_name} (to you and ${others.map((o) => o.full_name).join(', ')})`;
}

export function startNotifications(): void {
  setNotifier((m) => {
    // document.hidden first: asking for the permission costs more, once per message.
    if (!document.hidden || typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
    if (!notifiable(m, me.value)) return;
    const body = m.type === 'private' && userSettings.value.pm_content_in_desktop_notifications === false
      ? `New direct message from ${m.sender_full_name}`
      : plainText(m.rendered_content ?? m.content);
    const n = new Notification(notificationTitle(m), { body, tag: String(m.id), icon: m.avatar_url ?? undefined });
    n.onclick = () => {
      n.close();
      window.focus();
      go(m.type === 'stream'
        ? narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }, { operator: 'topic', operand: m.subject }], slugContext)
        : narrowToHash([{ operator: 'dm', operand: (typeof m.display_recipient === 'string' ? [] : m.display_recipient.map((r) => r.id).filter((id) => id !== me.value)).join(',') }], slugContext));
    };
  });
  effect(() => {
    track(unreadVersion);
    const mode = Number(userSettings.value.desktop_icon_count_display ?? 1);
    const n = mode === 4 ? 0 : mode === 1 ? unread.total((id) => subs.value.get(id)?.is_muted === true) : unread.dmCount() + unread.mentionCount();
    const r = baseRoute.value;
    const where = r.view === 'recent' ? 'Recent conversations' : r.view === 'inbox' ? 'Inbox' : r.view === 'narrow' ? narrowTitle(r.narrow) : '';
    const title = `${n > 0 ? `(${n}) ` : ''}${where} - ${String(realm.value.realm_name ?? '')} - hearth`;
    if (document.title !== title) document.title = title;
  });
}

export function askPermission(): void {
  if (typeof Notification !== 'undefined' && Notification.permission === 'default') void Notification.requestPermission();
}
