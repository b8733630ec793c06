import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { applyEvents } from '../src/events';
import { AROUND_ROWS, FOLLOW_ROWS, followRows, growSpan, MIN_FOLLOW_ROWS, MAX_RENDERED, MessageListData, prefetchFirstPage, reconcileRead, renderSpan, SPAN_STEP } from '../src/msglist';
import { loadRegister, messages, unread } from '../src/store';
import type { Message, ServerEvent } from '../src/types';

const VERONA = [{ operator: 'channel', operand: '3' }];
let nextEvent = 1;

function message(id: number, flags: string[] = []): Message {
  return {
    id, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 1, type: 'stream', stream_id: 3,
    display_recipient: 'Verona', subject: 'Lunch', content: `<p>${id}</p>`, reactions: [], flags,
  };
}
const newMessage = (id: number) => ({ id: nextEvent++, type: 'message', message: message(id), flags: [] }) as ServerEvent;

/** A fake server: GET /json/messages answers from `pages`, in the order asked. */
let asked: URLSearchParams[] = [];
let pages: { messages: Message[]; found_newest: boolean; found_oldest?: boolean }[] = [];
let release: (() => void)[] = [];

function serve(hold = false): void {
  vi.stubGlobal('fetch', async (url: string) => {
    const q = new URL(url, 'http://hearth').searchParams;
    asked.push(q);
    const page = pages.shift() ?? { messages: [], found_newest: true };
    if (hold) await new Promise<void>((r) => release.push(r));
    return new Response(JSON.stringify({
      result: 'success', found_oldest: true, found_anchor: false, anchor: 0, ...page,
    }));
  });
}

const settle = () => new Promise((r) => setTimeout(r, 0));

function register(maxMessageId: number, unreadIds: number[] = []): void {
  loadRegister({
    user_id: 10,
    max_message_id: maxMessageId,
    realm_users: [{ user_id: 10, email: 'h@x', full_name: 'Hamlet', is_bot: false, is_active: true, role: 400 }],
    subscriptions: [{ stream_id: 3, name: 'Verona', color: '#76ce90', is_muted: false, in_home_view: true, pin_to_top: false, description: '', rendered_description: '', invite_only: false }],
    unread_msgs: { streams: [{ stream_id: 3, topic: 'Lunch', unread_message_ids: unreadIds }], pms: [], huddles: [], mentions: [], count: unreadIds.length, old_unreads_missing: false },
  });
}

beforeEach(() => {
  messages.clear();
  asked = [];
  pages = [];
  release = [];
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe('the first page asked for alongside /register', () => {
  it('is taken by the list of its narrow, which asks for the messages sent before the queue began', async () => {
    serve();
    pages = [
      { messages: [message(1), message(2), message(3)], found_newest: true },
      { messages: [message(4), message(5)], found_newest: true },
    ];
    prefetchFirstPage(VERONA);
    register(5);
    const list = new MessageListData(VERONA);
    const loading = list.loadInitial();
    // An event of the queue, for a message the catching up also returns.
    applyEvents([newMessage(5), newMessage(6)]);
    await loading;
    await settle();
    expect(asked).toHaveLength(2);
    expect(asked[0]?.get('anchor')).toBe('first_unread');
    expect(asked[1]?.get('anchor')).toBe('3');
    expect(asked[1]?.get('include_anchor')).toBe('false');
    expect(list.ids.value).toEqual([1, 2, 3, 4, 5, 6]);
    expect(list.foundNewest.value).toBe(true);
    list.dispose();
  });

  it('asks no more when /register knows of no newer message', async () => {
    serve();
    pages = [{ messages: [message(1), message(2)], found_newest: true }];
    prefetchFirstPage(VERONA);
    register(2);
    const list = new MessageListData(VERONA);
    await list.loadInitial();
    expect(asked).toHaveLength(1);
    expect(list.ids.value).toEqual([1, 2]);
    list.dispose();
  });

  it('is not taken by another narrow, which asks for its own', async () => {
    serve();
    pages = [{ messages: [message(1)], found_newest: true }, { messages: [message(7)], found_newest: true }];
    prefetchFirstPage([{ operator: 'channel', operand: '4' }]);
    register(7);
    const list = new MessageListData(VERONA);
    await list.loadInitial();
    expect(asked).toHaveLength(2);
    expect(list.ids.value).toEqual([7]);
    list.dispose();
  });

  it('takes its read state from /register, which is newer', () => {
    register(3, [2]);
    const [a, b] = reconcileRead([message(1), message(2, ['read'])]);
    expect(a?.flags).toContain('read');
    expect(b?.flags).not.toContain('read');
    expect(unread.has(2)).toBe(true);
  });
});

describe('new messages of the open narrow', () => {
  it('wait while the first page is on its way, and are shown once with it', async () => {
    serve(true);
    pages = [{ messages: [message(1), message(2)], found_newest: true }];
    register(2);
    const list = new MessageListData(VERONA);
    const loading = list.loadInitial();
    await settle();
    applyEvents([newMessage(2), newMessage(3)]);
    release.forEach((r) => r());
    await loading;
    expect(list.ids.value).toEqual([1, 2, 3]);
    list.dispose();
  });

  it('are appended in one change however many polls bring them before the frame', async () => {
    serve();
    pages = [{ messages: [message(1)], found_newest: true }];
    register(1);
    const list = new MessageListData(VERONA);
    await list.loadInitial();
    let changes = 0;
    const stop = list.ids.subscribe(() => { changes++; });
    changes = 0;
    for (let id = 2; id <= 50; id++) applyEvents([newMessage(id)]);
    expect(list.ids.value).toEqual([1]);
    await settle();
    stop();
    expect(changes).toBe(1);
    expect(list.ids.value).toHaveLength(50);
    list.dispose();
  });
});

describe('the rendered span', () => {
  const ids = Array.from({ length: 300 }, (_, i) => 1000 + i * 2);

  it('renders the newest rows while following, whatever is held', () => {
    expect(renderSpan(ids, { follow: FOLLOW_ROWS })).toEqual([300 - FOLLOW_ROWS, 300]);
    expect(renderSpan(ids.slice(0, 10), { follow: FOLLOW_ROWS })).toEqual([0, 10]);
    expect(renderSpan([], { follow: FOLLOW_ROWS })).toEqual([0, 0]);
  });

  it('before placement, renders the rows around the anchor, or the newest when it is the last', () => {
    const i = 150;
    expect(renderSpan(ids, undefined, ids[i])).toEqual([i - AROUND_ROWS, i + AROUND_ROWS + 1]);
    expect(renderSpan(ids, undefined, ids[299])).toEqual([300 - FOLLOW_ROWS, 300]);
    expect(renderSpan(ids, undefined, ids[3])).toEqual([0, 3 + AROUND_ROWS + 1]);
  });

  it('a range of ids stays on the same messages when messages are added or trimmed around it', () => {
    const range = { lo: ids[100] ?? 0, hi: ids[159] ?? 0 };
    expect(renderSpan(ids, range)).toEqual([100, 160]);
    // 50 older ones added in front, 50 trimmed at the end: the same messages.
    const moved = [...Array.from({ length: 50 }, (_, i) => 100 + i), ...ids.slice(0, 250)];
    const [s, e] = renderSpan(moved, range);
    expect(moved.slice(s, e)).toEqual(ids.slice(100, 160));
    // Its messages all gone: the nearest rows instead, never nothing.
    const [s2, e2] = renderSpan(ids.slice(0, 50), range);
    expect(e2 - s2).toBeGreaterThan(0);
  });

  it('grows a step at one end, never past the most rendered, and not past the held messages', () => {
    expect(growSpan(ids, [100, 160], 'up')).toEqual({ lo: ids[100 - SPAN_STEP], hi: ids[159] });
    expect(growSpan(ids, [100, 160], 'down')).toEqual({ lo: ids[100], hi: ids[159 + SPAN_STEP] });
    const wide = growSpan(ids, [100, 100 + MAX_RENDERED], 'up');
    expect(wide).toEqual({ lo: ids[100 - SPAN_STEP], hi: ids[100 - SPAN_STEP + MAX_RENDERED - 1] });
    expect(growSpan(ids, [0, 60], 'up')).toBeUndefined();
    expect(growSpan(ids, [240, 300], 'down')).toBeUndefined();
    // Following the newest and growing up: still following, more rows.
    expect(growSpan(ids, [240, 300], 'up', true)).toEqual({ follow: 60 + SPAN_STEP });
    expect(growSpan(ids, [300 - MAX_RENDERED, 300], 'up', true)).toBeUndefined();
  });
});

describe('the rows a following list renders', () => {
  it('fills the viewport and a margin, within bounds', () => {
    // 600 px of 60 px rows and a 240 px margin: 14 rows.
    expect(followRows(600, 60)).toBe(14);
    // Short rows: at most FOLLOW_ROWS.
    expect(followRows(1000, 20)).toBe(FOLLOW_ROWS);
    // Tall rows: never fewer than MIN_FOLLOW_ROWS.
    expect(followRows(300, 400)).toBe(MIN_FOLLOW_ROWS);
    // Nothing measured yet: FOLLOW_ROWS.
    expect(followRows(0, 60)).toBe(FOLLOW_ROWS);
    expect(followRows(600, Number.NaN)).toBe(FOLLOW_ROWS);
  });
});
