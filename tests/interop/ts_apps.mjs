// The MCP Apps test's TypeScript client (tests/api/apps.rs): the official TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.x in .cache/ts-client, override with TS_SDK_DIR) lists the tools
// through teamgate, reads the UI page the first tool names (_meta.ui.resourceUri) and calls the
// app-only tool, as a host's page would.
//   node22 tests/interop/ts_apps.mjs --url http://127.0.0.1:PORT/mcp --token TOKEN --app-tool NAME
// Prints `RESULT {"tools": [...], "page": {...}, "call": {...}}` and exits 0, or `ERROR <message>`.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token'), appTool = opt('--app-tool');
if (!url || !token || !appTool) { console.error('usage: ts_apps.mjs --url URL --token TOKEN --app-tool NAME'); process.exit(2); }
const fail = (e) => { console.log(`ERROR ${(e?.message ?? String(e)).split('\n')[0]}`); process.exit(1); };
setTimeout(() => fail('timed out after 30 s'), 30000).unref();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
// A host that renders MCP Apps declares the extension with the MIME types it shows.
const client = new Client({ name: 'teamgate-apps-test', version: '1.0.0' }, {
  capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } },
});
try {
  await client.connect(transport, { timeout: 15000 });
  const { tools } = await client.listTools();
  const uri = tools.find((t) => t._meta?.ui?.resourceUri)?._meta.ui.resourceUri;
  if (!uri) fail('no tool names a UI');
  const page = await client.readResource({ uri });
  const call = await client.callTool({ name: appTool, arguments: {} });
  console.log(`RESULT ${JSON.stringify({ tools, page, call, server: client.getServerCapabilities() })}`);
  await client.close().catch(() => {});
  process.exit(0);
} catch (e) {
  fail(e);
}
