// The Inbox (`#inbox`): every unread conversation at a glance, direct messages first,
// then each channel's unread topics, with counts. Groups fold; the arrow keys (or j
// and k) walk the rows, Enter opens a conversation or folds a group. A filter box at
// the top keeps the conversations whose channel, topic or participants' names hold
// its text; Esc clears it.

import { signal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { filterInbox, inboxModel, inboxRows, loadFolded, moveFocus, saveFolded } from '../inbox';
import { narrowToHash } from '../narrow';
import { me, slugContext, subs, topicDisplay, topicKey, track, unread, unreadVersion, userName, userTopics } from '../store';
import { Icon } from './Icon';

function storage(): Storage | undefined {
  try {
    return localStorage;
  } catch {
    return undefined;
  }
}

/** Groups folded: "dm", "channel:<id>"; kept across page loads in local storage. */
const collapsed = signal<ReadonlySet<string>>(loadFolded(storage()));

function toggle(group: string): void {
  const next = new Set(collapsed.value);
  if (!next.delete(group)) next.add(group);
  collapsed.value = next;
  saveFolded(storage(), next);
}

/** The filter box's text; kept while one is away from the Inbox. */
const query = signal('');

/** The Inbox's first row takes the focus (its link clicked while it is open). */
export function focusInbox(): void {
  const first = document.querySelector<HTMLElement>('.inbox-view [data-inbox-row]');
  first?.focus();
  first?.scrollIntoView({ block: 'nearest' });
}

function dmLabel(key: string): string {
  return key.split(',').map(Number).map((id) => (id === me.value ? `${userName(id)} (you)` : userName(id))).join(', ');
}

function Count({ n, mentioned }: { n: number; mentioned: boolean }) {
  return (
    <span class="inbox-counts">
      {mentioned && <span class="inbox-mention" title="You were mentioned" aria-label="mentioned">@</span>}
      <span class="unread_count" aria-label={`${n} unread`}>{n}</span>
    </span>
  );
}

function inField(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return el !== null && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

export function InboxView() {
  track(unreadVersion);
  const all = inboxModel(unread, subs.value, (s, t) => userTopics.value.get(topicKey(s, t)));
  const q = query.value;
  const model = filterInbox(all, q, dmLabel, topicDisplay);
  const filtering = q.trim() !== '';
  const folded = collapsed.value;
  const total = inboxRows(model, folded).length;
  const box = useRef<HTMLDivElement>(null);

  // The arrow keys and j/k move between the rows, from anywhere on the page but a
  // field or a dialog.
  // The first row takes the focus when the view opens, or once it has rows, and again
  // when the focused row went away (its messages read elsewhere).
  const focusPending = useRef(true);
  useEffect(() => {
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (!(focusPending.current || lost) || inField(document.activeElement)) return;
    const first = box.current?.querySelector<HTMLElement>('[data-inbox-row]');
    if (first === null || first === undefined) return;
    focusPending.current = false;
    first.focus();
  }, [total]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || inField(e.target)) return;
      if (document.querySelector('.dialog-backdrop, .popover') !== null) return;
      const delta = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1, Home: -1e9, End: 1e9 }[e.key];
      if (delta === undefined || box.current === null) return;
      const rows = [...box.current.querySelectorAll<HTMLElement>('[data-inbox-row]')];
      const at = rows.indexOf(document.activeElement as HTMLElement);
      const next = rows[moveFocus(rows.length, at, delta)];
      if (next === undefined) return;
      e.preventDefault();
      next.focus();
      next.scrollIntoView({ block: 'nearest' });
    };
    document.addEventListener('keydown', onKey, true);
    return () => document.removeEventListener('keydown', onKey, true);
  }, []);

  const dmOpen = !folded.has('dm');
  const dmTotal = model.dms.reduce((n, d) => n + d.count, 0);
  return (
    <section class="inbox-view" aria-labelledby="inbox-title">
      <header class="narrow-header"><h1 id="inbox-title">Inbox</h1></header>
      <div class="inbox-filter">
        <input type="search" class="inbox-search" placeholder="Filter conversations" aria-label="Filter conversations by channel, topic or name"
          value={q} aria-controls="inbox-rows"
          onInput={(e) => { query.value = (e.target as HTMLInputElement).value; }}
          onKeyDown={(e) => {
            if (e.key === 'Escape' && query.value !== '') {
              // Esc clears the filter; in an empty box it goes on to the page's own use.
              e.preventDefault();
              e.stopPropagation();
              query.value = '';
            } else if (e.key === 'ArrowDown' || e.key === 'Enter') {
              const first = box.current?.querySelector<HTMLElement>('[data-inbox-row]');
              if (first === null || first === undefined) return;
              e.preventDefault();
              first.focus();
            }
          }} />
      </div>
      <div class="inbox-scroll" id="inbox-rows" ref={box}>
        {total === 0 && !filtering && <p class="inbox-empty muted">There are no unread messages in your inbox.</p>}
        {total === 0 && filtering && <p class="inbox-empty muted" role="status">No unread conversation matches “{q.trim()}”.</p>}
        {model.dms.length > 0 && (
          <div class="inbox-group">
            <h2 class="inbox-header">
              <button type="button" class="inbox-toggle" data-inbox-row aria-expanded={dmOpen} onClick={() => toggle('dm')}>
                <span class={`inbox-chevron${dmOpen ? ' open' : ''}`} aria-hidden="true"><Icon name="chevron" /></span>
                <span class="inbox-name">Direct messages</span>
                <Count n={dmTotal} mentioned={model.dms.some((d) => d.mentioned)} />
              </button>
            </h2>
            {dmOpen && (
              <ul class="inbox-rows" aria-label="Direct messages">
                {model.dms.map((d) => {
                  const label = dmLabel(d.key);
                  return (
                    <li key={d.key}>
                      <a class="inbox-row" data-inbox-row href={narrowToHash([{ operator: 'dm', operand: d.key }], slugContext)}>
                        <span class="inbox-name">{label}</span>
                        <Count n={d.count} mentioned={d.mentioned} />
                      </a>
                    </li>
                  );
                })}
              </ul>
            )}
          </div>
        )}
        {model.channels.map((c) => {
          const open = !folded.has(`channel:${c.streamId}`);
          const sub = subs.value.get(c.streamId);
          return (
            <div class="inbox-group" key={c.streamId}>
              <h2 class="inbox-header">
                <button type="button" class="inbox-toggle" data-inbox-row aria-expanded={open} onClick={() => toggle(`channel:${c.streamId}`)}>
                  <span class={`inbox-chevron${open ? ' open' : ''}`} aria-hidden="true"><Icon name="chevron" /></span>
                  <span class="channel-swatch" aria-hidden="true" ref={(el) => el?.style.setProperty('background-color', c.color)} />
                  <span class="inbox-name">{c.name}</span>
                  {sub?.is_muted === true && <span class="sr-only"> (muted)</span>}
                  <Count n={c.count} mentioned={c.mentioned} />
                </button>
              </h2>
              {open && (
                <ul class="inbox-rows" aria-label={`Topics in ${c.name}`}>
                  {c.topics.map((t) => (
                    <li key={t.topic}>
                      <a class="inbox-row" data-inbox-row
                        href={narrowToHash([{ operator: 'channel', operand: String(c.streamId) }, { operator: 'topic', operand: t.topic }], slugContext)}>
                        <span class={`inbox-name${t.topic === '' ? ' empty-topic' : ''}`}>{topicDisplay(t.topic)}</span>
                        <Count n={t.count} mentioned={t.mentioned} />
                      </a>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          );
        })}
      </div>
    </section>
  );
}
