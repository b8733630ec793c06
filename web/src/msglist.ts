// The messages of the current narrow, fetched in pages around an anchor and
// kept to a bounded window: paging one way drops messages at the other end.

import { batch, signal } from '@preact/signals';
import { get } from './api';
import { onNextFrame } from './frame';
import { marksRead, matches, narrowForApi, nearAnchor, type Narrow } from './narrow';
import { listListeners, me, messages, noteTopics, pruneMessages, realm, storeMessage, unread, type ListListener } from './store';
import type { Message } from './types';

export const PAGE = 100;
/** Most messages held at once (the view renders only some of them: `renderSpan`). */
export const MAX_WINDOW = 300;

/** Rows rendered at the bottom of a list that follows its newest messages. */
export const FOLLOW_ROWS = 40;
/** Fewest rows rendered while following, and the height beyond the viewport they fill. */
export const MIN_FOLLOW_ROWS = 12;
export const FOLLOW_MARGIN_PX = 240;

/**
 * Pure: how many of the newest rows a list that follows them renders, for a viewport
 * `viewport` pixels high whose rows have been `rowHeight` pixels on average: enough to
 * fill it and a margin, and never more than `FOLLOW_ROWS`. Rows below the fold are
 * never seen while the list keeps to its newest message; under a flood, a frame then
 * builds the rows that fit on screen, not all the messages that arrived.
 */
export function followRows(viewport: number, rowHeight: number): number {
  if (!(viewport > 0) || !(rowHeight > 0)) return FOLLOW_ROWS;
  const fit = Math.ceil((viewport + FOLLOW_MARGIN_PX) / Math.max(rowHeight, 16));
  return Math.min(FOLLOW_ROWS, Math.max(MIN_FOLLOW_ROWS, fit));
}

/** Rows rendered on each side of the message a list opens at. */
export const AROUND_ROWS = 40;
/** Rows added to the rendered span when the reader scrolls near its edge. */
export const SPAN_STEP = 40;
/** Most rows rendered at once. */
export const MAX_RENDERED = 140;

/**
 * What the view renders of the held messages: `{follow}`, the newest ones, that many;
 * `{lo, hi}`, those from id `lo` to id `hi` (ids, so that the span stays put when
 * messages are added or trimmed around it); undefined, before the list is placed,
 * those around its anchor.
 */
export type RenderRange = { follow: number } | { lo: number; hi: number } | undefined;

/** Index of the first id ≥ `id` in ascending `ids`. */
function lowerBound(ids: readonly number[], id: number): number {
  let a = 0;
  let b = ids.length;
  while (a < b) {
    const mid = (a + b) >> 1;
    if ((ids[mid] ?? 0) < id) a = mid + 1;
    else b = mid;
  }
  return a;
}

/**
 * Pure: the rendered part of a list's held ids, as [start, end) indexes into `ids`
 * (ascending): the last `FOLLOW_ROWS` while following, else the range's, else the
 * rows around the anchor (or the newest, when it is the last).
 */
export function renderSpan(ids: readonly number[], range: RenderRange, anchorId?: number): [number, number] {
  const n = ids.length;
  if (n === 0) return [0, 0];
  if (range === undefined) {
    const i = anchorId === undefined ? n - 1 : Math.min(n - 1, lowerBound(ids, anchorId));
    if (i >= n - 1) return [Math.max(0, n - FOLLOW_ROWS), n];
    return [Math.max(0, i - AROUND_ROWS), Math.min(n, i + AROUND_ROWS + 1)];
  }
  if ('follow' in range) return [Math.max(0, n - range.follow), n];
  let start = lowerBound(ids, range.lo);
  let end = lowerBound(ids, range.hi + 1);
  // Its messages gone (deleted, moved, trimmed): the nearest ones instead.
  if (end - start < SPAN_STEP) {
    start = Math.max(0, Math.min(start, n - SPAN_STEP));
    end = Math.min(n, Math.max(end, start + SPAN_STEP));
  }
  return [start, end];
}

/**
 * Pure: the span grown `SPAN_STEP` rows up or down, trimmed at the other end to
 * `MAX_RENDERED`; undefined when no held message is left on that side. A span that
 * follows the newest messages and grows up keeps following them.
 */
export function growSpan(ids: readonly number[], [start, end]: [number, number], side: 'up' | 'down', following = false): RenderRange {
  const n = ids.length;
  if (side === 'up' ? start <= 0 : end >= n) return undefined;
  if (following && side === 'up') {
    const rows = Math.min(MAX_RENDERED, end - start + SPAN_STEP);
    return end - start >= MAX_RENDERED ? undefined : { follow: rows };
  }
  if (side === 'up') {
    const s = Math.max(0, start - SPAN_STEP);
    const e = Math.min(end, s + MAX_RENDERED);
    return { lo: ids[s] ?? 0, hi: ids[e - 1] ?? 0 };
  }
  const e = Math.min(n, end + SPAN_STEP);
  const s = Math.max(start, e - MAX_RENDERED);
  return { lo: ids[s] ?? 0, hi: ids[e - 1] ?? 0 };
}

/** Pure: a window after adding ids at one end, trimmed at the other end. */
export function extendWindow(
  ids: number[],
  add: number[],
  side: 'before' | 'after',
  max = MAX_WINDOW,
): { ids: number[]; trimmedBefore: boolean; trimmedAfter: boolean } {
  // No id twice, even when a page and the event queue both brought it.
  const set = new Set(ids);
  const fresh = add.filter((id) => !set.has(id) && (set.add(id), true));
  const merged = fresh.length === 0 ? ids : [...ids, ...fresh].sort((a, b) => a - b);
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

/** The anchor of a narrow's first page: the message linked to, else the first unread or the newest. */
export function initialAnchor(narrow: Narrow): string | number {
  const near = nearAnchor(narrow);
  if (near !== undefined) return near;
  return marksRead(narrow) || narrow.some((t) => t.operator === 'is' && t.operand !== 'starred') ? 'first_unread' : 'newest';
}

function fetchPage(narrow: Narrow, anchor: string | number, before: number, after: number, includeAnchor: boolean): Promise<FetchResult> {
  return get<FetchResult>('messages', {
    anchor,
    num_before: before,
    num_after: after,
    include_anchor: includeAnchor,
    narrow: narrowForApi(narrow),
    apply_markdown: true,
    client_gravatar: false,
    allow_empty_topic_name: true,
  });
}

function store(res: FetchResult): void {
  for (const m of res.messages) storeMessage(m);
  noteTopics(res.messages.filter((m) => m.type === 'stream' && m.stream_id !== undefined).map((m) => [m.stream_id ?? 0, m.subject, m.id] as const));
}

let prefetched: { key: string; anchor: string | number; page: Promise<FetchResult> } | undefined;

/**
 * Asks for the first page of the narrow the page opens on while /register is on its
 * way (the narrow is known from the URL). The list of that narrow takes the page
 * instead of asking again, and reconciles it with the event queue (`adoptPrefetch`).
 */
export function prefetchFirstPage(narrow: Narrow): void {
  const anchor = initialAnchor(narrow);
  const page = fetchPage(narrow, anchor, 50, 50, true);
  page.catch(() => undefined);
  prefetched = { key: JSON.stringify(narrow), anchor, page };
}

/** The prefetched first page, once, if it was for this narrow and anchor. */
function takePrefetch(narrow: Narrow, anchor: string | number): Promise<FetchResult> | undefined {
  const p = prefetched;
  prefetched = undefined;
  return p !== undefined && p.key === JSON.stringify(narrow) && p.anchor === anchor ? p.page : undefined;
}

/**
 * A page fetched before the event queue existed may predate changes the queue will
 * not replay. Read state: /register's unread ids are newer, so they decide.
 */
export function reconcileRead(ms: Message[]): Message[] {
  if (unread.oldUnreadsMissing) return ms;
  return ms.map((m) => {
    const read = m.flags.includes('read');
    if (read && unread.has(m.id)) return { ...m, flags: m.flags.filter((f) => f !== 'read') };
    if (!read && !unread.has(m.id)) return { ...m, flags: [...m.flags, 'read'] };
    return m;
  });
}

export class MessageListData {
  readonly ids = signal<number[]>([]);
  readonly foundOldest = signal(false);
  readonly foundNewest = signal(false);
  readonly loading = signal<'' | 'initial' | 'older' | 'newer'>('');
  readonly error = signal('');
  /** Message to show and select after the first fetch. */
  readonly anchorId = signal<number | undefined>(undefined);
  /**
   * Bumped when a held message's channel or topic changed: the view regroups its rows.
   * The view reads the messages without subscribing to each (a row does that itself),
   * so that marking 300 rows read re-renders 300 rows, not the list 300 times.
   */
  readonly revision = signal(0);
  /** Set by the view: whether messages shown now are read at once (bottom in view, focused). */
  readOnAppend: (() => boolean) | undefined;
  /** Set by the view: marks messages read (reading.ts), kept out of this module's imports. */
  markRead: ((ids: number[]) => void) | undefined;
  /** Set by the view: renders a held message if it is not, and scrolls it into view. */
  reveal: ((id: number) => void) | undefined;
  private readonly listener: ListListener;
  private disposed = false;
  /** New messages of this narrow not shown yet: appended once per frame. */
  private pending: number[] = [];
  /** New messages of this narrow that arrived while the first page was on its way. */
  private early: number[] = [];
  /** A prefetched first page is shown and the messages after it are being fetched. */
  private catchingUp = false;
  private readonly flush = () => this.appendPending();

  constructor(readonly narrow: Narrow) {
    this.listener = {
      added: (ms) => this.onAdded(ms),
      removed: (ids) => this.onRemoved(ids),
      changed: (ids, moved) => this.onChanged(ids, moved),
      held: () => [...this.ids.peek(), ...this.pending, ...this.early],
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
    const res = await fetchPage(this.narrow, anchor, before, after, includeAnchor);
    store(res);
    return res;
  }

  async loadInitial(): Promise<void> {
    this.loading.value = 'initial';
    const anchor = initialAnchor(this.narrow);
    try {
      const early = takePrefetch(this.narrow, anchor);
      let res: FetchResult | undefined;
      if (early !== undefined) {
        try {
          res = await early;
          res = { ...res, messages: reconcileRead(res.messages) };
          store(res);
        } catch {
          res = undefined;
        }
      }
      const prefetchedPage = res !== undefined;
      res ??= await this.fetch(anchor, 50, 50);
      if (this.disposed) return;
      // A prefetched page that reached the newest message may have been read before
      // the event queue began: messages sent in between are in neither. /register's
      // max_message_id says whether any newer message exists; if so, the list asks
      // for the messages after its last one and shows the page meanwhile.
      const last = res.messages.at(-1)?.id ?? 0;
      const maxId = Number(realm.peek().max_message_id ?? -1);
      const catchUp = prefetchedPage && res.found_newest && maxId > last;
      this.catchingUp = catchUp;
      this.show(res, !catchUp);
      if (catchUp) await this.catchUp(last);
      this.catchingUp = false;
    } catch (e) {
      this.error.value = e instanceof Error ? e.message : String(e);
    } finally {
      this.catchingUp = false;
      this.loading.value = '';
    }
  }

  /** The first page, and the new messages heard of meanwhile when it reached the newest. */
  private show(res: FetchResult, complete: boolean): void {
    // Messages that arrived meanwhile are newer than the page when it reached the
    // newest message; otherwise paging down will fetch them.
    const early = res.found_newest && complete ? this.early : [];
    if (complete) this.early = [];
    const ids = extendWindow(res.messages.map((m) => m.id), early, 'after').ids;
    batch(() => {
      this.ids.value = ids;
      this.foundOldest.value = res.found_oldest;
      this.foundNewest.value = res.found_newest && complete;
      this.anchorId.value = res.found_anchor ? res.anchor : res.messages.at(-1)?.id;
      this.error.value = '';
      if (!complete) this.loading.value = 'newer';
    });
  }

  /** After a prefetched page: the messages after `last`, merged with those events brought. */
  private async catchUp(last: number): Promise<void> {
    const res = await this.fetch(last === 0 ? 'oldest' : last, 0, PAGE, last === 0);
    if (this.disposed) return;
    const add = [...res.messages.map((m) => m.id), ...(res.found_newest ? this.early : [])];
    this.early = [];
    const next = extendWindow(this.ids.peek(), add, 'after');
    batch(() => {
      this.ids.value = next.ids;
      this.foundNewest.value = res.found_newest;
      if (next.trimmedBefore) this.foundOldest.value = false;
    });
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

  private onAdded(ms: Message[]): void {
    // While the first page (and its catching up) is on its way, new messages wait.
    const loadingFirst = this.loading.peek() === 'initial' || this.catchingUp;
    if (!loadingFirst && !this.foundNewest.peek()) return;
    const mine = ms.filter((m) => matches(this.narrow, m, me.value) === true).map((m) => m.id);
    if (mine.length === 0) return;
    if (loadingFirst) {
      this.early.push(...mine);
      return;
    }
    this.pending.push(...mine);
    // Beyond a window's worth, the oldest pending ones would be trimmed anyway.
    if (this.pending.length > MAX_WINDOW) this.pending = this.pending.slice(-MAX_WINDOW);
    onNextFrame(this.flush);
  }

  /** Shows the messages that arrived since the last frame, in one change. */
  private appendPending(): void {
    if (this.disposed || this.pending.length === 0) return;
    const add = this.pending;
    this.pending = [];
    const next = extendWindow(this.ids.peek(), add, 'after');
    batch(() => {
      // Shown at the bottom of a focused view that marks read: read before the first
      // render, so each new row renders once.
      if (this.readOnAppend?.() === true) this.markRead?.(add);
      this.ids.value = next.ids;
      if (next.trimmedBefore) this.foundOldest.value = false;
    });
    if (next.trimmedBefore) pruneMessages();
  }

  private onRemoved(ids: number[]): void {
    const gone = new Set(ids);
    this.pending = this.pending.filter((id) => !gone.has(id));
    this.early = this.early.filter((id) => !gone.has(id));
    if (this.ids.peek().some((id) => gone.has(id))) this.ids.value = this.ids.peek().filter((id) => !gone.has(id));
  }

  /** Messages moved away from a channel/topic narrow leave it. */
  private onChanged(ids: number[], moved: boolean): void {
    if (!moved) return;
    const mine = new Set(this.ids.peek());
    if (ids.some((id) => mine.has(id))) this.revision.value++;
    const leaving = ids.filter((id) => {
      const m = messages.get(id)?.value;
      return mine.has(id) && m !== undefined && matches(this.narrow, m, me.value) === false &&
        !this.narrow.some((t) => t.operator === 'is' && (t.operand === 'starred' || t.operand === 'unread'));
    });
    if (leaving.length > 0) this.onRemoved(leaving);
  }
}
