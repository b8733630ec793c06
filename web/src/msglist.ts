// The messages of the current narrow, fetched in pages around an anchor and
// kept to a bounded window: paging one way drops messages at the other end.

import { batch, signal } from '@preact/signals';
import { get } from './api';
import { marksRead, matches, narrowForApi, nearAnchor, type Narrow } from './narrow';
import { listListeners, me, messages, noteTopic, storeMessage, type ListListener } from './store';
import type { Message } from './types';

export const PAGE = 100;
/** Most messages held (and rendered) at once. */
export const MAX_WINDOW = 300;

/** Pure: a window after adding ids at one end, trimmed at the other end. */
export function extendWindow(
  ids: number[],
  add: number[],
  side: 'before' | 'after',
  max = MAX_WINDOW,
): { ids: number[]; trimmedBefore: boolean; trimmedAfter: boolean } {
  const set = new Set(ids);
  const merged = [...ids, ...add.filter((id) => !set.has(id))].sort((a, b) => a - b);
  if (merged.length <= max) return { ids: merged, trimmedBefore: false, trimmedAfter: false };
  if (side === 'after') return { ids: merged.slice(merged.length - max), trimmedBefore: true, trimmedAfter: false };
  return { ids: merged.slice(0, max), trimmedBefore: false, trimmedAfter: true };
}

interface FetchResult {
  messages: Message[];
  found_oldest: boolean;
  found_newest: boolean;
  found_anchor: boolean;
  anchor: number;
}

export class MessageListData {
  readonly ids = signal<number[]>([]);
  readonly foundOldest = signal(false);
  readonly foundNewest = signal(false);
  readonly loading = signal<'' | 'initial' | 'older' | 'newer'>('');
  readonly error = signal('');
  /** Message to show and select after the first fetch. */
  readonly anchorId = signal<number | undefined>(undefined);
  private readonly listener: ListListener;
  private disposed = false;

  constructor(readonly narrow: Narrow) {
    this.listener = {
      added: (m) => this.onAdded(m),
      removed: (ids) => this.onRemoved(ids),
      changed: (ids) => this.onChanged(ids),
    };
    listListeners.add(this.listener);
  }

  dispose(): void {
    this.disposed = true;
    listListeners.delete(this.listener);
  }

  get marksRead(): boolean {
    return marksRead(this.narrow);
  }

  private async fetch(anchor: string | number, before: number, after: number, includeAnchor = true): Promise<FetchResult> {
    const res = await get<FetchResult>('messages', {
      anchor,
      num_before: before,
      num_after: after,
      include_anchor: includeAnchor,
      narrow: narrowForApi(this.narrow),
      apply_markdown: true,
      client_gravatar: false,
      allow_empty_topic_name: true,
    });
    for (const m of res.messages) {
      storeMessage(m);
      if (m.type === 'stream' && m.stream_id !== undefined) noteTopic(m.stream_id, m.subject, m.id);
    }
    return res;
  }

  async loadInitial(): Promise<void> {
    this.loading.value = 'initial';
    const near = nearAnchor(this.narrow);
    const anchor = near ?? (this.marksRead || this.narrow.some((t) => t.operator === 'is' && t.operand !== 'starred') ? 'first_unread' : 'newest');
    try {
      const res = await this.fetch(anchor, 50, 50);
      if (this.disposed) return;
      batch(() => {
        this.ids.value = res.messages.map((m) => m.id);
        this.foundOldest.value = res.found_oldest;
        this.foundNewest.value = res.found_newest;
        this.anchorId.value = res.found_anchor ? res.anchor : res.messages.at(-1)?.id;
        this.error.value = '';
      });
    } catch (e) {
      this.error.value = e instanceof Error ? e.message : String(e);
    } finally {
      this.loading.value = '';
    }
  }

  async loadOlder(): Promise<void> {
    if (this.loading.value !== '' || this.foundOldest.value) return;
    const first = this.ids.value[0];
    if (first === undefined) return;
    this.loading.value = 'older';
    try {
      const res = await this.fetch(first, PAGE, 0, false);
      if (this.disposed) return;
      const next = extendWindow(this.ids.value, res.messages.map((m) => m.id), 'before');
      batch(() => {
        this.ids.value = next.ids;
        this.foundOldest.value = res.found_oldest;
        if (next.trimmedAfter) this.foundNewest.value = false;
      });
    } catch (e) {
      this.error.value = e instanceof Error ? e.message : String(e);
    } finally {
      this.loading.value = '';
    }
  }

  async loadNewer(): Promise<void> {
    if (this.loading.value !== '' || this.foundNewest.value) return;
    const last = this.ids.value.at(-1);
    if (last === undefined) return;
    this.loading.value = 'newer';
    try {
      const res = await this.fetch(last, 0, PAGE, false);
      if (this.disposed) return;
      const next = extendWindow(this.ids.value, res.messages.map((m) => m.id), 'after');
      batch(() => {
        this.ids.value = next.ids;
        this.foundNewest.value = res.found_newest;
        if (next.trimmedBefore) this.foundOldest.value = false;
      });
    } catch (e) {
      this.error.value = e instanceof Error ? e.message : String(e);
    } finally {
      this.loading.value = '';
    }
  }

  private onAdded(m: Message): void {
    if (!this.foundNewest.value || this.loading.value === 'initial') return;
    if (matches(this.narrow, m, me.value) !== true) return;
    const next = extendWindow(this.ids.value, [m.id], 'after');
    batch(() => {
      this.ids.value = next.ids;
      if (next.trimmedBefore) this.foundOldest.value = false;
    });
  }

  private onRemoved(ids: number[]): void {
    const gone = new Set(ids);
    if (this.ids.value.some((id) => gone.has(id))) this.ids.value = this.ids.value.filter((id) => !gone.has(id));
  }

  /** Messages moved away from a channel/topic narrow leave it. */
  private onChanged(ids: number[]): void {
    const mine = new Set(this.ids.value);
    const leaving = ids.filter((id) => {
      const m = messages.get(id)?.value;
      return mine.has(id) && m !== undefined && matches(this.narrow, m, me.value) === false &&
        !this.narrow.some((t) => t.operator === 'is' && (t.operand === 'starred' || t.operand === 'unread'));
    });
    if (leaving.length > 0) this.onRemoved(leaving);
  }
}
