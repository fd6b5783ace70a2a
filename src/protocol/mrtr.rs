//! Asking the client for input mid-call, in both eras, behind one call.
//!
//! 2026-07-28 has no server-to-client requests: the server answers with an
//! `input_required` result and the client retries with `inputResponses`
//! (MRTR). 2025-era sessions send real requests on the call's stream. A
//! provider calls [`Mrtr::ask`] and gets the answers, or a result to return.
//! `requestState` is sealed with HMAC keys and bound to the caller and the
//! call target, so a client can neither forge nor replay it elsewhere.

#![allow(deprecated)] // Sampling and roots are deprecated in 2026-07-28 but served to 2025-era sessions.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use rmcp::model::{InputRequests, InputResponses, RequestStateCodec, SealOptions};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{InputRequest, InputRequiredResult, McpError, Peer, RoleServer};
use crate::config::Secret;

/// How long a sealed `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(600);

/// Seals and opens `requestState`. Built once from the configured keys.
pub struct StateKeys {
    codec: RequestStateCodec,
}

impl StateKeys {
    /// The first key seals; every key opens, so a rotation prepends a new key
    /// and keeps the old ones until their states have expired. With no key
    /// configured, a random one is made: states then only open on this process.
    pub fn new(keys: &[Secret]) -> anyhow::Result<Self> {
        let generated;
        let keys: Vec<&[u8]> = if keys.is_empty() {
            generated = rand::random::<[u8; 32]>();
            vec![&generated]
        } else {
            keys.iter().map(|k| k.expose().as_bytes()).collect()
        };
        // A key id derived from the key itself stays the same when the list is reordered.
        let ring: Vec<(String, Vec<u8>)> = keys
            .iter()
            .map(|k| (hex::encode(&Sha256::digest(k)[..6]), k.to_vec()))
            .collect();
        let active = ring[0].0.clone();
        let codec = RequestStateCodec::new_with_keyring(active, ring)
            .map_err(|e| anyhow::anyhow!("mcp.request_state_keys: {e}"))?;
        Ok(Self { codec })
    }
}

/// One call's view of MRTR: what the client sent back, and how to ask more.
pub struct Mrtr {
    keys: Arc<StateKeys>,
    /// Who and what the state is bound to: `user\0method\0target`.
    binding: Vec<u8>,
    responses: Option<InputResponses>,
    state: Option<String>,
}

/// The outcome of [`Mrtr::ask`].
pub enum Asked {
    /// Every request was answered; keyed like the requests.
    Answered(BTreeMap<String, Value>),
    /// Return this to the client; it retries with the answers.
    Pending(InputRequiredResult),
}

impl Mrtr {
    pub fn new(
        keys: Arc<StateKeys>,
        binding: &[&str],
        responses: Option<InputResponses>,
        state: Option<String>,
    ) -> Self {
        Self {
            keys,
            binding: binding.join("\0").into_bytes(),
            responses,
            state,
        }
    }

    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses.as_ref()?.get(key)
    }

    /// Every answer the client sent back with this call.
    pub fn responses(&self) -> Option<&InputResponses> {
        self.responses.as_ref()
    }

    pub fn has_state(&self) -> bool {
        self.state.is_some()
    }

    pub fn seal<T: Serialize>(&self, value: &T) -> Result<String, McpError> {
        let options = SealOptions::new()
            .associated_data(&self.binding)
            .ttl(STATE_TTL);
        self.keys
            .codec
            .seal_json_with(value, &options)
            .map_err(|e| McpError::internal_error(format!("cannot seal requestState: {e}"), None))
    }

    /// The state the client echoed back, verified. A forged, tampered,
    /// expired or misbound state is one error: telling them apart would
    /// help an attacker and not the client.
    pub fn open<T: DeserializeOwned>(&self) -> Result<Option<T>, McpError> {
        let Some(state) = &self.state else {
            return Ok(None);
        };
        self.keys
            .codec
            .open_json_with(state, &self.binding)
            .map(Some)
            .map_err(|_| McpError::invalid_params("invalid or expired requestState", None))
    }

    /// Asks the client for `requests`. On a 2025-era session they are sent as
    /// requests now; on 2026-07-28 the answers come from `inputResponses`, or
    /// an `input_required` result (carrying `state`) asks for the missing ones.
    pub async fn ask(
        &self,
        peer: &Peer<RoleServer>,
        modern: bool,
        requests: InputRequests,
        state: Option<String>,
    ) -> Result<Asked, McpError> {
        if !modern {
            return ask_now(peer, requests).await.map(Asked::Answered);
        }
        let mut answered = BTreeMap::new();
        let mut missing = InputRequests::new();
        for (key, request) in requests {
            match self.response(&key) {
                Some(Value::Object(answer)) => {
                    answered.insert(key, Value::Object(answer.clone()));
                }
                Some(_) => {
                    return Err(McpError::invalid_params(
                        format!("inputResponses.{key} must be the client's result object"),
                        None,
                    ));
                }
                None => {
                    missing.insert(key, request);
                }
            }
        }
        if missing.is_empty() {
            Ok(Asked::Answered(answered))
        } else {
            Ok(Asked::Pending(InputRequiredResult::new(
                Some(missing),
                state,
            )))
        }
    }
}

async fn ask_now(
    peer: &Peer<RoleServer>,
    requests: InputRequests,
) -> Result<BTreeMap<String, Value>, McpError> {
    let failed = |e: rmcp::ServiceError| {
        McpError::internal_error(format!("client request failed: {e}"), None)
    };
    let mut answers = BTreeMap::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(r) => {
                serde_json::to_value(peer.create_elicitation(r.params).await.map_err(failed)?)
            }
            InputRequest::CreateMessage(r) => {
                serde_json::to_value(peer.create_message(r.params).await.map_err(failed)?)
            }
            InputRequest::ListRoots(_) => {
                serde_json::to_value(peer.list_roots().await.map_err(failed)?)
            }
            _ => return Err(McpError::internal_error("unsupported input request", None)),
        };
        answers.insert(key, answer.unwrap_or_default());
    }
    Ok(answers)
}
