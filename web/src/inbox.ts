// The Inbox: every unread conversation, direct messages first, then each channel's
// unread topics, with their counts. Pure: built from the unread state, the
// subscriptions and the topic visibility policies.

import type { UnreadState } from './unread';

export interface InboxTopic {
  topic: string;
  count: number;
  /** Newest unread message of the topic (the topics' order, newest first). */
  last: number;
  mentioned: boolean;
}

export interface InboxChannel {
  streamId: number;
  name: string;
  color: string;
  pinned: boolean;
  count: number;
  mentioned: boolean;
  topics: InboxTopic[];
}

export interface InboxDm {
  /** Sorted ids of the other participants ("1,2"; one's own id alone for notes to self). */
  key: string;
  count: number;
  last: number;
  mentioned: boolean;
}

export interface InboxModel {
  dms: InboxDm[];
  channels: InboxChannel[];
}

export interface InboxChannelInfo {
  name: string;
  color: string;
  is_muted: boolean;
  pin_to_top: boolean;
}

/** Topic visibility policies (Zulip's values). */
export const MUTED = 1;
export const UNMUTED = 2;
export const FOLLOWED = 3;

function newest(ids: Iterable<number>): number {
  let m = 0;
  for (const id of ids) if (id > m) m = id;
  return m;
}

function anyMentioned(ids: Iterable<number>, mentions: ReadonlySet<number>): boolean {
  for (const id of ids) if (mentions.has(id)) return true;
  return false;
}

/**
 * What the Inbox shows. As in Zulip: channels one is not subscribed to are left out;
 * a muted topic is left out, and so is every topic of a muted channel but those
 * unmuted or followed. Direct-message conversations come newest first; channels
 * pinned first, then by name; a channel's topics newest first.
 */
export function inboxModel(
  unread: Pick<UnreadState, 'streams' | 'dms' | 'mentions'>,
  channels: ReadonlyMap<number, InboxChannelInfo>,
  policy: (streamId: number, topic: string) => number | undefined,
): InboxModel {
  const dms: InboxDm[] = [];
  for (const [key, ids] of unread.dms) {
    if (ids.size === 0) continue;
    dms.push({ key, count: ids.size, last: newest(ids), mentioned: anyMentioned(ids, unread.mentions) });
  }
  dms.sort((a, b) => b.last - a.last);
  const out: InboxChannel[] = [];
  for (const [streamId, topics] of unread.streams) {
    const info = channels.get(streamId);
    if (info === undefined) continue;
    const shown: InboxTopic[] = [];
    for (const [topic, ids] of topics) {
      if (ids.size === 0) continue;
      const p = policy(streamId, topic);
      if (p === MUTED || (info.is_muted && p !== UNMUTED && p !== FOLLOWED)) continue;
      shown.push({ topic, count: ids.size, last: newest(ids), mentioned: anyMentioned(ids, unread.mentions) });
    }
    if (shown.length === 0) continue;
    shown.sort((a, b) => b.last - a.last);
    out.push({
      streamId, name: info.name, color: info.color, pinned: info.pin_to_top,
      count: shown.reduce((n, t) => n + t.count, 0), mentioned: shown.some((t) => t.mentioned), topics: shown,
    });
  }
  out.sort((a, b) => Number(b.pinned) - Number(a.pinned) || a.name.localeCompare(b.name));
  return { dms, channels: out };
}

/** One focusable row of the Inbox, in the order the arrow keys walk them. */
export type InboxRow =
  | { kind: 'dm-header' }
  | { kind: 'dm'; key: string }
  | { kind: 'channel'; streamId: number }
  | { kind: 'topic'; streamId: number; topic: string };

/** Pure: the rows shown, top to bottom, with the collapsed groups' rows left out. */
export function inboxRows(model: InboxModel, collapsed: ReadonlySet<string>): InboxRow[] {
  const rows: InboxRow[] = [];
  if (model.dms.length > 0) {
    rows.push({ kind: 'dm-header' });
    if (!collapsed.has('dm')) for (const d of model.dms) rows.push({ kind: 'dm', key: d.key });
  }
  for (const c of model.channels) {
    rows.push({ kind: 'channel', streamId: c.streamId });
    if (!collapsed.has(`channel:${c.streamId}`)) for (const t of c.topics) rows.push({ kind: 'topic', streamId: c.streamId, topic: t.topic });
  }
  return rows;
}

/** Pure: the index the focus moves to from `at` by `delta` rows, held within the rows. */
export function moveFocus(count: number, at: number, delta: number): number {
  if (count === 0) return -1;
  if (at < 0) return delta > 0 ? 0 : count - 1;
  return Math.max(0, Math.min(count - 1, at + delta));
}

/** Where the Inbox's folded groups are kept across page loads. */
export const FOLDED_KEY = 'hearth-inbox-folded';
const GROUP = /^(dm|channel:\d+)$/;

/**
 * The groups ("dm", "channel:<id>") folded when the page was last used, from
 * `storage`: none when nothing was kept, or what was kept is unreadable.
 */
export function loadFolded(storage: Pick<Storage, 'getItem'> | undefined): Set<string> {
  try {
    const kept: unknown = JSON.parse(storage?.getItem(FOLDED_KEY) ?? '[]');
    return new Set(Array.isArray(kept) ? kept.filter((g): g is string => typeof g === 'string' && GROUP.test(g)) : []);
  } catch {
    return new Set();
  }
}

/** Keeps the folded groups in `storage` (a refused write only loses them at the next load). */
export function saveFolded(storage: Pick<Storage, 'setItem' | 'removeItem'> | undefined, folded: ReadonlySet<string>): void {
  try {
    if (folded.size === 0) storage?.removeItem(FOLDED_KEY);
    else storage?.setItem(FOLDED_KEY, JSON.stringify([...folded].sort()));
  } catch {
    /* Storage full or refused. */
  }
}

/**
 * Pure: the Inbox narrowed to what `query` names (case-insensitive, anywhere in the
 * name): a direct-message conversation whose participants' names (`dmLabel`) hold it;
 * every topic of a channel whose name holds it, else the channel's topics whose name
 * (`topicLabel`: what the row shows, "general chat" for the empty topic, say) holds
 * it. A channel with no topic left goes; a channel's counts are those of its topics
 * kept. An empty or blank query keeps everything.
 */
export function filterInbox(
  model: InboxModel,
  query: string,
  dmLabel: (key: string) => string,
  topicLabel: (topic: string) => string = (t) => t,
): InboxModel {
  const q = query.trim().toLowerCase();
  if (q === '') return model;
  const has = (text: string) => text.toLowerCase().includes(q);
  const dms = model.dms.filter((d) => has(dmLabel(d.key)));
  const channels: InboxChannel[] = [];
  for (const c of model.channels) {
    if (has(c.name)) {
      channels.push(c);
      continue;
    }
    const topics = c.topics.filter((t) => has(t.topic) || has(topicLabel(t.topic)));
    if (topics.length === 0) continue;
    channels.push({ ...c, topics, count: topics.reduce((n, t) => n + t.count, 0), mentioned: topics.some((t) => t.mentioned) });
  }
  return { dms, channels };
}
