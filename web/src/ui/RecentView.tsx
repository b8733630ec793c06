import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { narrowToHash } from '../narrow';
import { generation } from '../server';
import {
  channelName, conversationOf, lastMessage, lastMessages, lastMessagesVersion, me, recentDms, slugContext, storeMessage, subs, topicDisplay, topics,
  unread, unreadVersion, track, userName, noteTopics,
} from '../store';
import type { Message } from '../types';
import { formatDate, formatTime } from './util';

/** Last messages asked for alone, each once. */
const asked = new Set<number>();

/**
 * The sender and time of last messages neither cached nor kept (a topic's newest id
 * from the channel's topic list, a conversation from /register): fetched one by one,
 * a few at a time, only for the rows shown.
 */
function fetchLastMessages(wanted: { id: number; conversation: string }[]): void {
  const todo = wanted.filter((w) => !asked.has(w.id)).slice(0, 20);
  for (const w of todo) asked.add(w.id);
  if (todo.length === 0) return;
  void Promise.all(todo.map(async (w) => {
    try {
      const r = await get<{ messages: Message[] }>('messages', { anchor: w.id, num_before: 0, num_after: 0, narrow: [], apply_markdown: false, allow_empty_topic_name: true });
      const m = r.messages.find((x) => x.id === w.id);
      if (m !== undefined) lastMessages.set(w.conversation, { id: m.id, sender_id: m.sender_id, sender_full_name: m.sender_full_name, timestamp: m.timestamp });
    } catch {
      /* the cell stays empty */
    }
  })).then(() => { lastMessagesVersion.value++; });
}

export function RecentView() {
  const [loaded, setLoaded] = useState(false);
  const gen = generation.value;
  useEffect(() => {
    void get<{ messages: Message[] }>('messages', { anchor: 'newest', num_before: 400, num_after: 0, narrow: [], apply_markdown: true, allow_empty_topic_name: true })
      .then((r) => {
        for (const m of r.messages) storeMessage(m);
        noteTopics(r.messages.filter((m) => m.type === 'stream' && m.stream_id !== undefined).map((m) => [m.stream_id ?? 0, m.subject, m.id] as const));
        setLoaded(true);
      })
      .catch(() => setLoaded(true));
    // Every subscribed channel's topics, beyond those the newest messages name.
    for (const sid of subs.peek().keys()) {
      void get<{ topics: { name: string; max_id: number }[] }>(`users/me/${sid}/topics`, { allow_empty_topic_name: true })
        .then((r) => noteTopics(r.topics.map((t) => [sid, t.name, t.max_id] as const)))
        .catch(() => undefined);
    }
  }, [gen]);
  track(unreadVersion);
  track(lastMessagesVersion);
  const rows: { key: string; conversation: string; href: string; where: string; topic?: string; last: number; n: number; color?: string }[] = [];
  for (const [sid, list] of topics.value) {
    if (!subs.value.has(sid)) continue;
    for (const [topic, last] of list) {
      rows.push({
        key: `s${sid}:${topic}`, conversation: conversationOf(sid, topic),
        href: narrowToHash([{ operator: 'channel', operand: String(sid) }, { operator: 'topic', operand: topic }], slugContext),
        where: `#${channelName(sid)}`, topic, last, n: unread.topicCount(sid, topic), color: subs.value.get(sid)?.color,
      });
    }
  }
  for (const [key, last] of recentDms.value) {
    const ids = key.split(',').map(Number);
    rows.push({
      key: `d${key}`, conversation: conversationOf(undefined, undefined, key), href: narrowToHash([{ operator: 'dm', operand: key }], slugContext),
      where: ids.map((id) => (id === me.value ? 'You' : userName(id))).join(', '), last, n: unread.dmCount(key),
    });
  }
  rows.sort((a, b) => b.last - a.last);
  const shown = rows.slice(0, 200);
  const missing = shown.filter((r) => lastMessage(r.last, r.conversation) === undefined).map((r) => ({ id: r.last, conversation: r.conversation }));
  useEffect(() => {
    if (loaded && missing.length > 0) fetchLastMessages(missing);
  });
  return (
    <section class="recent-view" aria-labelledby="recent-title">
      <header class="narrow-header"><h1 id="recent-title">Recent conversations</h1></header>
      <div class="recent-scroll">
        <table class="recent-table">
          <thead><tr><th scope="col">Channel / people</th><th scope="col">Topic</th><th scope="col">Unread</th><th scope="col">Last message</th></tr></thead>
          <tbody>
            {shown.map((r) => {
              const m = lastMessage(r.last, r.conversation);
              return (
                <tr key={r.key}>
                  <td title={r.where}><span class="channel-dot" aria-hidden="true" ref={(el) => { if (r.color) el?.style.setProperty('background-color', r.color); }} />{r.where}</td>
                  <td><a href={r.href}>{r.topic === undefined ? 'Direct messages' : topicDisplay(r.topic)}</a></td>
                  <td>{r.n > 0 && <span class="unread_count">{r.n}</span>}</td>
                  <td class="muted" title={m === undefined ? undefined : m.sender_full_name}>{m === undefined ? '' : `${formatDate(m.timestamp)} ${formatTime(m.timestamp)} · ${m.sender_full_name}`}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {loaded && rows.length === 0 && <p class="muted">No conversations yet.</p>}
      </div>
    </section>
  );
}
