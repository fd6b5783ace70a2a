// The official TypeScript SDK client through nginx (deploy/nginx/teamgate.conf) in front of two
// teamgate replicas: it connects with a personal token, an SSE reply delivers its progress
// notifications before the result (nginx does not buffer: measured by arrival times, with a control
// run through a hop that buffers whole replies, where the same check must fail), and the
// OAuth protected-resource metadata names the public URL as seen through the proxy.
//   node tests/interop/nginx.mjs --url http://127.0.0.1:PORT/mcp --token TOKEN
// Prints `ok - …` / `not ok - …`, then `nginx: N passed, M failed`; exit 1 on failure.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token');
if (!url || !token) { console.error('usage: nginx.mjs --url URL --token TOKEN'); process.exit(2); }

let passed = 0, failed = 0;
const finish = () => { console.log(`nginx: ${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); };
setTimeout(() => { failed++; console.log('not ok - overall: timed out after 60 s'); finish(); }, 60000).unref();
const check = async (name, fn) => {
  try { const note = await fn(); passed++; console.log(`ok - ${name}${note ? ` (${note})` : ''}`); }
  catch (e) { failed++; console.log(`not ok - ${name}: ${e?.message ?? e}`); }
};
const REQ = { timeout: 15000 };

const client = new Client({ name: 'teamgate-nginx-test', version: '1.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url),
  { requestInit: { headers: { authorization: `Bearer ${token}` } } });

await check('the SDK client connects through nginx with a personal token', async () => {
  await client.connect(transport);
  const tools = await client.listTools(undefined, REQ);
  if (!tools.tools.some((t) => t.name === 'test_tool_with_progress')) throw new Error('tool missing');
  return `session ${transport.sessionId?.slice(0, 8)}…`;
});

// The tool reports progress at 0, 50 and 100 ms, then answers; held back by a buffering hop, all
// would arrive together. (nginx 1.22 happened to pass these small chunks on promptly even with
// proxy_buffering on and X-Accel-Buffering ignored, or with gzip on; the control below shows the
// check catches a hop that holds the reply back, whatever the cause.)
const measure = async (c) => {
  const start = performance.now();
  const arrivals = [];
  const result = await c.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
    { ...REQ, onprogress: () => arrivals.push(performance.now() - start) });
  const done = performance.now() - start;
  if (!result.content?.length) throw new Error(JSON.stringify(result));
  if (arrivals.length < 3) throw new Error(`${arrivals.length} progress notifications`);
  const figures = `progress at ${arrivals.map((t) => t.toFixed(0)).join(', ')} ms, result at ${done.toFixed(0)} ms`;
  return { streamed: done - arrivals[0] >= 40 && arrivals[2] - arrivals[0] >= 40, figures };
};

await check('progress notifications arrive before the result (no buffering)', async () => {
  const { streamed, figures } = await measure(client);
  if (!streamed) throw new Error(`they arrived together: ${figures}`);
  return figures;
});

await check('control: the same check fails behind a hop that buffers whole replies', async () => {
  const http = await import('node:http');
  const target = new URL(url);
  const hop = http.createServer((req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method,
      headers: req.headers }, (r) => {
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => { res.writeHead(r.statusCode, r.headers); res.end(Buffer.concat(chunks)); });
    });
    req.pipe(up);
  });
  await new Promise((r) => hop.listen(0, '127.0.0.1', r));
  const via = new Client({ name: 'teamgate-nginx-control', version: '1.0.0' }, { capabilities: {} });
  try {
    await via.connect(new StreamableHTTPClientTransport(
      new URL(`http://127.0.0.1:${hop.address().port}${target.pathname}`),
      { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    const { streamed, figures } = await measure(via);
    if (streamed) throw new Error(`the check did not notice the buffering: ${figures}`);
    return `buffered: ${figures}`;
  } finally {
    await via.close().catch(() => {});
    hop.closeAllConnections?.();
    hop.close();
  }
});

await check('the protected-resource metadata names the public URL', async () => {
  const origin = new URL(url).origin;
  const r = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
  const body = await r.json();
  if (body.resource !== url) throw new Error(`resource ${body.resource}, expected ${url}`);
  const challenge = (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json',
    accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' }))
    .headers.get('www-authenticate') ?? '';
  if (!challenge.includes(`resource_metadata="${origin}/.well-known/oauth-protected-resource`)) {
    throw new Error(`401 challenge: ${challenge}`);
  }
  return body.resource;
});

await client.close().catch(() => {});
finish();
