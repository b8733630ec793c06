import { afterEach, describe, expect, it, vi } from 'vitest';
import { waker } from '../src/server';

afterEach(() => vi.useRealTimers());

describe('the back-off wait', () => {
  it('ends early when woken', async () => {
    vi.useFakeTimers();
    const w = waker();
    let done = false;
    void w.sleep(30_000).then(() => { done = true; });
    await vi.advanceTimersByTimeAsync(100);
    expect(done).toBe(false);
    w.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });

  it('keeps a wake-up that came while nobody waited for the next wait', async () => {
    vi.useFakeTimers();
    const w = waker();
    // Back online while the failing request was still on its way.
    w.wake();
    let done = false;
    void w.sleep(30_000).then(() => { done = true; });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    // Used once: the wait after it runs its course.
    let second = false;
    void w.sleep(1000).then(() => { second = true; });
    await vi.advanceTimersByTimeAsync(999);
    expect(second).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(second).toBe(true);
  });

  it('a wake-up after a wait ran out is kept for the next one, not spent on the old one', async () => {
    vi.useFakeTimers();
    const w = waker();
    await Promise.all([w.sleep(10), vi.advanceTimersByTimeAsync(10)]);
    w.wake();
    let done = false;
    void w.sleep(60_000).then(() => { done = true; });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });
});
