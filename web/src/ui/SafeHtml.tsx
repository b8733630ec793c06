// The one place markup enters the DOM: server-rendered HTML, sanitized by DOMPurify.

import DOMPurify from 'dompurify';
import { useLayoutEffect, useRef } from 'preact/hooks';
import { plainParagraphs } from '../plainhtml';
import { go } from '../route';
import { openLightbox } from './Lightbox';

let hooked = false;
function hook(): void {
  if (hooked) return;
  hooked = true;
  // Set once: a config passed to each sanitize() call is parsed and copied each time,
  // which under a flood of messages cost more than the sanitizing.
  DOMPurify.setConfig({
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style'],
    ADD_ATTR: ['target'],
  });
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node instanceof HTMLAnchorElement) {
      const href = node.getAttribute('href') ?? '';
      if (!href.startsWith('#') && !href.startsWith('/#')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    }
  });
}

export function sanitize(html: string): DocumentFragment {
  const plain = plainParagraphs(html);
  if (plain !== undefined) {
    // Paragraphs of text only: built as text nodes, nothing to parse or sanitize.
    const f = document.createDocumentFragment();
    plain.forEach((lines, i) => {
      if (i > 0) f.append('\n');
      const p = document.createElement('p');
      lines.forEach((line, j) => {
        if (j > 0) p.append(document.createElement('br'), '\n');
        p.append(line);
      });
      f.append(p);
    });
    return f;
  }
  hook();
  return DOMPurify.sanitize(html) as unknown as DocumentFragment;
}

export interface SafeHtmlProps {
  html: string;
  class?: string;
  /** Applied to the sanitized tree before it is shown (classes only, no markup). */
  decorate?: (root: HTMLElement) => void;
}

export function SafeHtml({ html, class: cls, decorate }: SafeHtmlProps) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const el = ref.current;
    if (el === null) return;
    el.replaceChildren(sanitize(html));
    decorate?.(el);
  }, [html, decorate]);
  const onClick = (e: MouseEvent) => {
    const a = (e.target as HTMLElement).closest('a');
    const spoiler = (e.target as HTMLElement).closest('.spoiler-header');
    if (spoiler !== null) {
      const block = spoiler.parentElement;
      block?.classList.toggle('spoiler-open');
      const content = block?.querySelector('.spoiler-content');
      content?.setAttribute('aria-hidden', block?.classList.contains('spoiler-open') ? 'false' : 'true');
      return;
    }
    if (a === null) return;
    // An image preview opens large, over the page.
    if (a.closest('.message_inline_image') !== null && openLightbox(a)) {
      e.preventDefault();
      return;
    }
    const href = a.getAttribute('href') ?? '';
    const m = /^(?:\/)?(#.*)$/.exec(href) ?? new RegExp(`^${location.origin}/(#.*)$`).exec(href);
    if (m?.[1] !== undefined) {
      e.preventDefault();
      go(m[1]);
    }
  };
  return <div ref={ref} class={cls} onClick={onClick} />;
}
