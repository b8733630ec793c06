// /register, then the GET /events long-poll. A lost queue registers again and
// the views reload their data; network errors back off exponentially.

import { signal } from '@preact/signals';
import { ApiError, get, post } from './api';
import { applyEvents } from './events';
import { nextFrame } from './frame';
import { connection, loadRegister, messages } from './store';
import type { ServerEvent } from './types';

export const CLIENT_CAPABILITIES = {
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: true,
  stream_typing_notifications: true,
  user_settings_object: true,
  empty_topic_name: true,
};

/** Bumped after every (re-)registration: views reload what they show. */
export const generation = signal(0);

let queueId = '';
let lastEventId = -1;
let timeoutSecs = 90;

export async function register(): Promise<void> {
  const state = await post<Record<string, unknown>>('register', {
    apply_markdown: true,
    client_gravatar: false,
    slim_presence: true,
    include_subscribers: true,
    client_capabilities: CLIENT_CAPABILITIES,
  });
  queueId = state.queue_id as string;
  lastEventId = state.last_event_id as number;
  timeoutSecs = Number(state.event_queue_longpoll_timeout_seconds ?? 90);
  messages.clear();
  loadRegister(state);
  generation.value++;
}

export function backoffMs(failures: number): number {
  const base = Math.min(60_000, 1000 * 2 ** Math.min(failures, 6));
  return base / 2 + Math.random() * (base / 2);
}

let current: AbortController | undefined;

/**
 * A back-off wait that a wake-up cuts short. A wake-up that comes while nobody waits
 * (the browser back online while the failing request was still on its way) is kept
 * for the next wait, which then ends at once: otherwise it is lost, and the poll
 * waits out a back-off that grew while offline (up to a minute).
 */
export function waker(): { sleep: (ms: number) => Promise<void>; wake: () => void } {
  let pending = false;
  let end: (() => void) | undefined;
  return {
    sleep: (ms) => new Promise<void>((r) => {
      if (pending) {
        pending = false;
        r();
        return;
      }
      const t = setTimeout(() => { end = undefined; r(); }, ms);
      end = () => { clearTimeout(t); end = undefined; r(); };
    }),
    wake: () => {
      if (end !== undefined) end();
      else pending = true;
    },
  };
}

const backOff = waker();
const sleep = backOff.sleep;

function watchNetwork(): void {
  if (typeof window === 'undefined') return;
  window.addEventListener('offline', () => {
    connection.value = 'reconnecting';
    current?.abort();
  });
  window.addEventListener('online', () => backOff.wake());
}

export async function pollForever(): Promise<never> {
  let failures = 0;
  watchNetwork();
  for (;;) {
    const ctl = new AbortController();
    current = ctl;
    const timer = setTimeout(() => ctl.abort(), (timeoutSecs + 20) * 1000);
    try {
      const res = await get<{ events: ServerEvent[] }>(
        'events',
        { queue_id: queueId, last_event_id: lastEventId, dont_block: failures > 0 },
        ctl.signal,
      );
      failures = 0;
      connection.value = 'live';
      const events = res.events;
      for (const e of events) lastEventId = Math.max(lastEventId, e.id);
      applyEvents(events);
      // At most one poll a frame: under a stream of events, an answer's events are
      // shown in the next frame anyway, and the server keeps those that come
      // meanwhile for the next answer. Polling again at once would answer with a
      // few events each, several times a frame, each answer a request, a parse and
      // a batch of its own.
      if (events.length > 0) await nextFrame();
    } catch (err) {
      if (err instanceof ApiError && err.code === 'BAD_EVENT_QUEUE_ID') {
        connection.value = 'reconnecting';
        try {
          await register();
          failures = 0;
          connection.value = 'live';
          continue;
        } catch {
          /* fall through to back off */
        }
      }
      if (err instanceof ApiError && err.status === 401) await sleep(60_000);
      failures++;
      connection.value = 'reconnecting';
      await sleep(backoffMs(failures));
    } finally {
      clearTimeout(timer);
    }
  }
}
