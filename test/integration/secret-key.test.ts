import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanup, ROOT, tempDir } from '../helpers/svc.js';

const BOX = path.join(ROOT, 'dist/store/secret-box.js');

/** Starts `n` node processes at once, each creating (or reading) the data directory's key; their fingerprints or errors. */
function together(dir: string, n: number): Promise<string[]> {
  const script = `import('${BOX}').then((m) => process.stdout.write(m.SecretBox.forDataDir(process.argv[1], '').fingerprint()), (e) => process.stdout.write('error: ' + e.message))`;
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<string>((resolve) => {
          const p = spawn(process.execPath, ['-e', script, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          p.stdout.on('data', (c: Buffer) => (out += c.toString()));
          p.stderr.on('data', (c: Buffer) => (out += c.toString()));
          p.on('close', () => resolve(out));
        }),
    ),
  );
}

describe('the data directory key (secret.key)', () => {
  it('processes creating it at once all read the one complete key that won; it is 0600 and nothing else is left', async () => {
    for (let round = 0; round < 4; round++) {
      const dir = tempDir();
      try {
        const prints = await together(dir, 6);
        expect(prints.filter((p) => !/^[0-9a-f]{32}$/.test(p))).toEqual([]);
        expect(new Set(prints).size).toBe(1);
        expect(Buffer.from(readFileSync(path.join(dir, 'secret.key'), 'utf8').trim(), 'base64')).toHaveLength(32);
        expect(statSync(path.join(dir, 'secret.key')).mode & 0o777).toBe(0o600);
        expect(readdirSync(dir)).toEqual(['secret.key']);
      } finally {
        cleanup(dir);
      }
    }
  });

  it('keeps an existing key, and a temporary file left by a crashed process changes nothing', async () => {
    const dir = tempDir();
    try {
      const key = Buffer.alloc(32, 7).toString('base64');
      writeFileSync(path.join(dir, 'secret.key'), key, { mode: 0o600 });
      writeFileSync(path.join(dir, 'secret.key.999.abcdef.tmp'), Buffer.alloc(32, 9).toString('base64'), { mode: 0o600 });
      const prints = await together(dir, 2);
      expect(prints[0]).toMatch(/^[0-9a-f]{32}$/);
      expect(prints[1]).toBe(prints[0]);
      expect(readFileSync(path.join(dir, 'secret.key'), 'utf8')).toBe(key);
    } finally {
      cleanup(dir);
    }
  });
});
