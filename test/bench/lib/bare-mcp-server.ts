/**
 * A baseline of the MCP benchmark: a bare MCP server on the SDK line svc uses
 * (v2, @modelcontextprotocol/server, createMcpHandler: a fresh McpServer per
 * request, as the SDK's stateless handler wants) behind node:http, with one
 * trivial tool, `echo`, answering its `text` argument as text and structured
 * content. No authentication, no audit, no storage. Run as its own process:
 *   node --import ./test/bench/register.mjs test/bench/lib/bare-mcp-server.ts [--port N]
 * Prints `bare-mcp listening on http://127.0.0.1:PORT` when ready; stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveUntilSignal } from './serve-bare.js';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });

const input = z.object({ text: z.string().max(200) });
const output = z.object({ text: z.string() });

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'bare', version: '1.0.0' });
  server.registerTool('echo', { description: 'Answers its text.', inputSchema: input, outputSchema: output }, ({ text }) => ({
    content: [{ type: 'text', text }],
    structuredContent: { text },
  }));
  return server;
});

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('error', () => res.destroy());
  req.on('end', () => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? null : Buffer.concat(chunks) });
    void handler.fetch(request).then(
      async (r) => {
        const body = Buffer.from(await r.arrayBuffer());
        const out: Record<string, string> = {};
        r.headers.forEach((v, k) => (out[k] = v));
        out['content-length'] = String(body.length);
        res.writeHead(r.status, out);
        res.end(body);
      },
      () => {
        res.writeHead(500);
        res.end();
      },
    );
  });
});

serveUntilSignal(server, 'bare-mcp', Number(values.port));
