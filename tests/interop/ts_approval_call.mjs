// The approvals browser test's client (tests/api/approvals_browser.rs): the official TypeScript SDK
// client (@modelcontextprotocol/sdk 1.32.x in .cache/ts-client, override with TS_SDK_DIR) connects with a
// member's token over a 2025-11-25 session and calls one tool, asking for progress, and waits (up to
// 110 s, the timer reset by each progress notification) while the call is parked for approval.
//   node22 tests/interop/ts_approval_call.mjs --url http://127.0.0.1:PORT/mcp --token TOKEN --tool NAME --args JSON
// Prints `PROGRESS <message>` for each progress notification, then `RESULT <the tool result as JSON>`
// and exits 0, or `ERROR <message>` and exits 1.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token'), tool = opt('--tool');
if (!url || !token || !tool) { console.error('usage: ts_approval_call.mjs --url URL --token TOKEN --tool NAME --args JSON'); process.exit(2); }
const toolArgs = JSON.parse(opt('--args') ?? '{}');

const fail = (e) => { console.log(`ERROR ${(e?.message ?? String(e)).split('\n')[0]}`); process.exit(1); };
setTimeout(() => fail('timed out after 110 s'), 110000).unref();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'teamgate-approvals-browser-test', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(transport, { timeout: 15000 });
  const result = await client.callTool({ name: tool, arguments: toolArgs }, undefined, {
    timeout: 30000,
    resetTimeoutOnProgress: true,
    maxTotalTimeout: 100000,
    onprogress: (p) => console.log(`PROGRESS ${p.message ?? ''}`),
  });
  console.log(`RESULT ${JSON.stringify(result)}`);
  await client.close().catch(() => {});   // DELETEs the session
  process.exit(0);
} catch (e) {
  fail(e);
}
