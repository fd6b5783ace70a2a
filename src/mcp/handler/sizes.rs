//! rmcp runs each request's handler future inside its per-request task and
//! moves that task's whole state as it is spawned, finished and read: the
//! task is as large as the largest of `McpHandler`'s method futures. These
//! tests keep every method's own future small (those that await a provider
//! or the store box what they await: see the note on the impl).

use std::mem::size_of;

use rmcp::{ServerHandler, Service};

use super::{McpHandler, RoleServer};

/// The size of what `method` returns, without calling it.
fn returned<'a, P, C, R>(_method: impl Fn(&'a McpHandler, P, C) -> R) -> usize {
    size_of::<R>()
}

/// Twice the request's context and parameters (144 bytes each in the test
/// build), which every method's future holds before it first runs.
const SMALL: usize = 1024;

#[test]
fn every_method_future_is_small() {
    let sizes = [
        (
            "call_tool",
            returned(<McpHandler as ServerHandler>::call_tool),
        ),
        (
            "read_resource",
            returned(<McpHandler as ServerHandler>::read_resource),
        ),
        (
            "get_prompt",
            returned(<McpHandler as ServerHandler>::get_prompt),
        ),
        (
            "complete",
            returned(<McpHandler as ServerHandler>::complete),
        ),
        (
            "list_tools",
            returned(<McpHandler as ServerHandler>::list_tools),
        ),
        (
            "list_resources",
            returned(<McpHandler as ServerHandler>::list_resources),
        ),
        (
            "list_prompts",
            returned(<McpHandler as ServerHandler>::list_prompts),
        ),
        (
            "list_skills",
            returned(<McpHandler as ServerHandler>::list_skills),
        ),
        (
            "get_skill",
            returned(<McpHandler as ServerHandler>::get_skill),
        ),
        (
            "get_task",
            returned(<McpHandler as ServerHandler>::get_task),
        ),
        (
            "update_task",
            returned(<McpHandler as ServerHandler>::update_task),
        ),
        (
            "cancel_task",
            returned(<McpHandler as ServerHandler>::cancel_task),
        ),
        (
            "subscribe",
            returned(<McpHandler as ServerHandler>::subscribe),
        ),
        (
            "unsubscribe",
            returned(<McpHandler as ServerHandler>::unsubscribe),
        ),
        (
            "set_level",
            returned(<McpHandler as ServerHandler>::set_level),
        ),
        (
            "custom",
            returned(<McpHandler as ServerHandler>::on_custom_request),
        ),
    ];
    let large: Vec<_> = sizes.iter().filter(|(_, size)| *size > SMALL).collect();
    assert!(large.is_empty(), "box what these await: {large:?}");
}

#[test]
fn the_per_request_task_is_rmcps_own_size_plus_a_small_method() {
    // rmcp's dispatch holds the request and its context beside the largest
    // method future (about 2,900 bytes of its own in the test build); with a
    // 4 KiB store query inline it was 6,072.
    let dispatch = returned(<McpHandler as Service<RoleServer>>::handle_request);
    assert!(
        dispatch <= 4096,
        "the per-request handler future is {dispatch} bytes"
    );
}
