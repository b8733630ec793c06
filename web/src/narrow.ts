// Narrows: lists of search terms, their #narrow/... URL form, and the
// matching of a message against them for live updates.

import type { Message } from './types';

export interface Term {
  operator: string;
  operand: string;
  negated?: boolean;
}

export type Narrow = Term[];

/** encodeURIComponent, then '%'→'.', and '(', ')', '.' escaped as .28 .29 .2E */
export function encodeHashComponent(s: string): string {
  return encodeURIComponent(s)
    .replace(/\./g, '%2E')
    .replace(/\(/g, '%28')
    .replace(/\)/g, '%29')
    .replace(/%/g, '.');
}

export function decodeHashComponent(s: string): string {
  return decodeURIComponent(s.replace(/\./g, '%'));
}

/** "<id>-<name with spaces as ->", encoded; the id alone when the name would bloat it. */
export function channelSlug(id: number, name: string | undefined): string {
  if (name === undefined) return `${id}-unknown`;
  const slug = `${id}-${name.replace(/ /g, '-')}`;
  const encoded = encodeHashComponent(slug);
  if (encoded.length - slug.length > Math.max(slug.length, 10) || encoded.length > 1.5 * slug.length) {
    return String(id);
  }
  return encoded;
}

/** "<ids>-<suffix>": the other user's name for one person, "group" for several. */
export function dmSlug(ids: number[], nameOf: (id: number) => string | undefined): string {
  const sorted = [...ids].sort((a, b) => a - b);
  const first = sorted[0];
  const suffix =
    sorted.length === 1 && first !== undefined
      ? (nameOf(first) ?? 'user').replace(/[ "%/<>`\p{Cc}]+/gu, '-')
      : 'group';
  return `${sorted.join(',')}-${encodeHashComponent(suffix)}`;
}

const USER_OPERATORS = new Set(['dm', 'dm-including', 'sender']);

export function canonicalOperator(op: string): string {
  const lower = op.toLowerCase();
  switch (lower) {
    case 'stream':
      return 'channel';
    case 'streams':
      return 'channels';
    case 'pm-with':
      return 'dm';
    case 'group-pm-with':
    case 'dm-with':
      return 'dm-including';
    case 'from':
      return 'sender';
    case 'subject':
      return 'topic';
    default:
      return lower;
  }
}

export function canonicalTerm(t: Term): Term {
  const operator = canonicalOperator(t.operator);
  let operand = t.operand;
  if (operator === 'is' && operand === 'private') operand = 'dm';
  if (operator === 'has') operand = operand.toLowerCase().replace(/s$/, '');
  if (operator === 'is') operand = operand.toLowerCase();
  const term: Term = { operator, operand };
  if (t.negated) term.negated = true;
  return term;
}

/** Leading integer of a channel slug, else undefined (legacy name-only slugs). */
export function parseChannelSlug(slug: string): number | undefined {
  const m = /^(\d+)(-.*)?$/.exec(slug);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

export function parseUserSlug(slug: string): number[] | undefined {
  const m = /^([\d,]+)(-.*)?$/.exec(slug);
  if (m?.[1] === undefined) return undefined;
  const ids = m[1].split(',').filter((s) => s !== '').map(Number);
  return ids.length > 0 ? ids : undefined;
}

export interface SlugContext {
  channelName(id: number): string | undefined;
  channelIdByName(name: string): number | undefined;
  userName(id: number): string | undefined;
  userIdByEmail(email: string): number | undefined;
}

/** Terms → "#narrow/…". Channel and user operands are ids (as strings). */
export function narrowToHash(narrow: Narrow, ctx: SlugContext): string {
  let hash = '#narrow';
  for (const raw of narrow) {
    const t = canonicalTerm(raw);
    let operand: string;
    if (t.operator === 'channel') {
      const id = Number(t.operand);
      operand = Number.isInteger(id) && t.operand !== '' ? channelSlug(id, ctx.channelName(id)) : encodeHashComponent(t.operand);
    } else if (USER_OPERATORS.has(t.operator)) {
      const ids = t.operand.split(',').map(Number);
      if (ids.every((n) => Number.isInteger(n) && n > 0)) {
        operand = t.operator === 'dm' ? dmSlug(ids, (id) => ctx.userName(id)) : dmSlug(ids, (id) => ctx.userName(id));
      } else {
        operand = encodeHashComponent(t.operand);
      }
    } else {
      operand = encodeHashComponent(t.operand);
    }
    hash += `/${t.negated ? '-' : ''}${encodeHashComponent(t.operator)}/${operand}`;
  }
  return hash;
}

/** "#narrow/…" → terms, or undefined when it is not a narrow or is malformed. */
export function hashToNarrow(hash: string, ctx: SlugContext): Narrow | undefined {
  const parts = hash.replace(/^#/, '').split('/');
  if (parts[0] !== 'narrow') return undefined;
  const narrow: Narrow = [];
  for (let i = 1; i < parts.length; i += 2) {
    let opRaw = parts[i] ?? '';
    if (opRaw === '') break;
    const operandRaw = parts[i + 1];
    if (operandRaw === undefined) return undefined;
    let negated = false;
    if (opRaw.startsWith('-')) {
      negated = true;
      opRaw = opRaw.slice(1);
    }
    let operator: string;
    let operand: string;
    try {
      operator = canonicalOperator(decodeHashComponent(opRaw));
      operand = decodeHashComponent(operandRaw);
    } catch {
      return undefined;
    }
    if (operator === 'channel') {
      const id = parseChannelSlug(operand);
      if (id !== undefined) operand = String(id);
      else {
        const byName = ctx.channelIdByName(operand.replace(/-/g, ' ')) ?? ctx.channelIdByName(operand);
        if (byName !== undefined) operand = String(byName);
      }
    } else if (USER_OPERATORS.has(operator)) {
      const ids = parseUserSlug(operand);
      if (ids !== undefined) operand = ids.join(',');
      else {
        const emails = operand.split(',').map((e) => ctx.userIdByEmail(e.trim()));
        if (emails.every((e) => e !== undefined)) operand = emails.join(',');
      }
    }
    const term = canonicalTerm({ operator, operand });
    if (negated) term.negated = true;
    narrow.push(term);
  }
  return narrow;
}

/** The narrow as GET /messages wants it: integer ids for channels and users. */
export function narrowForApi(narrow: Narrow): { operator: string; operand: string | number | number[]; negated?: boolean }[] {
  return narrow
    .filter((t) => t.operator !== 'near')
    .map((t) => {
      let operand: string | number | number[] = t.operand;
      if (t.operator === 'channel' && /^\d+$/.test(t.operand)) operand = Number(t.operand);
      else if ((t.operator === 'dm' || t.operator === 'dm-including') && /^[\d,]+$/.test(t.operand)) {
        operand = t.operand.split(',').map(Number);
      } else if ((t.operator === 'sender' || t.operator === 'id' || t.operator === 'with') && /^\d+$/.test(t.operand)) {
        operand = Number(t.operand);
      }
      return t.negated ? { operator: t.operator, operand, negated: true } : { operator: t.operator, operand };
    });
}

export function nearAnchor(narrow: Narrow): number | undefined {
  const near = narrow.find((t) => t.operator === 'near' || t.operator === 'id');
  return near === undefined ? undefined : Number(near.operand);
}

/** The other participants of a DM (the current user only for a DM to oneself). */
export function dmParticipants(m: Message, me: number): number[] {
  if (typeof m.display_recipient === 'string') return [];
  const ids = m.display_recipient.map((r) => r.id).filter((id) => id !== me);
  return (ids.length === 0 ? [me] : ids).sort((a, b) => a - b);
}

/**
 * Whether a message belongs to a narrow, for adding new messages live.
 * Undefined when the client cannot tell (full-text search), so the caller
 * does not guess.
 */
export function matches(narrow: Narrow, m: Message, me: number): boolean | undefined {
  for (const t of narrow) {
    const r = matchTerm(t, m, me);
    if (r === undefined) return undefined;
    if (r === !!t.negated) return false;
  }
  return true;
}

function matchTerm(t: Term, m: Message, me: number): boolean | undefined {
  switch (t.operator) {
    case 'channel':
      return m.type === 'stream' && String(m.stream_id) === t.operand;
    case 'channels':
      return t.operand === 'public' ? m.type === 'stream' : undefined;
    case 'topic':
      return m.type === 'stream' && m.subject.toLowerCase() === t.operand.toLowerCase();
    case 'sender':
      return String(m.sender_id) === t.operand;
    case 'dm': {
      if (m.type !== 'private') return false;
      const want = t.operand.split(',').map(Number).filter((id) => id !== me).sort((a, b) => a - b);
      const have = dmParticipants(m, me).filter((id) => id !== me || want.length === 0);
      return want.length === have.length && want.every((id, i) => id === have[i]);
    }
    case 'dm-including': {
      if (m.type !== 'private' || typeof m.display_recipient === 'string') return false;
      const ids = new Set(m.display_recipient.map((r) => r.id));
      return t.operand.split(',').every((id) => ids.has(Number(id)));
    }
    case 'is':
      switch (t.operand) {
        case 'dm':
          return m.type === 'private';
        case 'starred':
          return m.flags.includes('starred');
        case 'mentioned':
          return m.flags.some((f) => f === 'mentioned' || f === 'stream_wildcard_mentioned' || f === 'topic_wildcard_mentioned');
        case 'unread':
          return !m.flags.includes('read');
        case 'resolved':
          return m.type === 'stream' && m.subject.startsWith('✔ ');
        default:
          return undefined;
      }
    case 'near':
    case 'with':
      return true;
    case 'id':
      return String(m.id) === t.operand;
    default:
      return undefined;
  }
}

/** Narrows in which reading messages marks them read (conversation views and the feed). */
export function marksRead(narrow: Narrow): boolean {
  const kinds = narrow.map((t) => `${t.negated ? 'not-' : ''}${t.operator}${t.operator === 'is' ? `-${t.operand}` : ''}`).sort();
  const key = kinds.join('+');
  return ['', 'channel', 'channel+topic', 'channel+topic+with', 'dm', 'dm+with', 'is-dm', 'not-is-dm', 'is-resolved'].includes(key);
}
