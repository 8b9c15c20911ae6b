import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import type { Config } from '../config.js';
import type { RunningServer, ServerOptions } from '../server/serve.js';
import { configFrom } from './common.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(SUMMARIES.serve)
    .option('--host <host>', 'address to listen on (env SVC_HOST)', undefined)
    .option('--port <port>', 'port; 0 picks a free one (env SVC_PORT, default 8787)')
    .option('--data <dir>', 'data directory (env SVC_DATA_DIR, default ./.svc)')
    .option('--database-url <url>', 'PostgreSQL instead of the embedded SQLite store (env SVC_DATABASE_URL)')
    .option('--allow-private-destinations', 'allow private/loopback webhook destinations (development and tests only)')
    .option('--metrics-host <host>', 'address of the Prometheus /metrics listener (env SVC_METRICS_HOST, default 127.0.0.1)')
    .option('--metrics-port <port>', 'port of the Prometheus /metrics listener; off unless set; 0 picks a free one (env SVC_METRICS_PORT)')
    .addHelpText(
      'after',
      [
        '',
        'Health: GET /healthz (alive) and GET /readyz (200 when the store answers, migrations fit, the writer flows; 503 otherwise and',
        'from the first SIGTERM on). SIGTERM: /readyz turns 503, requests are still served for SVC_SHUTDOWN_DRAIN_MS (default 5000),',
        'then the server stops accepting, finishes in-flight requests, flushes writes and exits 0. SIGINT, or a second signal, skips the drain.',
      ].join('\n'),
    )
    .action(
      async (opts: {
        host?: string;
        port?: string;
        data?: string;
        databaseUrl?: string;
        allowPrivateDestinations?: boolean;
        metricsHost?: string;
        metricsPort?: string;
      }) => {
      const config = configFrom({
        host: opts.host,
        port: opts.port,
        dataDir: opts.data,
        databaseUrl: opts.databaseUrl,
        allowPrivateDestinations: opts.allowPrivateDestinations,
        metricsHost: opts.metricsHost,
        metricsPort: opts.metricsPort,
      });
      await serveUntilSignal(config);
    },
    );
}

/**
 * Runs the server until SIGTERM (drained) or SIGINT; `announce` prints what the person at the
 * terminal needs beside the ready line (svc demo's page).
 */
export async function serveUntilSignal(config: Config, options: ServerOptions = {}, announce?: (running: RunningServer) => void): Promise<void> {
  // Loaded on demand: the other commands start faster without the HTTP stack.
  const [{ startServer }, { createLogger, logProcessWarnings }] = await Promise.all([import('../server/serve.js'), import('../log.js')]);
  const logger = createLogger(config.logLevel, config.logFormat);
  logProcessWarnings(logger);
  const running = await startServer(config, logger, options);
  // The name this process holds work-lane leases under (lane_leases.holder), on stderr before the ready
  // line, so that stdout stays the one ready line scripts wait for.
  process.stderr.write(`svc instance ${running.instanceId}\n`);
  if (running.metricsUrl !== null) process.stderr.write(`svc metrics on ${running.metricsUrl}\n`);
  announce?.(running);
  process.stdout.write(`svc listening on ${running.url}\n`);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        // A second signal: stop draining and shut down now.
        logger.info({ signal }, 'ending the drain early');
        running.endDrain();
        return;
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      // SIGTERM comes from a supervisor or orchestrator: drain first. SIGINT is a person at the terminal.
      void running.shutdown(signal === 'SIGTERM' ? config.shutdownDrainMs : 0).then(resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
