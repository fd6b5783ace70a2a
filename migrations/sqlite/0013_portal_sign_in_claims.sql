-- What sign-in read from the ID token besides the groups (issue 63): the values of
-- the claims [[portal.grants]] match on (Google's hd, a verified e-mail), the names
-- of the token's claims and its distributed ones, as JSON.
alter table portal_sessions add column claims text not null default '{}';
