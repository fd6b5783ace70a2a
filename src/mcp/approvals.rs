//! The engine's approval desk (issue 65 part 2): a call of a tool with
//! `approval` is recorded in the store with its exact arguments, audited,
//! and parked (polling its row, telling the caller with progress) until a
//! member of the group decides on the portal, the rule's timeout passes,
//! or the caller cancels. The row outlives the call: the same member's
//! same call, repeated after a restart, joins its pending request or runs
//! on its approval, which is used once.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::calls::{AuditSink, actor};
use crate::{
    audit::digest_object,
    registry::{ApprovalAsk, ApprovalError, CallContext, Verdict},
    store::{ApprovalRepo, ApprovalRow, AuditRecord, Store, Via},
};

/// How often a parked call reads its row: a decision on any replica
/// reaches it within this.
const POLL: Duration = Duration::from_millis(500);
/// The most requests one member may have waiting at once: each parks a
/// call and a row, so a loop of calls cannot fill the store.
const MAX_OPEN_PER_MEMBER: usize = 20;
/// How often a parked call tells its caller it still waits.
const NOTICE_EVERY: Duration = Duration::from_secs(10);

pub struct ApprovalDesk {
    store: Store,
    audit: Option<AuditSink>,
    /// Cancelled when the server drains: a call cut off then is not the
    /// caller's cancel, and its request stays pending for the restart.
    draining: CancellationToken,
}

impl ApprovalDesk {
    pub fn new(store: Store, audit: Option<AuditSink>, draining: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            store,
            audit,
            draining,
        })
    }

    async fn audit(&self, cx: &CallContext, (method, row): (&str, &ApprovalRow), outcome: String) {
        let Some(sink) = &self.audit else { return };
        let via = Via {
            session_id: cx.session_id().unwrap_or_default().to_owned(),
            ..Via::default()
        };
        let what = (method, row.tool.as_str());
        let mut record = AuditRecord::request(
            (sink.now_ms)(),
            actor(cx.caller()),
            via,
            what,
            row.args_digest.clone(),
        );
        record.outcome = outcome;
        sink.auditor.record(record).await;
    }

    /// The member's open request for this very call, or a new one.
    async fn request(
        &self,
        ask: &ApprovalAsk<'_>,
        cx: &CallContext,
    ) -> Result<ApprovalRow, ApprovalError> {
        let unrecorded = |e: crate::store::StoreError| ApprovalError::Unrecorded(e.to_string());
        let requester = &cx.caller().user;
        let digest = digest_object(ask.arguments);
        if let Some(row) =
            (self.store.open_approval(requester, ask.tool, &digest).await).map_err(unrecorded)?
        {
            return Ok(row);
        }
        let now = self.store.now_ms();
        let theirs =
            (self.store.approvals_seen_by(requester, &[], 200).await).map_err(unrecorded)?;
        let open = theirs
            .iter()
            .filter(|r| r.requester == *requester && r.is_open(now))
            .count();
        if open >= MAX_OPEN_PER_MEMBER {
            return Err(ApprovalError::TooMany(open));
        }
        let timeout = i64::try_from(ask.rule.timeout.as_millis()).unwrap_or(i64::MAX);
        let row = ApprovalRow {
            id: hex::encode(rand::random::<[u8; 16]>()),
            requester: requester.clone(),
            tool: ask.tool.to_owned(),
            arguments: serde_json::Value::Object(ask.arguments.clone()).to_string(),
            args_digest: digest,
            group: ask.rule.group.clone(),
            status: "pending".into(),
            decided_by: None,
            reason: None,
            created_ms: now,
            expires_ms: now.saturating_add(timeout),
            decided_ms: None,
        };
        self.store.create_approval(&row).await.map_err(unrecorded)?;
        let outcome = format!("pending: approval {} by a member of {}", row.id, row.group);
        self.audit(cx, ("approvals/request", &row), outcome).await;
        Ok(row)
    }

    /// Waits for `row`'s decision; `None` when its approval was used by
    /// another call of the member's before this one took it.
    async fn wait(&self, mut row: ApprovalRow, cx: &CallContext) -> Option<Verdict> {
        let started = tokio::time::Instant::now();
        let mut told: Option<tokio::time::Instant> = None;
        loop {
            match row.status.as_str() {
                "approved" => {
                    let took = self
                        .store
                        .settle_approval(&row.id, "approved", "used")
                        .await;
                    let by = row.decided_by.clone().unwrap_or_default();
                    return took.unwrap_or(false).then_some(Verdict::Approved { by });
                }
                "denied" => {
                    let by = row.decided_by.clone().unwrap_or_default();
                    return Some(Verdict::Denied {
                        by,
                        reason: row.reason.clone(),
                    });
                }
                "pending" if row.expires_ms <= self.store.now_ms() => {
                    if let Ok(true) = self
                        .store
                        .settle_approval(&row.id, "pending", "expired")
                        .await
                    {
                        let outcome = format!("expired: approval {} undecided", row.id);
                        self.audit(cx, ("approvals/expire", &row), outcome).await;
                    }
                    return Some(Verdict::Expired);
                }
                "pending" => {}
                // Expired, withdrawn or used elsewhere.
                _ => return Some(Verdict::Expired),
            }
            if told.is_none_or(|at| at.elapsed() >= NOTICE_EVERY) {
                told = Some(tokio::time::Instant::now());
                let message = format!(
                    "Waiting for a member of {} to approve this call on the portal's Approvals \
                     page (request {}).",
                    row.group, row.id
                );
                cx.progress(started.elapsed().as_secs_f64(), None, Some(&message))
                    .await;
            }
            tokio::select! {
                () = cx.cancellation().cancelled() => {
                    if self.draining.is_cancelled() {
                        return Some(Verdict::Withdrawn);
                    }
                    if let Ok(true) = self.store.settle_approval(&row.id, "pending", "withdrawn").await {
                        let outcome = format!("withdrawn: approval {} cancelled by the caller", row.id);
                        self.audit(cx, ("approvals/withdraw", &row), outcome).await;
                    }
                    return Some(Verdict::Withdrawn);
                }
                () = tokio::time::sleep(POLL) => {}
            }
            match self.store.approval(&row.id).await {
                Ok(Some(read)) => row = read,
                Ok(None) => return Some(Verdict::Expired),
                // The store is away: keep waiting, bounded by the call's time.
                Err(error) => {
                    tracing::warn!(%error, id = %row.id, "cannot read a request for approval")
                }
            }
        }
    }
}

#[async_trait]
impl crate::registry::ApprovalDesk for ApprovalDesk {
    async fn decide(
        &self,
        ask: ApprovalAsk<'_>,
        cx: &CallContext,
    ) -> Result<Verdict, ApprovalError> {
        // A second round only when another call of the member's used the
        // approval this one joined: it then asks for its own.
        for _ in 0..2 {
            let row = self.request(&ask, cx).await?;
            if let Some(verdict) = self.wait(row, cx).await {
                return Ok(verdict);
            }
        }
        Ok(Verdict::Expired)
    }
}
