// Compose autocomplete: @-mentions, #channels (and #channel>topic), :emoji:.

import { searchEmoji } from '../emoji';
import { subs, users } from '../store';

export interface Suggestion {
  label: string;
  detail?: string;
  /** Text that replaces the token being typed. */
  insert: string;
  key: string;
}

export interface Token {
  kind: '@' | '#' | ':';
  query: string;
  start: number;
}

/** The autocomplete token ending at the cursor, if any. */
export function tokenAt(text: string, cursor: number): Token | undefined {
  const before = text.slice(0, cursor);
  const m = /(^|[\s(])([@#:])(\*\*)?([^\s@#:*]*(?: [^\s@#:*]*)?)$/.exec(before);
  if (m === null) return undefined;
  const kind = m[2] as Token['kind'];
  const query = m[4] ?? '';
  if (kind === ':' && query.length < 2) return undefined;
  if (kind !== ':' && query.includes(' ') && query.endsWith(' ')) return undefined;
  return { kind, query, start: before.length - (m[2]?.length ?? 1) - (m[3]?.length ?? 0) - query.length };
}

export function suggestions(t: Token): Suggestion[] {
  const q = t.query.toLowerCase();
  if (t.kind === '@') {
    const out: Suggestion[] = [];
    for (const w of ['all', 'everyone', 'channel', 'topic']) if (w.startsWith(q) && q.length > 0) out.push({ label: `@${w}`, detail: 'Notify everyone', insert: `@**${w}** `, key: `w-${w}` });
    const people = [...users.value.values()]
      .filter((u) => u.is_active && (u.full_name.toLowerCase().includes(q) || u.email.toLowerCase().startsWith(q)))
      .sort((a, b) => Number(!a.full_name.toLowerCase().startsWith(q)) - Number(!b.full_name.toLowerCase().startsWith(q)) || a.full_name.localeCompare(b.full_name))
      .slice(0, 8)
      .map((u) => ({ label: u.full_name, detail: u.delivery_email ?? u.email, insert: `@**${u.full_name}|${u.user_id}** `, key: `u-${u.user_id}` }));
    return [...people, ...out].slice(0, 8);
  }
  if (t.kind === '#') {
    return [...subs.value.values()]
      .filter((s) => s.name.toLowerCase().includes(q))
      .sort((a, b) => Number(!a.name.toLowerCase().startsWith(q)) - Number(!b.name.toLowerCase().startsWith(q)) || a.name.localeCompare(b.name))
      .slice(0, 8)
      .map((s) => ({ label: `#${s.name}`, detail: s.description, insert: `#**${s.name}** `, key: `s-${s.stream_id}` }));
  }
  return searchEmoji(q, 8).map((e) => ({ label: `:${e.name}:`, insert: `:${e.name}: `, key: `e-${e.type}-${e.code}-${e.name}` }));
}
