import { describe, expect, it } from 'vitest';
import { MAX_CACHED_SESSIONS, WriterCaches } from '../../src/store/writer-caches.js';
import type { SessionRow } from '../../src/store/profiles.js';

const row = (profile: string): SessionRow => ({ profile_id: profile, visitor_id: null, last_seen: 1, fbclid: null, gclid: null });

function on(): WriterCaches {
  const c = new WriterCaches();
  c.enabled = true;
  return c;
}

describe('WriterCaches sessions', () => {
  it('keeps sessions per site: the same session id of two sites are two entries', () => {
    const c = on();
    c.putSession('site_a', 's1', row('p_a'));
    c.putSession('site_b', 's1', row('p_b'));
    expect(c.session('site_a', 's1')?.profile_id).toBe('p_a');
    expect(c.session('site_b', 's1')?.profile_id).toBe('p_b');
    expect(c.sessionsCached).toBe(2);
    c.putSession('site_a', 's1', row('p_a2')); // replaced, not counted twice
    expect(c.sessionsCached).toBe(2);
    expect(c.session('site_a', 's1')?.profile_id).toBe('p_a2');
    c.dropSession('site_a', 's1');
    c.dropSession('site_a', 's1');
    expect(c.hasSession('site_a', 's1')).toBe(false);
    expect(c.sessionsCached).toBe(1);
  });

  it('answers and keeps nothing while off, and clear() drops every site', () => {
    const c = on();
    c.putSession('site_a', 's1', row('p'));
    c.enabled = false;
    expect(c.session('site_a', 's1')).toBeUndefined();
    c.putSession('site_a', 's2', row('p'));
    expect(c.hasSession('site_a', 's2')).toBe(false);
    expect(c.hasSession('site_a', 's1')).toBe(true);
    c.clear();
    expect(c.hasSession('site_a', 's1')).toBe(false);
    expect(c.sessionsCached).toBe(0);
  });

  it(`keeps at most ${MAX_CACHED_SESSIONS} sessions, dropping the site's oldest, else the oldest of the site cached first`, () => {
    const c = on();
    for (let i = 0; i < MAX_CACHED_SESSIONS - 1; i++) c.putSession('site_a', `a${i}`, row('p'));
    c.putSession('site_b', 'b0', row('p'));
    expect(c.sessionsCached).toBe(MAX_CACHED_SESSIONS);
    c.putSession('site_b', 'b1', row('p')); // site_b's oldest goes
    expect(c.hasSession('site_b', 'b0')).toBe(false);
    expect(c.hasSession('site_b', 'b1')).toBe(true);
    expect(c.hasSession('site_a', 'a0')).toBe(true);
    c.putSession('site_c', 'c0', row('p')); // a site with none yet: the first site's oldest goes
    expect(c.hasSession('site_a', 'a0')).toBe(false);
    expect(c.hasSession('site_a', 'a1')).toBe(true);
    expect(c.hasSession('site_c', 'c0')).toBe(true);
    expect(c.sessionsCached).toBe(MAX_CACHED_SESSIONS);
  });
});
