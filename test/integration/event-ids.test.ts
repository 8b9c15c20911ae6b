import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, cli, createSite, post, startSvc, tempDir, type Svc } from '../helpers/svc.js';
import { callOk, McpClients, mintToken } from '../helpers/mcp-client.js';
import { startReceiver } from '../helpers/receiver.js';

// One form of an event id everywhere: what /api/events answers is what the webhook payload carries and
// what the MCP tools show (they showed 1502 and "1502" for evt_1502). Scores likewise.

let svc: Svc;
let dataDir: string;
let site: string;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const mcp = new McpClients(() => svc.url);

beforeAll(async () => {
  dataDir = tempDir();
  site = createSite(dataDir);
  rx = await startReceiver(() => ({ status: 204 }));
  const add = cli(['webhooks', 'add', '--site', site, '--url', `${rx.url}/hooks`, '--events', 'pageview', '--secret', 'event-ids-secret', '--data', dataDir, '--allow-private-destinations']);
  expect(add.code, add.stderr).toBe(0);
  svc = await startSvc({ dataDir, args: ['--allow-private-destinations'], env: { SVC_WEBHOOK_POLL_MS: '50' } });
});

afterAll(async () => {
  await mcp.closeAll();
  await svc?.stop();
  await rx?.close();
  cleanup(dataDir);
});

describe('event and score ids', () => {
  it('are the evt_/scr_ ids of ingestion in webhook payloads, events_recent and profiles_timeline', async () => {
    const base = { site_id: site, session_id: 'ids-s1', visitor_id: 'ids-v1' };
    const pv = await post(`${svc.url}/api/events`, { ...base, type: 'pageview', url: 'https://shop.example.com/' });
    const click = await post(`${svc.url}/api/events`, { ...base, type: 'click', selector: '#buy' });
    const score = await post(`${svc.url}/api/score`, { ...base, score: 61 });
    const conv = await post(`${svc.url}/api/convert`, { site_id: site, session_id: 'ids-s1', revenue: 12 });
    expect([pv.status, click.status, score.status]).toEqual([201, 201, 201]);
    expect(conv.status).toBeLessThan(300);
    const pageviewId = pv.body.event_id as string;
    const clickId = click.body.event_id as string;
    expect(pageviewId).toMatch(/^evt_\d+$/);
    expect(clickId).toMatch(/^evt_\d+$/);
    expect(score.body.score_id).toMatch(/^scr_\d+$/);

    const [delivery] = await rx.waitFor(1);
    expect(JSON.parse(delivery!.body)).toMatchObject({ event: 'pageview', event_id: pageviewId });

    const client = await mcp.connect(mintToken(dataDir, site, ['--scope', 'read']));
    const recent = await callOk(client, 'events_recent', { type: 'pageview' });
    expect(recent.events.map((e: { id: string }) => e.id)).toEqual([pageviewId]);
    const timeline = await callOk(client, 'profiles_timeline', { by: 'visitor_id', value: 'ids-v1' });
    const ids = Object.fromEntries(
      ['event', 'score', 'conversion'].map((k) => [k, timeline.items.filter((i: { kind: string }) => i.kind === k).map((i: { id: string }) => i.id).sort()]),
    );
    expect(ids).toEqual({ event: [pageviewId, clickId].sort(), score: [score.body.score_id], conversion: [conv.body.conversion_id] });
    // The listing's schema says so too: a string id, not a number.
    const withSchemas = await mcp.connect(mintToken(dataDir, site, ['--scope', 'read']), { query: { output_schemas: '1' } });
    const tool = (await withSchemas.listTools()).tools.find((t) => t.name === 'events_recent')!;
    const item = (tool.outputSchema as { properties: { events: { items: { properties: { id: { type: string } } } } } }).properties.events.items;
    expect(item.properties.id.type).toBe('string');
  });
});
