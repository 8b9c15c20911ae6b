import sanitizeHtml from 'sanitize-html';
import { AppError } from '../../errors/app-error.js';
import type { ContentKind } from '../../store/content.js';

/** Largest content body accepted, in UTF-8 bytes (before sanitizing), for HTML and JSON alike: 64 KiB. */
export const CONTENT_MAX_BYTES = 64 * 1024;

/**
 * The HTML a content block may hold: sanitize-html's default set of ordinary
 * markup (text, headings, lists, tables, links, emphasis) plus images, with
 * class, id, title, role, aria-(name) and data-(name) attributes. Everything else is removed:
 * script, style, iframe, object, form elements (script and style with their
 * text), every on* event-handler attribute, style attributes, and URLs whose
 * scheme is not http, https, mailto or tel (javascript:, data:, vbscript:).
 */
const OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'picture', 'source'],
  allowedAttributes: {
    '*': ['class', 'id', 'title', 'lang', 'dir', 'aria-*', 'data-*', 'role'],
    a: ['href', 'name', 'target', 'rel'],
    img: ['src', 'srcset', 'alt', 'width', 'height', 'loading'],
    source: ['srcset', 'type', 'media'],
    td: ['colspan', 'rowspan'],
    th: ['colspan', 'rowspan', 'scope'],
  },
  allowedSchemes: ['http', 'https', 'mailto', 'tel'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: true,
  disallowedTagsMode: 'discard',
};

/** Sanitized HTML (see OPTIONS). */
export function sanitizeContentHtml(html: string): string {
  return sanitizeHtml(html, OPTIONS);
}

/**
 * Checks and normalizes a content body: at most CONTENT_MAX_BYTES, HTML
 * sanitized, JSON parsed (any JSON value) and stored in its compact form.
 * `changed` says whether the sanitizer removed anything.
 */
export function prepareContent(kind: ContentKind, body: string): { body: string; changed: boolean } {
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > CONTENT_MAX_BYTES) {
    throw new AppError('validation_failed', `body: ${bytes} bytes; content is at most ${CONTENT_MAX_BYTES} bytes (64 KiB)`, {
      field: 'body',
      limit: CONTENT_MAX_BYTES,
      size: bytes,
    });
  }
  if (kind === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (err) {
      throw new AppError('validation_failed', `body: not valid JSON (${(err as Error).message})`, { field: 'body' });
    }
    const compact = JSON.stringify(parsed);
    return { body: compact, changed: false };
  }
  const clean = sanitizeContentHtml(body);
  return { body: clean, changed: clean !== body };
}
