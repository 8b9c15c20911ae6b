import { describe, expect, it } from 'vitest';
import { Database } from '../../src/store/sqlite-driver.js';
import { binaryOrder } from '../../src/store/profile-read.js';

/**
 * binaryOrder sorts the facts' lists on SQLite as an ORDER BY on text would
 * (BINARY collation): held to SQLite's own comparison over texts that mix
 * ASCII, BMP characters on both sides of the surrogate range, and characters
 * above U+FFFF (where JavaScript's code-unit order differs).
 */
describe('binaryOrder', () => {
  it("orders texts as SQLite's BINARY collation does", () => {
    const db = new Database(':memory:');
    try {
      const sqlite = db.prepare('SELECT (? > ?) - (? < ?) AS c').pluck();
      const alphabet = ['a', 'b', 'Z', '~', '\u00e9', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uff21', '\ufffd', '\u{10000}', '\u{1f600}', '\u{10ffff}'];
      // mulberry32: the same texts on every run.
      let seed = 1;
      const rand = (n: number) => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) % n;
      };
      const text = () => Array.from({ length: rand(4) }, () => alphabet[rand(alphabet.length)]).join('');
      const wrong: string[] = [];
      let jsDiffers = 0;
      for (let i = 0; i < 5000; i++) {
        const a = text();
        const b = i % 5 === 0 ? a + text() : text();
        const want = sqlite.get(a, b, a, b) as number;
        if (Math.sign(binaryOrder(a, b)) !== want) wrong.push(JSON.stringify([a, b]));
        if ((a < b ? -1 : a > b ? 1 : 0) !== want) jsDiffers++;
      }
      expect(wrong).toEqual([]);
      // The sample holds pairs on which JavaScript's own comparison disagrees with SQLite's.
      expect(jsDiffers).toBeGreaterThan(50);
    } finally {
      db.close();
    }
  });
});
