/**
 * A baseline of the MCP benchmark: a bare node:http server that reads the
 * whole request body and answers 200 with fixed bytes (a tools/list response
 * svc gave, captured by the benchmark) and that response's Content-Type. Same
 * keep-alive settings as svc. Run as its own process:
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-bytes-server.ts --file BODY --content-type TYPE [--port N]
 * Prints `bare-bytes listening on http://127.0.0.1:PORT` when ready; stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serveUntilSignal } from './serve-bare.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, file: { type: 'string' }, 'content-type': { type: 'string' } } });
if (!values.file || !values['content-type']) {
  process.stderr.write('usage: bare-bytes-server.ts --file BODY --content-type TYPE [--port N]\n');
  process.exit(2);
}
const BODY = readFileSync(values.file);
const TYPE = values['content-type'];

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.on('data', () => undefined);
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': TYPE, 'Content-Length': BODY.length });
    res.end(BODY);
  });
  req.on('error', () => res.destroy());
});

serveUntilSignal(server, 'bare-bytes', Number(values.port));
