import { useState } from 'preact/hooks';
import { users } from '../store';
import { avatarUrl } from './util';

/** Pictures that could not be loaded, this page's life long. */
const failedUrls = new Set<string>();

/** A user's picture, or their initial on a coloured tile when it cannot load. */
export function Avatar({ userId, url, size, cls = '' }: { userId: number; url?: string | null | undefined; size: number; cls?: string }) {
  const src = avatarUrl(userId, url);
  // A picture that failed once is not asked for again by every new row showing it
  // (under a flood each new row would show an empty box until its request failed).
  const [failed, setFailed] = useState(() => failedUrls.has(src));
  const name = users.value.get(userId)?.full_name ?? '?';
  if (failed) {
    const hue = (userId * 47) % 360;
    return (
      <span class={`avatar avatar-fallback ${cls}`} aria-hidden="true"
        ref={(el) => { if (el) { el.style.width = el.style.height = `${size}px`; el.style.backgroundColor = `hsl(${hue} 45% 42%)`; el.style.fontSize = `${Math.round(size * 0.5)}px`; } }}>
        {[...name][0]?.toUpperCase()}
      </span>
    );
  }
  return <img class={`avatar ${cls}`} src={src} alt="" width={size} height={size} loading="lazy" onError={() => { failedUrls.add(src); setFailed(true); }} />;
}
