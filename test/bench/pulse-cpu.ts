/**
 * CPU per GET /api/pulse/v1/profile request of `svc serve` (never part of the pass/fail suite):
 *
 *   node --import ./test/bench/register.mjs test/bench/pulse-cpu.ts [--profiles 300000 --keep]
 *   ... --data DIR                reuse a data dir seeded earlier by --keep (skips seeding)
 *   ... --svc A --svc B           interleaved A/B of two built checkouts (e.g. a worktree of the base build)
 *   ... --cpu-prof DIR            each server runs with node --cpu-prof into DIR
 *   ... --callgrind DIR           each server runs under valgrind --tool=callgrind (dumps into DIR): the
 *                                 measured window's instruction count per request (Ir/request), the same
 *                                 on a busy host as on a quiet one; use small --requests and --warmup
 *   ... --bare                    each round also measures the bare node:http server answering one fixed
 *                                 snapshot (lib/bare-snapshot-server.ts): the issue's ratio is bare/svc CPU
 *                                 (with --callgrind the bare server runs under valgrind too: its Ir/request)
 *
 * What matters on a shared, noisy host is what the server spends, not how fast
 * it answers: each round starts `svc serve` of each checkout in turn (order
 * alternating between rounds), over the same data directory, sends it
 * --warmup unmeasured then --requests measured GETs over --connections
 * keep-alive connections (identifier types in turn over 1,000 random
 * existing values of each, as bench:pulse samples them: the default warm-up
 * goes over each twice, so the window reads profiles whose pages the server
 * holds, as bench:pulse's does after its server warm-up), and reads the server's CPU (user + system, /proc/<pid>/stat) over
 * the measured requests: µs per request. Every answer must be 200 and the
 * sampled profile. The first round also fetches the same sample of profiles
 * from every checkout and compares the response bytes (body, status and
 * headers but X-Request-Id and Date): the output says whether they are
 * identical. Exit status 1 on a wrong answer or differing bytes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { Database } from '../../src/store/sqlite-driver.js';
import { ChildRegistry, processCpuMs, runCommand, spawnServer, stopChild } from './lib/child.js';
import { REPO_ROOT } from './lib/targets.js';
import { intFlag } from './lib/args.js';
import { callgrindArgs, callgrindInstructions } from './lib/callgrind.js';

const API = '/api/pulse/v1';
const BARE = 'bare';
const BARE_SNAPSHOT = fileURLToPath(new URL('./lib/bare-snapshot-server.ts', import.meta.url));
const REGISTER_HREF = pathToFileURL(fileURLToPath(new URL('./register.mjs', import.meta.url))).href;
const LOOKUPS = ['profile_id', 'visitor_id', 'email', 'external_id', 'email_sha256', 'phone_sha256'] as const;
type Lookup = (typeof LOOKUPS)[number];
interface Sample {
  profileId: string;
  kind: Lookup;
  value: string;
}

const { values } = parseArgs({
  options: {
    profiles: { type: 'string' },
    data: { type: 'string' },
    keep: { type: 'boolean', default: false },
    svc: { type: 'string', multiple: true },
    rounds: { type: 'string' },
    requests: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'cpu-prof': { type: 'string' },
    bare: { type: 'boolean', default: false },
    callgrind: { type: 'string' },
  },
  strict: true,
});
const profiles = intFlag('profiles', values.profiles, 300_000, 1, 10_000_000);
const rounds = intFlag('rounds', values.rounds, 3, 1, 50);
const requests = intFlag('requests', values.requests, 20_000, 100, 10_000_000);
const warmup = intFlag('warmup', values.warmup, 12_000, 0, 10_000_000);
const connections = intFlag('connections', values.connections, 4, 1, 64);
const builds = (values.svc ?? [REPO_ROOT]).map((d) => path.resolve(d));
const env: NodeJS.ProcessEnv = { ...process.env, SVC_RATE_LIMIT: 'off', SVC_LOG_LEVEL: 'warn' };
const registry = new ChildRegistry();
const log = (s: string) => process.stdout.write(`${s}\n`);

async function svc(root: string, args: string[], timeoutMs = 600_000): Promise<string> {
  const r = await runCommand(registry, process.execPath, [path.join(root, 'bin', 'svc.js'), ...args], { env, cwd: root, timeoutMs });
  if (r.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.code}: ${r.stderr.trim() || r.stdout.trim()}`);
  return r.stdout;
}

/** The data directory: --data as given (its `bench.json` says site and key), or a new one seeded now. */
async function dataDir(): Promise<{ dir: string; key: string; siteId: string }> {
  if (values.data && existsSync(path.join(values.data, 'bench.json'))) {
    return { dir: values.data, ...(JSON.parse(readFileSync(path.join(values.data, 'bench.json'), 'utf8')) as { key: string; siteId: string }) };
  }
  const dir = values.data ?? mkdtempSync(path.join(os.tmpdir(), 'pulse-cpu-'));
  const root = builds[0]!;
  const siteId = (JSON.parse(await svc(root, ['site', 'create', '--name', 'bench-pulse-cpu', '--data', dir, '--json'])) as { site_id: string }).site_id;
  log(`seeding ${profiles.toLocaleString('en-US')} profiles into ${dir}`);
  await svc(root, ['seed', '--site', siteId, '--profiles', String(profiles), '--seed', '42', '--data', dir, '--json'], 3_600_000);
  const key = (JSON.parse(await svc(root, ['key', 'mint', '--site', siteId, '--scopes', 'profile:read,profile:read:pii,segment:read', '--data', dir, '--json'])) as { key: string }).key;
  writeFileSync(path.join(dir, 'bench.json'), JSON.stringify({ key, siteId }));
  return { dir, key, siteId };
}

/** Random existing identifiers, each identifier type in turn. */
function samples(dir: string, siteId: string, want: number): Sample[] {
  const db = new Database(path.join(dir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    const maxRowid = (db.prepare('SELECT max(rowid) AS m FROM profiles').get() as { m: number | null }).m ?? 0;
    const profile = db.prepare<[number], { id: string; site_id: string; merged_into: string | null }>('SELECT id, site_id, merged_into FROM profiles WHERE rowid = ?');
    const identities = db.prepare<[string], { kind: string; value: string }>('SELECT kind, value FROM identities WHERE profile_id = ?');
    const hashes = db.prepare<[string], { kind: string; hash: string }>('SELECT kind, hash FROM identity_hashes WHERE profile_id = ?');
    const byKind = new Map<Lookup, Sample[]>(LOOKUPS.map((k) => [k, []]));
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let attempt = 0; attempt < want * 50 && LOOKUPS.some((k) => byKind.get(k)!.length < want); attempt++) {
      const row = profile.get(1 + Math.floor(rand() * maxRowid));
      if (!row || row.site_id !== siteId || row.merged_into !== null) continue;
      const add = (kind: Lookup, value: string) => {
        if (byKind.get(kind)!.length < want) byKind.get(kind)!.push({ profileId: row.id, kind, value });
      };
      add('profile_id', row.id);
      for (const i of identities.all(row.id)) {
        if (i.kind === 'visitor') add('visitor_id', i.value);
        else if (i.kind === 'email' || i.kind === 'external_id') add(i.kind, i.value);
      }
      for (const h of hashes.all(row.id)) if (h.kind === 'email_sha256' || h.kind === 'phone_sha256') add(h.kind, h.hash);
    }
    const out: Sample[] = [];
    for (let i = 0; i < want; i++) for (const k of LOOKUPS) if (byKind.get(k)![i]) out.push(byKind.get(k)![i]!);
    return out;
  } finally {
    db.close();
  }
}

/** valgrind's arguments before node's when --callgrind is given (a file per process, threads together). */
const callgrind = (root: string): string[] => callgrindArgs(values.callgrind, path.basename(root));
/** Instructions of process `pid` since its counters were zeroed. */
const instructions = (pid: number): number => callgrindInstructions(values.callgrind!, pid);

const pathOf = (s: Sample) => `${API}/profile?${s.kind}=${encodeURIComponent(s.value)}`;

async function get(pool: Pool, key: string, s: Sample): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const r = await pool.request({ method: 'GET', path: pathOf(s), headers: { authorization: `Bearer ${key}` } });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
}

/** `n` requests over `connections` workers; throws on a wrong answer. */
async function load(pool: Pool, key: string, list: Sample[], start: number, n: number, bare = false): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const s = list[(start + next++) % list.length]!;
      const r = await get(pool, key, s);
      if (r.status !== 200) throw new Error(`status ${r.status}: ${r.body.slice(0, 200)}`);
      if (!bare && !r.body.startsWith(`{"profile_id":"${s.profileId}"`)) throw new Error(`expected ${s.profileId}: ${r.body.slice(0, 100)}`);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
}

/** The bytes that must not change: status, headers but X-Request-Id and Date, body. */
function answerBytes(r: { status: number; headers: Record<string, string | string[] | undefined>; body: string }): string {
  const h = Object.entries(r.headers)
    .filter(([k]) => k !== 'x-request-id' && k !== 'date')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .sort();
  return `${r.status}\n${h.join('\n')}\n\n${r.body}`;
}

async function main(): Promise<number> {
  const { dir, key, siteId } = await dataDir();
  const list = samples(dir, siteId, 1000);
  log(`data ${dir}: ${list.length} sampled identifiers; ${rounds} rounds x ${builds.length} builds, ${warmup} warm-up + ${requests} measured requests, ${connections} connections`);
  const targets = values.bare ? [...builds, BARE] : builds;
  const cpu = new Map<string, number[]>(targets.map((b) => [b, []]));
  // The bare server's body: one snapshot of the sample, as svc answers it.
  let bareBody = '';
  const answers = new Map<string, string[]>();
  let status = 0;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    for (const root of order) {
      const prof = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values['cpu-prof'])}`] : [];
      if (root === BARE && !bareBody) continue;
      const server =
        root === BARE
          ? await spawnServer(registry, {
              name: 'bare-snapshot',
              command: values.callgrind ? 'valgrind' : process.execPath,
              args: [...callgrind(BARE), '--import', REGISTER_HREF, BARE_SNAPSHOT, '--body', bareBody],
              cwd: REPO_ROOT,
              ready: /^bare-snapshot listening on (http:\/\/127\.0\.0\.1:\d+)$/,
              ...(values.callgrind ? { timeoutMs: 600_000 } : {}),
            })
          : await spawnServer(registry, {
              name: `svc ${root}`,
              command: values.callgrind ? 'valgrind' : process.execPath,
              args: [...callgrind(root), ...prof, path.join(root, 'bin', 'svc.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dir],
              env,
              cwd: root,
              ready: /^svc listening on (http:\/\/127\.0\.0\.1:\d+)$/,
              timeoutMs: values.callgrind ? 600_000 : 120_000,
            });
      const pool = new Pool(server.url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
      try {
        if (round === 0 && root !== BARE) {
          if (!bareBody) {
            bareBody = path.join(dir, 'bare-snapshot.json');
            writeFileSync(bareBody, (await get(pool, key, list[0]!)).body);
          }
          const got: string[] = [];
          for (const s of list.slice(0, 300)) got.push(answerBytes(await get(pool, key, s)));
          answers.set(root, got);
        }
        await load(pool, key, list, round * 7919, warmup, root === BARE);
        if (values.callgrind) {
          execFileSync('callgrind_control', ['-z', String(server.child.pid)], { stdio: 'ignore' });
          await load(pool, key, list, round * 7919 + warmup, requests, root === BARE);
          const ir = instructions(server.child.pid!) / requests;
          cpu.get(root)!.push(ir);
          log(`round ${round + 1} ${root}: ${Math.round(ir).toLocaleString('en-US')} instructions/request`);
        } else {
          const before = processCpuMs(server.child.pid)!;
          await load(pool, key, list, round * 7919 + warmup, requests, root === BARE);
          const us = ((processCpuMs(server.child.pid)! - before) * 1000) / requests;
          cpu.get(root)!.push(us);
          log(`round ${round + 1} ${root}: ${us.toFixed(1)} µs CPU/request`);
        }
      } catch (err) {
        log(`round ${round + 1} ${root}: ${(err as Error).message}`);
        status = 1;
      } finally {
        await pool.destroy();
        await stopChild(server.child, 15_000);
      }
    }
  }
  const first = answers.get(builds[0]!);
  for (const root of builds.slice(1)) {
    const other = answers.get(root);
    const diff = first && other ? first.findIndex((a, i) => a !== other[i]) : -2;
    if (diff === -1) log(`answers of ${root}: the same bytes as ${builds[0]} (${first!.length} responses)`);
    else {
      status = 1;
      log(`answers of ${root} DIFFER from ${builds[0]}${diff >= 0 ? `:\n--- ${first![diff]}\n+++ ${other![diff]}` : ''}`);
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  for (const [root, list] of cpu) {
    log(`${root}: median ${median(list)?.toFixed(1)} ${values.callgrind ? 'instructions' : 'µs CPU'}/request (${list.map((x) => x.toFixed(1)).join(', ')})`);
  }
  if (values.bare) {
    const bare = cpu.get(BARE)!;
    for (const root of builds) {
      const ratios = cpu.get(root)!.map((us, i) => (bare[i] ?? NaN) / us);
      log(`${root}: bare/svc ${values.callgrind ? 'instructions' : 'CPU'} per request ${median(ratios)?.toFixed(3)} (per round ${ratios.map((r) => r.toFixed(3)).join(', ')}; target >= 0.3)`);
    }
  }
  if (!values.keep && !values.data) log(`(data directory ${dir} kept only with --keep; removing is left to you: rm -r ${dir})`);
  return status;
}

main()
  .then((code) => {
    registry.killAll();
    process.exitCode = code;
  })
  .catch((err: unknown) => {
    registry.killAll();
    process.stderr.write(`pulse-cpu: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
