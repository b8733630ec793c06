import { h, type Component, type FunctionComponent } from 'preact';
import { users, userSettings } from '../store';

/**
 * A component that re-renders only when a prop changed (by identity, or as `same`
 * tells) or a signal it reads did, not whenever its parent does: a list's rows stay
 * put as rows are added.
 */
export function memo<P extends object>(inner: FunctionComponent<P>, same?: (prev: P, next: P) => boolean): FunctionComponent<P> {
  function changed(this: Component<P>, next: P): boolean {
    if (same !== undefined) return !same(this.props as P, next);
    const prev = this.props as Record<string, unknown>;
    const n = next as Record<string, unknown>;
    for (const k in prev) if (k !== 'children' && !(k in n)) return true;
    for (const k in n) if (k !== 'children' && prev[k] !== n[k]) return true;
    return false;
  }
  function Memo(this: Component<P>, props: P) {
    this.shouldComponentUpdate = changed;
    return h(inner, props);
  }
  Memo.displayName = `Memo(${inner.displayName ?? inner.name})`;
  return Memo as FunctionComponent<P>;
}

// Building an Intl.DateTimeFormat costs far more than formatting with one: one of each.
const formats = new Map<string, Intl.DateTimeFormat>();
function format(options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = JSON.stringify(options);
  let f = formats.get(key);
  if (f === undefined) {
    f = new Intl.DateTimeFormat(undefined, options);
    formats.set(key, f);
  }
  return f;
}

export function avatarUrl(userId: number, given?: string | null): string {
  if (given) return given;
  const u = users.value.get(userId);
  if (u?.avatar_url) return u.avatar_url;
  return `/avatar/${userId}`;
}

// A row's times show minutes at most, and a busy list has many messages a minute:
// each minute is formatted once (the newest few hundred minutes are kept).
const byMinute = new Map<string, string>();
function perMinute(kind: string, ts: number, fmt: () => string): string {
  const key = `${kind}${Math.floor(ts / 60)}`;
  let s = byMinute.get(key);
  if (s === undefined) {
    s = fmt();
    if (byMinute.size >= 512) byMinute.clear();
    byMinute.set(key, s);
  }
  return s;
}

export function formatTime(ts: number): string {
  const h24 = userSettings.value.twenty_four_hour_time === true;
  return perMinute(h24 ? 't24:' : 't12:', ts, () => format({ hour: 'numeric', minute: '2-digit', hour12: !h24 }).format(new Date(ts * 1000)));
}

export function formatDate(ts: number): string {
  const d = new Date(ts * 1000);
  const now = new Date();
  const sameYear = d.getFullYear() === now.getFullYear();
  if (d.toDateString() === now.toDateString()) return 'Today';
  return format({ weekday: 'short', month: 'short', day: 'numeric', ...(sameYear ? {} : { year: 'numeric' }) }).format(d);
}

export function formatFull(ts: number): string {
  return perMinute('full:', ts, () => format({ dateStyle: 'full', timeStyle: 'short' }).format(new Date(ts * 1000)));
}
