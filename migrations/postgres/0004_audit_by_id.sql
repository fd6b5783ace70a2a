-- Every audit record costs one insert into each of the table's indexes, on the
-- path every call takes. A record's id begins with its time (`{at_ms:013}-`,
-- zero-padded), so the primary key already orders records by time: reading
-- since a time and purging before one use id ranges, and the index on at_ms
-- alone is dropped. Per-user reads keep (user_name, at_ms).
drop index audit_at;
