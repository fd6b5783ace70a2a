// The Skills test's TypeScript client (tests/api/skills.rs): the official TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.x in .cache/ts-client, override with TS_SDK_DIR) lists the skills
// through teamgate (`skills/list`, SEP-2640), fetches each by its URI (`skills/get`) and reads every
// file of its manifest with `resources/read`, as a host loading a skill does.
//   node22 tests/interop/ts_skills.mjs --url http://127.0.0.1:PORT/mcp --token TOKEN
// Prints `RESULT {"server": {...}, "listed": {...}, "got": [...], "read": {"<uri>": contents}}` and
// exits 0, or `ERROR <message>`.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
// The extension's methods are not in the SDK's method table: any result, its fields kept.
const { ResultSchema } = await load('types.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token');
if (!url || !token) { console.error('usage: ts_skills.mjs --url URL --token TOKEN'); process.exit(2); }
const fail = (e) => { console.log(`ERROR ${(e?.message ?? String(e)).split('\n')[0]}`); process.exit(1); };
setTimeout(() => fail('timed out after 30 s'), 30000).unref();

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'teamgate-skills-test', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(transport, { timeout: 15000 });
  const server = client.getServerCapabilities();
  if (!server?.extensions?.['io.modelcontextprotocol/skills']) fail('the server does not declare the skills extension');
  const listed = await client.request({ method: 'skills/list', params: {} }, ResultSchema);
  const got = [];
  const read = {};
  for (const skill of listed.skills) {
    got.push(await client.request({ method: 'skills/get', params: { uri: skill.uri } }, ResultSchema));
    for (const file of skill.resources) {
      const { contents } = await client.readResource({ uri: file.uri });
      read[file.uri] = contents[0];
    }
  }
  console.log(`RESULT ${JSON.stringify({ server, listed, got, read })}`);
  await client.close().catch(() => {});
  process.exit(0);
} catch (e) {
  fail(e);
}
