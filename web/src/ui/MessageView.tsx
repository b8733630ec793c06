import { signal, useSignalEffect } from '@preact/signals';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { composeContent, composeOpen, composeTarget, openCompose, targetFor } from '../compose';
import { conversationKey } from '../events';
import { FOLLOW_ROWS, followRows, growSpan, MessageListData, renderSpan, type RenderRange } from '../msglist';
import { dmParticipants, narrowToHash, type Narrow } from '../narrow';
import { patch, post } from '../api';
import { canResolve } from '../perm';
import { markRead } from '../reading';
import { Icon } from './Icon';
import { generation } from '../server';
import { channelName, me, messages, slugContext, streams, subs, topicDisplay, topicKey, typing, userName, userTopics } from '../store';
import type { Message } from '../types';
import { dmKey } from '../unread';
import { Compose } from './Compose';
import { MessageRow } from './Message';
import { SafeHtml } from './SafeHtml';
import { formatDate, memo } from './util';
import { route } from '../route';

const RESOLVED = '✔ ';

export const selectedId = signal<number | undefined>(undefined);
export const currentList = signal<MessageListData | undefined>(undefined);

export function narrowTitle(narrow: Narrow): string {
  if (narrow.length === 0) return 'Combined feed';
  const ch = narrow.find((t) => t.operator === 'channel' && !t.negated);
  const topic = narrow.find((t) => t.operator === 'topic' && !t.negated);
  const dm = narrow.find((t) => t.operator === 'dm' && !t.negated);
  if (narrow.some((t) => t.operator === 'search')) return 'Search results';
  if (ch !== undefined && topic !== undefined) return `#${channelName(Number(ch.operand))} > ${topicDisplay(topic.operand)}`;
  if (ch !== undefined && narrow.length === 1) return `#${channelName(Number(ch.operand))}`;
  if (dm !== undefined && narrow.length === 1) return dm.operand.split(',').map((id) => userName(Number(id))).join(', ');
  if (narrow.length === 1) {
    const t = narrow[0];
    if (t?.operator === 'is') {
      const names: Record<string, string> = { starred: 'Starred messages', mentioned: 'Mentions', dm: 'Direct message feed', resolved: 'Resolved topics', unread: 'Unread messages' };
      const name = names[t.operand];
      if (name !== undefined && !t.negated) return name;
    }
    if (t?.operator === 'sender') return t.operand === String(me.value) ? 'Messages sent by you' : `Messages sent by ${userName(Number(t.operand))}`;
  }
  return 'Search results';
}

/**
 * A bar shows its block's conversation and day, not the block's first message: rows
 * trimmed at the top of a block (every frame under a flood) leave its bar as it is.
 */
export function sameBar(a: { m: Message; docked?: boolean }, b: { m: Message; docked?: boolean }): boolean {
  return a.docked === b.docked && (a.m === b.m || (
    a.m.type === b.m.type && a.m.stream_id === b.m.stream_id && a.m.subject === b.m.subject &&
    groupOf(a.m).conv === groupOf(b.m).conv && groupOf(a.m).day === groupOf(b.m).day));
}
const RecipientBar = memo(RecipientBarView, sameBar);

/** The message a bar's action applies to: its block's first row now, else the one it was drawn for. */
function barMessageId(e: Event, m: Message): number {
  const row = (e.currentTarget as HTMLElement).closest('.recipient_block')?.querySelector<HTMLElement>('.message_row');
  return Number(row?.dataset.messageId ?? '') || m.id;
}

/**
 * A conversation's bar: in the list at the head of its block, or `docked` above the
 * list while the block's own bar has scrolled out of it (the dock is out of the tab
 * order and hidden from assistive technology: the bar in the list is the one to use).
 */
function RecipientBarView({ m, docked = false }: { m: Message; docked?: boolean }) {
  const tab = docked ? -1 : undefined;
  const row = docked ? 'recipient-dock-row' : 'recipient_row';
  if (m.type === 'stream') {
    const sub = subs.value.get(m.stream_id ?? 0);
    const chHash = narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }], slugContext);
    const topicHash = narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }, { operator: 'topic', operand: m.subject }], slugContext);
    const color = sub?.color ?? '#c2c2c2';
    const resolved = m.subject.startsWith(RESOLVED);
    const muted = userTopics.value.get(topicKey(m.stream_id ?? 0, m.subject)) === 1;
    return (
      <div class={`${row} stream`}>
        <div class="message_header" ref={(el) => el?.style.setProperty('--channel-color', color)}>
          <a class="stream_label" href={chHash} tabIndex={tab}>#{channelName(m.stream_id)}</a>
          <span class="topic-separator" aria-hidden="true">›</span>
          <a class={`stream_topic${m.subject === '' ? ' empty-topic' : ''}`} href={topicHash} tabIndex={tab}>{topicDisplay(m.subject)}</a>
          <button type="button" class="icon-button resolve-topic" tabIndex={tab} title={muted ? 'Unmute topic' : 'Mute topic'} aria-pressed={muted}
            aria-label={muted ? `Unmute topic ${m.subject}` : `Mute topic ${m.subject}`}
            onClick={() => void post('user_topics', { stream_id: m.stream_id, topic: m.subject, visibility_policy: muted ? 0 : 1 }).catch((e: unknown) => alert(e instanceof Error ? e.message : String(e)))}>
            <Icon name="mute" />
          </button>
          {canResolve() && (
            <button type="button" class="icon-button resolve-topic" tabIndex={tab} title={resolved ? 'Mark as unresolved' : 'Mark as resolved'}
              aria-label={resolved ? `Mark topic ${m.subject} as unresolved` : `Mark topic ${m.subject} as resolved`}
              onClick={(e) => void patch(`messages/${barMessageId(e, m)}`, { topic: resolved ? m.subject.slice(RESOLVED.length) : `${RESOLVED}${m.subject}`, propagate_mode: 'change_all' }).catch((e: unknown) => alert(e instanceof Error ? e.message : String(e)))}>
              <Icon name="check" />
            </button>
          )}
          <span class="recipient_row_date">{formatDate(m.timestamp)}</span>
        </div>
      </div>
    );
  }
  const ids = dmParticipants(m, me.value);
  const names = ids.map((id) => (id === me.value ? userName(id) : userName(id))).join(', ');
  return (
    <div class={`${row} private`}>
      <div class="message_header private_message_header">
        <a class="stream_label" href={narrowToHash([{ operator: 'dm', operand: ids.join(',') }], slugContext)} tabIndex={tab}>
          You and {names}
        </a>
        <span class="recipient_row_date">{formatDate(m.timestamp)}</span>
      </div>
    </div>
  );
}

/** The docked bar: the conversation of the block at the top of the list, its own bar scrolled away. */
type Dock = { id: number | undefined; gutter: number };
function RecipientDock({ id, gutter }: Dock) {
  const m = id === undefined ? undefined : messages.get(id)?.value;
  return (
    <div class="recipient-dock" aria-hidden="true" ref={(el) => el?.style.setProperty('--list-gutter', `${gutter}px`)}>
      {m !== undefined && <RecipientBar m={m} docked />}
    </div>
  );
}

function TypingNotice({ narrow }: { narrow: Narrow }) {
  const ch = narrow.find((t) => t.operator === 'channel');
  const topic = narrow.find((t) => t.operator === 'topic');
  const dm = narrow.find((t) => t.operator === 'dm');
  let key: string | undefined;
  if (ch && topic) key = `stream:${ch.operand}:${topic.operand.toLowerCase()}`;
  else if (dm) key = `dm:${dmKey(dm.operand.split(',').map(Number).filter((id) => id !== me.value))}`;
  const now = Date.now();
  const who = key === undefined ? [] : [...(typing.value.get(key)?.entries() ?? [])].filter(([, exp]) => exp > now).map(([id]) => userName(id));
  return (
    <div class="typing_notifications" aria-live="polite">
      {who.length > 0 && <span>{who.length <= 3 ? `${who.join(', ')} ${who.length === 1 ? 'is' : 'are'} typing…` : 'Several people are typing…'}</span>}
    </div>
  );
}

const selectMessage = (id: number): void => {
  selectedId.value = id;
};

/** What grouping rows needs of a message, computed once per message object. */
const grouping = new WeakMap<Message, { conv: string; day: string }>();
function groupOf(m: Message): { conv: string; day: string } {
  let g = grouping.get(m);
  if (g === undefined) {
    g = { conv: conversationKey(m), day: new Date(m.timestamp * 1000).toDateString() };
    grouping.set(m, g);
  }
  return g;
}

/** Zulip's rule: the view can mark read now (focused, visible, nothing over it). */
function viewFocused(): boolean {
  return document.visibilityState === 'visible' && document.hasFocus() && route.peek().view !== 'overlay';
}

export function MessageView({ narrow }: { narrow: Narrow }) {
  const key = JSON.stringify(narrow);
  const gen = generation.value;
  const data = useMemo(() => new MessageListData(narrow), [key, gen]);
  const scroller = useRef<HTMLDivElement>(null);
  const anchor = useRef<{ id: number; offset: number } | undefined>(undefined);
  const atBottom = useRef(false);
  // The bottom of the list on screen to the pixel (the last scroll event's reading).
  const atEnd = useRef(false);
  // The rows overflow the viewport: from then on the bottom anchor (CSS scroll
  // anchoring, `.list-bottom`) keeps a list at its end as rows come and go, with no
  // read of the layout in the frame. A list that does not fill its viewport has no
  // scroll offset to anchor: it is scrolled down by hand until it overflows.
  const overflowing = useRef(false);
  const placed = useRef(false);
  // Only the rows near the viewport are rendered (`renderSpan`): the newest ones while
  // the list follows them, else a span the reader's scrolling moves. The rows' DOM
  // stays small however many messages are held, and a frame of new messages diffs a
  // few dozen rows.
  const range = useRef<RenderRange>(undefined);
  const span = useRef<[number, number]>([0, 0]);
  const revealing = useRef<number | undefined>(undefined);
  const [, setSpanVersion] = useState(0);
  const rerender = () => setSpanVersion((v) => v + 1);
  // The first row of the block whose bar is docked above the list (none while the top
  // block's own bar is wholly in the list). The bars do not stick inside the list:
  // one stuck there would cover the top rows' sender, time and reactions (WCAG 2.2
  // target size, 2.4.11 focus not obscured); rows that scroll away are clipped by the
  // list's edge instead, under the dock.
  const [dock, setDock] = useState<Dock>({ id: undefined, gutter: 0 });
  const docked = useRef<{ block: Element | undefined; gutter: number }>({ block: undefined, gutter: 0 });
  const updateDock = (el: HTMLElement): void => {
    const top = el.getBoundingClientRect().top;
    let block: HTMLElement | undefined;
    for (const b of el.querySelectorAll<HTMLElement>('.recipient_block')) {
      const r = b.getBoundingClientRect();
      if (r.bottom <= top + 0.5) continue;
      if (r.top < top - 0.5) block = b;
      break;
    }
    // The list's scrollbar, if it takes room: the docked bar keeps the list's width.
    const gutter = el.offsetWidth - el.clientWidth;
    // A block keeps its element as rows come and go at its top: no render then.
    if (block === docked.current.block && gutter === docked.current.gutter) return;
    docked.current = { block, gutter };
    const id = Number(block?.querySelector<HTMLElement>('.message_row')?.dataset.messageId ?? '') || undefined;
    setDock({ id, gutter });
  };

  useEffect(() => {
    if (composeOpen.peek() && composeContent.peek().trim() === '') composeOpen.value = false;
  }, [key]);

  useEffect(() => {
    currentList.value = data;
    placed.current = false;
    range.current = undefined;
    docked.current = { block: undefined, gutter: 0 };
    setDock({ id: undefined, gutter: 0 });
    void data.loadInitial();
    return () => data.dispose();
  }, [data]);

  const ids = data.ids.value;
  const anchorId = data.anchorId.value;
  const [start, end] = renderSpan(ids, range.current, placed.current ? undefined : anchorId);
  span.current = [start, end];

  const following = (): boolean => range.current !== undefined && 'follow' in range.current;
  /** The rendered span grown a step up or down; at the held messages' end, the next page. */
  const grow = (side: 'up' | 'down'): void => {
    const all = data.ids.peek();
    const [s0, e0] = span.current;
    const next = growSpan(all, span.current, side, following());
    if (next !== undefined) {
      range.current = next;
      span.current = renderSpan(all, next);
      rerender();
      return;
    }
    if (side === 'up' ? s0 > 0 : e0 < all.length) return;
    // The new page's rows are rendered once it is in, so the reader need not scroll again.
    const load = side === 'up' ? data.loadOlder() : data.loadNewer();
    void load.then(() => {
      const after = growSpan(data.ids.peek(), span.current, side, following());
      if (after === undefined) return;
      range.current = after;
      rerender();
    });
  };
  data.reveal = (id: number) => {
    const all = data.ids.peek();
    const i = all.indexOf(id);
    if (i < 0) return;
    const [s, e] = span.current;
    if (i < s || i >= e) {
      const lo = Math.max(0, i - 20);
      const hi = Math.min(all.length, lo + 60);
      range.current = { lo: all[lo] ?? id, hi: all[hi - 1] ?? id };
      revealing.current = id;
      rerender();
      return;
    }
    scroller.current?.querySelector(`[data-message-id="${id}"]`)?.scrollIntoView({ block: 'nearest' });
  };

  useLayoutEffect(() => {
    const el = scroller.current;
    if (el === null || ids.length === 0) return;
    if (!placed.current && anchorId !== undefined) {
      placed.current = true;
      selectedId.value = anchorId;
      const isLast = anchorId >= (ids.at(-1) ?? 0);
      range.current = isLast ? { follow: FOLLOW_ROWS } : { lo: ids[start] ?? 0, hi: ids[end - 1] ?? 0 };
      const row = el.querySelector<HTMLElement>(`[data-message-id="${anchorId}"]`);
      if (row !== null) {
        el.scrollTop = isLast ? el.scrollHeight : row.offsetTop - el.clientHeight / 3;
        const below = el.scrollHeight - el.scrollTop - el.clientHeight;
        atBottom.current = below < 40;
        atEnd.current = below <= 2;
        overflowing.current = el.scrollHeight > el.clientHeight + 1;
      }
      return;
    }
    const shown = revealing.current;
    if (shown !== undefined) {
      revealing.current = undefined;
      el.querySelector(`[data-message-id="${shown}"]`)?.scrollIntoView({ block: 'nearest' });
      return;
    }
    if (atBottom.current && data.foundNewest.peek() && end === ids.length) {
      // Rows added or trimmed at a list kept at its end: the browser's scroll anchoring
      // holds the bottom anchor (hence the end) in place when the rows overflow; no
      // read here, which would lay the new rows out in the middle of the frame. A list
      // a few pixels short of its end (the anchor below the fold) is scrolled there once.
      if (overflowing.current && following() && atEnd.current) return;
      // One read of the scroll metrics, then the write.
      const height = el.scrollHeight;
      const viewport = el.clientHeight;
      el.scrollTop = height;
      overflowing.current = height > viewport + 1;
      atEnd.current = true;
      // Following: from now on, only the rows that fill the viewport (and a margin).
      if (following() && end > start) range.current = { follow: followRows(viewport, height / (end - start)) };
      return;
    }
    const a = anchor.current;
    if (a !== undefined) {
      const row = el.querySelector<HTMLElement>(`[data-message-id="${a.id}"]`);
      if (row !== null) el.scrollTop = row.offsetTop - a.offset;
    }
  }, [ids, anchorId, data, start, end]);

  // Read marking, as Zulip's web app does: when the newest message is loaded and the
  // bottom of the list is on screen in a focused window, every message of the list
  // is read; otherwise the unread rows seen on screen are.
  const readAllIfAtBottom = (): boolean => {
    const el = scroller.current;
    if (el === null || !data.marksRead || !data.foundNewest.peek() || !viewFocused()) return false;
    if (span.current[1] < data.ids.peek().length) return false;
    // A list kept at its end by the bottom anchor stays there: the last scroll
    // event's reading holds, and a render reads no layout.
    const anchored = overflowing.current && following() && atBottom.current;
    if (anchored ? !atEnd.current : el.scrollHeight - el.scrollTop - el.clientHeight > 2) return false;
    markRead(data.ids.peek());
    return true;
  };
  data.markRead = markRead;
  data.readOnAppend = () => atBottom.current && following() && data.marksRead && viewFocused();
  const observed = useMemo(() => new Set<Element>(), [data]);
  const observer = useMemo(() => {
    if (typeof IntersectionObserver === 'undefined') return undefined;
    return new IntersectionObserver((entries) => {
      if (!data.marksRead || !viewFocused()) return;
      const seen = entries.filter((e) => e.isIntersecting).map((e) => Number((e.target as HTMLElement).dataset.messageId));
      markRead(seen);
    }, { threshold: 0.5 });
  }, [data]);
  useEffect(() => () => observer?.disconnect(), [observer]);
  // The viewport resized (compose opened or closed, the window): a list kept at its
  // end stays there; scroll anchoring only answers rows moving, not the box.
  useEffect(() => {
    const el = scroller.current;
    if (el === null || typeof ResizeObserver === 'undefined') return;
    const resized = new ResizeObserver(() => {
      if (!atBottom.current || !data.foundNewest.peek()) return;
      el.scrollTop = el.scrollHeight;
      overflowing.current = el.scrollHeight > el.clientHeight + 1;
    });
    resized.observe(el);
    return () => resized.disconnect();
  }, [data]);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el === null || observer === undefined) return;
    // Only rows not watched yet; rows gone from the list or read are let go.
    for (const row of observed) {
      if (!row.isConnected || !row.classList.contains('unread')) {
        observer.unobserve(row);
        observed.delete(row);
      }
    }
    if (readAllIfAtBottom()) return;
    for (const row of el.querySelectorAll('.message_row.unread')) {
      if (observed.has(row)) continue;
      observed.add(row);
      observer.observe(row);
    }
  });
  useEffect(() => {
    const onFocus = () => {
      const el = scroller.current;
      if (el === null || !data.marksRead || readAllIfAtBottom()) return;
      const box = el.getBoundingClientRect();
      const visible = [...el.querySelectorAll<HTMLElement>('.message_row.unread')].filter((r) => {
        const b = r.getBoundingClientRect();
        return b.bottom > box.top && b.top < box.bottom;
      });
      markRead(visible.map((r) => Number(r.dataset.messageId)));
    };
    window.addEventListener('focus', onFocus);
    return () => window.removeEventListener('focus', onFocus);
  }, [data]);

  // Keep the compose target in step with the narrow while compose is closed.
  useEffect(() => {
    if (!composeOpen.peek()) composeTarget.value = targetFor(narrow);
  }, [key]);
  useSignalEffect(() => {
    if (!composeOpen.value) composeTarget.value = targetFor(JSON.parse(key) as Narrow);
  });

  const onScroll = () => {
    const el = scroller.current;
    if (el === null) return;
    // Read at a scroll event, before the frame's new rows: the layout is clean here.
    const height = el.scrollHeight;
    const viewport = el.clientHeight;
    const below = height - el.scrollTop - viewport;
    atBottom.current = below < 40;
    atEnd.current = below <= 2;
    overflowing.current = height > viewport + 1;
    // At the bottom of the newest messages the list keeps to the bottom: no row to
    // hold in place. Elsewhere the first row on screen stays put as rows come and go.
    if (!atBottom.current || !data.foundNewest.peek()) {
      for (const row of el.querySelectorAll<HTMLElement>('.message_row')) {
        if (row.offsetTop + row.offsetHeight > el.scrollTop) {
          anchor.current = { id: Number(row.dataset.messageId), offset: row.offsetTop - el.scrollTop };
          break;
        }
      }
    }
    const all = data.ids.peek();
    const [s, e] = span.current;
    if (atBottom.current && e === all.length && data.foundNewest.peek()) {
      // At the newest message: follow it (the span keeps to the last rows).
      if (!following()) range.current = { follow: Math.max(FOLLOW_ROWS, e - s) };
      else if (e > s) range.current = { follow: followRows(viewport, height / (e - s)) };
    } else if (following() || range.current === undefined) {
      range.current = { lo: all[s] ?? 0, hi: all[e - 1] ?? 0 };
    }
    updateDock(el);
    if (atBottom.current) readAllIfAtBottom();
    // A short span can be near both ends: it grows both ways. A list that keeps to
    // its newest message grows up only once the reader scrolls away from it.
    if (el.scrollTop < 600 && !(atBottom.current && following())) grow('up');
    if (el.scrollHeight - el.scrollTop - el.clientHeight < 600) grow('down');
  };

  // A conversation's run of rows is one block with its recipient bar, so that the bar
  // sticks at the top only while its own rows are on screen (the next block's bar
  // pushes it away, none piles up under another). A block is keyed by its conversation
  // and day (and how many blocks of the same came before it in the span), not by its
  // first message: rows trimmed at its top leave the block and the other rows in place.
  const blocks: { key: string; items: preact.JSX.Element[] }[] = [];
  const seenBlocks = new Map<string, number>();
  const selected = selectedId.value;
  let prev: Message | undefined;
  // Each row subscribes to its own message; the list regroups on the list's revision.
  void data.revision.value;
  for (let i = start; i < end; i++) {
    const id = ids[i] ?? 0;
    const m = messages.get(id)?.peek();
    if (m === undefined) continue;
    const g = groupOf(m);
    const pg = prev === undefined ? undefined : groupOf(prev);
    const newConv = pg === undefined || pg.conv !== g.conv || pg.day !== g.day;
    let block = blocks.at(-1);
    if (newConv || block === undefined) {
      const k = `${g.conv}|${g.day}`;
      const n = seenBlocks.get(k) ?? 0;
      seenBlocks.set(k, n + 1);
      block = { key: `${k}|${n}`, items: [<RecipientBar key="bar" m={m} />] };
      blocks.push(block);
    }
    const showSender = newConv || prev?.sender_id !== m.sender_id || m.timestamp - (prev?.timestamp ?? 0) > 600;
    block.items.push(<MessageRow key={id} id={id} showSender={showSender} selected={selected === id} onSelect={selectMessage} />);
    prev = m;
  }
  const rows = blocks.map((b) => <div class="recipient_block" key={b.key}>{b.items}</div>);
  const title = narrowTitle(narrow);
  const ch = narrow.length <= 2 ? narrow.find((t) => t.operator === 'channel') : undefined;
  const stream = ch === undefined ? undefined : streams.value.get(Number(ch.operand));
  const loading = data.loading.value;
  const empty = ids.length === 0 && loading === '' && data.error.value === '';

  return (
    <section class="message-view" aria-labelledby="narrow-title">
      <header class="narrow-header">
        <h1 id="narrow-title">{title}</h1>
        {stream !== undefined && <SafeHtml class="narrow-description rendered_markdown" html={stream.rendered_description} />}
      </header>
      {ids.length > 0 && <RecipientDock {...dock} />}
      <div class="message_list" ref={scroller} onScroll={onScroll} role="region" aria-busy={loading !== ''} aria-label={`Messages: ${title}`} tabIndex={-1}>
        {(!data.foundOldest.value || start > 0) && ids.length > 0 && <p class="list-edge">{loading === 'older' ? 'Loading older messages…' : ' '}</p>}
        {data.foundOldest.value && start === 0 && ids.length > 0 && narrow.length > 0 && <p class="list-edge muted">Beginning of this view</p>}
        {rows}
        {loading === 'initial' && <p class="list-edge" role="status">Loading…</p>}
        {empty && (
          <div class="empty-narrow">
            <p>There are no messages here yet.</p>
            <button type="button" class="primary" onClick={() => openCompose(targetFor(narrow))}>Start a conversation</button>
          </div>
        )}
        {data.error.value && <p class="error" role="alert">{data.error.value}</p>}
        {(!data.foundNewest.value || end < ids.length) && ids.length > 0 && <p class="list-edge">{loading === 'newer' ? 'Loading newer messages…' : ' '}</p>}
        <div class="list-bottom" aria-hidden="true" />
      </div>
      <TypingNotice narrow={narrow} />
      <Compose narrow={narrow} />
    </section>
  );
}
