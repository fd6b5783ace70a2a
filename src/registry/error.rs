//! `RegistryError`: the registry's errors, a build's and a call's
//! `${user:NAME}` that cannot be filled.

use super::SecretsError;

/// The registry's errors: a build's, and a call's `${user:NAME}` that
/// cannot be filled (the tool error's text, naming the slot, never a value).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("two providers declare the {0} `{1}`; names must be unique")]
    Duplicate(&'static str, String),
    #[error("`{tool}` names the credential slot `{slot}`, which is not declared")]
    SlotUndeclared { tool: String, slot: String },
    #[error(
        "`{tool}` needs your value of the credential `{slot}`, which cannot be read ({why}); \
         set it again on the portal's Connections page: {page}"
    )]
    SlotUnreadable {
        tool: String,
        slot: String,
        why: SecretsError,
        page: String,
    },
    /// `about`: the slot's description in parentheses, with a space before, or empty.
    #[error(
        "`{tool}` needs your own value of the credential `{slot}`{about}, and you have not \
         set one. Set it on the portal's Connections page, {page}, then call the tool again."
    )]
    SlotEmpty {
        tool: String,
        slot: String,
        about: String,
        page: String,
    },
    #[error("guardrails: {0}")]
    Guardrail(String),
}
