-- Admission counts each owner's live sessions on every initialize
-- (`where owner = ? and expires_ms > ?`). With (owner) alone, every match
-- cost a table lookup to read expires_ms; (owner, expires_ms) answers the
-- count from the index, and serves lookups by owner as the old one did.
create index sessions_owner_expires on sessions (owner, expires_ms);
drop index sessions_owner;
