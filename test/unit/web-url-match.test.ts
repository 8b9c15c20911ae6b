import { describe, expect, it } from 'vitest';
import { matchesPage, patternProblem, urlParts } from '../../src/domain/web/url-match.js';

const m = (type: 'exact' | 'prefix' | 'glob', pattern: string, url: string) => matchesPage(type, pattern, urlParts(url)!);

describe('urlParts', () => {
  it('keeps path and query of absolute URLs and paths, drops host and fragment', () => {
    expect(urlParts('https://shop.example/pricing?plan=pro#top')).toEqual({ path: '/pricing', query: '?plan=pro' });
    expect(urlParts('/a/b')).toEqual({ path: '/a/b', query: '' });
    expect(urlParts('https://shop.example')).toEqual({ path: '/', query: '' });
  });
  it('refuses what is neither an http(s) URL nor a path', () => {
    expect(urlParts('pricing')).toBeUndefined();
    expect(urlParts('javascript:alert(1)')).toBeUndefined();
    expect(urlParts('ftp://x/y')).toBeUndefined();
  });
});

describe('exact', () => {
  it('a pattern without a query matches the path whatever the query', () => {
    expect(m('exact', '/pricing', 'https://x.example/pricing')).toBe(true);
    expect(m('exact', '/pricing', 'https://x.example/pricing?utm_source=a')).toBe(true);
    expect(m('exact', '/pricing', '/pricing/')).toBe(false);
    expect(m('exact', '/pricing', '/Pricing')).toBe(false);
    expect(m('exact', '/pricing', '/pricing-old')).toBe(false);
  });
  it('a pattern with a query matches path + query exactly', () => {
    expect(m('exact', '/pricing?plan=pro', '/pricing?plan=pro')).toBe(true);
    expect(m('exact', '/pricing?plan=pro', '/pricing?plan=pro&x=1')).toBe(false);
    expect(m('exact', '/pricing?plan=pro', '/pricing')).toBe(false);
  });
});

describe('prefix', () => {
  it('matches paths starting with the pattern', () => {
    expect(m('prefix', '/blog/', '/blog/')).toBe(true);
    expect(m('prefix', '/blog/', '/blog/a/b?x=1')).toBe(true);
    expect(m('prefix', '/blog/', '/blog')).toBe(false);
    expect(m('prefix', '/blog', '/blogroll')).toBe(true);
    expect(m('prefix', '/', '/anything')).toBe(true);
  });
});

describe('glob', () => {
  it('* is any run except "/"', () => {
    expect(m('glob', '/products/*', '/products/shoe')).toBe(true);
    expect(m('glob', '/products/*', '/products/')).toBe(true);
    expect(m('glob', '/products/*', '/products/a/b')).toBe(false);
    expect(m('glob', '/products/*/reviews', '/products/shoe/reviews')).toBe(true);
    expect(m('glob', '/products/*/reviews', '/products/shoe/x/reviews')).toBe(false);
  });
  it('** is any run including "/"', () => {
    expect(m('glob', '/docs/**', '/docs/a/b/c')).toBe(true);
    expect(m('glob', '/docs/**', '/docs/')).toBe(true);
    expect(m('glob', '/docs/**', '/doc')).toBe(false);
    expect(m('glob', '/**/checkout', '/eu/de/checkout')).toBe(true);
  });
  it('everything else is literal, the whole path must match, the query is ignored', () => {
    expect(m('glob', '/a.b/*', '/axb/c')).toBe(false);
    expect(m('glob', '/a.b/*', '/a.b/c?x=1')).toBe(true);
    expect(m('glob', '/(x)+/*', '/(x)+/y')).toBe(true);
    expect(m('glob', '/shop', '/shop/more')).toBe(false);
  });
});

describe('patternProblem', () => {
  it('accepts documented patterns and refuses the rest', () => {
    expect(patternProblem('exact', '/pricing?plan=pro')).toBeNull();
    expect(patternProblem('glob', '/a/**/b/*')).toBeNull();
    expect(patternProblem('exact', 'pricing')).toMatch(/starts with/);
    expect(patternProblem('prefix', '/a?b')).toMatch(/no query/);
    expect(patternProblem('exact', '/a*')).toMatch(/glob/);
    expect(patternProblem('glob', '/a/***')).toMatch(/three/);
    expect(patternProblem('exact', '/a b')).toMatch(/spaces/);
    expect(patternProblem('exact', '/a#b')).toMatch(/fragment/);
  });
});
