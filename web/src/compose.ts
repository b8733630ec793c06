// Compose box state and sending.

import { signal } from '@preact/signals';
import { post } from './api';

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

export async function sendMessage(target: ComposeTarget, content: string): Promise<number> {
  const res =
    target.type === 'stream'
      ? await post<{ id: number }>('messages', { type: 'stream', to: target.streamId, topic: target.topic, content, read_by_sender: true })
      : await post<{ id: number }>('messages', { type: 'direct', to: target.to, content, read_by_sender: true });
  return res.id;
}
