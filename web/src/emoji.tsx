// Emoji names: the server's emoji_api.json (code → names) plus realm emoji.

import { signal } from '@preact/signals';
import { realm, realmEmoji } from './store';

export interface EmojiChoice {
  name: string;
  code: string;
  type: 'unicode_emoji' | 'realm_emoji' | 'zulip_extra_emoji';
}

const unicode = signal<EmojiChoice[]>([]);
let loading = false;

export function loadEmojiData(): void {
  if (loading) return;
  loading = true;
  const url = realm.value.server_emoji_data_url;
  if (typeof url !== 'string') return;
  const path = new URL(url, location.href).pathname;
  fetch(path, { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status)))))
    .then((d: { code_to_names: Record<string, string[]> }) => {
      const list: EmojiChoice[] = [];
      for (const [code, names] of Object.entries(d.code_to_names)) {
        for (const name of names) list.push({ name, code, type: 'unicode_emoji' });
      }
      unicode.value = list;
    })
    .catch(() => {
      loading = false;
    });
}

export function allEmoji(): EmojiChoice[] {
  const custom: EmojiChoice[] = Object.values(realmEmoji.value)
    .filter((e) => !e.deactivated)
    .map((e) => ({ name: e.name, code: e.id, type: 'realm_emoji' }));
  return [...custom, { name: 'zulip', code: 'zulip', type: 'zulip_extra_emoji' }, ...unicode.value];
}

export function searchEmoji(prefix: string, limit = 8): EmojiChoice[] {
  const p = prefix.toLowerCase();
  const all = allEmoji();
  const starts = all.filter((e) => e.name.startsWith(p));
  const contains = all.filter((e) => !e.name.startsWith(p) && e.name.includes(p));
  return [...starts, ...contains].slice(0, limit);
}

export function emojiChar(code: string): string {
  try {
    return String.fromCodePoint(...code.split('-').map((h) => parseInt(h, 16)));
  } catch {
    return '?';
  }
}

export function emojiImage(type: string, code: string): string | undefined {
  if (type === 'realm_emoji') return realmEmoji.value[code]?.source_url;
  if (type === 'zulip_extra_emoji') return '/static/generated/emoji/images/emoji/unicode/zulip.png';
  return undefined;
}

export function Emoji({ type, code, name }: { type: string; code: string; name: string }) {
  const src = emojiImage(type, code);
  if (src !== undefined) return <img class="emoji" src={src} alt={`:${name}:`} title={name} />;
  return (
    <span class="emoji" role="img" aria-label={name} title={name}>
      {emojiChar(code)}
    </span>
  );
}
