//! Members' credential values wired from the store's vault to the engine
//! (`registry::MemberSecrets`) and the portal's Connections page.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    config::Config,
    registry::MemberSecrets,
    store::{Store, Vault},
};

/// The vault of `config`'s keys, or none when no slot is declared; refuses
/// slots without keys (their values could be neither sealed nor opened).
pub(crate) fn vault(config: &Config, store: &Store) -> anyhow::Result<Option<Vault>> {
    if config.credentials.slots.is_empty() && !config.has_oauth_upstreams() {
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

/// The engine's view of the vault.
pub(crate) struct VaultSecrets(pub(crate) Vault);

#[async_trait]
impl MemberSecrets for VaultSecrets {
    async fn value(&self, member: &str, slot: &str) -> Result<Option<String>, String> {
        self.0.get(member, slot).await.map_err(|e| e.to_string())
    }

    async fn set(&self, member: &str, slot: &str, value: &str) -> Result<(), String> {
        self.0
            .set(member, slot, value)
            .await
            .map_err(|e| e.to_string())
    }

    async fn delete(&self, member: &str, slot: &str) -> Result<(), String> {
        self.0
            .delete(member, slot)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// As `Shared::with_member_secrets` takes it.
pub(crate) fn member_secrets(vault: &Vault) -> Arc<dyn MemberSecrets> {
    Arc::new(VaultSecrets(vault.clone()))
}
