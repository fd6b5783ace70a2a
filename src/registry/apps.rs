//! MCP Apps (SEP-1865, the `io.modelcontextprotocol/ui` extension) as the
//! registry meets it: a tool names the `ui://` resource a host renders its
//! results with (`_meta.ui.resourceUri`), and whom it is for
//! (`_meta.ui.visibility`: the model, the app, or both, the default).
//! tools/list carries every tool, as the extension says (the host keeps
//! app-only tools from the model); what teamgate itself shows the model
//! (search mode's `search_tools`, `call_tool`) leaves them out.

use serde_json::Value;

use crate::protocol::Tool;

/// The extension's identifier, advertised when a tool names a UI.
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of a `ui://` resource's HTML.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The flat key the extension's drafts used, still sent by some servers.
const DEPRECATED_KEY: &str = "ui/resourceUri";

/// The `ui://` resource `tool` names, if any.
pub fn ui_resource(tool: &Tool) -> Option<&str> {
    let meta = &tool.meta.as_ref()?.0;
    let nested = meta.get("ui").and_then(|ui| ui.get("resourceUri"));
    nested
        .or_else(|| meta.get(DEPRECATED_KEY))
        .and_then(Value::as_str)
}

/// Whether the model may see `tool`: no visibility, an empty one, or one
/// naming `model`.
pub fn model_visible(tool: &Tool) -> bool {
    let meta = tool.meta.as_ref().map(|m| &m.0);
    let visibility = meta
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array);
    visibility.is_none_or(|list| list.is_empty() || list.iter().any(|v| v == "model"))
}

/// `tool`'s UI resource URIs (both spellings) as `rename` gives them.
pub fn rename_ui_resource(tool: &mut Tool, rename: impl Fn(&str) -> String) {
    let Some(meta) = tool.meta.as_mut() else {
        return;
    };
    let nested = meta
        .0
        .get_mut("ui")
        .and_then(|ui| ui.get_mut("resourceUri"));
    if let Some(Value::String(uri)) = nested {
        *uri = rename(uri);
    }
    if let Some(Value::String(uri)) = meta.0.get_mut(DEPRECATED_KEY) {
        *uri = rename(uri);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(meta: Value) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": "t", "inputSchema": {"type": "object"}, "_meta": meta
        }))
        .unwrap()
    }

    #[test]
    fn visibility_and_resource_read_as_the_extension_writes_them() {
        let both = tool(serde_json::json!({"ui": {"resourceUri": "ui://a/b.html"}}));
        assert_eq!(ui_resource(&both), Some("ui://a/b.html"));
        assert!(model_visible(&both));
        let app = tool(serde_json::json!({"ui": {"visibility": ["app"]}}));
        assert!(!model_visible(&app));
        let model = tool(serde_json::json!({"ui": {"visibility": ["app", "model"]}}));
        assert!(model_visible(&model));
        let mut flat = tool(serde_json::json!({"ui/resourceUri": "ui://x"}));
        assert_eq!(ui_resource(&flat), Some("ui://x"));
        rename_ui_resource(&mut flat, |u| format!("upstream://up/{u}"));
        assert_eq!(ui_resource(&flat), Some("upstream://up/ui://x"));
    }
}
