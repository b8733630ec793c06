import { effect } from '@preact/signals';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { resetPacing } from '../src/frame';
import { applyEvents, MAX_NOTIFIED, toNotify } from '../src/events';
import {
  conversationOf, lastMessage, lastMessages, listListeners, loadRegister, messages, noteTopics, pruneMessages, recentDms, topics, unread,
  unreadVersion, UNREAD_PACE_MS,
  type ListListener,
} from '../src/store';
import type { Message, ServerEvent } from '../src/types';

let nextId = 1;
const ev = (e: Omit<ServerEvent, 'id'> & Record<string, unknown>) => ({ id: nextId++, ...e }) as ServerEvent;
const msg = (id: number, over: Partial<Message> = {}): ServerEvent => ev({
  type: 'message',
  flags: [],
  message: {
    id, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 1, type: 'stream', stream_id: 3,
    display_recipient: 'Verona', subject: 'Flood', content: `<p>${id}</p>`, reactions: [], flags: [], ...over,
  },
});

const heard: number[][] = [];
let held: number[] = [];
const listener: ListListener = {
  added: (ms) => heard.push(ms.map((m) => m.id)),
  removed: () => undefined,
  changed: () => undefined,
  held: () => held,
};

beforeEach(() => {
  resetPacing();
  messages.clear();
  heard.length = 0;
  held = [];
  loadRegister({
    user_id: 10,
    realm_users: [{ user_id: 10, email: 'h@x', full_name: 'Hamlet', is_bot: false, is_active: true, role: 400 }],
    subscriptions: [{ stream_id: 3, name: 'Verona', color: '#76ce90', is_muted: false, in_home_view: true, pin_to_top: false, description: '', rendered_description: '', invite_only: false }],
    unread_msgs: { streams: [], pms: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false },
  });
  topics.value = new Map();
  listListeners.add(listener);
});
afterEach(() => {
  listListeners.delete(listener);
});

describe('a poll of many message events', () => {
  it('is applied as one batch: the stores change once, the lists hear once', async () => {
    let topicChanges = 0;
    const stop = effect(() => {
      void topics.value;
      topicChanges++;
    });
    topicChanges = 0;
    applyEvents(Array.from({ length: 500 }, (_, i) => msg(1000 + i, { subject: i % 2 === 0 ? 'Flood' : 'flood' })));
    // The sidebar's topics follow in the next frame, once.
    expect(topicChanges).toBe(0);
    await new Promise((r) => setTimeout(r, 0));
    stop();
    expect(topicChanges).toBe(1);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toHaveLength(500);
    // Topic names are case-blind: one topic, counted as first seen.
    expect([...(topics.value.get(3)?.entries() ?? [])]).toEqual([['Flood', 1499]]);
    expect(unread.topicCount(3, 'FLOOD')).toBe(500);
  });

  it('keeps the order of events: a flag change after a message in the same poll applies to it', async () => {
    applyEvents([
      msg(1),
      ev({ type: 'update_message_flags', op: 'add', flag: 'read', messages: [1], all: false }),
      msg(2),
      msg(3, { type: 'private', stream_id: undefined, display_recipient: [{ id: 10, email: 'h@x', full_name: 'Hamlet' }, { id: 11, email: 'i@x', full_name: 'Iago' }] }),
    ]);
    expect(messages.get(1)?.peek().flags).toContain('read');
    expect(unread.has(1)).toBe(false);
    expect(unread.has(2)).toBe(true);
    expect(heard).toEqual([[1], [2, 3]]);
    await new Promise((r) => setTimeout(r, 0));
    expect(recentDms.value.get('11')).toBe(3);
  });

  it('case-blind unread topics forget a topic whose messages were all read', () => {
    applyEvents([msg(1, { subject: 'Lunch' }), msg(2, { subject: 'LUNCH' })]);
    expect(unread.topicsOf(3)).toEqual(['Lunch']);
    applyEvents([ev({ type: 'update_message_flags', op: 'add', flag: 'read', messages: [1, 2], all: false })]);
    expect(unread.topicsOf(3)).toEqual([]);
    applyEvents([msg(3, { subject: 'lunch' })]);
    expect(unread.topicsOf(3)).toEqual(['lunch']);
    expect(unread.topicCount(3, 'Lunch')).toBe(1);
  });
});

describe('the message cache', () => {
  it('drops the oldest messages no open list holds, and keeps what a list holds', () => {
    held = [5, 6, 7];
    applyEvents(Array.from({ length: 3000 }, (_, i) => msg(i + 1)));
    pruneMessages(1000);
    expect(messages.size).toBe(1003);
    for (const id of held) expect(messages.has(id)).toBe(true);
    expect(messages.has(3000)).toBe(true);
    expect(messages.has(2001)).toBe(true);
    expect(messages.has(2000)).toBe(false);
    expect(messages.has(8)).toBe(false);
    // The unread state is not the cache: every unread message is still counted.
    expect(unread.topicCount(3, 'Flood')).toBe(3000);
  });

  it('stays bounded through a long flood applied poll by poll', () => {
    for (let poll = 0; poll < 50; poll++) applyEvents(Array.from({ length: 200 }, (_, i) => msg(poll * 200 + i + 1)));
    expect(messages.size).toBeLessThanOrEqual(1250);
    expect(messages.has(10000)).toBe(true);
  });
});

describe('noteTopics', () => {
  it('keeps the newest id per topic, and the name first seen', () => {
    noteTopics([[3, 'Lunch', 5], [3, 'lunch', 9], [3, 'LUNCH', 7], [4, 'x', 1]]);
    expect(topics.value.get(3)).toEqual(new Map([['Lunch', 9]]));
    const before = topics.value;
    noteTopics([[3, 'lunch', 2]]);
    expect(topics.value).toBe(before);
  });
});

describe('recent conversations beside the bounded cache', () => {
  it('keeps the sender and time of a conversation whose newest message left the cache', () => {
    lastMessages.clear();
    applyEvents([msg(1, { subject: 'Old topic', sender_id: 12, sender_full_name: 'Othello', timestamp: 1700000000 })]);
    applyEvents([msg(2, { subject: 'old TOPIC', sender_id: 13, sender_full_name: 'Cordelia', timestamp: 1700000100 })]);
    applyEvents(Array.from({ length: 3000 }, (_, i) => msg(i + 3)));
    pruneMessages(1000);
    expect(messages.has(2)).toBe(false);
    // The topic's newest message, case-blind: Cordelia's, not Othello's.
    const key = conversationOf(3, 'Old topic');
    expect(lastMessage(2, key)).toEqual({ id: 2, sender_id: 13, sender_full_name: 'Cordelia', timestamp: 1700000100 });
    expect(lastMessage(1, key)).toBeUndefined();
    // The flood topic's newest message is still cached: it is shown from the cache.
    expect(messages.has(3002)).toBe(true);
    expect(lastMessage(3002, conversationOf(3, 'Flood'))?.sender_full_name).toBe('Iago');
  });
});

describe('notifications under a flood', () => {
  const m = (id: number, over: Partial<Message> = {}): Message => ({
    id, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 1, type: 'stream', stream_id: 3,
    display_recipient: 'Verona', subject: 'Flood', content: '', reactions: [], flags: [], ...over,
  });

  it("raises one per conversation, for its newest message, never for one's own, and a handful per poll", () => {
    const poll = [m(1), m(2), m(3, { sender_id: 10 }), m(4, { subject: 'other' }), m(5, { subject: 'FLOOD' })];
    expect(toNotify(poll, 10).map((x) => x.id)).toEqual([4, 5]);
    const many = Array.from({ length: 20 }, (_, i) => m(100 + i, { subject: `t${i}` }));
    expect(toNotify(many, 10).map((x) => x.id)).toEqual([115, 116, 117, 118, 119]);
    expect(toNotify(many, 10)).toHaveLength(MAX_NOTIFIED);
    expect(toNotify([m(7, { sender_id: 10 })], 10)).toEqual([]);
  });
});

describe('a stream of polls', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('changes the counts and the topics shown a few times a second, the last time after the last message', async () => {
    vi.useFakeTimers();
    resetPacing();
    await vi.advanceTimersByTimeAsync(UNREAD_PACE_MS);
    const counts: number[] = [];
    const newest: number[] = [];
    const stopCounts = effect(() => {
      void unreadVersion.value;
      counts.push(unread.topicCount(3, 'Flood'));
    });
    const stopTopics = effect(() => {
      newest.push(topics.value.get(3)?.get('Flood') ?? 0);
    });
    counts.length = 0;
    newest.length = 0;
    // One poll a frame for a second, one message each.
    for (let i = 0; i < 60; i++) {
      applyEvents([msg(2000 + i)]);
      await vi.advanceTimersByTimeAsync(16);
    }
    await vi.advanceTimersByTimeAsync(2 * UNREAD_PACE_MS);
    stopCounts();
    stopTopics();
    // 60 polls, about a second: a handful of changes, not 60.
    expect(counts.length).toBeGreaterThanOrEqual(3);
    expect(counts.length).toBeLessThanOrEqual(6);
    expect(newest.length).toBeGreaterThanOrEqual(3);
    expect(newest.length).toBeLessThanOrEqual(6);
    // And exact in the end.
    expect(counts.at(-1)).toBe(60);
    expect(newest.at(-1)).toBe(2059);
  });

  it('a message after a quiet spell shows in the next frame', async () => {
    vi.useFakeTimers();
    resetPacing();
    await vi.advanceTimersByTimeAsync(UNREAD_PACE_MS);
    applyEvents([msg(3000)]);
    await vi.advanceTimersByTimeAsync(0);
    expect(topics.value.get(3)?.get('Flood')).toBe(3000);
  });
});
