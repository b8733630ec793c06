// Compose box state and sending.

import { signal } from '@preact/signals';
import { post } from './api';
import { dmParticipants, type Narrow } from './narrow';
import { me } from './store';
import type { Message } from './types';

export type ComposeTarget =
  | { type: 'stream'; streamId: number | undefined; topic: string }
  | { type: 'private'; to: number[] };

export const composeOpen = signal(false);
export const composeTarget = signal<ComposeTarget>({ type: 'stream', streamId: undefined, topic: '' });
export const composeContent = signal('');
export const composeDraftId = signal<number | undefined>(undefined);
export const composeFocus = signal(0);

export function openCompose(target: ComposeTarget, content = ''): void {
  composeTarget.value = target;
  if (content !== '') composeContent.value = content;
  composeOpen.value = true;
  composeFocus.value++;
}

/** Where a new message goes from a narrow, or as a reply to one message. */
export function targetFor(narrow: Narrow, m?: Message): ComposeTarget {
  if (m !== undefined) {
    return m.type === 'stream'
      ? { type: 'stream' as const, streamId: m.stream_id, topic: m.subject }
      : { type: 'private' as const, to: dmParticipants(m, me.value) };
  }
  const ch = narrow.find((t) => t.operator === 'channel' && !t.negated);
  const topic = narrow.find((t) => t.operator === 'topic' && !t.negated);
  const dm = narrow.find((t) => t.operator === 'dm' && !t.negated);
  if (dm !== undefined) return { type: 'private' as const, to: dm.operand.split(',').map(Number) };
  return { type: 'stream' as const, streamId: ch === undefined ? undefined : Number(ch.operand), topic: topic?.operand ?? '' };
}

export async function sendMessage(target: ComposeTarget, content: string): Promise<number> {
  const res =
    target.type === 'stream'
      ? await post<{ id: number }>('messages', { type: 'stream', to: target.streamId, topic: target.topic, content, read_by_sender: true })
      : await post<{ id: number }>('messages', { type: 'direct', to: target.to, content, read_by_sender: true });
  return res.id;
}
