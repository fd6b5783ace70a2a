-- teamgate as the OAuth authorization server (issue 28).
-- Signing keys, shared by every replica; a key signs until a newer one exists and stays
-- published until the last token it signed has expired.
create table oauth_keys (
    kid text primary key,
    private_pkcs8 text not null,          -- base64 PKCS#8 of the P-256 key
    public_x text not null,               -- JWK x, base64url
    public_y text not null,               -- JWK y, base64url
    created_ms bigint not null
);
-- Clients registered through RFC 7591 (Client ID Metadata Document clients are fetched, not kept).
create table oauth_clients (
    client_id text primary key,
    name text not null,
    redirect_uris text not null,          -- JSON array
    created_ms bigint not null
);
-- One member's consent to one client: its refresh tokens (a family) and access tokens hang off it.
create table oauth_grants (
    id text primary key,
    client_id text not null,
    client_name text not null,
    member text not null,
    scopes text not null,                 -- JSON array
    created_ms bigint not null,
    last_used_ms bigint not null,
    revoked_ms bigint
);
create index oauth_grants_member on oauth_grants (member);
-- Authorization codes, by sha256; used_ms set on first exchange (a second one revokes the grant).
create table oauth_codes (
    code_hash text primary key,
    grant_id text not null,
    redirect_uri text not null,
    challenge text not null,              -- PKCE S256 code_challenge
    expires_ms bigint not null,
    used_ms bigint
);
-- Refresh tokens, by sha256; rotated_ms set when exchanged (a later use revokes the family).
create table oauth_refresh (
    token_hash text primary key,
    grant_id text not null,
    expires_ms bigint not null,
    rotated_ms bigint
);
create index oauth_refresh_grant on oauth_refresh (grant_id);
