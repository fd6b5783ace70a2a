// The official TypeScript SDK client against an upstream MCP server behind teamgate (issue 26): the
// everything server, configured by scripts/interop.sh as upstream `everything` (tools `everything_*`).
//   node tests/interop/ts_upstream.mjs --url URL --token TOKEN --narrow NARROW_TOKEN --config FILE --add TOOL
// TOKEN may call every tool; NARROW_TOKEN only `everything_echo`. FILE is the running teamgate's
// configuration: the list_changed check adds TOOL to the upstream's `tools.include` there (hot reload).
// Prints `ok - name` / `not ok - name: reason`, then `ts-upstream: N passed, M failed`; exit 1 on failure.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema, ToolListChangedNotificationSchema } = await load('types.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const [url, token, narrow, config, add] = ['--url', '--token', '--narrow', '--config', '--add'].map(opt);
if (!url || !token || !narrow || !config || !add) {
  console.error('usage: ts_upstream.mjs --url URL --token T --narrow T --config FILE --add TOOL'); process.exit(2);
}
const REQ = { timeout: 20000 };
let passed = 0, failed = 0;
const ok = (name) => { passed++; console.log(`ok - ${name}`); };
const notOk = (name, why) => { failed++; console.log(`not ok - ${name}: ${why}`); };
const finish = () => { console.log(`ts-upstream: ${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); };
setTimeout(() => { notOk('overall', 'timed out after 120 s'); finish(); }, 120000).unref();
async function check(name, fn) {
  try { const why = await fn(); why ? notOk(name, why) : ok(name); }
  catch (e) { notOk(name, (e?.message ?? String(e)).split('\n')[0]); }
}
const texts = (r) => (r?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Every HTTP answer's status and WWW-Authenticate, for the scope check.
const answers = [];
const recording = async (input, init) => {
  const response = await fetch(input, init);
  answers.push({ status: response.status, challenge: response.headers.get('www-authenticate') ?? '' });
  return response;
};
async function connect(bearer, capabilities) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recording, requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: 'teamgate-interop-ts-upstream', version: '1.0.0' }, { capabilities });
  await client.connect(transport, REQ);
  return client;
}

const elicited = [];
const client = await connect(token, { elicitation: {} });
const changes = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes.push(Date.now()); });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params.message);
  return { action: 'accept', content: { name: 'TypeScript' } };
});

// The upstream connects in the background; wait (bounded) for its tools.
async function names(c) { return (await c.listTools(undefined, REQ)).tools.map((t) => t.name); }
for (let i = 0; i < 100 && !(await names(client)).includes('everything_echo'); i++) await sleep(200);

await check('tools/list has the upstream tools', async () => {
  const listed = await names(client);
  const want = ['everything_echo', 'everything_trigger-long-running-operation', 'everything_trigger-elicitation-request'];
  const missing = want.filter((n) => !listed.includes(n));
  return missing.length ? `missing ${missing}` : null;
});
await check('call everything_echo', async () => {
  const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'through teamgate' } }, undefined, REQ);
  return texts(r).includes('through teamgate') && !r.isError ? null : `got ${JSON.stringify(r)}`;
});
await check('upstream progress reaches the caller', async () => {
  const seen = [];
  const r = await client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
    undefined, { ...REQ, onprogress: (p) => seen.push(p.progress) });
  if (r.isError) return `tool error ${JSON.stringify(r)}`;
  return seen.length >= 3 && seen.every((v, i) => i === 0 || v > seen[i - 1]) ? null : `progress ${seen}`;
});
await check("the upstream's elicitation is answered by this client", async () => {
  const r = await client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} }, undefined, REQ);
  if (r.isError || !texts(r).includes('"name": "TypeScript"')) return `got ${texts(r).slice(0, 300)}`;
  return elicited.length === 1 ? null : `asked ${elicited.length} times`;
});
await check('a cancelled upstream call ends at once and reports nothing more', async () => {
  const controller = new AbortController();
  const seen = [];
  const started = Date.now();
  const call = client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 20, steps: 20 } },
    undefined, { ...REQ, signal: controller.signal, onprogress: (p) => seen.push(p.progress) });
  while (seen.length < 2 && Date.now() - started < 10000) await sleep(50);
  controller.abort('enough');
  const outcome = await call.then(() => 'completed', (e) => `rejected: ${e?.message ?? e}`);
  const at = seen.length;
  await sleep(2500);   // the operation reports each second; a cancelled one reaches nobody
  if (!outcome.startsWith('rejected')) return `call ${outcome}`;
  if (Date.now() - started > 15000) return 'the call did not end early';
  // A plain call right after shows the upstream and teamgate are free.
  const r = await client.callTool({ name: 'everything_echo', arguments: { message: 'after' } }, undefined, REQ);
  return seen.length === at && texts(r).includes('after') ? null : `progress after cancel: ${seen.slice(at)}`;
});
await check('the upstream saw the cancellation (waiter_cancelled counts it)', async () => {
  const count = async () => Number(texts(await client.callTool({ name: 'waiter_cancelled', arguments: {} }, undefined, REQ)));
  for (let i = 0; i < 100 && !(await names(client)).includes('waiter_wait'); i++) await sleep(200);
  const before = await count();
  const controller = new AbortController();
  const call = client.callTool({ name: 'waiter_wait', arguments: { seconds: 30 } }, undefined, { ...REQ, signal: controller.signal });
  await sleep(1000);
  controller.abort('enough');
  const outcome = await call.then(() => 'completed', () => 'rejected');
  if (outcome !== 'rejected') return `call ${outcome}`;
  for (let i = 0; i < 50; i++) { if ((await count()) === before + 1) return null; await sleep(100); }
  return `the upstream counted ${await count()} cancellations, ${before} before`;
});

await check('a narrow token lists only its tool and is refused the others (403 insufficient_scope)', async () => {
  const small = await connect(narrow, {});
  try {
    const listed = (await names(small)).filter((n) => n.startsWith('everything_'));
    if (listed.join() !== 'everything_echo') return `listed ${listed}`;
    const before = answers.length;
    const outcome = await small.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 0, steps: 1 } }, undefined, REQ)
      .then((r) => `answered ${JSON.stringify(r)}`, () => 'refused');
    const refusal = answers.slice(before).find((a) => a.status === 403);
    if (outcome !== 'refused' || !refusal) return `${outcome}; statuses ${answers.slice(before).map((a) => a.status)}`;
    return refusal.challenge.includes('insufficient_scope') ? null : `challenge ${refusal.challenge}`;
  } finally { await small.close().catch(() => {}); }
});

await check(`list_changed when the upstream's tools change (adds everything_${add})`, async () => {
  const before = changes.length;
  const text = readFileSync(config, 'utf8');
  writeFileSync(config, text.replace('include = [', `include = ["${add}", `));
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    if (changes.length > before && (await names(client)).includes(`everything_${add}`)) return null;
    await sleep(250);
  }
  return changes.length > before ? `everything_${add} not listed` : 'no notifications/tools/list_changed';
});

await client.close().catch(() => {});
finish();
