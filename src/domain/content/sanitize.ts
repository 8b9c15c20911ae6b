import sanitizeHtml from 'sanitize-html';

/** Largest HTML fragment svc stores as one content block (characters, after sanitizing). */
export const MAX_HTML_CHARS = 100_000;

const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'section', 'header', 'footer', 'picture', 'source', 'button', 'span'],
  allowedAttributes: {
    '*': ['class', 'id', 'title', 'lang', 'dir', 'role', 'aria-*', 'data-*'],
    a: ['href', 'name', 'target', 'rel'],
    img: ['src', 'srcset', 'alt', 'width', 'height', 'loading'],
    source: ['srcset', 'media', 'type'],
    button: ['type'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'tel'],
  allowedSchemesAppliedToAttributes: ['href', 'src', 'srcset'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
};

/**
 * Sanitizes an HTML fragment for a content block with sanitize-html: no
 * scripts, styles, iframes or forms, no event-handler (`on*`) attributes, no
 * `javascript:` or `data:` URLs; text and common markup stay.
 *
 * @example sanitizeContentHtml('<p onclick="x()">Hi<script>x()</script></p>') // '<p>Hi</p>'
 */
export function sanitizeContentHtml(html: string): string {
  return sanitizeHtml(html, OPTIONS);
}
