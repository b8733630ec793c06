// One store per kind of data, filled from /register and updated by events.ts.

import { signal, type Signal } from '@preact/signals';
import { onFrameAtMost } from './frame';
import { dmParticipants, type SlugContext } from './narrow';
import type { ResolveContext } from './search';
import type {
  CustomProfileField, Draft, Linkifier, Message, RealmEmoji, Stream, Subscription, UnreadMsgs, User, UserStatus,
} from './types';
import { dmKey, UnreadState } from './unread';

export interface Presence {
  active: number;
  idle: number;
}

/** Everything of /register not kept in a store of its own (realm_*, server_*, limits). */
export const realm = signal<Record<string, unknown>>({});
export const me = signal(0);
export const users = signal(new Map<number, User>());
export const streams = signal(new Map<number, Stream>());
export const subs = signal(new Map<number, Subscription>());
export const userSettings = signal<Record<string, unknown>>({});
export const presence = signal(new Map<number, Presence>());
export const serverTime = signal({ server: 0, local: 0 });
export const userStatus = signal(new Map<number, UserStatus>());
export const realmEmoji = signal<Record<string, RealmEmoji>>({});
export const linkifiers = signal<Linkifier[]>([]);
export const profileFields = signal<CustomProfileField[]>([]);
export const drafts = signal(new Map<number, Draft>());
/** "<stream>:<topic lower>" → visibility policy (1 muted, 2 unmuted, 3 followed). */
export const userTopics = signal(new Map<string, number>());
export const mutedUsers = signal(new Set<number>());
/** DM conversation key (sorted other ids) → newest message id. */
export const recentDms = signal(new Map<string, number>());
/** Channel id → topic name → newest message id, from messages seen and topic fetches. */
export const topics = signal(new Map<number, Map<string, number>>());
/** Conversation key ("dm:1,2" or "stream:3:topic") → typing user id → expiry (ms). */
export const typing = signal(new Map<string, Map<number, number>>());
export const unread = new UnreadState();
export const unreadVersion = signal(0);
export const connection = signal<'connecting' | 'live' | 'reconnecting'>('connecting');

/** Message cache: one signal per message, so an update re-renders that message only. */
export const messages = new Map<number, Signal<Message>>();
/**
 * Messages kept beyond those the open message lists hold: the newest ones (recent
 * conversations shows the last message of each). Older ones are dropped, so a busy
 * realm does not grow the page's memory; a view that needs them fetches them again.
 */
export const MESSAGE_CACHE = 1000;

export type ListListener = {
  /** New messages, in the order the server sent them. */
  added(ms: Message[]): void;
  removed(ids: number[]): void;
  /** Messages changed; `moved` when their channel or topic may have (not flags only). */
  changed(ids: number[], moved: boolean): void;
  /** The ids the list holds (shown or about to be): never dropped from the cache. */
  held(): Iterable<number>;
};
export const listListeners = new Set<ListListener>();

/** Drops the oldest cached messages no open list holds, beyond MESSAGE_CACHE. */
export function pruneMessages(limit = MESSAGE_CACHE): void {
  const pinned = new Set<number>();
  for (const l of listListeners) for (const id of l.held()) pinned.add(id);
  // A quarter of slack, so that the sort below runs once per many messages.
  if (messages.size <= pinned.size + limit + (limit >> 2)) return;
  const free = [...messages.keys()].filter((id) => !pinned.has(id)).sort((a, b) => a - b);
  const dropped = free.slice(0, Math.max(0, free.length - limit));
  // A conversation's newest message the cache still held leaves its sender and time
  // behind (recent conversations shows them): the newest dropped of its conversation,
  // when nothing newer of it stays cached.
  const newest = new Map<string, Message>();
  for (const id of dropped) {
    const m = messages.get(id)?.peek();
    if (m === undefined) continue;
    const key = lastMessageKey(m);
    const had = newest.get(key);
    if (had === undefined || had.id < m.id) newest.set(key, m);
  }
  for (const id of dropped) messages.delete(id);
  for (const [key, m] of newest) {
    if ((lastMessages.get(key)?.id ?? 0) < m.id) lastMessages.set(key, { id: m.id, sender_id: m.sender_id, sender_full_name: m.sender_full_name, timestamp: m.timestamp });
  }
}

/** What recent conversations shows of a conversation's last message. */
export interface LastMessage {
  id: number;
  sender_id: number;
  sender_full_name: string;
  timestamp: number;
}
/**
 * The sender and time of conversations' newest messages once they left the message
 * cache, or were fetched alone (one entry per conversation, by `lastMessageKey`), so
 * that recent conversations never shows an empty cell whatever the cache dropped.
 */
export const lastMessages = new Map<string, LastMessage>();
/** Bumped when last messages were fetched (recent conversations re-renders). */
export const lastMessagesVersion = signal(0);

/** A conversation's key among `lastMessages`: `s:<channel id>:<topic, lower case>` or `d:<user ids>`. */
export function conversationOf(streamId: number | undefined, topic: string | undefined, dmUsers?: string): string {
  return dmUsers !== undefined ? `d:${dmUsers}` : `s:${streamId ?? 0}:${(topic ?? '').toLowerCase()}`;
}

export function lastMessageKey(m: Message): string {
  return m.type === 'stream' ? conversationOf(m.stream_id, m.subject) : conversationOf(undefined, undefined, dmKey(dmParticipants(m, me.peek())));
}

/** A conversation's last message `id`, from the cache or from what was kept of it. */
export function lastMessage(id: number, conversation: string): LastMessage | undefined {
  const m = messages.get(id)?.value;
  if (m !== undefined) return m;
  const kept = lastMessages.get(conversation);
  return kept?.id === id ? kept : undefined;
}

/** Reads a signal so that the calling component or effect re-runs when it changes. */
export function track(s: Signal<unknown>): unknown {
  return s.value;
}

let shownUnread = '';
const bumpVersion = (): void => {
  // Messages that arrived and were read within the frame change no count shown.
  const now = unread.fingerprint();
  if (now === shownUnread) return;
  shownUnread = now;
  unreadVersion.value++;
};

/** Least time between two changes of the unread counts shown (a stream of events). */
export const UNREAD_PACE_MS = 250;

/**
 * Unread counts changed: the views showing them re-render once, before the next
 * frame, after the frame's other work (new rows marked read at once) is done; while
 * events stream in, at most every `UNREAD_PACE_MS` (the sidebar, the title and the
 * Inbox re-render four times a second, not in every frame), the last time after the
 * last change, so the counts end exact.
 */
export function bumpUnread(): void {
  onFrameAtMost(bumpVersion, UNREAD_PACE_MS, true);
}

export function topicKey(streamId: number, topic: string): string {
  return `${streamId}:${topic.toLowerCase()}`;
}

/** GET /messages and message events with apply_markdown carry the HTML in `content`. */
export function storeMessage(raw: Message): Signal<Message> {
  const m = raw.rendered_content === undefined ? { ...raw, rendered_content: raw.content } : raw;
  const existing = messages.get(m.id);
  if (existing !== undefined) {
    existing.value = m;
    return existing;
  }
  const s = signal(m);
  messages.set(m.id, s);
  return s;
}

export function noteTopic(streamId: number, topic: string, id: number): void {
  noteTopics([[streamId, topic, id]]);
}

/** Notes the newest message id of topics, changing the store once for the lot. */
export function noteTopics(seen: Iterable<readonly [number, string, number]>): void {
  let all: Map<number, Map<string, number>> | undefined;
  const copied = new Set<number>();
  const lowerKeys = new Map<number, Map<string, string>>();
  for (const [streamId, topic, id] of seen) {
    const cur = (all ?? topics.value).get(streamId);
    let keys = lowerKeys.get(streamId);
    if (keys === undefined) {
      keys = new Map();
      for (const k of cur?.keys() ?? []) keys.set(k.toLowerCase(), k);
      lowerKeys.set(streamId, keys);
    }
    const lower = topic.toLowerCase();
    const key = keys.get(lower) ?? topic;
    if ((cur?.get(key) ?? 0) >= id) continue;
    all ??= new Map(topics.value);
    let list = all.get(streamId);
    if (!copied.has(streamId)) {
      list = new Map(list ?? []);
      all.set(streamId, list);
      copied.add(streamId);
    }
    list?.set(key, id);
    keys.set(lower, key);
  }
  if (all !== undefined) topics.value = all;
}

export function userName(id: number): string {
  return users.value.get(id)?.full_name ?? `Unknown user ${id}`;
}

export function channelName(id: number | undefined): string {
  if (id === undefined) return '';
  return streams.value.get(id)?.name ?? subs.value.get(id)?.name ?? `Unknown channel ${id}`;
}

export function channelByName(name: string): number | undefined {
  const lower = name.toLowerCase();
  for (const s of streams.value.values()) if (s.name.toLowerCase() === lower) return s.stream_id;
  for (const s of subs.value.values()) if (s.name.toLowerCase() === lower) return s.stream_id;
  return undefined;
}

export function userByEmailOrName(s: string): number | undefined {
  const lower = s.toLowerCase();
  for (const u of users.value.values()) {
    if (u.email.toLowerCase() === lower || (u.delivery_email ?? '').toLowerCase() === lower) return u.user_id;
  }
  for (const u of users.value.values()) if (u.full_name.toLowerCase() === lower) return u.user_id;
  return undefined;
}

export const slugContext: SlugContext = {
  channelName: (id) => streams.value.get(id)?.name ?? subs.value.get(id)?.name,
  channelIdByName: channelByName,
  userName: (id) => users.value.get(id)?.full_name,
  userIdByEmail: (email) => userByEmailOrName(email),
};

export const resolveContext: ResolveContext = {
  channelIdByName: channelByName,
  channelName: (id) => streams.value.get(id)?.name ?? subs.value.get(id)?.name,
  userIdByEmailOrName: userByEmailOrName,
  userEmail: (id) => users.value.get(id)?.email,
  get me() {
    return me.value;
  },
};

export function emptyTopicName(): string {
  const v = realm.value.realm_empty_topic_display_name;
  return typeof v === 'string' ? v : 'general chat';
}

export function topicDisplay(topic: string): string {
  return topic === '' ? emptyTopicName() : topic;
}

export function isAdmin(): boolean {
  const u = users.value.get(me.value);
  return u !== undefined && (u.role === 100 || u.role === 200);
}

export function presenceStatus(id: number): 'active' | 'idle' | 'offline' {
  if (id === me.value) return userSettings.value.presence_enabled === false ? 'offline' : 'active';
  const p = presence.value.get(id);
  if (p === undefined) return 'offline';
  const threshold = Number(realm.value.server_presence_offline_threshold_seconds ?? 140);
  const now = serverTime.value.server + (Date.now() - serverTime.value.local) / 1000;
  if (now - p.active < threshold) return 'active';
  if (now - p.idle < threshold) return 'idle';
  return 'offline';
}

export function loadRegister(state: Record<string, unknown>): void {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(state)) {
    if (k.startsWith('realm_') || k.startsWith('server_') || k.startsWith('max_') || k.startsWith('can_') ||
        ['zulip_feature_level', 'event_queue_longpoll_timeout_seconds', 'is_admin', 'is_owner', 'is_guest',
          'is_moderator', 'full_name', 'email', 'delivery_email', 'avatar_url', 'max_message_id',
          'password_min_length', 'development_environment'].includes(k)) {
      rest[k] = v;
    }
  }
  me.value = state.user_id as number;
  realm.value = rest;
  const u = new Map<number, User>();
  for (const list of ['realm_users', 'realm_non_active_users', 'cross_realm_bots'] as const) {
    for (const user of (state[list] as User[] | undefined) ?? []) {
      u.set(user.user_id, list === 'realm_non_active_users' ? { ...user, is_active: false } : user);
    }
  }
  users.value = u;
  const st = new Map<number, Stream>();
  const sb = new Map<number, Subscription>();
  for (const s of (state.streams as Stream[] | undefined) ?? []) st.set(s.stream_id, s);
  for (const s of (state.subscriptions as Subscription[] | undefined) ?? []) {
    sb.set(s.stream_id, s);
    st.set(s.stream_id, s);
  }
  for (const list of ['unsubscribed', 'never_subscribed'] as const) {
    for (const s of (state[list] as Stream[] | undefined) ?? []) st.set(s.stream_id, s);
  }
  streams.value = st;
  subs.value = sb;
  userSettings.value = (state.user_settings as Record<string, unknown> | undefined) ?? {};
  const pres = new Map<number, Presence>();
  for (const [id, p] of Object.entries((state.presences as Record<string, { active_timestamp: number; idle_timestamp: number }>) ?? {})) {
    pres.set(Number(id), { active: p.active_timestamp, idle: p.idle_timestamp });
  }
  presence.value = pres;
  serverTime.value = { server: Number(state.server_timestamp ?? Date.now() / 1000), local: Date.now() };
  const status = new Map<number, UserStatus>();
  for (const [id, s] of Object.entries((state.user_status as Record<string, UserStatus>) ?? {})) status.set(Number(id), s);
  userStatus.value = status;
  realmEmoji.value = (state.realm_emoji as Record<string, RealmEmoji>) ?? {};
  linkifiers.value = (state.realm_linkifiers as Linkifier[]) ?? [];
  profileFields.value = (state.custom_profile_fields as CustomProfileField[]) ?? [];
  const d = new Map<number, Draft>();
  for (const draft of (state.drafts as Draft[]) ?? []) if (draft.id !== undefined) d.set(draft.id, draft);
  drafts.value = d;
  const ut = new Map<string, number>();
  for (const t of (state.user_topics as { stream_id: number; topic_name: string; visibility_policy: number }[]) ?? []) {
    ut.set(topicKey(t.stream_id, t.topic_name), t.visibility_policy);
  }
  userTopics.value = ut;
  mutedUsers.value = new Set(((state.muted_users as { id: number }[]) ?? []).map((m) => m.id));
  const rd = new Map<string, number>();
  for (const c of (state.recent_private_conversations as { user_ids: number[]; max_message_id: number }[]) ?? []) {
    rd.set(c.user_ids.length === 0 ? String(me.value) : [...c.user_ids].sort((a, b) => a - b).join(','), c.max_message_id);
  }
  recentDms.value = rd;
  unread.load(state.unread_msgs as UnreadMsgs, me.value);
  bumpUnread();
}
