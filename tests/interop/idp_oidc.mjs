// The OpenID provider of the portal tests: the certified `oidc-provider` (npm, pinned in
// tests/interop/deps/oidc-provider, installed by scripts/install-test-deps.sh into .cache/oidc-provider)
// on 127.0.0.1:0, run with Node 22.
//   node22 tests/interop/idp_oidc.mjs --redirect http://127.0.0.1:PORT/portal/callback
// Prints `PORT <port>` once listening. Client `teamgate` (secret `portal-test-secret`, code + PKCE).
// For a person trying the portal locally (scripts/dev-idp does this): --port N listens on a fixed
// port and --stay keeps running after stdin closes (Ctrl-C ends it), e.g.
//   node22 tests/interop/idp_oidc.mjs --port 5556 --stay --redirect http://127.0.0.1:8080/portal/callback
// Accounts (any password, through the provider's own login form, devInteractions):
//   ann (group dev), bob (group ops), cat (group admins), dan (group guests, mapped to no scope).
// --upstream-oauth SECONDS: also the authorization server of an upstream teamgate connects members
// to (tests/api/upstream_oauth.rs): dynamic registration (RFC 7591), revocation (RFC 7009), refresh
// tokens for clients allowed the refresh_token grant, and RFC 8707 resource indicators: an access
// token for a resource is a JWT (audience: the resource, scope `mcp`) living SECONDS. A member
// consents to such a client on the provider's own consent page.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.env.OIDC_PROVIDER_DIR ?? path.resolve(here, '../../.cache/oidc-provider/node_modules/oidc-provider');
const { default: Provider } = await import(pathToFileURL(path.join(dir, 'lib/index.js')).href);

const args = process.argv.slice(2);
const opt = (name) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
const redirect = opt('--redirect');
const port = Number(opt('--port') ?? 0);
const stay = args.includes('--stay');
if (!redirect || !Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: idp_oidc.mjs --redirect URL [--port N] [--stay] [--upstream-oauth SECONDS]');
  process.exit(2);
}

const upstreamOauth = opt('--upstream-oauth');
const extra = upstreamOauth ? {
  ttl: { AccessToken: Number(upstreamOauth) },
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
} : {};
const resourceIndicators = {
  enabled: true,
  useGrantedResource: () => true,
  getResourceServerInfo: (ctx, resource) => ({
    scope: 'mcp', audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: Number(upstreamOauth),
  }),
};

const ACCOUNTS = { ann: ['dev'], bob: ['ops'], cat: ['admins'], dan: ['guests'] };

const server = http.createServer();
server.on('error', (err) => { console.error(`idp: cannot listen on 127.0.0.1:${port}: ${err.message}`); process.exit(1); });
server.listen(port, '127.0.0.1', () => {
  const { port } = server.address();
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [{
      client_id: 'teamgate', client_secret: 'portal-test-secret', redirect_uris: [redirect],
      grant_types: ['authorization_code'], response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    async findAccount(ctx, id) {
      if (!ACCOUNTS[id]) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, preferred_username: id, groups: ACCOUNTS[id] }) };
    },
    claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
    scopes: ['openid', 'profile', 'groups'],
    // The member's claims in the ID token itself (the code flow would otherwise keep them for userinfo).
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: true },
      ...(upstreamOauth ? { registration: { enabled: true }, revocation: { enabled: true }, resourceIndicators } : {}),
    },
    ...extra,
    pkce: { required: () => true },
    cookies: { keys: ['teamgate-portal-test-cookie-key'] },
    // First-party client: no consent screen; the grant covers what was asked. The clients teamgate
    // registers for an upstream get the provider's own consent page (its devInteractions form).
    async loadExistingGrant(ctx) {
      const id = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (id) return ctx.oidc.provider.Grant.find(id);
      if (upstreamOauth && ctx.oidc.client.clientId !== 'teamgate') return undefined;
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid profile groups');
      grant.addOIDCClaims(['preferred_username', 'groups']);
      const resource = ctx.oidc.params?.resource;
      if (upstreamOauth && typeof resource === 'string') grant.addResourceScope(resource, 'mcp');
      await grant.save();
      return grant;
    },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  server.on('clientError', (err, socket) => { console.error('idp: bad request from a client:', err.code, err.message); socket.destroy(); });
  console.log(`PORT ${port}`);
});
// Ends with its parent (the test closes stdin), unless a person asked it to stay.
if (!stay) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}
