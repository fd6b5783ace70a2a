// The toolsets test's TypeScript client (tests/api/toolsets.rs): the official TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.x in .cache/ts-client) on one endpoint lists the tools and calls one.
//   node22 tests/interop/ts_toolset.mjs --url http://127.0.0.1:PORT/mcp/NAME --token TOKEN --tool NAME
// Prints `RESULT {"instructions", "tools", "call"}` and exits 0, or `ERROR <message>` and exits 1.
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
if (!url || !token || !tool) { console.error('usage: ts_toolset.mjs --url URL --token TOKEN --tool NAME'); process.exit(2); }

const fail = (e) => { console.log(`ERROR ${(e?.message ?? String(e)).split('\n')[0]}`); process.exit(1); };
setTimeout(() => fail('timed out after 20 s'), 20000).unref();
const REQ = { timeout: 15000 };
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'teamgate-toolsets-test', version: '1.0.0' });
try {
  await client.connect(transport, REQ);
  const listed = await client.listTools(undefined, REQ);
  const call = await client.callTool({ name: tool, arguments: {} }, undefined, REQ);
  console.log(`RESULT ${JSON.stringify({
    instructions: client.getInstructions() ?? null,
    tools: listed.tools.map((t) => t.name),
    call,
  })}`);
  await client.close().catch(() => {});
  process.exit(0);
} catch (e) {
  fail(e);
}
