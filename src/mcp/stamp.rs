//! Fields 2026-07-28 requires on every result that rmcp does not add for us:
//! `resultType` (providers build results from wire JSON, which leaves it
//! unset) and `_meta["io.modelcontextprotocol/serverInfo"]` (a SHOULD).
//! Legacy results are left alone: rmcp strips 2026-only fields for them.

use rmcp::model::{
    CompleteResult, GetSkillResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, MetaObject, ResultType,
};

use serde_json::Value;

use super::{CallToolResponse, GetPromptResponse, ReadResourceResponse};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

pub(super) trait Stamp {
    /// `server` is the server's `Implementation`, already as JSON.
    fn stamp(&mut self, server: &Value);
}

fn stamp_parts(
    result_type: &mut Option<ResultType>,
    meta: &mut Option<MetaObject>,
    server: &Value,
) {
    result_type.get_or_insert(ResultType::COMPLETE);
    meta.get_or_insert_with(Default::default)
        .entry(SERVER_INFO)
        .or_insert_with(|| server.clone());
}

macro_rules! stamp_struct {
    ($($t:ty),*) => {$(
        impl Stamp for $t {
            fn stamp(&mut self, server: &Value) {
                stamp_parts(&mut self.result_type, &mut self.meta, server);
            }
        }
    )*};
}

stamp_struct!(
    ListToolsResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListSkillsResult,
    GetSkillResult,
    CompleteResult
);

impl Stamp for CallToolResponse {
    fn stamp(&mut self, server: &Value) {
        if let CallToolResponse::Complete(r) = self {
            stamp_parts(&mut r.result_type, &mut r.meta, server);
        }
    }
}

impl Stamp for ReadResourceResponse {
    fn stamp(&mut self, server: &Value) {
        if let ReadResourceResponse::Complete(r) = self {
            stamp_parts(&mut r.result_type, &mut r.meta, server);
        }
    }
}

impl Stamp for GetPromptResponse {
    fn stamp(&mut self, server: &Value) {
        if let GetPromptResponse::Complete(r) = self {
            stamp_parts(&mut r.result_type, &mut r.meta, server);
        }
    }
}
