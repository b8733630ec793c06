// Messages seen in a narrow that allows it are marked read: at once here (the
// counts and the rows change in the next frame), and on the server in batches of
// one request a second at most, up to 1000 ids each, as Zulip's web app does. The
// server's update_message_flags event then confirms what is already shown.

import { batch } from '@preact/signals';
import { post } from './api';
import { bumpUnread, messages, unread } from './store';

const queue = new Set<number>();
let timer: ReturnType<typeof setTimeout> | undefined;

export function markRead(ids: Iterable<number>): void {
  const fresh: number[] = [];
  for (const id of ids) {
    const m = messages.get(id)?.peek();
    if ((m !== undefined && !m.flags.includes('read')) || unread.has(id)) fresh.push(id);
  }
  if (fresh.length === 0) return;
  batch(() => {
    for (const id of fresh) {
      queue.add(id);
      unread.remove(id);
      const s = messages.get(id);
      if (s !== undefined && !s.peek().flags.includes('read')) s.value = { ...s.peek(), flags: [...s.peek().flags, 'read'] };
    }
  });
  bumpUnread();
  timer ??= setTimeout(() => void flush(), 300);
}

async function flush(): Promise<void> {
  const batchIds = [...queue].slice(0, 1000);
  for (const id of batchIds) queue.delete(id);
  try {
    if (batchIds.length > 0) await post('messages/flags', { messages: batchIds, op: 'add', flag: 'read' });
  } catch {
    for (const id of batchIds) queue.add(id);
  }
  timer = queue.size > 0 ? setTimeout(() => void flush(), 1000) : undefined;
}
