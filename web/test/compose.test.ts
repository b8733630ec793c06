import { afterEach, describe, expect, it, vi } from 'vitest';
import { sendMessage } from '../src/compose';

afterEach(() => {
  vi.unstubAllGlobals();
});

/** Sends as the compose box does and returns what reached the server. */
async function sent(target: Parameters<typeof sendMessage>[0]): Promise<{ url: string; method: string; body: URLSearchParams }> {
  let seen: { url: string; method: string; body: URLSearchParams } | undefined;
  vi.stubGlobal('document', { cookie: 'csrftoken=tok' });
  vi.stubGlobal('fetch', (url: string, init: RequestInit) => {
    seen = { url, method: String(init.method), body: new URLSearchParams(String(init.body)) };
    return Promise.resolve(new Response(JSON.stringify({ result: 'success', msg: '', id: 42 })));
  });
  expect(await sendMessage(target, 'hello')).toBe(42);
  if (seen === undefined) throw new Error('nothing sent');
  return seen;
}

describe('sending a message', () => {
  it('to a channel marks it read for its sender, as Zulip\'s web app does', async () => {
    const r = await sent({ type: 'stream', streamId: 3, topic: 'Lunch' });
    expect(r.url).toBe('/json/messages');
    expect(r.method).toBe('POST');
    expect(r.body.get('read_by_sender')).toBe('true');
    expect(r.body.get('type')).toBe('stream');
    expect(r.body.get('to')).toBe('3');
    expect(r.body.get('topic')).toBe('Lunch');
  });

  it('in a direct message too', async () => {
    const r = await sent({ type: 'private', to: [11, 12] });
    expect(r.body.get('read_by_sender')).toBe('true');
    expect(r.body.get('type')).toBe('direct');
    expect(r.body.get('to')).toBe('[11,12]');
  });
});
