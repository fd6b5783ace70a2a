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

/// A method's future holds the request's context and parameters (144 bytes
/// each in the test build) and what it awaits, boxed: 1 KiB leaves room for
/// that and for no store query or provider call inline.
const SMALL: usize = 1024;

/// Each named `ServerHandler` method with the size of its future.
macro_rules! sizes {
    ($($method:ident),* $(,)?) => {
        [$((stringify!($method), returned(<McpHandler as ServerHandler>::$method))),*]
    };
}

#[test]
fn every_method_future_is_small() {
    let sizes = sizes!(
        call_tool,
        read_resource,
        get_prompt,
        complete,
        list_tools,
        list_resources,
        list_resource_templates,
        list_prompts,
        list_skills,
        get_skill,
        get_task,
        update_task,
        cancel_task,
        subscribe,
        unsubscribe,
        set_level,
        on_custom_request,
    );
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
