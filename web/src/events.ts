// One function per event type, each updating the stores. applyEvent routes.

import { batch } from '@preact/signals';
import { dmParticipants } from './narrow';
import {
  bumpUnread, drafts, linkifiers, listListeners, me, messages, mutedUsers, noteTopic, noteTopics, presence, pruneMessages, profileFields, realm,
  realmEmoji, recentDms, serverTime, storeMessage, streams, subs, topics, typing, unread, userSettings, userStatus,
  userTopics, users, topicKey, UNREAD_PACE_MS,
} from './store';
import type { CustomProfileField, Draft, Linkifier, Message, RealmEmoji, ServerEvent, Stream, Subscription, User, UserStatus } from './types';
import { onFrameAtMost } from './frame';
import { dmKey, type UnreadDetails } from './unread';

type E = ServerEvent;
export type Notify = (m: Message) => void;

let notifier: Notify | undefined;
export function setNotifier(n: Notify): void {
  notifier = n;
}

export function conversationKey(m: Message): string {
  return m.type === 'stream' ? `stream:${m.stream_id}:${m.subject.toLowerCase()}` : `dm:${dmKey(dmParticipants(m, me.value))}`;
}

export function onMessage(e: E): void {
  onMessages([e]);
}

const pendingTopics: [number, string, number][] = [];
const pendingDms = new Map<string, number>();
function notePending(): void {
  if (pendingTopics.length > 0) noteTopics(pendingTopics.splice(0));
  if (pendingDms.size > 0) {
    const next = new Map(recentDms.value);
    for (const [k, v] of pendingDms) next.set(k, Math.max(next.get(k) ?? 0, v));
    pendingDms.clear();
    recentDms.value = next;
  }
}

/**
 * New messages, a poll's run of them at once: each store changes once for the lot
 * (topics, recent DMs, typing, unread), and the open lists hear of them together.
 */
export function onMessages(events: E[]): void {
  const added: Message[] = [];
  const seenTopics: [number, string, number][] = [];
  let rd: Map<string, number> | undefined;
  const dmSeen = new Map<string, number>();
  let typingNext: Map<string, Map<number, number>> | undefined;
  for (const e of events) {
    const m = { ...(e.message as Message), flags: (e.flags as string[] | undefined) ?? [] };
    storeMessage(m);
    added.push(m);
    if (m.type === 'stream' && m.stream_id !== undefined) seenTopics.push([m.stream_id, m.subject, m.id]);
    else {
      const key = dmKey(dmParticipants(m, me.value));
      rd = dmSeen;
      rd.set(key, Math.max(rd.get(key) ?? 0, m.id));
    }
    // A message from someone ends their typing indicator in that conversation.
    const key = conversationKey(m);
    const t = (typingNext ?? typing.value).get(key);
    if (t?.has(m.sender_id)) {
      typingNext ??= new Map(typing.value);
      const inner = new Map(t);
      inner.delete(m.sender_id);
      typingNext.set(key, inner);
    }
    unread.addMessage(m, me.value);
  }
  // The sidebar's topics and conversations follow in the frame, with the counts (and
  // as seldom: a stream of messages reorders them a few times a second): a message
  // read as soon as it is shown must not show as unread meanwhile.
  if (seenTopics.length > 0) pendingTopics.push(...seenTopics);
  if (rd !== undefined) for (const [k, v] of rd) pendingDms.set(k, Math.max(pendingDms.get(k) ?? 0, v));
  if (seenTopics.length > 0 || rd !== undefined) onFrameAtMost(notePending, UNREAD_PACE_MS);
  if (typingNext !== undefined) typing.value = typingNext;
  bumpUnread();
  for (const l of listListeners) l.added(added);
  if (notifier !== undefined) for (const m of toNotify(added, me.value)) notifier(m);
}

/** Most notifications one poll's messages raise. */
export const MAX_NOTIFIED = 5;

/**
 * Pure: the messages of a poll a notification is raised for: others' messages, the
 * newest of each conversation only, and of the newest `MAX_NOTIFIED` conversations (a
 * busy poll raises a handful, not one per message).
 */
export function toNotify(added: readonly Message[], myId: number): Message[] {
  const newest = new Map<string, Message>();
  for (const m of added) {
    if (m.sender_id === myId) continue;
    const key = conversationKey(m);
    newest.delete(key);
    newest.set(key, m);
  }
  return [...newest.values()].slice(-MAX_NOTIFIED);
}

export function onUpdateMessage(e: E): void {
  // Topics noted from earlier messages come first, so that a move can drop them.
  notePending();
  const ids = (e.message_ids as number[] | undefined) ?? [e.message_id as number];
  const first = messages.get(e.message_id as number);
  if (first !== undefined && e.rendered_content !== undefined) {
    const m = { ...first.value, rendered_content: e.rendered_content as string, content: e.rendered_content as string };
    if (e.rendering_only !== true && e.edit_timestamp !== undefined) m.last_edit_timestamp = e.edit_timestamp as number;
    first.value = m;
  }
  const newTopic = (e.subject ?? e.topic) as string | undefined;
  const newStream = e.new_stream_id as number | undefined;
  if (newTopic !== undefined || newStream !== undefined) {
    const oldStream = e.stream_id as number | undefined;
    for (const id of ids) {
      const s = messages.get(id);
      if (s === undefined) continue;
      const m = { ...s.value };
      if (newTopic !== undefined) m.subject = newTopic;
      if (newStream !== undefined) {
        m.stream_id = newStream;
        m.display_recipient = streams.value.get(newStream)?.name ?? m.display_recipient;
      }
      if (e.edit_timestamp !== undefined) m.last_moved_timestamp = e.edit_timestamp as number;
      s.value = m;
    }
    const targetStream = newStream ?? oldStream;
    if (targetStream !== undefined) {
      unread.move(ids, targetStream, newTopic ?? (e.orig_subject as string | undefined) ?? '');
      const maxId = Math.max(...ids);
      if (newTopic !== undefined || newStream !== undefined) noteTopic(targetStream, newTopic ?? (e.orig_subject as string), maxId);
      if (oldStream !== undefined && e.orig_subject !== undefined && e.propagate_mode === 'change_all') {
        const all = new Map(topics.value);
        const list = new Map(all.get(oldStream) ?? []);
        for (const k of list.keys()) if (k.toLowerCase() === (e.orig_subject as string).toLowerCase()) list.delete(k);
        all.set(oldStream, list);
        topics.value = all;
      }
      bumpUnread();
    }
  }
  if ((e.flags as string[] | undefined) !== undefined && first !== undefined) {
    first.value = { ...first.value, flags: e.flags as string[] };
  }
  for (const l of listListeners) l.changed(ids, true);
}

export function onDeleteMessage(e: E): void {
  const ids = (e.message_ids as number[] | undefined) ?? [e.message_id as number];
  for (const id of ids) {
    unread.remove(id);
    messages.delete(id);
  }
  bumpUnread();
  for (const l of listListeners) l.removed(ids);
}

export function onUpdateMessageFlags(e: E): void {
  const flag = e.flag as string;
  const add = e.op === 'add';
  const ids = e.messages as number[];
  if (flag === 'read' && add && e.all === true) unread.clear();
  for (const id of ids) {
    const s = messages.get(id);
    if (s !== undefined) {
      const has = s.value.flags.includes(flag);
      if (add && !has) s.value = { ...s.value, flags: [...s.value.flags, flag] };
      if (!add && has) s.value = { ...s.value, flags: s.value.flags.filter((f) => f !== flag) };
    }
    if (flag === 'read') {
      if (add) unread.remove(id);
      else {
        const details = (e.message_details as Record<string, UnreadDetails & { user_ids?: number[] }> | undefined)?.[String(id)];
        if (details !== undefined) unread.addFromDetails(id, details, me.value);
        else if (s !== undefined) unread.addMessage(s.value, me.value);
      }
    }
  }
  if (flag === 'read') bumpUnread();
  for (const l of listListeners) l.changed(ids, false);
}

export function onReaction(e: E): void {
  const s = messages.get(e.message_id as number);
  if (s === undefined) return;
  const r = {
    emoji_name: e.emoji_name as string,
    emoji_code: e.emoji_code as string,
    reaction_type: e.reaction_type as string,
    user_id: e.user_id as number,
  };
  const same = (x: typeof r) => x.user_id === r.user_id && x.emoji_code === r.emoji_code && x.reaction_type === r.reaction_type;
  const reactions = s.value.reactions.filter((x) => !same(x));
  if (e.op === 'add') reactions.push(r);
  s.value = { ...s.value, reactions };
}

export function onTyping(e: E): void {
  const sender = (e.sender as { user_id: number }).user_id;
  if (sender === me.value) return;
  let key: string;
  if (e.message_type === 'stream') key = `stream:${e.stream_id as number}:${String(e.topic).toLowerCase()}`;
  else {
    const ids = ((e.recipients as { user_id: number }[]) ?? []).map((r) => r.user_id).filter((id) => id !== me.value);
    key = `dm:${dmKey(ids.length === 0 ? [me.value] : ids)}`;
  }
  const all = new Map(typing.value);
  const inner = new Map(all.get(key) ?? []);
  if (e.op === 'start') {
    inner.set(sender, Date.now() + Number(realm.value.server_typing_started_expiry_period_milliseconds ?? 45000));
  } else inner.delete(sender);
  all.set(key, inner);
  typing.value = all;
}

export function onPresence(e: E): void {
  const next = new Map(presence.value);
  if (e.presences !== undefined) {
    for (const [id, p] of Object.entries(e.presences as Record<string, { active_timestamp: number; idle_timestamp: number }>)) {
      next.set(Number(id), { active: p.active_timestamp, idle: p.idle_timestamp });
    }
  } else {
    const id = e.user_id as number;
    const cur = next.get(id) ?? { active: 0, idle: 0 };
    for (const p of Object.values((e.presence as Record<string, { status: string; timestamp: number }>) ?? {})) {
      if (p.status === 'active') cur.active = Math.max(cur.active, p.timestamp);
      cur.idle = Math.max(cur.idle, p.timestamp);
    }
    next.set(id, { ...cur });
  }
  if (typeof e.server_timestamp === 'number') serverTime.value = { server: e.server_timestamp, local: Date.now() };
  presence.value = next;
}

export function onSubscription(e: E): void {
  const next = new Map(subs.value);
  switch (e.op) {
    case 'add':
      for (const s of e.subscriptions as Subscription[]) {
        next.set(s.stream_id, s);
        const st = new Map(streams.value);
        st.set(s.stream_id, s);
        streams.value = st;
      }
      break;
    case 'remove':
      for (const s of e.subscriptions as { stream_id: number }[]) next.delete(s.stream_id);
      break;
    case 'update': {
      const cur = next.get(e.stream_id as number);
      if (cur !== undefined) {
        const prop = e.property as string;
        const s: Subscription = { ...cur, [prop]: e.value };
        if (prop === 'in_home_view') s.is_muted = !(e.value as boolean);
        if (prop === 'is_muted') s.in_home_view = !(e.value as boolean);
        next.set(s.stream_id, s);
      }
      break;
    }
    case 'peer_add':
    case 'peer_remove':
      for (const sid of e.stream_ids as number[]) {
        const cur = next.get(sid);
        if (cur === undefined) continue;
        const members = new Set(cur.subscribers ?? []);
        for (const uid of e.user_ids as number[]) {
          if (e.op === 'peer_add') members.add(uid);
          else members.delete(uid);
        }
        next.set(sid, { ...cur, subscribers: [...members], subscriber_count: members.size });
      }
      break;
  }
  subs.value = next;
}

export function onRealmUser(e: E): void {
  const person = e.person as Partial<User> & { user_id: number };
  const next = new Map(users.value);
  if (e.op === 'add') next.set(person.user_id, { is_active: true, ...person } as User);
  else if (e.op === 'remove') {
    const cur = next.get(person.user_id);
    if (cur !== undefined) next.set(person.user_id, { ...cur, is_active: false });
  } else {
    const cur = next.get(person.user_id);
    if (cur !== undefined) {
      const u = { ...cur, ...person } as User;
      if (person.role !== undefined) {
        u.is_admin = person.role <= 200;
        u.is_owner = person.role === 100;
        u.is_guest = person.role === 600;
      }
      if ('custom_profile_field' in person) {
        const f = (person as { custom_profile_field: { id: number; value: string | null; rendered_value?: string } }).custom_profile_field;
        const data = { ...(u.profile_data ?? {}) };
        const rest = Object.fromEntries(Object.entries(data).filter(([k]) => k !== String(f.id)));
        if (f.value !== null) rest[String(f.id)] = { value: f.value, ...(f.rendered_value === undefined ? {} : { rendered_value: f.rendered_value }) };
        u.profile_data = rest;
      }
      next.set(person.user_id, u);
    }
  }
  users.value = next;
}

export function onStream(e: E): void {
  const st = new Map(streams.value);
  if (e.op === 'create') for (const s of e.streams as Stream[]) st.set(s.stream_id, s);
  else if (e.op === 'delete') {
    const ids = (e.stream_ids as number[] | undefined) ?? (e.streams as Stream[]).map((s) => s.stream_id);
    const sb = new Map(subs.value);
    for (const id of ids) {
      st.delete(id);
      sb.delete(id);
    }
    subs.value = sb;
  } else if (e.op === 'update') {
    const id = e.stream_id as number;
    const patch: Record<string, unknown> = { [e.property as string]: e.value };
    if (e.rendered_description !== undefined) patch.rendered_description = e.rendered_description;
    const cur = st.get(id);
    if (cur !== undefined) st.set(id, { ...cur, ...patch });
    const sub = subs.value.get(id);
    if (sub !== undefined) {
      const sb = new Map(subs.value);
      sb.set(id, { ...sub, ...patch });
      subs.value = sb;
    }
  }
  streams.value = st;
}

export function onUserSettings(e: E): void {
  userSettings.value = { ...userSettings.value, [e.property as string]: e.value };
}

export function onRealm(e: E): void {
  if (e.op === 'update') realm.value = { ...realm.value, [`realm_${e.property as string}`]: e.value };
  else if (e.op === 'update_dict') {
    const data: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e.data as Record<string, unknown>)) data[`realm_${k}`] = v;
    realm.value = { ...realm.value, ...data };
  }
}

export function onUserStatus(e: E): void {
  const next = new Map(userStatus.value);
  const id = e.user_id as number;
  const cur: UserStatus = { ...(next.get(id) ?? {}) };
  for (const k of ['status_text', 'emoji_name', 'emoji_code', 'reaction_type', 'away'] as const) {
    if (e[k] !== undefined) (cur as Record<string, unknown>)[k] = e[k];
  }
  next.set(id, cur);
  userStatus.value = next;
}

export function onCustomProfileFields(e: E): void {
  profileFields.value = e.fields as CustomProfileField[];
}

export function onRealmEmoji(e: E): void {
  realmEmoji.value = e.realm_emoji as Record<string, RealmEmoji>;
}

export function onRealmLinkifiers(e: E): void {
  linkifiers.value = e.realm_linkifiers as Linkifier[];
}

export function onDrafts(e: E): void {
  const next = new Map(drafts.value);
  if (e.op === 'add') for (const d of e.drafts as Draft[]) next.set(d.id as number, d);
  else if (e.op === 'update') next.set((e.draft as Draft).id as number, e.draft as Draft);
  else if (e.op === 'remove') next.delete(e.draft_id as number);
  drafts.value = next;
}

export function onUserTopic(e: E): void {
  const next = new Map(userTopics.value);
  const key = topicKey(e.stream_id as number, e.topic_name as string);
  if (e.visibility_policy === 0) next.delete(key);
  else next.set(key, e.visibility_policy as number);
  userTopics.value = next;
}

export function onMutedUsers(e: E): void {
  mutedUsers.value = new Set((e.muted_users as { id: number }[]).map((m) => m.id));
}

const handlers: Record<string, (e: E) => void> = {
  message: onMessage,
  update_message: onUpdateMessage,
  delete_message: onDeleteMessage,
  update_message_flags: onUpdateMessageFlags,
  reaction: onReaction,
  typing: onTyping,
  presence: onPresence,
  subscription: onSubscription,
  realm_user: onRealmUser,
  stream: onStream,
  user_settings: onUserSettings,
  realm: onRealm,
  user_status: onUserStatus,
  custom_profile_fields: onCustomProfileFields,
  realm_emoji: onRealmEmoji,
  realm_linkifiers: onRealmLinkifiers,
  drafts: onDrafts,
  user_topic: onUserTopic,
  muted_users: onMutedUsers,
};

/**
 * Applies a poll's events as one signal batch, so views re-render once for the lot.
 * Runs of message events go through onMessages together; the order of events is
 * kept (a message is stored before a later event of the same poll changes it).
 * Unknown types (heartbeat, attachment, …) change nothing shown.
 */
export function applyEvents(events: E[]): void {
  batch(() => {
    let run: E[] = [];
    for (const e of events) {
      if (e.type === 'message') {
        run.push(e);
        continue;
      }
      if (run.length > 0) onMessages(run);
      run = [];
      handlers[e.type]?.(e);
    }
    if (run.length > 0) onMessages(run);
  });
  pruneMessages();
}
