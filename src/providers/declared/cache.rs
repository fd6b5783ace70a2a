//! The result cache of tools with `cache_ttl`: one per provider, bounded by
//! `tools.cache_max_entries`, each entry kept as long as its tool's ttl.

use std::{future::Future, time::Duration};

use moka::{Expiry, future::Cache};
use serde_json::Value;

use super::template::canonical;
use crate::{
    config::ToolDecl,
    protocol::{CallToolResponse, CallToolResult, JsonObject, McpError},
    registry::CallContext,
};

/// Cache key: tool, canonical arguments, and the caller when it matters.
type CacheKey = (String, String, Option<String>);

#[derive(Clone)]
struct Cached {
    result: CallToolResult,
    ttl: Duration,
}

/// Each entry lives as long as its tool's `cache_ttl`.
struct PerToolTtl;

impl Expiry<CacheKey, Cached> for PerToolTtl {
    fn expire_after_create(
        &self,
        _key: &CacheKey,
        value: &Cached,
        _created_at: std::time::Instant,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

pub(super) struct ResultCache(Cache<CacheKey, Cached>);

impl ResultCache {
    pub(super) fn new(max_entries: u64) -> Self {
        Self(
            Cache::builder()
                .max_capacity(max_entries)
                .expire_after(PerToolTtl)
                .build(),
        )
    }

    /// The cached result of `decl` for these arguments, else `run`'s,
    /// kept when it is a complete result and not an error (a protocol
    /// error is handed back, never kept). A tool bound to its caller, or
    /// whose runner acts as the caller (`per_caller`), caches per caller.
    pub(super) async fn get_or_run(
        &self,
        decl: &ToolDecl,
        arguments: &JsonObject,
        (cx, per_caller): (&CallContext, bool),
        run: impl Future<Output = Result<CallToolResponse, McpError>>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(ttl) = decl.cache_ttl else {
            return run.await;
        };
        let per_caller =
            (per_caller || !decl.from_caller.is_empty()).then(|| cx.caller().user.clone());
        let key = (
            decl.name.clone(),
            canonical(&Value::Object(arguments.clone())),
            per_caller,
        );
        if let Some(hit) = self.0.get(&key).await {
            return Ok(hit.result.into());
        }
        let response = run.await?;
        if let CallToolResponse::Complete(result) = &response
            && result.is_error != Some(true)
        {
            let cached = Cached {
                result: result.clone(),
                ttl,
            };
            self.0.insert(key, cached).await;
        }
        Ok(response)
    }
}
