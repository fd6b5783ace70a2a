-- A changed definition an admin rejected (issue 65 part 3): its hash. The tool stays withheld and
-- the rejected definition is not proposed again; a different one is (pending_hash differs again).
alter table upstream_pins add column rejected_hash text;
