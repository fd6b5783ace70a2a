//! A database each member reaches with their own values (`${user:NAME}` in
//! the URL, issue 62): the database's own grants then decide what each one
//! may read. One small pool per distinct URL the members' values make,
//! opened on first use, the least recently used closed beyond
//! `max_member_pools` and an unused one after `idle_timeout`; never one
//! connection per call.

use std::sync::Arc;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::{Digest, Sha256};

use super::engine::Db;
use crate::{
    config::SqlSourceConfig,
    protocol::CallToolResponse,
    providers::ProviderError,
    registry::{CallContext, Slots, Template},
};

/// A value goes into the URL's user or password percent-encoded, so it
/// cannot end the userinfo or change the host.
const USERINFO: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

pub(super) struct MemberPools {
    template: Template,
    slots: Slots,
    /// The source's settings with a member pool's bounds.
    bounds: SqlSourceConfig,
    /// By the SHA-256 of the rendered URL: the values never key a map.
    pools: moka::sync::Cache<[u8; 32], Arc<Db>>,
}

impl MemberPools {
    /// For `config`, whose URL names a member slot; `${NAME}`s are read now
    /// and recorded in `secrets`.
    pub(super) fn new(
        config: &SqlSourceConfig,
        key: &str,
        slots: &Slots,
        secrets: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
        let template = Template::parse(config.url.expose(), key, secrets)?;
        let mut bounds = config.clone();
        bounds.max_connections = config.member_max_connections;
        let pools = moka::sync::Cache::builder()
            .max_capacity(config.max_member_pools)
            .time_to_idle(config.idle_timeout)
            .build();
        Ok(Self {
            template,
            slots: slots.clone(),
            bounds,
            pools,
        })
    }

    /// The pool of `cx`'s member for `tool`, and the member values in its URL
    /// (scrubbed from what the call answers).
    pub(super) async fn pool(
        &self,
        tool: &str,
        cx: &CallContext,
    ) -> Result<(Arc<Db>, Vec<String>), ProviderError> {
        let mut used = Vec::new();
        let encode = |v: &str| utf8_percent_encode(v, USERINFO).to_string();
        let url = (self.slots)
            .render(&self.template, (tool, cx), encode, &mut used)
            .await?;
        let key: [u8; 32] = Sha256::digest(url.as_bytes()).into();
        if let Some(db) = self.pools.get(&key) {
            return Ok((db, used));
        }
        // Connects lazily: opening is cheap, the first statement connects.
        let db = Db::open(&url, &self.bounds).map_err(|_| ProviderError::MemberUrl)?;
        let db = Arc::new(db);
        self.pools.insert(key, db.clone());
        Ok((db, used))
    }

    /// What the call answers instead when the member has not set a value.
    pub(super) async fn withheld(&self, tool: &str, cx: &CallContext) -> Option<CallToolResponse> {
        self.slots.withheld(&[&self.template], tool, cx).await
    }
}
