import { describe, expect, it } from 'vitest';
import { localTime, visibleEmail } from '../src/ui/UserCard';
import type { User } from '../src/types';

const user = (over: Partial<User>): User => ({ user_id: 5, email: 'user5@hearth.example', full_name: 'Ophelia', is_bot: false, is_active: true, role: 400, ...over });

describe('the user card', () => {
  it('shows the real address when the server gave it, and no stand-in address', () => {
    expect(visibleEmail(user({ delivery_email: 'ophelia@example.org' }))).toBe('ophelia@example.org');
    expect(visibleEmail(user({}))).toBeUndefined();
    expect(visibleEmail(user({ email: 'ophelia@example.org' }))).toBe('ophelia@example.org');
  });

  it("gives the time in the user's time zone, and nothing for an unknown or broken one", () => {
    const noon = new Date('2026-06-01T12:00:00Z');
    const tokyo = localTime('Asia/Tokyo', noon);
    const utc = localTime('UTC', noon);
    expect(tokyo).toBeDefined();
    expect(tokyo).not.toBe(utc);
    expect(tokyo).toMatch(/9/);
    expect(localTime(undefined, noon)).toBeUndefined();
    expect(localTime('', noon)).toBeUndefined();
    expect(localTime('Not/AZone', noon)).toBeUndefined();
  });
});
