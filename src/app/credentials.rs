//! Members' credential values wired from the store's vault to the engine
//! (`registry::MemberSecrets`) and the portal's Connections page.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    config::Config,
    registry::{MemberSecrets, SecretsError, oauth::MemberOauth},
    store::{Store, Vault},
    upstream::Upstreams,
};

/// The vault of `config`'s keys, or none when no slot or oauth upstream is
/// declared and no key set (an upstream found to want OAuth, `auth =
/// "auto"`, then stays unavailable); refuses slots without keys (their
/// values could be neither sealed nor opened).
pub(crate) fn vault(config: &Config, store: &Store) -> anyhow::Result<Option<Vault>> {
    let declared = !config.credentials.slots.is_empty() || config.has_oauth_upstreams();
    if !declared && config.credentials.keys.is_empty() {
        return Ok(None);
    }
    if let Some(problem) = (config.credential_keys_problem()).or(config.oauth_upstreams_problem()) {
        anyhow::bail!(problem);
    }
    let keys: Vec<&str> = (config.credentials.keys.iter())
        .map(|k| k.expose())
        .collect();
    Ok(Some(Vault::new(store.clone(), &keys)))
}

/// The store's error as the vault port carries it.
fn vault_error(error: crate::store::StoreError) -> SecretsError {
    SecretsError::Vault(Box::new(error))
}

/// The engine's view of the vault.
pub(crate) struct VaultSecrets(pub(crate) Vault);

#[async_trait]
impl MemberSecrets for VaultSecrets {
    async fn value(&self, member: &str, slot: &str) -> Result<Option<String>, SecretsError> {
        self.0.get(member, slot).await.map_err(vault_error)
    }

    async fn set(&self, member: &str, slot: &str, value: &str) -> Result<(), SecretsError> {
        self.0.set(member, slot, value).await.map_err(vault_error)
    }

    async fn delete(&self, member: &str, slot: &str) -> Result<(), SecretsError> {
        self.0
            .delete(member, slot)
            .await
            .map(drop)
            .map_err(vault_error)
    }

    async fn holders(&self, slot: &str, limit: usize) -> Result<Vec<String>, SecretsError> {
        self.0.holders(slot, limit).await.map_err(vault_error)
    }
}

/// As `Shared::with_member_secrets` takes it.
pub(crate) fn member_secrets(vault: &Vault) -> Arc<dyn MemberSecrets> {
    Arc::new(VaultSecrets(vault.clone()))
}

/// The upstreams, pinning in the store, with members' OAuth when `[portal]`
/// is on and a vault keeps their tokens; and which upstreams want it,
/// shared by the upstreams (which find them) and the portal (where members
/// connect).
pub(crate) fn upstreams(
    config: &Config,
    store: &Store,
    vault: Option<&Vault>,
) -> (Arc<Upstreams>, MemberOauth) {
    let portal = config.portal.as_ref().is_some_and(|p| p.enabled);
    let oauth = MemberOauth::new(portal && vault.is_some());
    oauth.allow(&config.tools.http_allowlist);
    let upstreams = Upstreams::new()
        .with_pins(Arc::new(super::pins::StorePins(store.clone())))
        .with_member_oauth(oauth.clone(), vault.map(member_secrets));
    (Arc::new(upstreams), oauth)
}
