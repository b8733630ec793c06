import { useEffect, useState } from 'preact/hooks';
import { get } from '../api';
import { Icon } from './Icon';
import { narrowToHash, type Narrow } from '../narrow';
import { baseRoute, route } from '../route';
import { focusInbox } from './InboxView';
import {
  me, noteTopics, presenceStatus, recentDms, slugContext, subs, topicDisplay, topics, unread, unreadVersion, track, userName, userTopics, topicKey,
} from '../store';

function Count({ n, label }: { n: number; label: string }) {
  if (n === 0) return null;
  return <span class="unread_count" aria-label={`${n} unread ${label}`}>{n}</span>;
}

function isCurrent(narrow: Narrow, r = baseRoute.value): boolean {
  return r.view === 'narrow' && JSON.stringify(r.narrow) === JSON.stringify(narrow);
}

function Topics({ streamId }: { streamId: number }) {
  useEffect(() => {
    void get<{ topics: { name: string; max_id: number }[] }>(`users/me/${streamId}/topics`, { allow_empty_topic_name: true })
      .then((r) => noteTopics(r.topics.map((t) => [streamId, t.name, t.max_id] as const)))
      .catch(() => undefined);
  }, [streamId]);
  track(unreadVersion);
  const [all, setAll] = useState(false);
  const list = [...(topics.value.get(streamId)?.entries() ?? [])].sort((a, b) => b[1] - a[1]);
  const shown = all ? list : list.slice(0, 8);
  return (
    <ul class="topic-list">
      {shown.map(([name]) => {
        const narrow = [{ operator: 'channel', operand: String(streamId) }, { operator: 'topic', operand: name }];
        const n = unread.topicCount(streamId, name);
        const muted = userTopics.value.get(topicKey(streamId, name)) === 1;
        return (
          <li key={name} class={`${isCurrent(narrow) ? 'active' : ''}${muted ? ' muted-topic' : ''}`}>
            <a href={narrowToHash(narrow, slugContext)} aria-current={isCurrent(narrow) ? 'page' : undefined}>
              <span class={`topic-name${name === '' ? ' empty-topic' : ''}`}>{topicDisplay(name)}</span>
              <Count n={n} label="messages" />
            </a>
          </li>
        );
      })}
      {list.length > 8 && <li><button type="button" class="link" onClick={() => setAll(!all)}>{all ? 'Show fewer topics' : 'Show all topics'}</button></li>}
    </ul>
  );
}

export function LeftSidebar() {
  track(unreadVersion);
  const r = baseRoute.value;
  const currentChannel = r.view === 'narrow' ? r.narrow.find((t) => t.operator === 'channel')?.operand : undefined;
  const [filter, setFilter] = useState('');
  const list = [...subs.value.values()]
    .filter((s) => s.name.toLowerCase().includes(filter.toLowerCase()))
    .sort((a, b) => Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name));
  const skipMuted = (id: number) => subs.value.get(id)?.is_muted === true;
  const views: { label: string; hash: string; narrow?: Narrow; view?: 'recent' | 'inbox'; count: number }[] = [
    { label: 'Inbox', hash: '#inbox', view: 'inbox', count: unread.total(skipMuted) },
    { label: 'Combined feed', hash: '#feed', narrow: [], count: unread.total(skipMuted) },
    { label: 'Recent conversations', hash: '#recent', view: 'recent', count: 0 },
    { label: 'Mentions', hash: '#narrow/is/mentioned', narrow: [{ operator: 'is', operand: 'mentioned' }], count: unread.mentionCount() },
    { label: 'Starred messages', hash: '#narrow/is/starred', narrow: [{ operator: 'is', operand: 'starred' }], count: 0 },
    { label: 'Direct messages', hash: '#narrow/is/dm', narrow: [{ operator: 'is', operand: 'dm' }], count: unread.dmCount() },
  ];
  const dms = [...recentDms.value.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12);
  return (
    <nav class="left-sidebar" aria-label="Views, channels and direct messages">
      <ul class="views">
        {views.map((v) => {
          const active = v.narrow === undefined ? r.view === v.view : isCurrent(v.narrow);
          return (
            <li key={v.hash} class={active ? 'active' : ''}>
              <a href={v.hash} aria-current={active ? 'page' : undefined}
                onClick={v.view === 'inbox' ? (e) => {
                  // The Inbox open already: its first row takes the focus (no hash change to act on).
                  if (route.peek().view !== 'inbox' || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
                  e.preventDefault();
                  focusInbox();
                } : undefined}>
                <span>{v.label}</span><Count n={v.count} label="messages" />
              </a>
            </li>
          );
        })}
      </ul>
      <div class="sidebar-heading">
        <h2 id="channels-heading">Channels</h2>
        <a class="icon-button" href="#channels/all" title="Browse channels" aria-label="Browse and create channels"><Icon name="plus" /></a>
      </div>
      <input type="search" class="sidebar-filter" placeholder="Filter channels" aria-label="Filter channels" value={filter}
        onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
      <ul class="channel-list" aria-labelledby="channels-heading">
        {list.map((s) => {
          const narrow = [{ operator: 'channel', operand: String(s.stream_id) }];
          const active = currentChannel === String(s.stream_id);
          return (
            <li key={s.stream_id} class={`${active ? 'active' : ''}${s.is_muted ? ' muted-channel' : ''}`}>
              <a href={narrowToHash(narrow, slugContext)} aria-current={isCurrent(narrow) ? 'page' : undefined}>
                <span class="channel-swatch" aria-hidden="true" ref={(el) => el?.style.setProperty('background-color', s.color)} />
                {s.invite_only && <span class="channel-lock" role="img" aria-label="Private"><Icon name="lock" /></span>}
                <span class="channel-name">{s.name}</span>
                {s.pin_to_top && <span class="sr-only">(pinned)</span>}
                <Count n={unread.streamCount(s.stream_id, (t) => userTopics.value.get(topicKey(s.stream_id, t)) === 1)} label="messages" />
              </a>
              {active && <Topics streamId={s.stream_id} />}
            </li>
          );
        })}
      </ul>
      <div class="sidebar-heading"><h2 id="dms-heading">Direct messages</h2></div>
      <ul class="dm-list" aria-labelledby="dms-heading">
        {dms.map(([key]) => {
          const ids = key.split(',').map(Number);
          const narrow = [{ operator: 'dm', operand: key }];
          const status = ids.length === 1 ? presenceStatus(ids[0] ?? 0) : undefined;
          const label = ids.map((id) => (id === me.value ? `${userName(id)} (you)` : userName(id))).join(', ');
          return (
            <li key={key} class={isCurrent(narrow) ? 'active' : ''}>
              <a href={narrowToHash(narrow, slugContext)} aria-current={isCurrent(narrow) ? 'page' : undefined}>
                {status !== undefined ? <span class={`user-circle user-circle-${status}`} title={status} aria-label={status} role="img" /> : <span class="user-circle group" aria-hidden="true" />}
                <span class="dm-name">{label}</span>
                <Count n={unread.dmCount(key)} label="messages" />
              </a>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
