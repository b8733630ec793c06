import { afterEach, describe, expect, it, vi } from 'vitest';
import { pollForever } from '../src/server';

afterEach(() => {
  vi.unstubAllGlobals();
});

const answer = (events: unknown[]) => new Response(JSON.stringify({ result: 'success', msg: '', events }), {
  status: 200, headers: { 'content-type': 'application/json' },
});

describe('the event poll', () => {
  it('polls again after an answer with events only at the next animation frame', async () => {
    const frames: (() => void)[] = [];
    let polls = 0;
    vi.stubGlobal('document', { hidden: false, cookie: '' });
    vi.stubGlobal('requestAnimationFrame', (f: () => void) => { frames.push(f); return frames.length; });
    vi.stubGlobal('location', { origin: 'http://x', pathname: '/', search: '', hash: '' });
    vi.stubGlobal('fetch', () => {
      polls++;
      // Every answer brings an event at once, as a server would under a flood; the
      // third poll is left waiting (the loop ends with the test).
      if (polls > 2) return new Promise<Response>(() => undefined);
      return Promise.resolve(answer([{ id: polls, type: 'heartbeat' }]));
    });
    void pollForever();
    await new Promise((r) => setTimeout(r, 20));
    expect(polls).toBe(1);
    for (const f of frames.splice(0)) f();
    await new Promise((r) => setTimeout(r, 20));
    expect(polls).toBe(2);
  });
});
