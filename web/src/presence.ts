// Presence pings at the server's interval: "active" while the window has
// focus or saw input in the last five minutes, "idle" otherwise.

import { post } from './api';
import { presence, realm, serverTime } from './store';

let lastInput = Date.now();
let newInput = false;

function status(): 'active' | 'idle' {
  return document.hasFocus() || Date.now() - lastInput < 5 * 60 * 1000 ? 'active' : 'idle';
}

async function ping(pingOnly: boolean): Promise<void> {
  try {
    const res = await post<{ presences?: Record<string, { active_timestamp: number; idle_timestamp: number }>; server_timestamp?: number }>(
      'users/me/presence',
      { status: status(), ping_only: pingOnly, new_user_input: newInput, slim_presence: true },
    );
    newInput = false;
    if (res.presences !== undefined) {
      const next = new Map(presence.value);
      for (const [id, p] of Object.entries(res.presences)) next.set(Number(id), { active: p.active_timestamp, idle: p.idle_timestamp });
      presence.value = next;
    }
    if (res.server_timestamp !== undefined) serverTime.value = { server: res.server_timestamp, local: Date.now() };
  } catch {
    /* The next ping tries again. */
  }
}

export function startPresence(): void {
  const interval = Number(realm.value.server_presence_ping_interval_seconds ?? 60) * 1000;
  const mark = () => { lastInput = Date.now(); newInput = true; };
  window.addEventListener('mousemove', mark, { passive: true });
  window.addEventListener('keydown', mark, { passive: true });
  window.addEventListener('focus', () => { mark(); void ping(true); });
  void ping(true);
  setInterval(() => void ping(false), interval);
}
