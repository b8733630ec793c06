import { describe, expect, it } from 'vitest';
import { csrfToken, encodeParams } from '../src/api';
import { backoffMs } from '../src/server';
import { tokenAt } from '../src/ui/Autocomplete';

describe('requests', () => {
  it('reads the csrftoken cookie among others', () => {
    expect(csrfToken('a=1; csrftoken=abc%3D; sessionid=zzz')).toBe('abc=');
    expect(csrfToken('sessionid=zzz')).toBeUndefined();
  });
  it('sends objects as JSON and drops undefined', () => {
    const p = encodeParams({ narrow: [{ operator: 'channel', operand: 3 }], anchor: 'newest', x: undefined, n: 5, b: true });
    expect(p.get('narrow')).toBe('[{"operator":"channel","operand":3}]');
    expect(p.get('anchor')).toBe('newest');
    expect(p.has('x')).toBe(false);
    expect(p.get('n')).toBe('5');
    expect(p.get('b')).toBe('true');
  });
  it('backs off exponentially up to a minute', () => {
    for (let f = 1; f < 12; f++) {
      const ms = backoffMs(f);
      const base = Math.min(60_000, 1000 * 2 ** Math.min(f, 6));
      expect(ms).toBeGreaterThanOrEqual(base / 2);
      expect(ms).toBeLessThanOrEqual(base);
    }
    expect(backoffMs(20)).toBeLessThanOrEqual(60_000);
  });
});

describe('compose autocomplete tokens', () => {
  it('finds @, # and : tokens at the cursor', () => {
    expect(tokenAt('hello @ia', 9)).toEqual({ kind: '@', query: 'ia', start: 6 });
    expect(tokenAt('see #ver', 8)).toEqual({ kind: '#', query: 'ver', start: 4 });
    expect(tokenAt('nice :ta', 8)).toEqual({ kind: ':', query: 'ta', start: 5 });
  });
  it('ignores emails, one-letter emoji and times', () => {
    expect(tokenAt('mail me@example', 15)).toBeUndefined();
    expect(tokenAt('ok :t', 5)).toBeUndefined();
    expect(tokenAt('at 10:30', 8)).toBeUndefined();
  });
});
