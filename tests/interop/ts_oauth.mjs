// The official TypeScript SDK client's OAuth (`authProvider` on StreamableHTTPClientTransport,
// @modelcontextprotocol/sdk 1.32.x from .cache/ts-client; override with TS_SDK_DIR) against teamgate
// as the authorization server (issue 28). Driven by tests/api/oauth_sdk.rs:
//   node22 tests/interop/ts_oauth.mjs --url http://127.0.0.1:PORT/mcp [--cimd CLIENT_ID_URL]
// Discovery from the 401, registration (RFC 7591), or the https Client ID Metadata Document URL
// given (the SDK takes only https ones), then, as a real CLI client does, a loopback listener as
// the redirect URI (RFC 8252: http://127.0.0.1:<its port>/callback): it prints `AUTHORIZE <url>`
// for the browser (the Rust test's headless chromium: sign-in at the identity provider, consent)
// and takes the code from the browser's redirect itself; then token, a tool call, a refresh (the
// access token spoiled, so the SDK refreshes on the 401), revocation (RFC 7009) and the revoked
// grant refused. Prints `ok - name` / `not ok - name: reason`, then `ts-oauth: N passed, M failed`.
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.TS_SDK_DIR ?? path.resolve(here, '../../.cache/ts-client/node_modules/@modelcontextprotocol/sdk');
const load = (p) => import(pathToFileURL(path.join(sdkDir, 'dist/esm', p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { UnauthorizedError } = await load('client/auth.js');

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const url = new URL(opt('--url'));
const cimd = opt('--cimd');

// The redirect URI: a listener on a free loopback port that takes the first callback's code.
let gotCode;
const codeArrived = new Promise((resolve) => { gotCode = resolve; });
const listener = http.createServer((req, res) => {
  const back = new URL(req.url, 'http://127.0.0.1');
  if (back.pathname !== '/callback') { res.writeHead(404).end(); return; }
  const code = back.searchParams.get('code');
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(code ? '<h1>Signed in</h1><p>ts-oauth has the code; you can close this window.</p>'
    : `<h1>Not signed in</h1><p>${back.searchParams.get('error') ?? 'no code'}</p>`);
  gotCode({ code, iss: back.searchParams.get('iss'), error: back.searchParams.get('error') });
});
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const REDIRECT = `http://127.0.0.1:${listener.address().port}/callback`;

let passed = 0, failed = 0;
const ok = (name) => { passed++; console.log(`ok - ${name}`); };
const notOk = (name, why) => { failed++; console.log(`not ok - ${name}: ${why}`); };
const finish = () => { console.log(`ts-oauth: ${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); };
setTimeout(() => { notOk('overall', 'timed out after 100 s'); finish(); }, 100000).unref();

// The provider: everything kept in memory, the browser step handed to the test's browser.
const state = { info: undefined, tokens: undefined, verifier: undefined, authorizations: 0 };
const provider = {
  get redirectUrl() { return REDIRECT; },
  clientMetadataUrl: cimd,
  get clientMetadata() {
    return { client_name: 'ts-oauth', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return state.info; },
  saveClientInformation(info) { state.info = info; },
  tokens() { return state.tokens; },
  saveTokens(tokens) { state.tokens = tokens; },
  redirectToAuthorization(authorizationUrl) { state.authorizations++; console.log(`AUTHORIZE ${authorizationUrl}`); },
  saveCodeVerifier(verifier) { state.verifier = verifier; },
  codeVerifier() { return state.verifier; },
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') state.tokens = undefined;
    if (scope === 'all' || scope === 'client') state.info = undefined;
    if (scope === 'all' || scope === 'verifier') state.verifier = undefined;
  },
};

const connect = async () => {
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: 'ts-oauth', version: '1' });
  await client.connect(transport);
  return { client, transport };
};

// 1. Discovery from the 401, registration, the authorization URL.
let transport;
try {
  await connect();
  notOk('first connection is challenged', 'it connected without a token');
} catch (e) {
  if (e instanceof UnauthorizedError && state.authorizations === 1) ok('first connection is challenged');
  else notOk('first connection is challenged', e?.message ?? String(e));
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
}
if (cimd ? state.info?.client_id === cimd : state.info?.client_id?.startsWith('tgc_')) ok('client identified');
else notOk('client identified', JSON.stringify(state.info));

// 2. The code, from the browser's redirect to the loopback listener (RFC 9207 iss checked); the token.
const back = await codeArrived;
if (back.code && back.iss === url.href.replace(/\/$/, '')) ok('code received at the loopback redirect URI');
else notOk('code received at the loopback redirect URI', JSON.stringify(back));
const code = back.code ?? '';
try {
  await transport.finishAuth(code);
  if (state.tokens?.access_token && state.tokens?.refresh_token) ok('code exchanged for tokens');
  else notOk('code exchanged for tokens', 'no tokens');
} catch (e) { notOk('code exchanged for tokens', e?.message ?? String(e)); }

// 3. A tool call with the access token.
try {
  const { client } = await connect();
  const tools = await client.listTools();
  const result = await client.callTool({ name: 'teamgate_info', arguments: {} });
  if (tools.tools.length > 0 && !result.isError) ok('tool called with the access token');
  else notOk('tool called with the access token', JSON.stringify(result).slice(0, 200));
  await client.close();
} catch (e) { notOk('tool called with the access token', e?.message ?? String(e)); }

// 4. Refresh: a spoiled access token gets a 401, the SDK refreshes (rotating the refresh token).
const oldRefresh = state.tokens?.refresh_token;
state.tokens = { ...state.tokens, access_token: 'spoiled.spoiled.spoiled' };
try {
  const { client } = await connect();
  await client.listTools();
  if (state.tokens.refresh_token && state.tokens.refresh_token !== oldRefresh && state.authorizations === 1) ok('refreshed and rotated');
  else notOk('refreshed and rotated', `authorizations ${state.authorizations}`);
  await client.close();
} catch (e) { notOk('refreshed and rotated', e?.message ?? String(e)); }

// 5. Revocation (RFC 7009), then the grant is refused: no refresh, a new authorization asked.
try {
  const response = await fetch(new URL('/revoke', url), { method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: state.tokens.refresh_token, client_id: state.info.client_id }) });
  if (response.status === 200) ok('revoked'); else notOk('revoked', `status ${response.status}`);
} catch (e) { notOk('revoked', e?.message ?? String(e)); }
try {
  await connect();
  notOk('revoked grant refused', 'it connected');
} catch (e) {
  if (e instanceof UnauthorizedError && state.authorizations === 2) ok('revoked grant refused');
  else notOk('revoked grant refused', `${e?.message ?? e} (authorizations ${state.authorizations})`);
}
finish();
