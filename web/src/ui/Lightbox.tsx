// An image of a message, shown large over the page (a click on its preview), with a
// link to the file itself.

import { signal } from '@preact/signals';
import { Dialog } from './Dialog';

const shown = signal<{ src: string; href: string; title: string } | undefined>(undefined);

/** Opens the lightbox on an image preview's link, if it is one; true when it did. */
export function openLightbox(link: HTMLAnchorElement): boolean {
  const img = link.querySelector('img');
  if (img === null) return false;
  // The full image is the link's target when it is an upload, else the preview itself.
  const href = link.getAttribute('href') ?? '';
  const src = href.startsWith('/user_uploads/') ? href : img.getAttribute('src') ?? '';
  if (src === '') return false;
  shown.value = { src, href: href || src, title: link.getAttribute('title') ?? img.getAttribute('alt') ?? '' };
  return true;
}

export function Lightbox() {
  const s = shown.value;
  if (s === undefined) return null;
  const close = () => { shown.value = undefined; };
  return (
    <Dialog title={s.title || 'Image'} onClose={close} wide>
      <figure class="lightbox">
        <img src={s.src} alt={s.title} />
        <figcaption class="row">
          <a href={s.href} target="_blank" rel="noopener noreferrer">Open the original</a>
          <a href={s.href} download>Download</a>
        </figcaption>
      </figure>
    </Dialog>
  );
}
