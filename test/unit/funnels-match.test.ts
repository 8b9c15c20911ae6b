import { describe, expect, it } from 'vitest';
import { matchesPage } from '../../src/domain/funnels/match.js';
import { progress } from '../../src/domain/funnels/scan.js';
import { normalizeSteps, type FunnelStep } from '../../src/domain/funnels/schema.js';

describe('page patterns', () => {
  it('exact compares the path, or path + query when the pattern has one', () => {
    expect(matchesPage('exact', '/checkout', 'https://shop.example/checkout?utm=x#top')).toBe(true);
    expect(matchesPage('exact', '/checkout', '/checkout/')).toBe(false);
    expect(matchesPage('exact', '/checkout', '/checkout/shipping')).toBe(false);
    expect(matchesPage('exact', '/search?q=shoes', '/search?q=shoes')).toBe(true);
    expect(matchesPage('exact', '/search?q=shoes', '/search?q=hats')).toBe(false);
  });

  it('prefix compares the start of the path', () => {
    expect(matchesPage('prefix', '/checkout', '/checkout/shipping')).toBe(true);
    expect(matchesPage('prefix', '/checkout', 'https://shop.example/cart')).toBe(false);
  });

  it('glob: * stays within a segment, ** crosses segments, other characters are literal', () => {
    expect(matchesPage('glob', '/products/*', '/products/shoe-1?ref=x')).toBe(true);
    expect(matchesPage('glob', '/products/*', '/products/a/b')).toBe(false);
    expect(matchesPage('glob', '/products/**', '/products/a/b')).toBe(true);
    expect(matchesPage('glob', '/p.html', '/pxhtml')).toBe(false);
    expect(matchesPage('glob', '/*/reviews', '/shoe/reviews')).toBe(true);
  });

  it('never matches a value that is not a URL or a path', () => {
    expect(matchesPage('prefix', '/', 'not a url')).toBe(false);
  });
});

describe('funnel progress within a session', () => {
  const steps: FunnelStep[] = [
    { key: 'product', label: 'Product', kind: 'page', match: 'glob', pattern: '/products/*' },
    { key: 'cart', label: 'Cart', kind: 'event', event_type: 'add_to_cart' },
    { key: 'checkout', label: 'Checkout', kind: 'page', match: 'exact', pattern: '/checkout' },
  ];
  const pv = (url: string) => ({ type: 'pageview', url });
  const ev = (type: string) => ({ type, url: null });

  it('counts only steps done in order', () => {
    expect(progress(steps, [pv('/products/a'), ev('add_to_cart'), pv('/checkout')])).toBe(3);
    expect(progress(steps, [pv('/checkout'), pv('/products/a'), ev('add_to_cart')])).toBe(2);
    expect(progress(steps, [ev('add_to_cart'), pv('/products/a'), pv('/checkout')])).toBe(1);
    expect(progress(steps, [pv('/home'), ev('click')])).toBe(0);
    expect(progress(steps, [])).toBe(0);
  });

  it('allows other events in between and repeated steps', () => {
    expect(progress(steps, [pv('/products/a'), pv('/products/b'), ev('click'), ev('add_to_cart'), pv('/about'), pv('/checkout')])).toBe(3);
  });
});

describe('step keys', () => {
  it('defaults keys and labels and refuses duplicates', () => {
    const r = normalizeSteps([
      { kind: 'page', match: 'prefix', pattern: '/a' },
      { kind: 'event', event_type: 'signup' },
    ]);
    expect(r).toEqual({
      ok: true,
      steps: [
        { key: 'step_1', label: '/a', kind: 'page', match: 'prefix', pattern: '/a' },
        { key: 'step_2', label: 'signup', kind: 'event', event_type: 'signup' },
      ],
    });
    const dup = normalizeSteps([
      { kind: 'event', event_type: 'a', key: 'x' },
      { kind: 'event', event_type: 'b', key: 'x' },
    ]);
    expect(dup.ok).toBe(false);
  });
});
