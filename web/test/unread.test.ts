import { describe, expect, it } from 'vitest';
import { UnreadState } from '../src/unread';
import { extendWindow } from '../src/msglist';

const me = 10;

function loaded(): UnreadState {
  const u = new UnreadState();
  u.load({
    streams: [{ stream_id: 3, topic: 'Lunch', unread_message_ids: [1, 2] }, { stream_id: 4, topic: 'x', unread_message_ids: [5] }],
    pms: [{ other_user_id: 11, unread_message_ids: [3] }],
    huddles: [{ user_ids_string: '10,11,12', unread_message_ids: [4] }],
    mentions: [2],
    count: 5,
    old_unreads_missing: false,
  }, me);
  return u;
}

describe('unread counts', () => {
  it('loads register data', () => {
    const u = loaded();
    expect(u.total()).toBe(5);
    expect(u.streamCount(3)).toBe(2);
    expect(u.topicCount(3, 'lunch')).toBe(2);
    expect(u.dmCount('11')).toBe(1);
    expect(u.dmCount('11,12')).toBe(1);
    expect(u.mentionCount()).toBe(1);
    expect(u.total((id) => id === 4)).toBe(4);
  });
  it('falls as messages are read', () => {
    const u = loaded();
    u.remove(2);
    u.remove(3);
    expect(u.topicCount(3, 'Lunch')).toBe(1);
    expect(u.mentionCount()).toBe(0);
    expect(u.dmCount()).toBe(1);
    expect(u.total()).toBe(3);
  });
  it('adds new unread messages, not read ones', () => {
    const u = loaded();
    u.addMessage({ id: 9, type: 'stream', stream_id: 3, subject: 'LUNCH', display_recipient: 'Verona', flags: ['mentioned'] }, me);
    u.addMessage({ id: 10, type: 'stream', stream_id: 3, subject: 'Lunch', display_recipient: 'Verona', flags: ['read'] }, me);
    expect(u.topicCount(3, 'Lunch')).toBe(3);
    expect(u.topicsOf(3)).toEqual(['Lunch']);
    expect(u.mentionCount()).toBe(2);
  });
  it('follows moved messages', () => {
    const u = loaded();
    u.move([1, 2], 4, 'Dinner');
    expect(u.streamCount(3)).toBe(0);
    expect(u.topicCount(4, 'dinner')).toBe(2);
    expect(u.mentionCount()).toBe(1);
  });
  it('marks unread again from event details', () => {
    const u = loaded();
    u.addFromDetails(20, { type: 'private', user_ids: [11, 12], mentioned: true }, me);
    expect(u.dmCount('11,12')).toBe(2);
    expect(u.mentionCount()).toBe(2);
  });
});

describe('bounded message window', () => {
  it('drops the far end beyond the limit', () => {
    const ids = Array.from({ length: 10 }, (_, i) => i + 1);
    const after = extendWindow(ids, [11, 12, 13], 'after', 10);
    expect(after.ids).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(after.trimmedBefore).toBe(true);
    const before = extendWindow(ids.map((i) => i + 10), [1, 2, 3], 'before', 10);
    expect(before.ids[0]).toBe(1);
    expect(before.ids.length).toBe(10);
    expect(before.trimmedAfter).toBe(true);
  });
  it('ignores duplicates', () => {
    expect(extendWindow([1, 2], [2, 3], 'after', 10)).toEqual({ ids: [1, 2, 3], trimmedBefore: false, trimmedAfter: false });
  });
});

describe('the unread fingerprint', () => {
  const msg = (id: number, subject = 'Lunch') => ({ id, type: 'stream' as const, stream_id: 3, subject, display_recipient: 'Verona', flags: [] });
  it('is the same after a message came and was read, and differs for other ids', () => {
    const u = loaded();
    const before = u.fingerprint();
    u.addMessage(msg(100), me);
    expect(u.fingerprint()).not.toBe(before);
    u.remove(100);
    expect(u.fingerprint()).toBe(before);
    const a = new UnreadState();
    const b = new UnreadState();
    a.addMessage(msg(1), me);
    a.addMessage(msg(6), me);
    b.addMessage(msg(2), me);
    b.addMessage(msg(5), me);
    expect(a.fingerprint()).not.toBe(b.fingerprint());
  });
  it('changes when unread messages move', () => {
    const u = loaded();
    const before = u.fingerprint();
    u.move([1], 3, 'Dinner');
    expect(u.fingerprint()).not.toBe(before);
  });
});
