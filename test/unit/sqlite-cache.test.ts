import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultCacheMiB, openDatabase } from '../../src/store/db.js';
import { loadConfig } from '../../src/config.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'svc-cache-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('SQLite page cache', () => {
  it('defaults to a quarter of the memory the process may use, within 64 MiB and 1 GiB', () => {
    const constrained = process.constrainedMemory?.() ?? 0;
    const available = constrained > 0 && constrained < os.totalmem() ? constrained : os.totalmem();
    const expected = Math.max(64, Math.min(1024, Math.floor(available / 4 / 1_048_576)));
    expect(defaultCacheMiB()).toBe(expected);
    const db = openDatabase({ dataDir: tmp(), synchronous: 'normal' });
    expect(db.pragma('cache_size', { simple: true })).toBe(-1024 * expected);
    db.close();
  });

  it('takes SVC_SQLITE_CACHE_MB (negative cache_size: KiB)', () => {
    const config = loadConfig({}, { SVC_SQLITE_CACHE_MB: '300' });
    expect(config.sqliteCacheMb).toBe(300);
    const db = openDatabase({ dataDir: tmp(), synchronous: 'normal', cacheMiB: config.sqliteCacheMb! });
    expect(db.pragma('cache_size', { simple: true })).toBe(-300 * 1024);
    db.close();
    expect(loadConfig({}, {}).sqliteCacheMb).toBeUndefined();
  });
});
