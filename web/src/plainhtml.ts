// Most chat messages are plain paragraphs: the server renders them as `<p>text</p>`,
// lines joined by `<br>`. Such HTML holds nothing to sanitize, so the client builds its
// nodes directly instead of parsing a document for DOMPurify (which costs far more,
// and under a flood of new messages that is most of a row's cost).

const PLAIN = /^<p>(?:[^<>]|<br>)*<\/p>(?:\n<p>(?:[^<>]|<br>)*<\/p>)*$/;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'" };
const ANY_ENTITY = /&([a-z0-9#]+);/gi;
const OTHER_AMP = /&(?!(?:amp|lt|gt|quot|#39|#x27);)/;

/**
 * Pure: the paragraphs of `html`, each its lines as text, when `html` is only
 * paragraphs of text and line breaks (with no entity but the five the server escapes);
 * else undefined, and the HTML goes through the sanitizer.
 */
export function plainParagraphs(html: string): string[][] | undefined {
  if (!PLAIN.test(html) || OTHER_AMP.test(html)) return undefined;
  return html.split('\n<p>').map((p) => p.replace(/^<p>/, '').replace(/<\/p>$/, '')
    .split(/<br>\n?/)
    .map((line) => line.replace(ANY_ENTITY, (_, name: string) => ENTITIES[name.toLowerCase()] ?? `&${name};`)));
}
