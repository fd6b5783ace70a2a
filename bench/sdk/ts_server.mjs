// The official TypeScript SDK (@modelcontextprotocol/sdk 1.32.x, from .cache/ts-client; override with
// TS_SDK_DIR) serving the benchmark's echo tool, for bench/run. Loopback only.
//   node bench/sdk/ts_server.mjs PORT
// The SDK's documented shapes: a request with Mcp-Session-Id (or an initialize) goes to that session's
// StreamableHTTPServerTransport + McpServer; any other request is served in the SDK's stateless mode (a
// fresh server and transport per request). JSON replies (enableJsonResponse), as teamgate gives.
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { McpServer } = await load('server/mcp.js');
const { StreamableHTTPServerTransport } = await load('server/streamableHttp.js');

const TOOL = 'test_simple_text';
const TEXT = 'This is a simple text response for testing.';
const port = Number(process.argv[2]);
if (!port) { console.error('usage: ts_server.mjs PORT'); process.exit(2); }

function newServer() {
  const server = new McpServer({ name: 'ts-sdk', version: '0' });
  server.registerTool(TOOL, { description: 'Returns a simple text response' },
    async () => ({ content: [{ type: 'text', text: TEXT }] }));
  return server;
}

const sessions = new Map();
const fail = (res, status, message) => {
  res.writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message } }));
};

http.createServer({ noDelay: true }, async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/mcp') return fail(res, 404, 'not found');
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  let body;
  try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { return fail(res, 400, 'parse error'); }
  try {
    const sid = req.headers['mcp-session-id'];
    if (sid) {
      const transport = sessions.get(sid);
      if (!transport) return fail(res, 404, 'unknown session');
      return await transport.handleRequest(req, res, body);
    }
    if (body?.method === 'initialize') {
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
      await newServer().connect(transport);
      return await transport.handleRequest(req, res, body);
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = newServer();
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) fail(res, 500, String(error));
  }
}).listen(port, '127.0.0.1', () => console.error(`ts-sdk listening on http://127.0.0.1:${port}/mcp`));
