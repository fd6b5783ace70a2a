//! Skills (SEP-2640, `io.modelcontextprotocol/skills`) as the registry
//! meets them: a resource provider may serve skills
//! (`ResourceProvider::skills`), each a folder of resources named by the URI
//! of its `SKILL.md`, its files read with `resources/read`. The extension is
//! advertised while a provider serves skills, with the `resources`
//! capability it depends on. `resources/directory/read` is not offered
//! (`directoryRead` unset): a skill's manifest lists its every file.

use super::apps;
use crate::protocol::{McpError, SKILLS_EXTENSION_ID, ServerCapabilities};

/// The extension's identifier.
pub const SKILLS_EXTENSION: &str = SKILLS_EXTENSION_ID;

/// The extensions `caps` advertises: MCP Apps always (an upstream's app
/// tools arrive after a session began, and its lists change), Skills while
/// a provider serves skills (`serving`), resources advertised with them.
pub(super) fn advertise(caps: &mut ServerCapabilities, serving: bool) {
    let extensions = caps.extensions.get_or_insert_with(Default::default);
    extensions.insert(apps::APPS_EXTENSION.to_owned(), Default::default());
    if serving {
        extensions.insert(SKILLS_EXTENSION.to_owned(), Default::default());
    }
}

/// `skills/get`'s answer for a URI at which no skill is served: -32602, as
/// the extension says.
pub fn unknown_skill(uri: &str) -> McpError {
    McpError::invalid_params(format!("No skill is served at {uri}"), None)
}
