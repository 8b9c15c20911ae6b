import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema } from '../../src/config.js';
import { ROOT } from '../helpers/svc.js';

/**
 * The deploy recipe, checked without a container engine (none on our machines):
 * dockerfilelint over the Dockerfile, and the essentials of the Dockerfile, the
 * compose file and the systemd unit read as text.
 */
const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');

/** Dockerfile instructions (continuation lines joined, comments dropped), split into stages at FROM. */
function stages(text: string): { from: string; lines: string[] }[] {
  const joined = text.replace(/\\\n\s*/g, ' ');
  const instructions = joined.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const out: { from: string; lines: string[] }[] = [];
  for (const line of instructions) {
    if (/^FROM\s/i.test(line)) out.push({ from: line, lines: [] });
    else out.at(-1)!.lines.push(line);
  }
  return out;
}

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const all = stages(text);
  const final = all.at(-1)!;

  it('passes dockerfilelint', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/dockerfilelint/bin/dockerfilelint'), '-o', 'json', path.join(ROOT, 'Dockerfile')], {
      encoding: 'utf8',
    });
    const report = JSON.parse(r.stdout) as { files: { issues_count: number; issues: unknown[] }[]; totalIssues: number };
    expect(report.files[0]!.issues).toEqual([]);
    expect(r.status).toBe(0);
  });

  it('is multi-stage on base images pinned to an exact version', () => {
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const s of all) {
      const image = s.from.split(/\s+/)[1]!;
      // name:1.2.3[-variant] or name@sha256:…; never a floating tag such as latest, 20 or lts.
      expect(image, s.from).toMatch(/(@sha256:[0-9a-f]{64}$)|(:\d+\.\d+\.\d+(-[a-z0-9.-]+)?$)/);
    }
  });

  it('runs as a non-root user, checks /readyz, and stops with SIGTERM', () => {
    const user = final.lines.filter((l) => /^USER\s/i.test(l)).at(-1);
    expect(user).toBeDefined();
    expect(user!.split(/\s+/)[1]).not.toMatch(/^(root|0)(:|$)/);
    const health = final.lines.find((l) => /^HEALTHCHECK\s/i.test(l));
    expect(health).toMatch(/\/readyz/);
    expect(health).toMatch(/--interval=\d+s/);
    expect(final.lines).toContain('STOPSIGNAL SIGTERM');
    expect(final.lines.some((l) => /^ENTRYPOINT \["node", "bin\/svc\.js"\]$/.test(l))).toBe(true);
    // The runtime image carries no compiler and no sources.
    expect(final.lines.join('\n')).not.toMatch(/g\+\+|COPY src /);
  });
});

describe('deploy/compose.yaml', () => {
  const compose = parse(read('deploy/compose.yaml')) as { services: Record<string, any> };
  const svcs = Object.entries(compose.services).filter(([, s]) => s.build?.dockerfile === 'Dockerfile');

  it('runs two svc instances on one PostgreSQL with one secret key, behind a proxy that checks /readyz', () => {
    expect(svcs.map(([n]) => n).sort()).toEqual(['svc-a', 'svc-b']);
    const pgService = Object.entries(compose.services).filter(([, s]) => String(s.image ?? '').startsWith('postgres:'));
    expect(pgService).toHaveLength(1);
    expect(pgService[0]![1].image).toMatch(/^postgres:\d+\.\d+/);
    for (const [, s] of svcs) {
      expect(s.environment.SVC_DATABASE_URL).toMatch(/^postgres:\/\/svc:.*@postgres:5432\/svc/);
      expect(s.env_file).toBe('svc.env');
      expect(s.depends_on.postgres.condition).toBe('service_healthy');
      expect(s.environment.SVC_TRUST_PROXY).toBe('1');
      expect(s.stop_grace_period).toMatch(/^\d+s$/);
      expect(Number.parseInt(s.stop_grace_period, 10) * 1000).toBeGreaterThan(configSchema.shape.shutdownDrainMs.parse(undefined));
      // The metrics port stays on the internal network.
      expect(s.ports).toBeUndefined();
    }
    const env = read('deploy/svc.env.example');
    expect(env).toMatch(/^SVC_SECRET_KEY=/m);
    const caddy = read('deploy/Caddyfile');
    expect(caddy).toMatch(/reverse_proxy svc-a:8787 svc-b:8787/);
    expect(caddy).toMatch(/health_uri \/readyz/);
    expect(compose.services.proxy.volumes).toContain('./Caddyfile:/etc/caddy/Caddyfile:ro');
  });
});

describe('deploy/svc.service', () => {
  it('runs svc serve as an unprivileged user, stopping with SIGTERM after more than the drain delay', () => {
    const unit = read('deploy/svc.service');
    const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1];
    expect(value('User')).toBe('svc');
    expect(value('ExecStart')).toMatch(/bin\/svc\.js serve$/);
    expect(value('KillSignal')).toBe('SIGTERM');
    expect(Number(value('TimeoutStopSec')) * 1000).toBeGreaterThan(configSchema.shape.shutdownDrainMs.parse(undefined));
    expect(value('StateDirectory')).toBe('svc');
    expect(unit).toMatch(/^Environment=SVC_DATA_DIR=\/var\/lib\/svc$/m);
  });
});
