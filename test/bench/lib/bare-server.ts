/**
 * The baseline of the ingestion benchmark: a bare node:http server that reads
 * the whole request body and answers 202 {"ok":true}, storing nothing. Same
 * keep-alive settings as svc. Run as its own process:
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-server.ts [--port N]
 * Prints `bare listening on http://127.0.0.1:PORT` when ready; stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serveUntilSignal } from './serve-bare.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
const port = Number(values.port);
const RESPONSE = Buffer.from('{"ok":true}');

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
  });
  req.on('end', () => {
    res.writeHead(202, { 'Content-Type': 'application/json', 'Content-Length': RESPONSE.length, 'X-Body-Bytes': String(size) });
    res.end(RESPONSE);
  });
  req.on('error', () => res.destroy());
});

serveUntilSignal(server, 'bare', port);
