//! One member call forwarded to an upstream, from its request to its
//! result: progress relayed to the member, the upstream's own requests
//! (elicitation, sampling, roots) answered by the member (see `relay.rs`),
//! and `notifications/cancelled` upstream when the call ends early.
//!
//! A 2026-07-28 member cannot be asked mid-call: teamgate answers the
//! call with `input_required` and the client retries with the answer. The
//! upstream's `tools/call` is still running then, waiting for that answer,
//! so the call is *parked*: kept, request and all, in a bounded table
//! (`MAX_PARKED` per upstream) under a random id that travels in the
//! sealed `requestState` (bound to the user and the tool, so no other
//! member can resume it). The retry takes it out, hands the answer
//! upstream and goes on waiting. A call nobody resumes within
//! `RELAY_TIMEOUT` is dropped, which cancels it upstream (`parked.rs`).

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use rmcp::{
    RoleClient,
    model::{
        CancelledNotificationParam, ClientRequest, ErrorCode, ProgressNotificationParam,
        ProgressToken, RequestId, ServerResult,
    },
    service::{Peer, PeerRequestOptions, ServiceError},
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::{
    OnCall,
    parked::Parked,
    progress::Routes,
    relay::{ASKS_QUEUE, Ask, Kind, Member, RELAY_TIMEOUT, Relay, refuse},
};
use crate::{
    protocol::{Asked, InputRequests, InputRequiredResult, McpError},
    registry::CallContext,
};

/// Progress notifications queued per call before the oldest wait is dropped.
const PROGRESS_QUEUE: usize = 32;

/// One connection's member calls: where their progress goes, which call an
/// upstream request belongs to (`relay.rs`), and the 2026-07-28 calls
/// parked for their member's retry. Here, beside `Forward`, because the
/// parked table holds calls and each call holds the table.
pub(super) struct Calls {
    /// The upstream's name, for the measurements of each call.
    upstream: String,
    /// Told of every call as it ends; set once metrics exist.
    pub(super) on_call: Arc<OnceLock<OnCall>>,
    /// Calls waiting for progress, by the token teamgate sent upstream.
    progress: Mutex<Routes>,
    /// Member calls in flight, for the upstream's requests to its client.
    pub(super) relay: Relay,
    /// 2026-07-28 calls waiting for their member's retry.
    parked: Parked<Forward>,
}

impl Calls {
    pub(super) fn new(upstream: &str, on_call: Arc<OnceLock<OnCall>>) -> Self {
        Self {
            upstream: upstream.to_owned(),
            on_call,
            progress: Mutex::default(),
            relay: Relay::default(),
            parked: Parked::default(),
        }
    }

    /// A forwarded call ended with `outcome` after `took`.
    pub(super) fn ended(&self, outcome: &'static str, took: Duration) {
        if let Some(on_call) = self.on_call.get() {
            on_call(&self.upstream, outcome, took);
        }
    }

    /// Whether a member call is in flight or parked.
    pub(super) fn busy(&self) -> bool {
        self.relay.busy() || !self.parked.is_empty()
    }

    /// The upstream's progress, to the call that asked for it.
    pub(super) fn progress(&self, params: ProgressNotificationParam) {
        (self.progress.lock().expect("progress routes lock")).deliver(params);
    }
}

/// How a forwarded call ended, for now.
pub(super) enum Outcome {
    /// The upstream answered (or its connection went away).
    Done(Box<Result<Result<ServerResult, ServiceError>, oneshot::error::RecvError>>),
    /// 2026-07-28: return this; the call is parked until the retry.
    Input(InputRequiredResult),
    /// The member cancelled: dropped, which cancels the call upstream.
    Cancelled,
}

/// What the sealed `requestState` of a parked call holds.
#[derive(Serialize, Deserialize)]
pub(super) struct ParkedState {
    upstream_call: String,
}

pub(super) struct Forward {
    calls: Arc<Calls>,
    /// When the call was first sent (a resumed call keeps it).
    started: std::time::Instant,
    slot: u64,
    /// Set until the upstream answered: dropping it unanswered cancels it.
    request: Option<(Peer<RoleClient>, RequestId)>,
    /// The progress token teamgate sent upstream, its route's key.
    token: ProgressToken,
    response: oneshot::Receiver<Result<ServerResult, ServiceError>>,
    progress: mpsc::Receiver<ProgressNotificationParam>,
    asks: mpsc::Receiver<Ask>,
    /// The upstream request the member is being asked, and its input key.
    waiting: Option<(String, Ask)>,
    /// Rounds asked so far: each gets a fresh key, so an answer to one
    /// round is never taken for the next.
    rounds: u32,
    /// Only a resumed call reads `inputResponses`: a fresh call has asked nothing.
    resumed: bool,
}

impl Forward {
    /// Registers the call with the relay, then sends it upstream.
    pub(super) async fn start(
        calls: &Arc<Calls>,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        cx: &CallContext,
    ) -> Result<Self, ServiceError> {
        let member = Member {
            user: cx.caller().user.clone(),
            session: (!cx.is_modern()).then(|| cx.session_id().unwrap_or_default().to_owned()),
        };
        let (asks_tx, asks) = mpsc::channel(ASKS_QUEUE);
        let slot = calls.relay.open(member, asks_tx);
        let (route, progress) = mpsc::channel(PROGRESS_QUEUE);
        let sent = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => {
                calls.relay.close(slot);
                return Err(error);
            }
        };
        (calls.progress.lock().expect("progress routes lock"))
            .open(handle.progress_token.clone(), route);
        calls.relay.settle(slot, handle.id.clone());
        Ok(Self {
            calls: calls.clone(),
            started: std::time::Instant::now(),
            slot,
            request: Some((handle.peer, handle.id)),
            token: handle.progress_token,
            response: handle.rx,
            progress,
            asks,
            waiting: None,
            rounds: 0,
            resumed: false,
        })
    }

    pub(super) fn started(&self) -> std::time::Instant {
        self.started
    }

    /// The parked call a 2026-07-28 retry names in its `requestState`.
    pub(super) fn resume(calls: &Calls, cx: &CallContext) -> Result<Option<Self>, McpError> {
        let state = match cx.mrtr().open::<ParkedState>() {
            Ok(Some(state)) => state,
            Ok(None) => return Ok(None),
            // A credential round's state (`registry::slots_ask`), the
            // caller's own, names no parked call: the call starts afresh.
            Err(_) if cx.mrtr().open::<String>().is_ok() => return Ok(None),
            Err(error) => return Err(error),
        };
        let mut forward = calls
            .parked
            .take(&state.upstream_call, &cx.caller().user)
            .ok_or_else(|| {
                McpError::invalid_params(
                    "this call's input round expired or was already answered; call the tool again",
                    None,
                )
            })?;
        forward.resumed = true;
        Ok(Some(forward))
    }

    /// Waits for the upstream's result, relaying progress and requests.
    pub(super) async fn run(mut self, cx: &CallContext) -> Outcome {
        loop {
            if let Some((key, ask)) = self.waiting.take() {
                match self.answer(key, ask, cx).await {
                    Step::Answered => {}
                    Step::Cancelled => return Outcome::Cancelled,
                    Step::Park(key, ask) => match self.park(key, ask, cx) {
                        Ok(input_required) => return Outcome::Input(input_required),
                        Err(not_parked) => self = *not_parked,
                    },
                }
            }
            tokio::select! {
                biased;
                result = &mut self.response => {
                    self.request = None;
                    // Progress sent before the result goes out before it.
                    while let Ok(update) = self.progress.try_recv() {
                        let message = update.message.as_deref();
                        cx.progress(update.progress, update.total, message).await;
                    }
                    return Outcome::Done(Box::new(result));
                }
                Some(update) = self.progress.recv() => {
                    let message = update.message.as_deref();
                    cx.progress(update.progress, update.total, message).await;
                }
                Some(ask) = self.asks.recv() => {
                    self.rounds += 1;
                    self.waiting = Some((format!("upstream_{}", self.rounds), ask));
                }
                () = cx.cancellation().cancelled() => return Outcome::Cancelled,
            }
        }
    }

    /// Puts one upstream request to the member: a 2025-era session is asked
    /// now; a 2026-07-28 retry may carry the answer, else the call parks.
    async fn answer(&mut self, key: String, ask: Ask, cx: &CallContext) -> Step {
        let capabilities = serde_json::to_value(cx.client_capabilities()).unwrap_or_default();
        if !ask.kind.declared(&capabilities, &ask.params) {
            let why = format!(
                "the member's client did not declare the capability {} needs",
                ask.kind.method()
            );
            let _ = ask
                .answer
                .send(Err(refuse(ErrorCode::METHOD_NOT_FOUND, why)));
            return Step::Answered;
        }
        if cx.is_modern() {
            if self.resumed
                && let Some(answer) = cx.mrtr().response(&key)
            {
                let _ = ask.answer.send(Ok(answer.clone()));
                return Step::Answered;
            }
            return Step::Park(key, ask);
        }
        let requests = match input(&key, &ask) {
            Ok(requests) => requests,
            Err(error) => {
                let _ = ask.answer.send(Err(error));
                return Step::Answered;
            }
        };
        let asked = tokio::select! {
            asked = tokio::time::timeout(RELAY_TIMEOUT, cx.ask(requests, None)) => asked,
            () = cx.cancellation().cancelled() => return Step::Cancelled,
        };
        let answer = match asked {
            Ok(Ok(Asked::Answered(mut answers))) => Ok(answers.remove(&key).unwrap_or_default()),
            Ok(Ok(Asked::Pending(_))) => Err(McpError::internal_error("no answer", None)),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(McpError::internal_error(
                "the member's client did not answer in time",
                None,
            )),
        };
        let _ = ask.answer.send(answer);
        Step::Answered
    }

    /// Parks the call for the member's retry. When it cannot (the table is
    /// full), the upstream's request is refused and the call goes on.
    fn park(
        mut self,
        key: String,
        ask: Ask,
        cx: &CallContext,
    ) -> Result<InputRequiredResult, Box<Self>> {
        let id = hex::encode(rand::random::<[u8; 16]>());
        let state = cx.mrtr().seal(&ParkedState {
            upstream_call: id.clone(),
        });
        let (requests, state) = match (input(&key, &ask), state) {
            (Ok(requests), Ok(state)) => (requests, state),
            (Err(error), _) | (_, Err(error)) => {
                let _ = ask.answer.send(Err(error));
                return Err(Box::new(self));
            }
        };
        self.waiting = Some((key, ask));
        self.resumed = false;
        let calls = self.calls.clone();
        match calls.parked.put(id, cx.caller().user.clone(), self) {
            Ok(()) => Ok(InputRequiredResult::new(Some(requests), Some(state))),
            Err(mut this) => {
                if let Some((_, ask)) = this.waiting.take() {
                    let why = "too many calls of this upstream wait for their members".to_owned();
                    let _ = ask.answer.send(Err(refuse(ErrorCode::INTERNAL_ERROR, why)));
                }
                Err(Box::new(this))
            }
        }
    }
}

/// What became of one upstream request put to the member.
enum Step {
    Answered,
    Cancelled,
    Park(String, Ask),
}

/// The upstream's request as the member's `inputRequests` (or the
/// request sent on a 2025-era session), under `key`.
fn input(key: &str, ask: &Ask) -> Result<InputRequests, McpError> {
    let mut request = json!({"method": ask.kind.method()});
    if ask.kind != Kind::Roots {
        request["params"] = ask.params.clone();
    }
    serde_json::from_value(json!({ key: request })).map_err(|error| {
        let method = ask.kind.method();
        McpError::invalid_params(format!("not a valid {method} request: {error}"), None)
    })
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.calls.relay.close(self.slot);
        self.calls
            .progress
            .lock()
            .expect("progress routes lock")
            .close(&self.token);
        let Some((peer, id)) = self.request.take() else {
            return;
        };
        // Unanswered: the member cancelled, the timeout struck, or a parked
        // call expired.
        self.calls.ended("cancelled", self.started.elapsed());
        tokio::spawn(async move {
            let reason = "cancelled by the client or teamgate's timeout";
            let cancelled = CancelledNotificationParam::new(Some(id), Some(reason.into()));
            let _ = peer.notify_cancelled(cancelled).await;
        });
    }
}
