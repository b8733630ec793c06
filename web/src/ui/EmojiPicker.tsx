import { useEffect, useRef, useState } from 'preact/hooks';
import { Emoji, loadEmojiData, searchEmoji, type EmojiChoice } from '../emoji';

const COMMON = ['+1', 'tada', 'smile', 'heart', 'eyes', 'thinking', 'check', 'working_on_it', 'octopus', 'joy'];

export function EmojiPicker({ onPick, onClose }: { onPick: (e: EmojiChoice) => void; onClose: () => void }) {
  const [q, setQ] = useState('');
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    loadEmojiData();
    ref.current?.focus();
  }, []);
  const list = q === ''
    ? COMMON.map((n) => searchEmoji(n, 1)[0]).filter((e): e is EmojiChoice => e !== undefined && e.name === e.name)
    : searchEmoji(q, 40);
  return (
    <div class="popover emoji-picker" role="dialog" aria-label="Add emoji reaction"
      onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); onClose(); } }}>
      <input ref={ref} type="search" placeholder="Search emoji" aria-label="Search emoji" value={q}
        onInput={(e) => setQ((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => { if (e.key === 'Enter' && list[0]) { e.preventDefault(); onPick(list[0]); } }} />
      <div class="emoji-grid">
        {list.map((e) => (
          <button type="button" key={`${e.type}:${e.code}:${e.name}`} class="emoji-choice" title={`:${e.name}:`}
            aria-label={e.name} onClick={() => onPick(e)}>
            <Emoji type={e.type} code={e.code} name={e.name} />
          </button>
        ))}
        {list.length === 0 && <p class="muted">No emoji match.</p>}
      </div>
    </div>
  );
}
