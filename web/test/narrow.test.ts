import { describe, expect, it } from 'vitest';
import {
  channelSlug, decodeHashComponent, dmSlug, encodeHashComponent, hashToNarrow, marksRead, matches, narrowForApi, narrowToHash,
  type SlugContext,
} from '../src/narrow';
import type { Message } from '../src/types';

const ctx: SlugContext = {
  channelName: (id) => ({ 14: 'Zulip updates', 3: 'Verona', 2016: 'election' } as Record<number, string>)[id],
  channelIdByName: (name) => ({ 'zulip updates': 14, verona: 3 } as Record<string, number>)[name.toLowerCase()],
  userName: (id) => ({ 10: 'King Hamlet', 11: 'Iago', 12: 'Othello, the Moor' } as Record<number, string>)[id],
  userIdByEmail: (e) => ({ 'iago@zulip.com': 11 } as Record<string, number>)[e],
};

describe('hash components', () => {
  it.each([
    ['Zulip updates', 'Zulip.20updates'],
    ['v1.2', 'v1.2E2'],
    ['100%', '100.25'],
    ['f(x)', 'f.28x.29'],
    ['a/b', 'a.2Fb'],
    ['café', 'caf.C3.A9'],
    ['#', '.23'],
    ['?', '.3F'],
  ])('%s ↔ %s', (plain, enc) => {
    expect(encodeHashComponent(plain)).toBe(enc);
    expect(decodeHashComponent(enc)).toBe(plain);
  });
  it('decodes the server form of ! and *', () => {
    expect(decodeHashComponent('wow.21.2A')).toBe('wow!*');
  });
});

describe('slugs', () => {
  it('channel slug is id-name with dashes', () => {
    expect(channelSlug(14, 'Zulip updates')).toBe('14-Zulip-updates');
  });
  it('channel slug falls back to the id when encoding bloats the name', () => {
    expect(channelSlug(5, '日本語のチャンネル')).toBe('5');
  });
  it('dm slug names the other user or says group', () => {
    expect(dmSlug([11], ctx.userName)).toBe('11-Iago');
    expect(dmSlug([12, 11], ctx.userName)).toBe('11,12-group');
    expect(dmSlug([12], ctx.userName)).toBe('12-Othello.2C-the-Moor');
  });
});

describe('narrow URLs', () => {
  it('round-trips a topic narrow', () => {
    const n = [{ operator: 'channel', operand: '14' }, { operator: 'topic', operand: 'release 1.0 (beta)' }];
    const h = narrowToHash(n, ctx);
    expect(h).toBe('#narrow/channel/14-Zulip-updates/topic/release.201.2E0.20.28beta.29');
    expect(hashToNarrow(h, ctx)).toEqual(n);
  });
  it('reads legacy spellings', () => {
    expect(hashToNarrow('#narrow/stream/3-Verona/subject/lunch', ctx)).toEqual([
      { operator: 'channel', operand: '3' }, { operator: 'topic', operand: 'lunch' },
    ]);
    expect(hashToNarrow('#narrow/pm-with/11-iago', ctx)).toEqual([{ operator: 'dm', operand: '11' }]);
    expect(hashToNarrow('#narrow/is/private', ctx)).toEqual([{ operator: 'is', operand: 'dm' }]);
    expect(hashToNarrow('#narrow/stream/Verona', ctx)).toEqual([{ operator: 'channel', operand: '3' }]);
  });
  it('an id prefix wins over a name', () => {
    expect(hashToNarrow('#narrow/channel/2016-election', ctx)).toEqual([{ operator: 'channel', operand: '2016' }]);
  });
  it('keeps negation and rejects a dangling operator', () => {
    expect(hashToNarrow('#narrow/is/starred/-channel/14', ctx)).toEqual([
      { operator: 'is', operand: 'starred' }, { operator: 'channel', operand: '14', negated: true },
    ]);
    expect(hashToNarrow('#narrow/channel', ctx)).toBeUndefined();
    expect(hashToNarrow('#recent', ctx)).toBeUndefined();
  });
  it('gives the API integer operands', () => {
    expect(narrowForApi([{ operator: 'channel', operand: '3' }, { operator: 'dm', operand: '11,12' }, { operator: 'near', operand: '5' }]))
      .toEqual([{ operator: 'channel', operand: 3 }, { operator: 'dm', operand: [11, 12] }]);
  });
});

function msg(over: Partial<Message>): Message {
  return {
    id: 1, sender_id: 11, sender_full_name: 'Iago', sender_email: 'iago@zulip.com', timestamp: 0, type: 'stream', stream_id: 3,
    display_recipient: 'Verona', subject: 'Lunch', content: '', reactions: [], flags: [], ...over,
  };
}

describe('matching messages to narrows', () => {
  it('channel and topic, topic case-insensitively', () => {
    const n = [{ operator: 'channel', operand: '3' }, { operator: 'topic', operand: 'lunch' }];
    expect(matches(n, msg({}), 10)).toBe(true);
    expect(matches(n, msg({ subject: 'dinner' }), 10)).toBe(false);
  });
  it('direct messages by participants', () => {
    const dm = msg({ type: 'private', stream_id: undefined, display_recipient: [{ id: 10, email: '', full_name: '' }, { id: 11, email: '', full_name: '' }] });
    expect(matches([{ operator: 'dm', operand: '11' }], dm, 10)).toBe(true);
    expect(matches([{ operator: 'dm', operand: '12' }], dm, 10)).toBe(false);
    expect(matches([{ operator: 'is', operand: 'dm' }], dm, 10)).toBe(true);
  });
  it('negation and unknown (search) terms', () => {
    expect(matches([{ operator: 'channel', operand: '3', negated: true }], msg({}), 10)).toBe(false);
    expect(matches([{ operator: 'search', operand: 'lunch' }], msg({}), 10)).toBeUndefined();
  });
  it('marks read only in conversation views and the feed', () => {
    expect(marksRead([])).toBe(true);
    expect(marksRead([{ operator: 'channel', operand: '3' }, { operator: 'topic', operand: 'x' }])).toBe(true);
    expect(marksRead([{ operator: 'is', operand: 'starred' }])).toBe(false);
    expect(marksRead([{ operator: 'search', operand: 'x' }])).toBe(false);
  });
});
