//! Issue 59's upstream items 1 and 2, against misbehaving upstreams on the
//! official Python SDK's low-level server (tests/interop/upstream_listed.py,
//! driven as in `sec44_upreg`): a tool name another upstream offers, taken
//! over by listing it later (item 1); a URI captured by a template that ties
//! with or out-bids another upstream's, or by another spelling (item 2).

mod names;
mod resources;
