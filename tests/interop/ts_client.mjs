// Interop check with the official TypeScript SDK client (@modelcontextprotocol/sdk 1.32.x, installed by
// scripts/install-test-deps.sh into .cache/ts-client; override with TS_SDK_DIR). Runs on Node 20 or 22.
//   node tests/interop/ts_client.mjs --url http://127.0.0.1:PORT/mcp [--token TOKEN] [--offer-version 2025-06-18]
// Prints `ok - name` / `not ok - name: reason` per check, then `ts-client: N passed, M failed`; exit 1 on failure.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
// The SDK lives outside this file's node_modules lookup path, so import its ESM build by file URL.
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = opt('--url'), token = opt('--token'), offer = opt('--offer-version');
if (!url) { console.error('usage: ts_client.mjs --url URL [--token TOKEN] [--offer-version V]'); process.exit(2); }

const FIXTURE_TOOLS = ['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource',
  'test_multiple_content_types', 'test_tool_with_logging', 'test_tool_with_progress', 'test_error_handling',
  'test_sampling', 'test_elicitation', 'test_elicitation_sep1034_defaults', 'test_elicitation_sep1330_enums'];
const REQ = { timeout: 15000 };   // per-request bound
let passed = 0, failed = 0;
const ok = (name) => { passed++; console.log(`ok - ${name}`); };
const notOk = (name, why) => { failed++; console.log(`not ok - ${name}: ${why}`); };
const finish = () => { console.log(`ts-client: ${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); };
// Whole-run bound: a hung server must not hang CI.
setTimeout(() => { notOk('overall', 'timed out after 60 s'); finish(); }, 60000).unref();

async function check(name, fn) {
  try { const why = await fn(); why ? notOk(name, why) : ok(name); }
  catch (e) { notOk(name, (e?.message ?? String(e)).split('\n')[0]); }
}
const firstText = (r) => r?.content?.find?.((c) => c.type === 'text')?.text;

// GETs that resume a stream with Last-Event-ID, counted for the SEP-1699 check below.
let resumes = 0;
const countingFetch = (input, init) => {
  if ((init?.method ?? 'GET') === 'GET' && new Headers(init?.headers).has('last-event-id')) resumes++;
  return fetch(input, init);
};
const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: countingFetch,
  ...(token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {}),
});
if (offer) {
  // SDK 1.x always offers its LATEST_PROTOCOL_VERSION; rewrite the outgoing initialize to offer `offer`.
  const send = transport.send.bind(transport);
  transport.send = (m, o) => send(m?.method === 'initialize' ? { ...m, params: { ...m.params, protocolVersion: offer } } : m, o);
}
const client = new Client({ name: 'teamgate-interop-ts', version: '1.0.0' });

let connected = false;
await check('connect', async () => { await client.connect(transport, REQ); connected = true; });
if (!connected) finish();
if (offer) await check(`negotiated ${offer}`, () => transport.protocolVersion === offer ? null : `server chose ${transport.protocolVersion}`);

await check('tools/list has fixtures', async () => {
  const { tools } = await client.listTools(undefined, REQ);
  const names = new Set(tools.map((t) => t.name));
  const missing = FIXTURE_TOOLS.filter((n) => !names.has(n));
  const noDesc = tools.filter((t) => !t.description || !t.inputSchema).map((t) => t.name);
  return missing.length ? `missing ${missing.join(', ')}` : noDesc.length ? `no description/inputSchema: ${noDesc.join(', ')}` : null;
});
await check('resources/list', async () => {
  const { resources } = await client.listResources(undefined, REQ);
  return resources.some((r) => r.uri === 'test://static-text') ? null : 'test://static-text not listed';
});
await check('prompts/list', async () => {
  const { prompts } = await client.listPrompts(undefined, REQ);
  return prompts.some((p) => p.name === 'test_prompt_with_arguments') ? null : 'test_prompt_with_arguments not listed';
});
await check('call test_simple_text', async () => {
  const r = await client.callTool({ name: 'test_simple_text' }, undefined, REQ);
  const t = firstText(r);
  return t === 'This is a simple text response for testing.' && !r.isError ? null : `got ${JSON.stringify(r)}`;
});
await check('call test_error_handling isError', async () => {
  const r = await client.callTool({ name: 'test_error_handling', arguments: {} }, undefined, REQ);
  return r.isError === true && firstText(r) ? null : `got ${JSON.stringify(r)}`;
});
await check('read test://static-text', async () => {
  const r = await client.readResource({ uri: 'test://static-text' }, REQ);
  return r.contents?.[0]?.text === 'This is the content of the static text resource.' ? null : `got ${JSON.stringify(r)}`;
});
await check('read test://template/123/data', async () => {
  const r = await client.readResource({ uri: 'test://template/123/data' }, REQ);
  const c = r.contents?.[0];
  return c?.uri === 'test://template/123/data' && c?.text?.includes('123') ? null : `got ${JSON.stringify(r)}`;
});
await check('prompts/get test_prompt_with_arguments', async () => {
  const r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'testValue1', arg2: 'testValue2' } }, REQ);
  const s = JSON.stringify(r.messages ?? []);
  return s.includes('testValue1') && s.includes('testValue2') ? null : `got ${s}`;
});
await check('progress notifications', async () => {
  const seen = [];
  // onprogress makes the SDK attach _meta.progressToken and route notifications/progress for it here.
  const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
    { ...REQ, onprogress: (p) => seen.push(p.progress) });
  if (r.isError) return `tool error ${JSON.stringify(r)}`;
  if (seen.length < 3) return `${seen.length} progress notifications (want >= 3)`;
  return seen.every((v, i) => i === 0 || v >= seen[i - 1]) ? null : `progress decreased: ${seen}`;
});

if ((transport.protocolVersion ?? '') >= '2025-11-25') {
  await check('test_reconnection result arrives through a resumed stream (SEP-1699)', async () => {
    const before = resumes;
    // The server ends the POST stream before the result; the SDK waits the `retry:` delay, then resumes.
    const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, REQ);
    if (firstText(r) !== 'Reconnection test completed successfully.' || r.isError) return `got ${JSON.stringify(r)}`;
    return resumes > before ? null : 'the result came without a GET carrying Last-Event-ID';
  });
}

await client.close().catch(() => {});   // DELETEs the session when one was issued
finish();
