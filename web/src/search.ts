// Zulip's search syntax: `operator:operand` terms (operand quoted when it has
// spaces, `-` negates), everything else joined into one `search` term.

import { canonicalOperator, canonicalTerm, type Narrow, type Term } from './narrow';

const OPERATORS = new Set([
  'channel', 'channels', 'stream', 'streams', 'topic', 'subject', 'sender', 'from', 'dm', 'pm-with',
  'dm-including', 'dm-with', 'group-pm-with', 'is', 'has', 'near', 'id', 'with', 'search',
]);

function tokenize(query: string): string[] {
  const tokens: string[] = [];
  const re = /(-?[a-zA-Z-]+:)"((?:[^"\\]|\\.)*)"?|(-?[a-zA-Z-]+:)(\S*)|"((?:[^"\\]|\\.)*)"?|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(query)) !== null) {
    if (m[1] !== undefined) tokens.push(`${m[1]}\u0000${(m[2] ?? '').replace(/\\(.)/g, '$1')}`);
    else if (m[3] !== undefined) tokens.push(`${m[3]}\u0000${m[4] ?? ''}`);
    else if (m[5] !== undefined) tokens.push(`\u0001${m[5]}`);
    else if (m[6] !== undefined) tokens.push(`\u0001${m[6]}`);
  }
  return tokens;
}

/** Parses a query into terms; operands are as typed (names, emails), not yet ids. */
export function parseSearch(query: string): Narrow {
  const terms: Term[] = [];
  const words: string[] = [];
  for (const token of tokenize(query)) {
    if (token.startsWith('\u0001')) {
      words.push(token.slice(1));
      continue;
    }
    const [head = '', operand = ''] = token.split('\u0000');
    let op = head.slice(0, -1);
    let negated = false;
    if (op.startsWith('-')) {
      negated = true;
      op = op.slice(1);
    }
    if (!OPERATORS.has(op.toLowerCase())) {
      words.push(`${head}${operand}`);
      continue;
    }
    if (canonicalOperator(op) === 'search') {
      if (operand !== '') words.push(operand);
      continue;
    }
    const term = canonicalTerm({ operator: op, operand });
    if (negated) term.negated = true;
    terms.push(term);
  }
  if (words.length > 0) terms.push({ operator: 'search', operand: words.join(' ') });
  return terms;
}

export interface ResolveContext {
  channelIdByName(name: string): number | undefined;
  channelName(id: number): string | undefined;
  userIdByEmailOrName(s: string): number | undefined;
  userEmail(id: number): string | undefined;
  me: number;
}

/** Channel names and user emails/names → ids; unknown ones are kept as typed. */
export function resolveTerms(narrow: Narrow, ctx: ResolveContext): Narrow {
  return narrow.map((t) => {
    if (t.operator === 'channel') {
      const id = /^\d+$/.test(t.operand) && ctx.channelName(Number(t.operand)) !== undefined
        ? Number(t.operand)
        : ctx.channelIdByName(t.operand);
      return id === undefined ? t : { ...t, operand: String(id) };
    }
    if (t.operator === 'sender' || t.operator === 'dm' || t.operator === 'dm-including') {
      const ids = t.operand.split(',').map((s) => {
        const v = s.trim();
        if (v === 'me') return ctx.me;
        if (/^\d+$/.test(v)) return Number(v);
        return ctx.userIdByEmailOrName(v);
      });
      if (ids.every((id) => id !== undefined)) return { ...t, operand: ids.join(',') };
    }
    return t;
  });
}

function quote(s: string): string {
  return /[\s"]/.test(s) || s === '' ? `"${s.replace(/(["\\])/g, '\\$1')}"` : s;
}

/** Terms → the text a user would type (ids shown as names/emails). */
export function unparse(narrow: Narrow, ctx: ResolveContext): string {
  return narrow
    .map((t) => {
      if (t.operator === 'search') return t.operand;
      let operand = t.operand;
      if (t.operator === 'channel') operand = ctx.channelName(Number(t.operand)) ?? t.operand;
      if (t.operator === 'sender' || t.operator === 'dm' || t.operator === 'dm-including') {
        operand = t.operand
          .split(',')
          .map((id) => ctx.userEmail(Number(id)) ?? id)
          .join(',');
      }
      return `${t.negated ? '-' : ''}${t.operator}:${quote(operand)}`;
    })
    .join(' ');
}
