import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { configFrom } from './common.js';
import { serveUntilSignal } from './serve.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(SUMMARIES.demo)
    .option('--host <host>', 'address to listen on (env SVC_HOST, default 127.0.0.1)')
    .option('--port <port>', 'port; 0 picks a free one (env SVC_PORT, default 8787)')
    .option('--data <dir>', 'keep the demo in this data directory (default: a throw-away one, deleted on exit)')
    .addHelpText('after', '\nOpen the printed /demo URL in a browser; `svc stats --site <id> --data <dir>` shows what the tag sent (use --data to keep it).')
    .action(async (opts: { host?: string; port?: string; data?: string }) => {
      const throwAway = opts.data === undefined ? mkdtempSync(path.join(tmpdir(), 'svc-demo-')) : null;
      const config = configFrom({ host: opts.host, port: opts.port, dataDir: opts.data ?? throwAway });
      try {
        const [{ openConfiguredStore }, { seedDemo }, { demoPages }] = await Promise.all([
          import('../store/open.js'),
          import('../demo/seed.js'),
          import('../demo/page.js'),
        ]);
        const store = await openConfiguredStore(config);
        const demo = await seedDemo(store).finally(() => store.close());
        await serveUntilSignal(config, { pages: demoPages(demo.siteId) }, (running) => {
          process.stderr.write(`svc demo site ${demo.siteId} (data in ${config.dataDir}${throwAway ? ', deleted on exit' : ''})\n`);
          process.stderr.write(`svc demo shop on ${running.url}/demo\n`);
        });
      } finally {
        if (throwAway) rmSync(throwAway, { recursive: true, force: true });
      }
    });
}
