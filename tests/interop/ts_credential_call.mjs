// The credentials browser test's client (tests/api/credentials_browser.rs): the official TypeScript SDK
// client (@modelcontextprotocol/sdk 1.32.x in .cache/ts-client, override with TS_SDK_DIR) connects with a
// member's token over a 2025-11-25 session, declaring it can open URLs (`elicitation: { url: {} }`), and
// calls one tool. A URL-mode elicitation is printed as `ELICIT <url>`; the client answers
// `{action: "accept"}` once a line `accept` arrives on stdin (any other line declines).
//   node22 tests/interop/ts_credential_call.mjs --url http://127.0.0.1:PORT/mcp --token TOKEN --tool NAME
// Prints `RESULT <the tool result as JSON>` and exits 0, or `ERROR <message>` and exits 1.
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema } = await load('types.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token'), tool = opt('--tool');
if (!url || !token || !tool) { console.error('usage: ts_credential_call.mjs --url URL --token TOKEN --tool NAME'); process.exit(2); }

const fail = (e) => { console.log(`ERROR ${(e?.message ?? String(e)).split('\n')[0]}`); process.exit(1); };
setTimeout(() => fail('timed out after 50 s'), 50000).unref();

// The lines the test writes, one at a time.
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client(
  { name: 'teamgate-credentials-browser-test', version: '1.0.0' },
  { capabilities: { elicitation: { url: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  if (request.params.mode !== 'url') return { action: 'decline' };
  console.log(`ELICIT ${request.params.url}`);
  const line = await lines.next();
  return { action: !line.done && line.value.trim() === 'accept' ? 'accept' : 'decline' };
});
try {
  await client.connect(transport, { timeout: 15000 });
  const result = await client.callTool({ name: tool, arguments: {} }, undefined, { timeout: 45000 });
  console.log(`RESULT ${JSON.stringify(result)}`);
  await client.close().catch(() => {});   // DELETEs the session
  process.exit(0);
} catch (e) {
  fail(e);
}
