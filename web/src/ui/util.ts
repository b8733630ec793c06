import { users, userSettings } from '../store';

export function avatarUrl(userId: number, given?: string | null): string {
  if (given) return given;
  const u = users.value.get(userId);
  if (u?.avatar_url) return u.avatar_url;
  return `/avatar/${userId}`;
}

export function formatTime(ts: number): string {
  const h24 = userSettings.value.twenty_four_hour_time === true;
  return new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', hour12: !h24 }).format(new Date(ts * 1000));
}

export function formatDate(ts: number): string {
  const d = new Date(ts * 1000);
  const now = new Date();
  const sameYear = d.getFullYear() === now.getFullYear();
  if (d.toDateString() === now.toDateString()) return 'Today';
  return new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric', ...(sameYear ? {} : { year: 'numeric' }) }).format(d);
}

export function formatFull(ts: number): string {
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'short' }).format(new Date(ts * 1000));
}
