import { signal, useSignalEffect } from '@preact/signals';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { composeContent, composeOpen, composeTarget, openCompose } from '../compose';
import { conversationKey } from '../events';
import { MessageListData } from '../msglist';
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

const RecipientBar = memo(RecipientBarView);

function RecipientBarView({ m }: { m: Message }) {
  if (m.type === 'stream') {
    const sub = subs.value.get(m.stream_id ?? 0);
    const chHash = narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }], slugContext);
    const topicHash = narrowToHash([{ operator: 'channel', operand: String(m.stream_id) }, { operator: 'topic', operand: m.subject }], slugContext);
    const color = sub?.color ?? '#c2c2c2';
    const resolved = m.subject.startsWith(RESOLVED);
    const muted = userTopics.value.get(topicKey(m.stream_id ?? 0, m.subject)) === 1;
    return (
      <div class="recipient_row stream">
        <div class="message_header" ref={(el) => el?.style.setProperty('--channel-color', color)}>
          <a class="stream_label" href={chHash}>#{channelName(m.stream_id)}</a>
          <span class="topic-separator" aria-hidden="true">›</span>
          <a class={`stream_topic${m.subject === '' ? ' empty-topic' : ''}`} href={topicHash}>{topicDisplay(m.subject)}</a>
          <button type="button" class="icon-button resolve-topic" title={muted ? 'Unmute topic' : 'Mute topic'} aria-pressed={muted}
            aria-label={muted ? `Unmute topic ${m.subject}` : `Mute topic ${m.subject}`}
            onClick={() => void post('user_topics', { stream_id: m.stream_id, topic: m.subject, visibility_policy: muted ? 0 : 1 }).catch((e: unknown) => alert(e instanceof Error ? e.message : String(e)))}>
            <Icon name="mute" />
          </button>
          {canResolve() && (
            <button type="button" class="icon-button resolve-topic" title={resolved ? 'Mark as unresolved' : 'Mark as resolved'}
              aria-label={resolved ? `Mark topic ${m.subject} as unresolved` : `Mark topic ${m.subject} as resolved`}
              onClick={() => void patch(`messages/${m.id}`, { topic: resolved ? m.subject.slice(RESOLVED.length) : `${RESOLVED}${m.subject}`, propagate_mode: 'change_all' }).catch((e: unknown) => alert(e instanceof Error ? e.message : String(e)))}>
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
    <div class="recipient_row private">
      <div class="message_header private_message_header">
        <a class="stream_label" href={narrowToHash([{ operator: 'dm', operand: ids.join(',') }], slugContext)}>
          You and {names}
        </a>
        <span class="recipient_row_date">{formatDate(m.timestamp)}</span>
      </div>
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

/** Default compose target for a narrow. */
export function targetFor(narrow: Narrow, m?: Message) {
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
  const placed = useRef(false);

  useEffect(() => {
    if (composeOpen.peek() && composeContent.peek().trim() === '') composeOpen.value = false;
  }, [key]);

  useEffect(() => {
    currentList.value = data;
    placed.current = false;
    void data.loadInitial();
    return () => data.dispose();
  }, [data]);

  const ids = data.ids.value;
  const anchorId = data.anchorId.value;

  useLayoutEffect(() => {
    const el = scroller.current;
    if (el === null || ids.length === 0) return;
    if (!placed.current && anchorId !== undefined) {
      placed.current = true;
      selectedId.value = anchorId;
      const row = el.querySelector<HTMLElement>(`[data-message-id="${anchorId}"]`);
      if (row !== null) {
        const isLast = anchorId === ids.at(-1);
        el.scrollTop = isLast ? el.scrollHeight : row.offsetTop - el.clientHeight / 3;
        atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      }
      return;
    }
    if (atBottom.current && data.foundNewest.peek()) {
      el.scrollTop = el.scrollHeight;
      return;
    }
    const a = anchor.current;
    if (a !== undefined) {
      const row = el.querySelector<HTMLElement>(`[data-message-id="${a.id}"]`);
      if (row !== null) el.scrollTop = row.offsetTop - a.offset;
    }
  }, [ids, anchorId, data]);

  // Read marking, as Zulip's web app does: when the newest message is loaded and the
  // bottom of the list is on screen in a focused window, every message of the list
  // is read; otherwise the unread rows seen on screen are.
  const readAllIfAtBottom = (): boolean => {
    const el = scroller.current;
    if (el === null || !data.marksRead || !data.foundNewest.peek() || !viewFocused()) return false;
    if (el.scrollHeight - el.scrollTop - el.clientHeight > 2) return false;
    markRead(data.ids.peek());
    return true;
  };
  data.markRead = markRead;
  data.readOnAppend = () => atBottom.current && data.marksRead && viewFocused();
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
    atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
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
    if (atBottom.current) readAllIfAtBottom();
    if (el.scrollTop < 400) void data.loadOlder();
    if (el.scrollHeight - el.scrollTop - el.clientHeight < 400) void data.loadNewer();
  };

  const rows = [];
  const selected = selectedId.value;
  let prev: Message | undefined;
  // Each row subscribes to its own message; the list regroups on the list's revision.
  void data.revision.value;
  for (const id of ids) {
    const m = messages.get(id)?.peek();
    if (m === undefined) continue;
    const g = groupOf(m);
    const pg = prev === undefined ? undefined : groupOf(prev);
    const newConv = pg === undefined || pg.conv !== g.conv || pg.day !== g.day;
    if (newConv) rows.push(<RecipientBar key={`bar-${id}`} m={m} />);
    const showSender = newConv || prev?.sender_id !== m.sender_id || m.timestamp - (prev?.timestamp ?? 0) > 600;
    rows.push(<MessageRow key={id} id={id} showSender={showSender} selected={selected === id} onSelect={selectMessage} />);
    prev = m;
  }
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
      <div class="message_list" ref={scroller} onScroll={onScroll} role="region" aria-busy={loading !== ''} aria-label={`Messages: ${title}`} tabIndex={-1}>
        {!data.foundOldest.value && ids.length > 0 && <p class="list-edge">{loading === 'older' ? 'Loading older messages…' : ' '}</p>}
        {data.foundOldest.value && ids.length > 0 && narrow.length > 0 && <p class="list-edge muted">Beginning of this view</p>}
        {rows}
        {loading === 'initial' && <p class="list-edge" role="status">Loading…</p>}
        {empty && (
          <div class="empty-narrow">
            <p>There are no messages here yet.</p>
            <button type="button" class="primary" onClick={() => openCompose(targetFor(narrow))}>Start a conversation</button>
          </div>
        )}
        {data.error.value && <p class="error" role="alert">{data.error.value}</p>}
        {!data.foundNewest.value && ids.length > 0 && <p class="list-edge">{loading === 'newer' ? 'Loading newer messages…' : ' '}</p>}
      </div>
      <TypingNotice narrow={narrow} />
      <Compose narrow={narrow} />
    </section>
  );
}
