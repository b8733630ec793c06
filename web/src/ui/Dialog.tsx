import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { Icon } from './Icon';

let counter = 0;

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** The elements of `root` that Tab reaches, in order (those laid out only). */
export function tabbable(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.getClientRects().length > 0);
}

/**
 * A modal dialog: focus moves in and stays in (Tab and Shift+Tab go round its
 * controls; focus that lands outside is brought back), Esc closes, and focus returns
 * to where it was (or to the main view, when that element is gone).
 */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const id = useRef(`dialog-title-${++counter}`);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>('input, select, textarea, button:not(.dialog-close)');
    (first ?? ref.current)?.focus();
    // Focus moved outside (a click on the page behind, a script) comes back in.
    const onFocusIn = (e: FocusEvent) => {
      const box = ref.current;
      if (box === null || box.contains(e.target as Node)) return;
      const topmost = [...document.querySelectorAll('[role="dialog"][aria-modal="true"]')].at(-1);
      if (topmost === box) box.focus();
    };
    // Esc closes the dialog wherever the focus is (what inside handles Esc itself, a
    // search field or a picker, stops it first).
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented) return;
      const topmost = [...document.querySelectorAll('[role="dialog"][aria-modal="true"]')].at(-1);
      if (topmost !== ref.current) return;
      e.preventDefault();
      e.stopPropagation();
      closeRef.current();
    };
    document.addEventListener('focusin', onFocusIn);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('focusin', onFocusIn);
      document.removeEventListener('keydown', onKey);
      if (before?.isConnected) before.focus();
      else document.getElementById('main-content')?.focus();
    };
  }, []);
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== 'Tab' || ref.current === null) return;
    const all = tabbable(ref.current);
    const first = all[0];
    const last = all.at(-1);
    if (first === undefined || last === undefined) {
      e.preventDefault();
      return;
    }
    const at = document.activeElement;
    if (e.shiftKey && (at === first || at === ref.current)) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && at === last) {
      e.preventDefault();
      first.focus();
    }
  };
  return (
    <div class="dialog-backdrop" onMouseDown={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div ref={ref} class={`dialog${wide ? ' wide' : ''}`} role="dialog" aria-modal="true" aria-labelledby={id.current} tabIndex={-1}
        onKeyDown={onKeyDown}>
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
