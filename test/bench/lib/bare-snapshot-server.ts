/**
 * The baseline of the profile-read benchmark: a bare node:http server that
 * answers every request with one fixed profile snapshot (the bytes svc
 * answered for a real profile of the data set), 200 application/json. Same
 * keep-alive settings as svc.
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-snapshot-server.ts --body FILE
 * Prints `bare-snapshot listening on http://127.0.0.1:PORT` when ready; stops on SIGTERM/SIGINT.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { serveUntilSignal } from './serve-bare.js';

const { values } = parseArgs({ options: { body: { type: 'string' }, port: { type: 'string', default: '0' } } });
if (!values.body) throw new Error('--body FILE is required');
const BODY = readFileSync(values.body);

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': BODY.length, 'Cache-Control': 'no-store' });
    res.end(BODY);
  });
});

serveUntilSignal(server, 'bare-snapshot', Number(values.port));
