//! Pinned definitions of upstream servers' tools (`upstream_pins`): what
//! teamgate saw first of each tool, and a changed definition awaiting an
//! operator's approval. The running servers write them; `teamgate upstreams`
//! reads and approves them.

use async_trait::async_trait;
use sqlx::Row;

use super::{Store, StoreError, query_error};

/// One upstream tool's pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    pub upstream: String,
    /// The upstream's own name of the tool (before teamgate's prefix).
    pub tool: String,
    /// sha256 (hex) of `definition`.
    pub hash: String,
    /// The pinned definition as canonical JSON.
    pub definition: String,
    pub pinned_ms: i64,
    /// A different definition seen since, awaiting approval.
    pub pending: Option<Pending>,
    /// The upstream that offered this tool's exposed name first, while the
    /// claim awaits approval (`hash` is then empty: nothing approved yet).
    pub claim: Option<String>,
    /// The hash of a changed definition an admin rejected: while it is the
    /// pending one, the tool stays withheld without awaiting a decision.
    pub rejected: Option<String>,
}

impl PinRow {
    /// Whether a changed definition awaits a decision (pending, not rejected).
    pub fn awaiting(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| self.rejected.as_deref() != Some(p.hash.as_str()))
    }

    /// Whether the pending definition is one an admin rejected.
    pub fn is_rejected(&self) -> bool {
        self.pending.is_some() && !self.awaiting()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub hash: String,
    pub definition: String,
    pub changed_ms: i64,
}

/// The pin store's contract; every backend passes the same contract test
/// (`tests/api/upstream_pins.rs`).
///
/// - `pin` keeps an existing pin (trust on first use, on whichever replica
///   saw the tool first) and returns the row as stored afterwards.
/// - `set_pending` records (or, with `None`, forgets) a changed definition
///   of a pinned tool; false when the tool has no pin.
/// - `claim` records a tool whose exposed name upstream `owner` offered
///   first: no approved definition, the seen one pending; kept like `pin`.
/// - `approve` makes the pending definition of `upstream`'s `tool` the
///   pinned one (a rejected one too: approved anyway), or, without `tool`,
///   each pending definition not rejected; returns the approved tools' names.
/// - `reject` marks the pending definition of `upstream`'s `tool` rejected:
///   it stays pending (withheld) but awaits nothing, and the same hash set
///   pending again is rejected still; a different one awaits again. False
///   when nothing is pending.
/// - `pins` lists pins, of one upstream or all, ordered by upstream and tool.
#[async_trait]
pub trait PinRepo: Send + Sync {
    async fn pin(
        &self,
        upstream: &str,
        tool: &str,
        hash: &str,
        definition: &str,
    ) -> Result<PinRow, StoreError>;
    async fn set_pending(
        &self,
        upstream: &str,
        tool: &str,
        pending: Option<(&str, &str)>,
    ) -> Result<bool, StoreError>;
    async fn claim(
        &self,
        upstream: &str,
        tool: &str,
        owner: &str,
        pending: (&str, &str),
    ) -> Result<PinRow, StoreError>;
    async fn approve(&self, upstream: &str, tool: Option<&str>) -> Result<Vec<String>, StoreError>;
    async fn reject(&self, upstream: &str, tool: &str) -> Result<bool, StoreError>;
    async fn pins(&self, upstream: Option<&str>) -> Result<Vec<PinRow>, StoreError>;
}

const COLUMNS: &str = "upstream, tool, hash, definition, pinned_ms, pending_hash, \
    pending_definition, changed_ms, claim, rejected_hash";

fn from_row(row: &sqlx::any::AnyRow) -> Result<PinRow, sqlx::Error> {
    let pending_hash: Option<String> = row.try_get("pending_hash")?;
    let pending = match pending_hash {
        Some(hash) => Some(Pending {
            hash,
            definition: row
                .try_get::<Option<String>, _>("pending_definition")?
                .unwrap_or_default(),
            changed_ms: row
                .try_get::<Option<i64>, _>("changed_ms")?
                .unwrap_or_default(),
        }),
        None => None,
    };
    Ok(PinRow {
        upstream: row.try_get("upstream")?,
        tool: row.try_get("tool")?,
        hash: row.try_get("hash")?,
        definition: row.try_get("definition")?,
        pinned_ms: row.try_get("pinned_ms")?,
        pending,
        claim: row.try_get("claim")?,
        rejected: row.try_get("rejected_hash")?,
    })
}

#[async_trait]
impl PinRepo for Store {
    async fn pin(
        &self,
        upstream: &str,
        tool: &str,
        hash: &str,
        definition: &str,
    ) -> Result<PinRow, StoreError> {
        let error = query_error("pin an upstream tool");
        sqlx::query(&format!(
            "insert into upstream_pins ({COLUMNS}) \
             values ($1, $2, $3, $4, $5, null, null, null, null, null) \
             on conflict (upstream, tool) do nothing"
        ))
        .bind(upstream)
        .bind(tool)
        .bind(hash)
        .bind(definition)
        .bind(self.now_ms())
        .execute(self.writer())
        .await
        .map_err(error)?;
        let row = sqlx::query(&format!(
            "select {COLUMNS} from upstream_pins where upstream = $1 and tool = $2"
        ))
        .bind(upstream)
        .bind(tool)
        .fetch_one(self.pool())
        .await
        .map_err(error)?;
        from_row(&row).map_err(error)
    }

    async fn claim(
        &self,
        upstream: &str,
        tool: &str,
        owner: &str,
        (hash, definition): (&str, &str),
    ) -> Result<PinRow, StoreError> {
        let error = query_error("record an upstream tool's claim of a name");
        let now = self.now_ms();
        sqlx::query(&format!(
            "insert into upstream_pins ({COLUMNS}) values ($1, $2, '', '', $3, $4, $5, $3, $6, null) \
             on conflict (upstream, tool) do nothing"
        ))
        .bind(upstream)
        .bind(tool)
        .bind(now)
        .bind(hash)
        .bind(definition)
        .bind(owner)
        .execute(self.writer())
        .await
        .map_err(error)?;
        let rows = self.pins(Some(upstream)).await?;
        let row = rows.into_iter().find(|row| row.tool == tool);
        row.ok_or_else(|| error(sqlx::Error::RowNotFound))
    }

    async fn set_pending(
        &self,
        upstream: &str,
        tool: &str,
        pending: Option<(&str, &str)>,
    ) -> Result<bool, StoreError> {
        let (hash, definition, at) = match pending {
            Some((hash, definition)) => (Some(hash), Some(definition), Some(self.now_ms())),
            None => (None, None, None),
        };
        let done = sqlx::query(
            "update upstream_pins set pending_hash = $1, pending_definition = $2, changed_ms = $3 \
             where upstream = $4 and tool = $5",
        )
        .bind(hash)
        .bind(definition)
        .bind(at)
        .bind(upstream)
        .bind(tool)
        .execute(self.writer())
        .await
        .map_err(query_error("record an upstream tool's changed definition"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn approve(&self, upstream: &str, tool: Option<&str>) -> Result<Vec<String>, StoreError> {
        let error = query_error("approve an upstream tool's definition");
        let set = "update upstream_pins set hash = pending_hash, definition = pending_definition, \
             pinned_ms = $1, pending_hash = null, pending_definition = null, changed_ms = null, \
             claim = null, rejected_hash = null where upstream = $2 and pending_hash is not null";
        let query = match tool {
            Some(_) => format!("{set} and tool = $3 returning tool"),
            None => format!(
                "{set} and (rejected_hash is null or rejected_hash <> pending_hash) returning tool"
            ),
        };
        let mut query = sqlx::query(&query).bind(self.now_ms()).bind(upstream);
        if let Some(tool) = tool {
            query = query.bind(tool);
        }
        let rows = query.fetch_all(self.writer()).await.map_err(error)?;
        let mut tools = rows
            .iter()
            .map(|row| row.try_get::<String, _>("tool"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)?;
        tools.sort();
        Ok(tools)
    }

    async fn reject(&self, upstream: &str, tool: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "update upstream_pins set rejected_hash = pending_hash \
             where upstream = $1 and tool = $2 and pending_hash is not null",
        )
        .bind(upstream)
        .bind(tool)
        .execute(self.writer())
        .await
        .map_err(query_error("reject an upstream tool's changed definition"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn pins(&self, upstream: Option<&str>) -> Result<Vec<PinRow>, StoreError> {
        let one = format!(
            "select {COLUMNS} from upstream_pins where upstream = $1 order by upstream, tool"
        );
        let all = format!("select {COLUMNS} from upstream_pins order by upstream, tool");
        let query = match upstream {
            Some(upstream) => sqlx::query(&one).bind(upstream.to_owned()),
            None => sqlx::query(&all),
        };
        let rows = query
            .fetch_all(self.pool())
            .await
            .map_err(query_error("list upstream tools' pins"))?;
        rows.iter()
            .map(from_row)
            .collect::<Result<_, _>>()
            .map_err(query_error("read an upstream tool's pin"))
    }
}
