// Unread message ids by conversation, filled from /register's unread_msgs and
// kept current by events. Pure data: the UI reads it through a version signal.

import type { Message, UnreadMsgs } from './types';

export function dmKey(ids: number[]): string {
  return [...ids].sort((a, b) => a - b).join(',');
}

export interface UnreadDetails {
  type: 'stream' | 'private';
  stream_id?: number;
  topic?: string;
  user_ids?: number[];
  mentioned?: boolean;
}

interface Where {
  kind: 'stream' | 'dm';
  stream?: number;
  topic?: string;
  dm?: string;
}

export class UnreadState {
  /** stream id → topic (as first seen) → ids */
  readonly streams = new Map<number, Map<string, Set<number>>>();
  /** sorted other-user ids ("1,2"; own id for DMs to oneself) → ids */
  readonly dms = new Map<string, Set<number>>();
  readonly mentions = new Set<number>();
  private readonly where = new Map<number, Where>();
  /** stream id → topic lower-cased → the topic as first seen: case-blind lookups in O(1). */
  private readonly topicNames = new Map<number, Map<string, string>>();
  /** Sum of a hash of each unread id and its place, and a count of moves: see fingerprint(). */
  private hashSum = 0;
  private moves = 0;
  oldUnreadsMissing = false;

  load(u: UnreadMsgs, me: number): void {
    this.clear();
    this.oldUnreadsMissing = u.old_unreads_missing;
    for (const s of u.streams) for (const id of s.unread_message_ids) this.addStream(id, s.stream_id, s.topic);
    for (const p of u.pms) {
      const other = p.other_user_id ?? p.sender_id ?? me;
      for (const id of p.unread_message_ids) this.addDm(id, String(other));
    }
    for (const h of u.huddles) {
      const key = dmKey(h.user_ids_string.split(',').map(Number).filter((id) => id !== me));
      for (const id of h.unread_message_ids) this.addDm(id, key);
    }
    for (const id of u.mentions) this.mentions.add(id);
  }

  private topicKey(streamId: number, topic: string): [Map<string, Set<number>>, string] {
    let topics = this.streams.get(streamId);
    if (topics === undefined) {
      topics = new Map();
      this.streams.set(streamId, topics);
    }
    let names = this.topicNames.get(streamId);
    if (names === undefined) {
      names = new Map();
      this.topicNames.set(streamId, names);
    }
    const lower = topic.toLowerCase();
    const known = names.get(lower);
    if (known !== undefined) return [topics, known];
    names.set(lower, topic);
    return [topics, topic];
  }

  private addStream(id: number, streamId: number, topic: string): void {
    const [topics, key] = this.topicKey(streamId, topic);
    let set = topics.get(key);
    if (set === undefined) {
      set = new Set();
      topics.set(key, set);
    }
    set.add(id);
    this.setWhere(id, { kind: 'stream', stream: streamId, topic: key });
  }

  private addDm(id: number, key: string): void {
    let set = this.dms.get(key);
    if (set === undefined) {
      set = new Set();
      this.dms.set(key, set);
    }
    set.add(id);
    this.setWhere(id, { kind: 'dm', dm: key });
  }

  private static mix(id: number): number {
    // MurmurHash3's finalizer: not linear in the id, so different sets of ids sum
    // differently (a multiple of the id would give {1, 6} and {2, 5} one sum).
    let h = id >>> 0;
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return h >>> 0;
  }

  private setWhere(id: number, w: Where): void {
    if (this.where.has(id)) {
      this.hashSum -= UnreadState.mix(id);
      this.moves++;
    }
    this.where.set(id, w);
    this.hashSum += UnreadState.mix(id);
  }

  /**
   * Changes when the unread ids, their places or the mentions change; the same when a
   * message came and went. Lets views skip a render that would show the same counts.
   */
  fingerprint(): string {
    return `${this.where.size}:${this.hashSum}:${this.mentions.size}:${this.moves}:${this.oldUnreadsMissing}`;
  }

  has(id: number): boolean {
    return this.where.has(id);
  }

  /** A new message (or one marked unread again) with the flags it carries. */
  addMessage(m: Pick<Message, 'id' | 'type' | 'stream_id' | 'subject' | 'display_recipient' | 'flags'>, me: number): void {
    if (m.flags.includes('read')) return;
    if (m.type === 'stream' && m.stream_id !== undefined) this.addStream(m.id, m.stream_id, m.subject);
    else if (typeof m.display_recipient !== 'string') {
      const others = m.display_recipient.map((r) => r.id).filter((id) => id !== me);
      this.addDm(m.id, others.length === 0 ? String(me) : dmKey(others));
    }
    if (m.flags.some((f) => f === 'mentioned' || f === 'stream_wildcard_mentioned' || f === 'topic_wildcard_mentioned')) {
      this.mentions.add(m.id);
    }
  }

  addFromDetails(id: number, d: UnreadDetails, me: number): void {
    if (d.type === 'stream' && d.stream_id !== undefined) this.addStream(id, d.stream_id, d.topic ?? '');
    else {
      const others = (d.user_ids ?? []).filter((u) => u !== me);
      this.addDm(id, others.length === 0 ? String(me) : dmKey(others));
    }
    if (d.mentioned) this.mentions.add(id);
  }

  remove(id: number): void {
    const w = this.where.get(id);
    this.mentions.delete(id);
    if (w === undefined) return;
    this.where.delete(id);
    this.hashSum -= UnreadState.mix(id);
    if (w.kind === 'stream' && w.stream !== undefined && w.topic !== undefined) {
      const topics = this.streams.get(w.stream);
      const set = topics?.get(w.topic);
      set?.delete(id);
      if (set?.size === 0) {
        topics?.delete(w.topic);
        this.topicNames.get(w.stream)?.delete(w.topic.toLowerCase());
      }
      if (topics?.size === 0) {
        this.streams.delete(w.stream);
        this.topicNames.delete(w.stream);
      }
    } else if (w.dm !== undefined) {
      const set = this.dms.get(w.dm);
      set?.delete(id);
      if (set?.size === 0) this.dms.delete(w.dm);
    }
  }

  /** Messages moved to another channel and/or topic. */
  move(ids: number[], streamId: number, topic: string): void {
    this.moves++;
    for (const id of ids) {
      const w = this.where.get(id);
      if (w?.kind !== 'stream') continue;
      const mentioned = this.mentions.has(id);
      this.remove(id);
      this.addStream(id, streamId, topic);
      if (mentioned) this.mentions.add(id);
    }
  }

  clear(): void {
    this.streams.clear();
    this.dms.clear();
    this.mentions.clear();
    this.where.clear();
    this.topicNames.clear();
    this.hashSum = 0;
    this.moves++;
  }

  topicCount(streamId: number, topic: string): number {
    const key = this.topicNames.get(streamId)?.get(topic.toLowerCase());
    return key === undefined ? 0 : (this.streams.get(streamId)?.get(key)?.size ?? 0);
  }

  streamCount(streamId: number, skipTopic?: (topic: string) => boolean): number {
    let n = 0;
    for (const [topic, set] of this.streams.get(streamId) ?? []) if (!skipTopic?.(topic)) n += set.size;
    return n;
  }

  dmCount(key?: string): number {
    if (key !== undefined) return this.dms.get(key)?.size ?? 0;
    let n = 0;
    for (const set of this.dms.values()) n += set.size;
    return n;
  }

  total(skipStream?: (id: number) => boolean): number {
    let n = this.dmCount();
    for (const id of this.streams.keys()) if (!skipStream?.(id)) n += this.streamCount(id);
    return n;
  }

  mentionCount(): number {
    return this.mentions.size;
  }

  /** Unread topics in channel order given, for "next unread topic". */
  topicsOf(streamId: number): string[] {
    return [...(this.streams.get(streamId)?.keys() ?? [])];
  }

  ids(): number[] {
    return [...this.where.keys()];
  }
}
