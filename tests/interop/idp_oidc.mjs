// The OpenID provider of the portal tests: the certified `oidc-provider` (npm, pinned in
// tests/interop/deps/oidc-provider, installed by scripts/install-test-deps.sh into .cache/oidc-provider)
// on 127.0.0.1:0, run with Node 22.
//   node22 tests/interop/idp_oidc.mjs --redirect http://127.0.0.1:PORT/portal/callback
// Prints `PORT <port>` once listening. Client `teamgate` (secret `portal-test-secret`, code + PKCE).
// For a person trying the portal locally (scripts/dev-idp does this): --port N listens on a fixed
// port and --stay keeps running after stdin closes (Ctrl-C ends it), e.g.
//   node22 tests/interop/idp_oidc.mjs --port 5556 --stay --redirect http://127.0.0.1:8080/portal/callback
// Accounts (any password, through the provider's own login form, devInteractions):
//   ann (group dev), bob (group ops), cat (group admins), dan (group guests, mapped to no scope),
//   eve (dev, leads), fay (ops, leads).
// --profile NAME: instead, ann, bob and dan with the ID token claims that provider sends (the
// recipes of docs/identity-providers.md, tested by tests/api/portal_idp_recipes.rs): keycloak
// (groups as paths), okta (group names), entra (group object ids and app roles), entra-overage
// (the groups overage: `_claim_names`/`_claim_sources`, no `groups`), google (`hd`, `email`, no
// groups), gitlab (`groups_direct`: group paths). Every claim is in the ID token whatever scopes
// are asked, as the provider-side settings of each recipe arrange.
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
  console.error('usage: idp_oidc.mjs --redirect URL [--port N] [--stay] [--upstream-oauth SECONDS] [--profile NAME]');
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

// eve and fay are leads, who approve calls (issue 65 part 2).
const ACCOUNTS = {
  ann: ['dev'], bob: ['ops'], cat: ['admins'], dan: ['guests'], eve: ['dev', 'leads'], fay: ['ops', 'leads'],
};

// Each provider's ID token claims for ann, bob and dan (sub and the protocol claims aside).
const ENG = '6f1c2a9e-4b7d-4e0a-9c1f-2d3e4f5a6b7c'; // Entra group object ids
const SUPPORT = '0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d';
const entra = (user, groups, roles) => ({
  preferred_username: `${user}@contoso.com`, name: user, oid: `00000000-0000-0000-0000-0000000${user}`,
  tid: '11111111-2222-3333-4444-555555555555', groups, roles,
});
const overage = (user, roles) => ({
  ...entra(user, undefined, roles), // no `groups`: it is at `_claim_sources`
  _claim_names: { groups: 'src1' },
  _claim_sources: { src1: { endpoint: `https://graph.microsoft.com/v1.0/users/${user}/getMemberObjects` } },
});
const PROFILES = {
  keycloak: {
    ann: { preferred_username: 'ann', email: 'ann@example.com', email_verified: true, groups: ['/engineering', '/engineering/backend'] },
    bob: { preferred_username: 'bob', email: 'bob@example.com', email_verified: true, groups: ['/support'] },
    dan: { preferred_username: 'dan', email: 'dan@example.com', email_verified: true, groups: [] },
  },
  okta: {
    ann: { preferred_username: 'ann@example.com', email: 'ann@example.com', groups: ['Everyone', 'Engineering'] },
    bob: { preferred_username: 'bob@example.com', email: 'bob@example.com', groups: ['Everyone', 'Support'] },
    dan: { preferred_username: 'dan@example.com', email: 'dan@example.com', groups: ['Everyone'] },
  },
  entra: {
    ann: entra('ann', [ENG], ['MCP.Developer']), bob: entra('bob', [SUPPORT], ['MCP.Support']), dan: entra('dan', [], undefined),
  },
  'entra-overage': {
    ann: overage('ann', ['MCP.Developer']), bob: overage('bob', ['MCP.Support']), dan: overage('dan', undefined),
  },
  google: {
    ann: { email: 'ann@example.com', email_verified: true, hd: 'example.com', name: 'Ann' },
    bob: { email: 'bob@gmail.com', email_verified: true, name: 'Bob' },
    dan: { email: 'dan@example.org', email_verified: false, name: 'Dan' },
  },
  gitlab: {
    ann: { nickname: 'ann', preferred_username: 'ann', email: 'ann@example.com', email_verified: true, groups_direct: ['acme', 'acme/engineering'] },
    bob: { nickname: 'bob', preferred_username: 'bob', email: 'bob@example.com', email_verified: true, groups_direct: ['acme/support'] },
    dan: { nickname: 'dan', preferred_username: 'dan', email: 'dan@example.com', email_verified: true, groups_direct: ['engineering'] },
  },
};
const profile = opt('--profile');
if (profile !== undefined && !PROFILES[profile]) {
  console.error(`idp: no profile ${profile}; one of ${Object.keys(PROFILES).join(', ')}`);
  process.exit(2);
}
const accounts = PROFILES[profile];
// A profile's claims, all under `openid` (always granted); the default's under their scopes.
const claimNames = accounts
  ? [...new Set(Object.values(accounts).flatMap((c) => [...Object.keys(c), ...Object.keys(c._claim_names ?? {})]))]
    .filter((n) => !n.startsWith('_'))
  : ['preferred_username', 'groups'];
const claims = accounts
  ? { openid: ['sub', ...claimNames] }
  : { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] };
// Google's subject is a number; the others' an opaque id.
const subject = (id) => (profile === 'google' ? String(100000000000 + id.charCodeAt(0)) : id);
const findAccount = (id) => {
  if (accounts) return accounts[id] && { sub: subject(id), ...accounts[id] };
  return ACCOUNTS[id] && { sub: id, preferred_username: id, groups: ACCOUNTS[id] };
};

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
      const found = findAccount(id);
      return found && { accountId: id, claims: async () => found };
    },
    claims,
    scopes: accounts ? ['openid', 'profile', 'email', 'groups'] : ['openid', 'profile', 'groups'],
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
      grant.addOIDCScope(accounts ? 'openid profile email groups' : 'openid profile groups');
      grant.addOIDCClaims(claimNames);
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
