import { describe, expect, it } from 'vitest';
import { CONTENT_MAX_BYTES, prepareContent, sanitizeContentHtml } from '../../src/domain/web/sanitize.js';
import { AppError } from '../../src/errors/app-error.js';

describe('HTML sanitizer', () => {
  it('removes scripts with their text, and style/iframe/object/form elements', () => {
    expect(sanitizeContentHtml('<p>a</p><script>alert(1)</script><p>b</p>')).toBe('<p>a</p><p>b</p>');
    expect(sanitizeContentHtml('<style>p{}</style><iframe src="https://x"></iframe><object></object>x')).toBe('x');
    expect(sanitizeContentHtml('<form action="/x"><input name="a"></form>ok')).toBe('ok');
  });
  it('removes every event-handler attribute and style attributes', () => {
    expect(sanitizeContentHtml('<a href="https://x.example" onclick="steal()" onmouseover="x()">go</a>')).toBe('<a href="https://x.example">go</a>');
    expect(sanitizeContentHtml('<img src="https://x.example/a.png" onerror="x()" alt="a">')).toBe('<img src="https://x.example/a.png" alt="a" />');
    expect(sanitizeContentHtml('<p style="background:url(javascript:x)">t</p>')).toBe('<p>t</p>');
  });
  it('drops javascript:, data: and vbscript: URLs, also disguised', () => {
    expect(sanitizeContentHtml('<a href="javascript:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitizeContentHtml('<a href="JaVaScRiPt:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitizeContentHtml('<a href=" &#106;avascript:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitizeContentHtml('<img src="data:image/png;base64,AAAA">')).toBe('<img />');
    expect(sanitizeContentHtml('<a href="vbscript:x">x</a>')).toBe('<a>x</a>');
  });
  it('keeps ordinary markup, classes, data and aria attributes, http(s)/mailto/tel links', () => {
    const html =
      '<h2 class="hero">Sale</h2><p>Up to <strong>30%</strong> off <em>today</em></p><ul><li>a</li></ul>' +
      '<a href="https://shop.example/sale" target="_blank" rel="noopener">Shop</a><a href="mailto:a@b.example">m</a><a href="tel:+123">t</a>' +
      '<div data-track="x" aria-label="y" id="z">d</div><table><tr><td colspan="2">c</td></tr></table>';
    expect(sanitizeContentHtml(html)).toBe(html.replace('<table><tr>', '<table><tr>'));
  });
});

describe('prepareContent', () => {
  it('reports whether the sanitizer changed the HTML', () => {
    expect(prepareContent('html', '<p>ok</p>')).toEqual({ body: '<p>ok</p>', changed: false });
    expect(prepareContent('html', '<p onclick="x()">ok</p>')).toEqual({ body: '<p>ok</p>', changed: true });
  });
  it('accepts any JSON value, stores it compact, refuses invalid JSON', () => {
    expect(prepareContent('json', '{ "a": [1, 2] }').body).toBe('{"a":[1,2]}');
    expect(prepareContent('json', '"s"').body).toBe('"s"');
    expect(() => prepareContent('json', '{a:1}')).toThrow(AppError);
  });
  it('caps the body at 64 KiB of UTF-8, at and around the edge', () => {
    expect(CONTENT_MAX_BYTES).toBe(65536);
    expect(() => prepareContent('html', 'a'.repeat(CONTENT_MAX_BYTES))).not.toThrow();
    expect(() => prepareContent('html', 'a'.repeat(CONTENT_MAX_BYTES + 1))).toThrow(/65536/);
    // 2-byte characters count as 2 bytes.
    expect(() => prepareContent('html', 'é'.repeat(CONTENT_MAX_BYTES / 2))).not.toThrow();
    expect(() => prepareContent('html', 'é'.repeat(CONTENT_MAX_BYTES / 2) + 'a')).toThrow(AppError);
    expect(() => prepareContent('json', `"${'a'.repeat(CONTENT_MAX_BYTES)}"`)).toThrow(AppError);
  });
});
