// Messages seen in a narrow that allows it are marked read, batched: one
// request a second at most, up to 1000 ids each.

import { post } from './api';
import { messages, unread } from './store';

const queue = new Set<number>();
let timer: ReturnType<typeof setTimeout> | undefined;

export function markRead(ids: number[]): void {
  for (const id of ids) {
    const m = messages.get(id)?.peek();
    if ((m !== undefined && !m.flags.includes('read')) || unread.has(id)) queue.add(id);
  }
  if (queue.size > 0 && timer === undefined) timer = setTimeout(flush, 300);
}

async function flush(): Promise<void> {
  const batchIds = [...queue].slice(0, 1000);
  for (const id of batchIds) queue.delete(id);
  try {
    if (batchIds.length > 0) await post('messages/flags', { messages: batchIds, op: 'add', flag: 'read' });
  } catch {
    for (const id of batchIds) queue.add(id);
  }
  timer = queue.size > 0 ? setTimeout(flush, 1000) : undefined;
}
