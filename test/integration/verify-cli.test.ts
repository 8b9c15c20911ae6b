import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const secret = 'whsec_test_3f1c';
// Raw bytes that are not valid UTF-8 and end in CRLF: the CLI must hash exactly these bytes.
const body = Buffer.concat([Buffer.from('{"event":"conversion","site_id":"site_a","x":"'), Buffer.from([0xff, 0xfe, 0x00]), Buffer.from('"}\r\n')]);
const signature = createHmac('sha256', secret).update(body).digest('hex');

function svc(args: string[], input?: Buffer, env: Record<string, string> = {}) {
  const { SVC_WEBHOOK_SECRET: _drop, ...parentEnv } = process.env;
  const r = spawnSync(process.execPath, ['bin/svc.js', ...args], {
    cwd: root,
    input: input ?? Buffer.alloc(0),
    env: { ...parentEnv, ...env },
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe('svc verify', () => {
  let dir: string;
  let file: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-verify-'));
    file = join(dir, 'body.bin');
    writeFileSync(file, body);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 and prints "signature valid" for a matching body from --file', () => {
    const r = svc(['verify', '--secret', secret, '--signature', signature, '--file', file]);
    expect(r).toEqual({ code: 0, stdout: 'signature valid\n', stderr: '' });
  });

  it('exits 0 for a matching body from stdin, and accepts upper-case hex', () => {
    expect(svc(['verify', '--secret', secret, '--signature', signature], body)).toEqual({
      code: 0,
      stdout: 'signature valid\n',
      stderr: '',
    });
    expect(svc(['verify', '--secret', secret, '--signature', signature.toUpperCase()], body).code).toBe(0);
  });

  it('takes the secret from SVC_WEBHOOK_SECRET, and prints JSON with --json', () => {
    const r = svc(['verify', '--signature', signature, '--file', file, '--json'], undefined, { SVC_WEBHOOK_SECRET: secret });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ valid: true });
  });

  it('exits 1 and prints "signature does not match" on stderr when body, secret or signature differ', () => {
    const tampered = Buffer.from(body);
    tampered[tampered.length - 1] = 0x20;
    for (const r of [
      svc(['verify', '--secret', secret, '--signature', signature], tampered),
      svc(['verify', '--secret', secret, '--signature', signature], body.subarray(0, -2)),
      svc(['verify', '--secret', `${secret}x`, '--signature', signature, '--file', file]),
      svc(['verify', '--secret', secret, '--signature', `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`, '--file', file]),
    ]) {
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('signature does not match');
    }
  });

  it('exits 2 on usage errors: missing options, unreadable file, malformed signature', () => {
    const cases = [
      { args: ['verify', '--signature', signature, '--file', file], err: /--secret/ },
      { args: ['verify', '--secret', secret, '--file', file], err: /--signature/ },
      { args: ['verify', '--secret', secret, '--signature', signature, '--file', join(dir, 'missing.bin')], err: /cannot read .*ENOENT/ },
      { args: ['verify', '--secret', secret, '--signature', signature, '--file', dir], err: /cannot read .*EISDIR/ },
      { args: ['verify', '--secret', secret, '--signature', 'abc', '--file', file], err: /64 hex characters/ },
      { args: ['verify', '--secret', '', '--signature', signature, '--file', file], err: /--secret must not be empty/ },
      { args: ['verify', '--secret', secret, '--signature', signature, '--file', file, '--bogus'], err: /unknown option '--bogus'/ },
    ];
    for (const c of cases) {
      const r = svc(c.args);
      expect(r.code, c.args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(c.err);
      expect(r.stderr.trimEnd().split('\n'), c.args.join(' ')).toHaveLength(1); // one line, no usage hint or stack
    }
  });
});

describe('svc verify --standard', () => {
  let dir: string;
  let file: string;
  const std = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
  const json = '{"event":"conversion","site_id":"site_a","note":"caf\u00e9"}\n';
  const wh = new Webhook(std);
  const id = 'dlv_std_1';
  const at = (offsetSeconds: number) => Math.floor(Date.now() / 1000) + offsetSeconds;
  const signed = (ts: number) => wh.sign(id, new Date(ts * 1000), json);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-verify-std-'));
    file = join(dir, 'body.json');
    writeFileSync(file, json);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const verify = (args: string[], input?: Buffer) => svc(['verify', '--standard', ...args], input);

  it('exits 0 for what the official library signs, from --file or stdin, with SVC_WEBHOOK_SECRET and --json', () => {
    const ts = at(0);
    expect(verify(['--secret', std, '--id', id, '--timestamp', String(ts), '--signature', signed(ts), '--file', file])).toEqual({ code: 0, stdout: 'signature valid\n', stderr: '' });
    expect(verify(['--secret', std, '--id', id, '--timestamp', String(ts), '--signature', signed(ts)], Buffer.from(json)).code).toBe(0);
    const r = svc(['verify', '--standard', '--id', id, '--timestamp', String(ts), '--signature', `v1a,AAAA ${signed(ts)}`, '--file', file, '--json'], undefined, { SVC_WEBHOOK_SECRET: std });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ valid: true });
  });

  it('accepts a timestamp up to 5 minutes off and exits 1 past that, saying why', () => {
    for (const off of [-290, 290]) {
      expect(verify(['--secret', std, '--id', id, '--timestamp', String(at(off)), '--signature', signed(at(off)), '--file', file]).code).toBe(0);
    }
    for (const off of [-600, 600]) {
      const r = verify(['--secret', std, '--id', id, '--timestamp', String(at(off)), '--signature', signed(at(off)), '--file', file]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('svc: timestamp is more than 5 minutes away from now (replayed or delayed delivery, or a wrong clock)\n');
    }
    const stale = verify(['--secret', std, '--id', id, '--timestamp', String(at(-600)), '--signature', signed(at(-600)), '--file', file, '--json']);
    expect(JSON.parse(stale.stdout)).toEqual({ valid: false, reason: 'timestamp_out_of_tolerance' });
  });

  it('exits 1 when the body, id, secret or signature differ', () => {
    const ts = at(0);
    const other = `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`;
    for (const r of [
      verify(['--secret', std, '--id', id, '--timestamp', String(ts), '--signature', signed(ts)], Buffer.from(`${json} `)),
      verify(['--secret', std, '--id', 'dlv_other', '--timestamp', String(ts), '--signature', signed(ts), '--file', file]),
      verify(['--secret', other, '--id', id, '--timestamp', String(ts), '--signature', signed(ts), '--file', file]),
      verify(['--secret', std, '--id', id, '--timestamp', String(ts), '--signature', new Webhook(other).sign(id, new Date(ts * 1000), json), '--file', file]),
    ]) {
      expect(r).toEqual({ code: 1, stdout: '', stderr: 'svc: signature does not match\n' });
    }
  });

  it('exits 2 on usage errors, in one line', () => {
    const ts = String(at(0));
    const sig = signed(at(0));
    const cases = [
      { args: ['verify', '--standard', '--secret', std, '--timestamp', ts, '--signature', sig, '--file', file], err: /--standard needs --id/ },
      { args: ['verify', '--standard', '--secret', std, '--id', id, '--signature', sig, '--file', file], err: /--standard needs --timestamp/ },
      { args: ['verify', '--standard', '--secret', std, '--id', id, '--timestamp', '2026-11-25T12:00:00Z', '--signature', sig, '--file', file], err: /Unix time in whole seconds/ },
      { args: ['verify', '--standard', '--secret', std, '--id', id, '--timestamp', ts, '--signature', 'deadbeef', '--file', file], err: /space-separated v1,<base64> values/ },
      { args: ['verify', '--standard', '--secret', std, '--id', id, '--timestamp', ts, '--signature', 'v2,AAAA', '--file', file], err: /space-separated v1,<base64> values/ },
      { args: ['verify', '--secret', secret, '--id', id, '--signature', signature, '--file', file], err: /--id and --timestamp go with --standard/ },
    ];
    for (const c of cases) {
      const r = svc(c.args);
      expect(r.code, c.args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(c.err);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
  });
});
