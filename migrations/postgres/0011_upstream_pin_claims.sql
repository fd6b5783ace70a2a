-- A tool whose exposed name another upstream offered first (issue 59): `claim` names that
-- upstream. Such a row has no approved definition (hash '') until an operator approves it.
alter table upstream_pins add column claim text;
