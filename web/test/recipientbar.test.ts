import { beforeEach, describe, expect, it } from 'vitest';
import { loadRegister } from '../src/store';
import type { Message } from '../src/types';
import { sameBar } from '../src/ui/MessageView';

const msg = (id: number, over: Partial<Message> = {}): Message => ({
  id, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 1_700_000_000 + id, type: 'stream', stream_id: 3,
  display_recipient: 'Verona', subject: 'Flood', content: '<p>x</p>', reactions: [], flags: [], ...over,
});

beforeEach(() => {
  loadRegister({
    user_id: 10,
    realm_users: [{ user_id: 10, email: 'h@x', full_name: 'Hamlet', is_bot: false, is_active: true, role: 400 }],
    unread_msgs: { streams: [], pms: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false },
  });
});

describe('a recipient bar', () => {
  it('stays as it is when its block starts at another message of the same conversation and day', () => {
    expect(sameBar({ m: msg(1) }, { m: msg(2) })).toBe(true);
    expect(sameBar({ m: msg(1), docked: true }, { m: msg(2), docked: true })).toBe(true);
  });

  it('re-renders for another topic, channel, day, spelling of the topic, or place', () => {
    expect(sameBar({ m: msg(1) }, { m: msg(2, { subject: 'Lunch' }) })).toBe(false);
    expect(sameBar({ m: msg(1) }, { m: msg(2, { stream_id: 4 }) })).toBe(false);
    expect(sameBar({ m: msg(1) }, { m: msg(2, { timestamp: 1_700_000_000 + 3 * 86_400 }) })).toBe(false);
    expect(sameBar({ m: msg(1) }, { m: msg(2, { subject: 'flood' }) })).toBe(false);
    expect(sameBar({ m: msg(1) }, { m: msg(2), docked: true })).toBe(false);
    expect(sameBar({ m: msg(1) }, { m: msg(2, { type: 'private', stream_id: undefined, display_recipient: [{ id: 10, email: '', full_name: '' }, { id: 11, email: '', full_name: '' }] }) })).toBe(false);
  });
});
