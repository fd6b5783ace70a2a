//! Which worker leaves past the cap, on instants the tests choose.

use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionId;

use super::{CLAIM_TTL, Resident};

/// `store.session_memory_idle` in these tests.
const IDLE: Duration = Duration::from_secs(120);

fn id(n: usize) -> SessionId {
    format!("s{n}").into()
}

/// `n` sessions opened in turn, handshakes done, rows stored.
fn opened(resident: &Resident, n: usize, now: Instant) -> Vec<SessionId> {
    (0..n)
        .flat_map(|i| {
            let leaving = resident.admit(&id(i), false, now);
            resident.opened(&id(i), true);
            leaving
        })
        .collect()
}

#[test]
fn past_the_cap_the_least_recently_used_idle_worker_leaves() {
    let resident = Resident::new(3, IDLE);
    let now = Instant::now();
    assert!(opened(&resident, 3, now).is_empty());
    // s0 is used again: s1 is now the least recently used.
    resident.claim(&id(0), now);
    resident.release(&id(0));
    assert_eq!(opened_more(&resident, 3, now), vec![id(1)]);
    assert_eq!(resident.len(), 3);
}

/// Session `n` opened after the others.
fn opened_more(resident: &Resident, n: usize, now: Instant) -> Vec<SessionId> {
    let leaving = resident.admit(&id(n), false, now);
    resident.opened(&id(n), true);
    leaving
}

#[test]
fn busy_workers_stay_and_the_idle_ones_leave_down_to_the_cap() {
    let resident = Resident::new(2, IDLE);
    let now = Instant::now();
    opened(&resident, 2, now);
    // s0 has a request in flight, s1 a request rmcp found it for.
    resident.claim(&id(0), now);
    let in_flight = resident.in_use(&id(0)).expect("s0 is in memory");
    resident.claim(&id(1), now);
    assert!(
        opened_more(&resident, 2, now).is_empty(),
        "nothing idle: the cap is exceeded"
    );
    assert_eq!(resident.len(), 3);
    // s2 is idle once its handshake is done; s0 and s1 are still busy.
    assert_eq!(opened_more(&resident, 3, now), vec![id(2)]);
    drop(in_flight);
    assert_eq!(sorted(opened_more(&resident, 4, now)), vec![id(0), id(3)]);
    assert_eq!(resident.len(), 2, "s1 (claimed) and s4");
}

fn sorted(mut ids: Vec<SessionId>) -> Vec<SessionId> {
    ids.sort();
    ids
}

#[test]
fn a_stream_holds_its_worker_until_every_clone_is_dropped() {
    let resident = Resident::new(1, IDLE);
    let now = Instant::now();
    opened(&resident, 1, now);
    resident.claim(&id(0), now);
    let stream = resident.in_use(&id(0)).unwrap();
    let in_extensions = stream.clone();
    drop(stream);
    assert!(opened_more(&resident, 1, now).is_empty());
    drop(in_extensions);
    assert_eq!(sorted(opened_more(&resident, 2, now)), vec![id(0), id(1)]);
}

#[test]
fn a_claim_never_followed_by_its_stream_lapses() {
    let resident = Resident::new(1, IDLE);
    let start = Instant::now();
    opened(&resident, 1, start);
    resident.claim(&id(0), start);
    let soon = start + CLAIM_TTL - Duration::from_millis(1);
    assert!(opened_more(&resident, 1, soon).is_empty());
    let later = start + CLAIM_TTL;
    assert_eq!(sorted(opened_more(&resident, 2, later)), vec![id(0), id(1)]);
}

#[test]
fn a_worker_mid_handshake_or_without_its_row_stays() {
    let resident = Resident::new(1, IDLE);
    let now = Instant::now();
    // s0's row failed to store: the worker is all there is of it.
    resident.admit(&id(0), false, now);
    resident.opened(&id(0), false);
    // s1 and s2 are still in their handshakes (or a restore's replay).
    assert!(resident.admit(&id(1), true, now).is_empty());
    assert!(resident.admit(&id(2), true, now).is_empty());
    assert_eq!(resident.len(), 3);
    // s1's first request after the replay reaches its worker without a stream.
    resident.release(&id(1));
    assert_eq!(opened_more(&resident, 3, now), vec![id(1)]);
    assert_eq!(resident.len(), 3, "s0, s2 and s3 stay");
}

#[test]
fn the_late_close_of_a_dropped_worker_spares_its_restored_successor() {
    let resident = Resident::new(1, IDLE);
    let now = Instant::now();
    opened(&resident, 1, now);
    assert_eq!(opened_more(&resident, 1, now), vec![id(0)]);
    // s0's next request restores it before rmcp closes the dropped worker.
    resident.admit(&id(0), true, now);
    assert!(!resident.closed(&id(0)), "the dropped worker's close");
    assert!(
        resident.in_use(&id(0)).is_some(),
        "the restored worker stays counted"
    );
    assert!(resident.closed(&id(0)), "the restored worker's own close");
    assert!(resident.in_use(&id(0)).is_none());
}

#[test]
fn a_worker_unused_for_the_idle_time_leaves_and_a_busy_one_stays() {
    let resident = Resident::new(10, IDLE);
    let start = Instant::now();
    opened(&resident, 2, start);
    // s0 runs a call longer than the idle time, sending nothing meanwhile.
    resident.claim(&id(0), start);
    let call = resident.in_use(&id(0)).unwrap();
    let almost = start + IDLE - Duration::from_millis(1);
    assert!(resident.leave_idle(almost).is_empty());
    assert_eq!(resident.leave_idle(start + IDLE), vec![id(1)]);
    let late = start + IDLE * 3;
    assert!(resident.leave_idle(late).is_empty(), "the call keeps s0");
    // The call ends: s0 counts as used when next looked at.
    drop(call);
    let seen = late + Duration::from_secs(1);
    assert!(resident.leave_idle(seen).is_empty());
    let almost = seen + IDLE - Duration::from_millis(1);
    assert!(resident.leave_idle(almost).is_empty());
    assert_eq!(resident.leave_idle(seen + IDLE), vec![id(0)]);
    assert_eq!(resident.len(), 0);
}

#[test]
fn a_request_that_found_a_leaving_worker_is_told_it_left() {
    let resident = Resident::new(10, IDLE);
    let start = Instant::now();
    opened(&resident, 1, start);
    // A claim in time keeps the worker a whole idle time more.
    assert!(resident.claim(&id(0), start + IDLE / 2));
    resident.release(&id(0));
    // The look that finds the release counts it as a use then.
    assert!(resident.leave_idle(start + IDLE).is_empty());
    let gone = start + IDLE * 2;
    let almost = gone - Duration::from_millis(1);
    assert!(
        resident.leave_idle(almost).is_empty(),
        "the release was a use"
    );
    assert_eq!(resident.leave_idle(gone), vec![id(0)]);
    // rmcp had found it in its map just before: the request restores it.
    assert!(!resident.claim(&id(0), gone));
}

#[test]
fn each_late_close_of_a_departed_worker_spares_the_current_one() {
    let resident = Resident::new(10, IDLE);
    let start = Instant::now();
    opened(&resident, 1, start);
    // s0 leaves, is restored, leaves again: two closes still to come.
    assert_eq!(resident.leave_idle(start + IDLE), vec![id(0)]);
    resident.admit(&id(0), true, start + IDLE);
    resident.release(&id(0));
    let second = start + IDLE * 3;
    resident.leave_idle(second - IDLE);
    assert_eq!(resident.leave_idle(second), vec![id(0)]);
    resident.admit(&id(0), true, second);
    assert!(!resident.closed(&id(0)), "the first worker's close");
    assert!(!resident.closed(&id(0)), "the second worker's close");
    assert!(resident.claim(&id(0), second), "the third worker stays");
    assert!(resident.closed(&id(0)), "its own close");
    assert!(!resident.claim(&id(0), second));
}

#[test]
fn at_most_the_cap_leaves_at_one_look() {
    let resident = Resident::new(2, IDLE);
    let start = Instant::now();
    // Rows that failed to store: past the cap, yet no one leaves for it.
    for i in 0..5 {
        resident.admit(&id(i), false, start);
        resident.opened(&id(i), false);
    }
    let idle = start + IDLE;
    assert_eq!(resident.leave_idle(idle).len(), 2);
    assert_eq!(resident.leave_idle(idle).len(), 2);
    assert_eq!(resident.leave_idle(idle).len(), 1);
    assert_eq!(resident.len(), 0);
}
