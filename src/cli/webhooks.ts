import type { Command } from 'commander';
import { SUMMARIES } from './summaries.js';
import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { isEventType, EVENT_TYPES, type EventType } from '../webhooks/catalogue.js';
import { destinationDescriptionSchema, destinationSecretSchema, destinationUrlSchema } from '../webhooks/destinations.js';
import { webhookPolicy } from '../webhooks/policy.js';
import { parseDelays } from '../webhooks/schedule.js';
import { signingModeSchema, type SigningMode } from '../outbound/signer.js';
import { createDestination, listDestinations, MAX_GRACE_SECONDS, removeDestination, rotateSecret, updateDestination } from '../domain/webhooks/destinations.js';
import { replayDeliveries, replayTargets, testSend } from '../domain/webhooks/deliveries.js';
import { attemptLog } from '../domain/webhooks/attempts.js';
import { configFrom, print, table, usageError, withData, withStore } from './common.js';

interface Common {
  data?: string;
  json?: boolean;
  allowPrivateDestinations?: boolean;
}

function allowPrivate(opts: Common): boolean {
  return configFrom({ dataDir: opts.data, allowPrivateDestinations: opts.allowPrivateDestinations }).allowPrivateDestinations;
}

/** A calendar date (midnight UTC) or a date-time with `Z` or an offset; Date.parse alone also takes "1" or "2025-02-30". */
const isoInstant = z.union([z.iso.date(), z.iso.datetime({ offset: true }), z.iso.datetime({ offset: true, precision: -1 })]);

function parseTime(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!isoInstant.safeParse(value).success) {
    throw usageError(`${flag}: ${JSON.stringify(value)} is not an ISO 8601 date (2026-11-01) or date-time with Z or an offset (2026-11-01T09:00:00Z)`);
  }
  return Date.parse(value);
}

/** The destination fields given on the command line, by the rules the REST API applies to them. */
function checkFields(opts: { url?: string; secret?: string; description?: string }): void {
  if (opts.url !== undefined && !destinationUrlSchema.safeParse(opts.url).success) throw usageError('--url must be 1 to 2048 characters');
  if (opts.secret !== undefined && !destinationSecretSchema.safeParse(opts.secret).success) throw usageError('--secret must be 8 to 256 characters');
  if (opts.description !== undefined && !destinationDescriptionSchema.safeParse(opts.description).success) {
    throw usageError('--description must be at most 500 characters');
  }
}

function signingMode(value: string | undefined): SigningMode | undefined {
  if (value === undefined) return undefined;
  const r = signingModeSchema.safeParse(value);
  if (!r.success) throw usageError(`--signing-mode must be svc or standard, not ${JSON.stringify(value)}`);
  return r.data;
}

/** A grace period such as 24h, 90m or 0, in whole seconds. */
function graceSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  let ms: number[];
  try {
    ms = value.trim() === '0' ? [0] : parseDelays(value);
  } catch {
    ms = [];
  }
  const seconds = ms.length === 1 ? ms[0]! / 1000 : NaN;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS) {
    throw usageError(`--grace must be a duration of whole seconds from 0 to 7d (24h, 90m, 30s, 0), not ${JSON.stringify(value)}`);
  }
  return seconds;
}

function checkEvent(value: string | undefined): void {
  if (value !== undefined && !isEventType(value)) throw usageError(`--event: unknown event type ${JSON.stringify(value)}; known: ${EVENT_TYPES.join(', ')}`);
}

const healthColumns = ['id', 'at', 'destination_id', 'delivery_id', 'event', 'kind', 'attempt', 'ok', 'status', 'latency_ms', 'error_class', 'message'];

export function registerWebhooks(program: Command): void {
  const wh = program.command('webhooks').description(SUMMARIES.webhooks);

  withData(
    wh
      .command('add')
      .description('Add a destination; prints its id')
      .requiredOption('--site <id>', 'site')
      .requiredOption('--url <url>', 'publicly routable http(s) URL')
      .option('--secret <secret>', 'signing secret (strongly recommended)')
      .requiredOption('--events <list>', 'comma-separated event types, or all')
      .option('--signing-mode <mode>', 'svc (X-SVC-Signature only, the default) or standard (adds the Standard Webhooks headers; needs a whsec_ secret)')
      .option('--description <text>', 'free text')
      .option('--allow-private-destinations', 'allow private/loopback URLs (development and tests only)')
      .option('--json', 'print JSON'),
  ).action(async (opts: Common & { site: string; url: string; secret?: string; events: string; signingMode?: string; description?: string }) => {
    checkFields(opts);
    const mode = signingMode(opts.signingMode);
    const created = await withStore(opts, (s) =>
      createDestination(
        s,
        { siteId: opts.site, url: opts.url, events: opts.events, secret: opts.secret, description: opts.description, signingMode: mode },
        { allowPrivate: allowPrivate(opts) },
      ),
    );
    if (!opts.secret) {
      process.stderr.write(
        'svc: warning: no --secret set; deliveries are signed with the public site_id, which anyone who has seen the install snippet can reproduce. Give it one with `svc webhooks rotate-secret ID`.\n',
      );
    }
    print(opts.json, { id: created.id, destination: created }, () => created.id);
  });

  withData(wh.command('list').description('List destinations').option('--site <id>', 'only this site').option('--json', 'print JSON')).action(
    async (opts: Common & { site?: string }) => {
      const rows = await withStore(opts, (s) => listDestinations(s, { siteId: opts.site }));
      print(opts.json, rows, () => table(rows as unknown as Record<string, unknown>[], ['id', 'site_id', 'url', 'events', 'has_secret', 'signing_mode', 'previous_secret_expires_at', 'enabled', 'disabled_reason', 'created_at']));
    },
  );

  withData(
    wh
      .command('update')
      .description('Change a destination')
      .argument('<id>', 'destination id')
      .option('--url <url>', 'new URL')
      .option('--secret <secret>', 'new signing secret, in effect at once (rotate-secret keeps the old one valid for a while)')
      .option('--remove-secret', 'sign with the site_id again (not recommended; not for standard mode)')
      .option('--signing-mode <mode>', 'svc or standard')
      .option('--events <list>', 'comma-separated event types, or all')
      .option('--enable', 'enable (also clears the failure streak)')
      .option('--disable', 'disable')
      .option('--description <text>', 'free text')
      .option('--allow-private-destinations', 'allow private/loopback URLs (development and tests only)')
      .option('--json', 'print JSON'),
  ).action(
    async (
      id: string,
      opts: Common & {
        url?: string;
        secret?: string;
        removeSecret?: boolean;
        signingMode?: string;
        events?: string;
        enable?: boolean;
        disable?: boolean;
        description?: string;
      },
    ) => {
      if (opts.enable && opts.disable) throw usageError('--enable and --disable exclude each other');
      if (opts.secret !== undefined && opts.removeSecret) throw usageError('--secret and --remove-secret exclude each other');
      checkFields(opts);
      const mode = signingMode(opts.signingMode);
      const updated = await withStore(opts, (s) =>
        updateDestination(
          s,
          { id, owner: {} },
          {
            url: opts.url,
            events: opts.events,
            secret: opts.removeSecret ? null : opts.secret,
            signingMode: mode,
            enabled: opts.enable ? true : opts.disable ? false : undefined,
            description: opts.description,
          },
          { allowPrivate: allowPrivate(opts) },
        ),
      );
      print(opts.json, updated, () => `updated ${updated.id}`);
    },
  );

  withData(
    wh
      .command('rotate-secret')
      .description('Give a destination a new secret, printed once; the old one keeps signing beside it for the grace period')
      .argument('<id>', 'destination id')
      .option('--secret <secret>', 'the new secret (default: whsec_ and 32 random bytes in base64)')
      .option('--grace <duration>', 'how long the old secret keeps signing (24h default, 0 to 7d)', '24h')
      .option('--json', 'print JSON'),
  ).action(async (id: string, opts: Common & { secret?: string; grace: string }) => {
    checkFields(opts);
    const grace = graceSeconds(opts.grace);
    const r = await withStore(opts, (s) => rotateSecret(s, { id, owner: {} }, { secret: opts.secret, gracePeriodSeconds: grace }));
    print(opts.json, r, () => r.secret);
    if (!opts.json) {
      process.stderr.write(
        r.previous_secret_expires_at
          ? `svc: ${id} signs with the new secret; the old one keeps signing beside it until ${r.previous_secret_expires_at} (X-SVC-Signature by the old, X-SVC-Signature-Next by the new). This is the only time the new secret is shown.\n`
          : `svc: ${id} signs with the new secret only, from now on. This is the only time it is shown.\n`,
      );
    }
  });

  withData(wh.command('remove').description('Remove a destination (its log stays)').argument('<id>', 'destination id').option('--json', 'print JSON')).action(
    async (id: string, opts: Common) => {
      const removed = await withStore(opts, (s) => removeDestination(s, id, {}));
      if (!removed) throw new AppError('not_found', `no destination ${id}`);
      print(opts.json, { removed: id }, () => `removed ${id}`);
    },
  );

  withData(
    wh
      .command('deliveries')
      .description('The integration health log: every attempt with status, latency and error class')
      .option('--site <id>', 'only this site')
      .option('--destination <id>', 'only this destination')
      .option('--failed', 'only failed attempts')
      .option('--event <type>', 'only this event type')
      .option('--limit <n>', 'newest N entries', '100')
      .option('--json', 'print JSON'),
  ).action(async (opts: Common & { site?: string; destination?: string; failed?: boolean; event?: string; limit: string }) => {
    checkEvent(opts.event);
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw usageError('--limit must be a whole number from 1 to 100000');
    const out = await withStore(opts, (s) =>
      attemptLog(s, { siteId: opts.site, destinationId: opts.destination, failedOnly: opts.failed, eventType: opts.event, limit, integration: 'webhook' }),
    );
    print(opts.json, out, () => table(out, healthColumns));
  });

  withData(
    wh
      .command('replay')
      .description('Re-send one delivery, or every delivery of a destination matching the filters, with fresh signatures')
      .argument('[delivery]', 'delivery id')
      .option('--destination <id>', 'bulk: deliveries of this destination')
      .option('--since <iso>', 'bulk: created at or after (2026-11-01 or 2026-11-01T09:00:00Z)')
      .option('--until <iso>', 'bulk: created before (a date, or a date-time with Z or an offset)')
      .option('--event <type>', 'bulk: only this event type')
      .option('--failed', 'bulk: only deliveries that failed for good')
      .option('--concurrency <n>', 'deliveries in flight', '8')
      .option('--allow-private-destinations', 'allow private/loopback URLs (development and tests only)')
      .option('--json', 'print a JSON summary'),
  ).action(
    async (
      deliveryId: string | undefined,
      opts: Common & { destination?: string; since?: string; until?: string; event?: string; failed?: boolean; concurrency: string },
    ) => {
      if ((deliveryId === undefined) === (opts.destination === undefined)) {
        throw usageError('name a delivery id, or --destination for a bulk replay (not both)');
      }
      checkEvent(opts.event);
      const concurrency = Number(opts.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw usageError('--concurrency must be 1 to 64');
      const since = parseTime(opts.since, '--since');
      const until = parseTime(opts.until, '--until');
      if (deliveryId !== undefined && (since !== undefined || until !== undefined || opts.event !== undefined || opts.failed)) {
        throw usageError('--since, --until, --event and --failed filter a bulk replay (--destination), not one delivery');
      }
      if (since !== undefined && until !== undefined && since >= until) throw usageError('--since must be before --until');
      const config = configFrom({ dataDir: opts.data, allowPrivateDestinations: opts.allowPrivateDestinations });
      const policy = webhookPolicy(config);
      const [{ createGuardedDispatcher }, { progressReporter }] = await Promise.all([import('../outbound/guard.js'), import('./ui/progress.js')]);
      const summary = await withStore(opts, async (s) => {
        const targets = await replayTargets(
          s,
          deliveryId !== undefined
            ? { deliveryId }
            : { destinationId: opts.destination!, since, until, eventType: opts.event, failedOnly: opts.failed },
        );
        const http = createGuardedDispatcher({ allowPrivate: config.allowPrivateDestinations, connections: concurrency });
        const progress = progressReporter('replaying', targets.length, opts.json ? 'silent' : process.stdout.isTTY ? 'bar' : 'lines');
        await replayDeliveries(s, http, targets, policy, { concurrency, onResult: (ok, line) => progress.tick(ok, line) });
        await http.close();
        return progress.finish();
      });
      if (opts.json) print(true, { total: summary.total, ok: summary.ok, failed: summary.failed }, () => '');
      else process.stdout.write(`replayed ${summary.total}: ${summary.ok} ok, ${summary.failed} failed\n`);
      if (summary.failed > 0) process.exitCode = 1;
    },
  );

  withData(
    wh
      .command('test')
      .description('Send a signed sample event to a destination and print the receiver status')
      .argument('<destination>', 'destination id')
      .option('--event <type>', `event type of the sample (default: the first subscribed; one of ${EVENT_TYPES.length} types)`)
      .option('--allow-private-destinations', 'allow private/loopback URLs (development and tests only)')
      .option('--json', 'print JSON'),
  ).action(async (destinationId: string, opts: Common & { event?: string }) => {
    checkEvent(opts.event);
    const config = configFrom({ dataDir: opts.data, allowPrivateDestinations: opts.allowPrivateDestinations });
    const { createGuardedDispatcher } = await import('../outbound/guard.js');
    const result = await withStore(opts, async (s) => {
      const http = createGuardedDispatcher({ allowPrivate: config.allowPrivateDestinations, connections: 1 });
      try {
        return await testSend(s, http, destinationId, opts.event as EventType | undefined);
      } finally {
        await http.close();
      }
    });
    print(opts.json, result, () =>
      result.ok ? `ok: receiver answered ${result.status} in ${result.latency_ms} ms` : `failed: ${result.status ?? result.error_class} ${result.message ?? ''}`.trim(),
    );
    if (!result.ok) process.exitCode = 1;
  });
}
