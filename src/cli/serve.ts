import type { Command } from 'commander';
import { configFrom } from './common.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Run every HTTP surface (ingestion, MCP, profile REST API) and the delivery workers')
    .option('--host <host>', 'address to listen on (env SVC_HOST)', undefined)
    .option('--port <port>', 'port; 0 picks a free one (env SVC_PORT, default 8787)')
    .option('--data <dir>', 'data directory (env SVC_DATA_DIR, default ./.svc)')
    .option('--database-url <url>', 'PostgreSQL instead of the embedded SQLite store (env SVC_DATABASE_URL)')
    .option('--allow-private-destinations', 'allow private/loopback webhook destinations (development and tests only)')
    .action(async (opts: { host?: string; port?: string; data?: string; databaseUrl?: string; allowPrivateDestinations?: boolean }) => {
      const config = configFrom({
        host: opts.host,
        port: opts.port,
        dataDir: opts.data,
        databaseUrl: opts.databaseUrl,
        allowPrivateDestinations: opts.allowPrivateDestinations,
      });
      // Loaded on demand: the other commands start faster without the HTTP stack.
      const [{ startServer }, { createLogger }, { INSTANCE_ID }] = await Promise.all([
        import('../server/serve.js'),
        import('../log.js'),
        import('../workers/lane-lease.js'),
      ]);
      const logger = createLogger(config.logLevel);
      const running = await startServer(config, logger);
      // The name this process holds work-lane leases under (lane_leases.holder), on stderr before the ready
      // line, so that stdout stays the one ready line scripts wait for.
      process.stderr.write(`svc instance ${INSTANCE_ID}\n`);
      process.stdout.write(`svc listening on ${running.url}\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'shutting down');
          void running.close().then(resolve);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}
