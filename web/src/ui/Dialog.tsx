import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { Icon } from './Icon';

let counter = 0;

/** A modal dialog: focus moves in, Esc closes, focus returns to where it was. */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const id = useRef(`dialog-title-${++counter}`);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>('input, select, textarea, button:not(.dialog-close)');
    (first ?? ref.current)?.focus();
    return () => before?.focus();
  }, []);
  return (
    <div class="dialog-backdrop" onMouseDown={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div ref={ref} class={`dialog${wide ? ' wide' : ''}`} role="dialog" aria-modal="true" aria-labelledby={id.current} tabIndex={-1}
        onKeyDown={(e) => { if (e.key === 'Escape') { e.stopPropagation(); onClose(); } }}>
        <div class="dialog-header">
          <h2 id={id.current}>{title}</h2>
          <button type="button" class="icon-button dialog-close" aria-label="Close" onClick={onClose}><Icon name="close" /></button>
        </div>
        {/* Focusable, so that a keyboard can scroll a long body (the shortcut list). */}
        <div class="dialog-body" tabIndex={0} role="group" aria-labelledby={id.current}>{children}</div>
      </div>
    </div>
  );
}
