import { describe, expect, it } from 'vitest';
import { plainParagraphs } from '../src/plainhtml';

describe('plain paragraphs', () => {
  it('reads paragraphs of text and line breaks, decoding the escaped characters', () => {
    expect(plainParagraphs('<p>hello</p>')).toEqual([['hello']]);
    expect(plainParagraphs('<p>one<br>\ntwo</p>\n<p>three</p>')).toEqual([['one', 'two'], ['three']]);
    expect(plainParagraphs('<p>a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;</p>')).toEqual([['a <b> & "c" \'d\'']]);
    expect(plainParagraphs('<p></p>')).toEqual([['']]);
  });

  it('leaves every other markup to the sanitizer', () => {
    for (const html of [
      '<p><strong>bold</strong></p>',
      '<p>x</p><script>alert(1)</script>',
      '<p onclick="x">a</p>',
      '<p>a</p>\n<blockquote><p>b</p></blockquote>',
      '<img src=x onerror=alert(1)>',
      '<p>&nbsp;</p>',
      '<p>a & b</p>',
      '<p>a</p>\n',
      '',
      'text',
      '<p>a<br/>b</p>',
    ]) expect(plainParagraphs(html)).toBeUndefined();
  });
});
