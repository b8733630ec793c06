import { signal } from '@preact/signals';
import { useEffect, useRef, useState } from 'preact/hooks';
import { baseRoute, goNarrow } from '../route';
import { parseSearch, resolveTerms, unparse } from '../search';
import { resolveContext } from '../store';
import { Icon } from './Icon';

export const searchFocus = signal(0);

export function SearchBox() {
  const r = baseRoute.value;
  const current = r.view === 'narrow' ? unparse(r.narrow, resolveContext) : '';
  const [text, setText] = useState(current);
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => setText(current), [current]);
  useEffect(() => {
    if (searchFocus.value > 0) { ref.current?.focus(); ref.current?.select(); }
  }, [searchFocus.value]);
  return (
    <form role="search" class="search-box" onSubmit={(e) => {
      e.preventDefault();
      goNarrow(resolveTerms(parseSearch(text), resolveContext));
      ref.current?.blur();
    }}>
      <label for="search-input" class="sr-only">Search messages</label>
      <input id="search-input" ref={ref} type="search" placeholder="Search (e.g. channel:general sender:me is:starred)"
        value={text} autoComplete="off" spellcheck={false}
        onInput={(e) => setText((e.target as HTMLInputElement).value)}
        onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); setText(current); ref.current?.blur(); } }} />
      <button type="submit" class="icon-button" aria-label="Search"><Icon name="search" /></button>
    </form>
  );
}
