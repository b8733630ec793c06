import { describe, expect, it } from 'vitest';
import { filterInbox, FOLDED_KEY, FOLLOWED, inboxModel, inboxRows, loadFolded, moveFocus, MUTED, saveFolded, UNMUTED } from '../src/inbox';
import { UnreadState } from '../src/unread';

const ME = 10;

function state(): UnreadState {
  const u = new UnreadState();
  u.load({
    streams: [
      { stream_id: 1, topic: 'lunch', unread_message_ids: [5, 9] },
      { stream_id: 1, topic: 'deploys', unread_message_ids: [12] },
      { stream_id: 2, topic: 'noise', unread_message_ids: [3, 4, 6] },
      { stream_id: 2, topic: 'kept', unread_message_ids: [7] },
      { stream_id: 3, topic: 'pinned talk', unread_message_ids: [2] },
      { stream_id: 4, topic: 'not subscribed', unread_message_ids: [8] },
      { stream_id: 1, topic: 'quiet', unread_message_ids: [1] },
    ],
    pms: [{ other_user_id: 20, unread_message_ids: [11, 13] }],
    huddles: [{ user_ids_string: `${ME},20,30`, unread_message_ids: [14] }],
    mentions: [12, 13],
    count: 13,
    old_unreads_missing: false,
  }, ME);
  return u;
}

const channels = new Map([
  [1, { name: 'Verona', color: '#76ce90', is_muted: false, pin_to_top: false }],
  [2, { name: 'Denmark', color: '#e79ab5', is_muted: true, pin_to_top: false }],
  [3, { name: 'Rome', color: '#a6dcbf', is_muted: false, pin_to_top: true }],
]);
const policies = new Map([['1:quiet', MUTED], ['2:kept', UNMUTED]]);
const policy = (s: number, t: string) => policies.get(`${s}:${t.toLowerCase()}`);

describe('the Inbox model', () => {
  it('groups unread topics by channel and lists direct-message conversations, with counts', () => {
    const m = inboxModel(state(), channels, policy);
    expect(m.dms).toEqual([
      { key: '20,30', count: 1, last: 14, mentioned: false },
      { key: '20', count: 2, last: 13, mentioned: true },
    ]);
    // Pinned first, then by name; a muted channel shows only its unmuted topics; a
    // muted topic and an unsubscribed channel are left out.
    expect(m.channels.map((c) => [c.name, c.count, c.mentioned, c.topics.map((t) => [t.topic, t.count])])).toEqual([
      ['Rome', 1, false, [['pinned talk', 1]]],
      ['Denmark', 1, false, [['kept', 1]]],
      ['Verona', 3, true, [['deploys', 1], ['lunch', 2]]],
    ]);
  });

  it('shows a followed topic of a muted channel, and follows the unread state as it changes', () => {
    policies.set('2:noise', FOLLOWED);
    const u = state();
    expect(inboxModel(u, channels, policy).channels.find((c) => c.name === 'Denmark')?.count).toBe(4);
    policies.delete('2:noise');
    u.remove(12);
    u.remove(14);
    const m = inboxModel(u, channels, policy);
    expect(m.dms.map((d) => d.key)).toEqual(['20']);
    expect(m.channels.find((c) => c.name === 'Verona')?.topics.map((t) => t.topic)).toEqual(['lunch']);
    expect(m.channels.find((c) => c.name === 'Verona')?.mentioned).toBe(false);
    u.remove(5);
    u.remove(9);
    expect(inboxModel(u, channels, policy).channels.map((c) => c.name)).toEqual(['Rome', 'Denmark']);
  });

  it('walks the rows of the groups not collapsed', () => {
    const m = inboxModel(state(), channels, policy);
    expect(inboxRows(m, new Set())).toHaveLength(1 + 2 + 2 + 2 + 3);
    const rows = inboxRows(m, new Set(['dm', 'channel:1']));
    expect(rows).toEqual([
      { kind: 'dm-header' },
      { kind: 'channel', streamId: 3 },
      { kind: 'topic', streamId: 3, topic: 'pinned talk' },
      { kind: 'channel', streamId: 2 },
      { kind: 'topic', streamId: 2, topic: 'kept' },
      { kind: 'channel', streamId: 1 },
    ]);
    expect(inboxRows({ dms: [], channels: [] }, new Set())).toEqual([]);
  });

  it('moves the focus within the rows', () => {
    expect(moveFocus(5, 2, 1)).toBe(3);
    expect(moveFocus(5, 4, 1)).toBe(4);
    expect(moveFocus(5, 0, -1)).toBe(0);
    expect(moveFocus(5, -1, 1)).toBe(0);
    expect(moveFocus(5, -1, -1)).toBe(4);
    expect(moveFocus(0, -1, 1)).toBe(-1);
  });
});

describe('folded groups across page loads', () => {
  class Memory {
    readonly items = new Map<string, string>();
    getItem(k: string): string | null {
      return this.items.get(k) ?? null;
    }
    setItem(k: string, v: string): void {
      this.items.set(k, v);
    }
    removeItem(k: string): void {
      this.items.delete(k);
    }
  }

  it('come back as they were left', () => {
    const m = new Memory();
    expect(loadFolded(m)).toEqual(new Set());
    saveFolded(m, new Set(['channel:14', 'dm', 'channel:3']));
    expect(loadFolded(m)).toEqual(new Set(['dm', 'channel:3', 'channel:14']));
    saveFolded(m, new Set(['dm']));
    expect(loadFolded(m)).toEqual(new Set(['dm']));
    saveFolded(m, new Set());
    expect(m.items.has(FOLDED_KEY)).toBe(false);
    expect(loadFolded(m)).toEqual(new Set());
  });

  it('are none when what was kept is unreadable, and none kept without storage', () => {
    const m = new Memory();
    m.setItem(FOLDED_KEY, '{not json');
    expect(loadFolded(m)).toEqual(new Set());
    m.setItem(FOLDED_KEY, JSON.stringify({ dm: true }));
    expect(loadFolded(m)).toEqual(new Set());
    m.setItem(FOLDED_KEY, JSON.stringify(['dm', 7, 'channel:x', 'channel:9', '<b>']));
    expect(loadFolded(m)).toEqual(new Set(['dm', 'channel:9']));
    expect(loadFolded(undefined)).toEqual(new Set());
    expect(() => saveFolded(undefined, new Set(['dm']))).not.toThrow();
  });

  it('survive a storage that refuses writes', () => {
    const full = { setItem: () => { throw new Error('QuotaExceededError'); }, removeItem: () => undefined };
    expect(() => saveFolded(full, new Set(['dm']))).not.toThrow();
  });
});

describe('the Inbox filter', () => {
  const names = new Map([['20', 'Othello'], ['20,30', 'Othello, Iago']]);
  const dmLabel = (key: string) => names.get(key) ?? '';
  const shown = (q: string, topicLabel?: (t: string) => string) => {
    const m = filterInbox(inboxModel(state(), channels, policy), q, dmLabel, topicLabel);
    return {
      dms: m.dms.map((d) => d.key),
      channels: m.channels.map((c) => [c.name, c.count, c.mentioned, c.topics.map((t) => t.topic)]),
    };
  };

  it('keeps everything for an empty or blank query', () => {
    const m = inboxModel(state(), channels, policy);
    expect(filterInbox(m, '', dmLabel)).toBe(m);
    expect(filterInbox(m, '   ', dmLabel)).toBe(m);
  });

  it('keeps every topic of a channel whose name matches, in any case', () => {
    expect(shown('VERON')).toEqual({ dms: [], channels: [['Verona', 3, true, ['deploys', 'lunch']]] });
  });

  it('keeps the matching topics of the other channels, with their counts', () => {
    expect(shown('LUN')).toEqual({ dms: [], channels: [['Verona', 2, false, ['lunch']]] });
    expect(shown('e')).toEqual({
      dms: ['20,30', '20'],
      channels: [['Rome', 1, false, ['pinned talk']], ['Denmark', 1, false, ['kept']], ['Verona', 3, true, ['deploys', 'lunch']]],
    });
    // Anywhere in the name, not only at a word's start; the query's own spaces at its ends do not count.
    expect(shown(' ploy ')).toEqual({ dms: [], channels: [['Verona', 1, true, ['deploys']]] });
  });

  it("keeps the direct-message conversations whose participants' names match", () => {
    expect(shown('iago')).toEqual({ dms: ['20,30'], channels: [] });
    expect(shown('othello')).toEqual({ dms: ['20,30', '20'], channels: [] });
  });

  it('matches a topic by the name its row shows too', () => {
    expect(shown('talk of rome', (t) => (t === 'pinned talk' ? 'talk of rome' : t))).toEqual({ dms: [], channels: [['Rome', 1, false, ['pinned talk']]] });
  });

  it('leaves nothing when nothing matches', () => {
    expect(shown('zzz')).toEqual({ dms: [], channels: [] });
  });
});
