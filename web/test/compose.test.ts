import { afterEach, describe, expect, it, vi } from 'vitest';
import { sendMessage, targetFor } from '../src/compose';
import { me } from '../src/store';
import type { Message } from '../src/types';

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

describe('where a new message goes', () => {
  it('from a topic narrow: that channel and topic; from a channel: the channel, topic left to fill', () => {
    expect(targetFor([{ operator: 'channel', operand: '3' }, { operator: 'topic', operand: 'Lunch' }])).toEqual({ type: 'stream', streamId: 3, topic: 'Lunch' });
    expect(targetFor([{ operator: 'channel', operand: '3' }])).toEqual({ type: 'stream', streamId: 3, topic: '' });
    expect(targetFor([{ operator: 'channel', operand: '3', negated: true }])).toEqual({ type: 'stream', streamId: undefined, topic: '' });
  });

  it('from a direct conversation: its people; a reply: the message\'s conversation without me', () => {
    expect(targetFor([{ operator: 'dm', operand: '11,12' }])).toEqual({ type: 'private', to: [11, 12] });
    me.value = 10;
    const dm = { type: 'private', display_recipient: [{ id: 10 }, { id: 12 }, { id: 11 }] } as unknown as Message;
    expect(targetFor([], dm)).toEqual({ type: 'private', to: [11, 12] });
    const ch = { type: 'stream', stream_id: 5, subject: 'Plans' } as unknown as Message;
    expect(targetFor([{ operator: 'dm', operand: '11' }], ch)).toEqual({ type: 'stream', streamId: 5, topic: 'Plans' });
  });
});
