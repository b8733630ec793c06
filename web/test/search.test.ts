import { describe, expect, it } from 'vitest';
import { parseSearch, resolveTerms, unparse, type ResolveContext } from '../src/search';

const ctx: ResolveContext = {
  channelIdByName: (n) => ({ verona: 3, 'core team': 7 } as Record<string, number>)[n.toLowerCase()],
  channelName: (id) => ({ 3: 'Verona', 7: 'core team' } as Record<number, string>)[id],
  userIdByEmailOrName: (s) => ({ 'iago@zulip.com': 11, iago: 11 } as Record<string, number>)[s.toLowerCase()],
  userEmail: (id) => ({ 11: 'iago@zulip.com', 10: 'hamlet@zulip.com' } as Record<number, string>)[id],
  me: 10,
};

describe('search syntax', () => {
  it('parses operators, quoted operands and keywords', () => {
    expect(parseSearch('channel:Verona topic:"lunch plans" sender:iago@zulip.com pizza party')).toEqual([
      { operator: 'channel', operand: 'Verona' },
      { operator: 'topic', operand: 'lunch plans' },
      { operator: 'sender', operand: 'iago@zulip.com' },
      { operator: 'search', operand: 'pizza party' },
    ]);
  });
  it('canonicalises legacy operators and negation', () => {
    expect(parseSearch('stream:Verona -is:private from:me has:images')).toEqual([
      { operator: 'channel', operand: 'Verona' },
      { operator: 'is', operand: 'dm', negated: true },
      { operator: 'sender', operand: 'me' },
      { operator: 'has', operand: 'image' },
    ]);
  });
  it('treats unknown operators as keywords', () => {
    expect(parseSearch('foo:bar baz')).toEqual([{ operator: 'search', operand: 'foo:bar baz' }]);
  });
  it('keeps a script-looking keyword as text', () => {
    expect(parseSearch('<script>alert(1)</script>')).toEqual([{ operator: 'search', operand: '<script>alert(1)</script>' }]);
  });
  it('resolves names to ids and back', () => {
    const terms = resolveTerms(parseSearch('channel:"core team" dm:iago@zulip.com sender:me'), ctx);
    expect(terms).toEqual([
      { operator: 'channel', operand: '7' },
      { operator: 'dm', operand: '11' },
      { operator: 'sender', operand: '10' },
    ]);
    expect(unparse(terms, ctx)).toBe('channel:"core team" dm:iago@zulip.com sender:hamlet@zulip.com');
  });
  it('leaves unknown names as typed', () => {
    expect(resolveTerms(parseSearch('channel:nowhere'), ctx)).toEqual([{ operator: 'channel', operand: 'nowhere' }]);
  });
});
