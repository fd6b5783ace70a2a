//! Members' own credential values as a provider reaches them during a call
//! (issue 29): the app hands the engine a [`MemberSecrets`] over the store's
//! vault, the engine puts it in each call's context, and the provider that
//! fills a `${user:NAME}` reports which kind of credential it used, which
//! the audit record keeps (never the value).

use std::sync::{
    Arc,
    atomic::{AtomicU8, Ordering},
};

use async_trait::async_trait;

/// Why the vault could not answer: its own error (the store's), never a
/// value, shown as it words it.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error(transparent)]
    Vault(Box<dyn std::error::Error + Send + Sync>),
}

/// A member's own values of the declared credential slots.
#[async_trait]
pub trait MemberSecrets: Send + Sync {
    /// `member`'s value of `slot`, in the clear; `None` when they set none.
    /// The error says why the value cannot be had, without the value.
    async fn value(&self, member: &str, slot: &str) -> Result<Option<String>, SecretsError>;
    /// Sets `member`'s value of `slot` (a refreshed OAuth token set).
    async fn set(&self, member: &str, slot: &str, value: &str) -> Result<(), SecretsError>;
    /// Deletes `member`'s value of `slot` (a token set the server refused).
    async fn delete(&self, member: &str, slot: &str) -> Result<(), SecretsError>;
    /// Up to `limit` members who hold a value of `slot`, most recently set
    /// first (whose OAuth connection can list an upstream's tools).
    async fn holders(&self, slot: &str, limit: usize) -> Result<Vec<String>, SecretsError>;
}

/// Which kind of credential served a call, weakest first: a call that used
/// several is recorded as the most personal one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum CredentialKind {
    /// Configured secrets only (`${NAME}` from the environment).
    Shared = 1,
    /// A slot's shared fallback, the member having set no value.
    Fallback = 2,
    /// The member's own value of a slot.
    Member = 3,
    /// The member's own OAuth access token at an upstream.
    MemberOauth = 4,
}

impl CredentialKind {
    /// The audit record's `credential` column.
    pub fn label(self) -> &'static str {
        match self {
            CredentialKind::Shared => "shared",
            CredentialKind::Fallback => "fallback",
            CredentialKind::Member => "member",
            CredentialKind::MemberOauth => "member_oauth",
        }
    }
}

/// Where a call's provider reports the credential kind it used; clones
/// share the report.
#[derive(Debug, Clone, Default)]
pub struct CredentialUse(Arc<AtomicU8>);

impl CredentialUse {
    pub fn report(&self, kind: CredentialKind) {
        self.0.fetch_max(kind as u8, Ordering::Relaxed);
    }

    /// The kind reported, if any: `""` when the call used no credential.
    pub fn label(&self) -> &'static str {
        match self.0.load(Ordering::Relaxed) {
            1 => CredentialKind::Shared.label(),
            2 => CredentialKind::Fallback.label(),
            3 => CredentialKind::Member.label(),
            4 => CredentialKind::MemberOauth.label(),
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_personal_kind_is_kept() {
        let used = CredentialUse::default();
        assert_eq!(used.label(), "");
        used.clone().report(CredentialKind::Member);
        used.report(CredentialKind::Shared);
        assert_eq!(used.label(), "member");
    }
}
