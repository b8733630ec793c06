import { useState } from 'preact/hooks';
import { users } from '../store';
import { avatarUrl } from './util';

/** A user's picture, or their initial on a coloured tile when it cannot load. */
export function Avatar({ userId, url, size, cls = '' }: { userId: number; url?: string | null | undefined; size: number; cls?: string }) {
  const [failed, setFailed] = useState(false);
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
  return <img class={`avatar ${cls}`} src={avatarUrl(userId, url)} alt="" width={size} height={size} loading="lazy" onError={() => setFailed(true)} />;
}
