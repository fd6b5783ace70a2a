//! Change notifications: forwarded to each 2025-era session's GET stream,
//! and to 2026-07-28 `subscriptions/listen` streams, filtered by what each
//! asked for. Both read the process-wide change bus, which on PostgreSQL
//! also carries the other replicas' changes.

#![allow(deprecated)] // LoggingLevel and resources/updated for 2025-era sessions.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
};

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{LoggingLevel, Peer, RoleServer, SubscriptionContext};
use crate::registry::{ChangeBus, ChangeEvent, Registry, ResourceProvider};

/// Per-session state of a 2025-era session (or of one stateless request).
/// Owned by the session's handler; its forwarder only holds a weak reference,
/// so dropping the handler (idle eviction, end, shutdown) drops this too.
#[derive(Default)]
pub(super) struct SessionState {
    pub log_level: Mutex<Option<LoggingLevel>>,
    pub subscriptions: Mutex<HashSet<String>>,
    /// The providers told of those subscriptions (an upstream passes them
    /// on), told again when the session goes.
    pub held: Mutex<Held>,
    /// Set when the forwarder starts (once per session); cancelled on drop.
    forwarder: OnceLock<CancellationToken>,
}

impl Drop for SessionState {
    fn drop(&mut self) {
        if let Some(ended) = self.forwarder.get() {
            ended.cancel();
        }
    }
}

/// Subscriptions a session or listen stream holds with the resources'
/// providers; ended with it (dropping this tells each provider).
#[derive(Default)]
pub(super) struct Held(HashMap<String, Arc<dyn ResourceProvider>>);

impl Held {
    /// Tells `uri`'s provider of the subscription (once per `uri`).
    pub(super) async fn hold(
        held: &Mutex<Held>,
        registry: &Registry,
        uri: &str,
    ) -> Result<(), super::McpError> {
        // Only a provider that passes subscriptions on is held: holding
        // another would keep it (and its watcher) alive past a reload.
        let Some(owner) = registry.resource_owner(uri).filter(|p| p.subscribable()) else {
            return Ok(());
        };
        if held.lock().expect("held lock").0.contains_key(uri) {
            return Ok(());
        }
        owner.subscribe(uri).await?;
        let earlier = held
            .lock()
            .expect("held lock")
            .0
            .insert(uri.to_owned(), owner.clone());
        if earlier.is_some() {
            // Subscribed twice at once: one is enough.
            owner.unsubscribe(uri).await;
        }
        Ok(())
    }

    /// Ends the subscription to `uri`, if held.
    pub(super) async fn release(held: &Mutex<Held>, uri: &str) {
        let owner = held.lock().expect("held lock").0.remove(uri);
        if let Some(owner) = owner {
            owner.unsubscribe(uri).await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let held: Vec<_> = self.0.drain().collect();
        if held.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            for (uri, owner) in held {
                owner.unsubscribe(&uri).await;
            }
        });
    }
}

/// Forwards changes to a legacy session until it leaves memory or its
/// transport closes. Started once per session (on `notifications/initialized`
/// or the first subscribe). The forwarder holds the session's peer, and with
/// it rmcp's channel to the session (about 8 KiB): waiting only for the next
/// change to notice the session had gone kept that memory for every evicted
/// session until some change happened.
pub(super) fn forward_to_session(
    bus: &ChangeBus,
    session: &Arc<SessionState>,
    peer: Peer<RoleServer>,
) {
    let mut started = false;
    let ended = session
        .forwarder
        .get_or_init(|| {
            started = true;
            CancellationToken::new()
        })
        .clone();
    if !started {
        return;
    }
    let mut events = bus.subscribe();
    let session = Arc::downgrade(session);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = ended.cancelled() => return,
                event = events.recv() => event,
            };
            let event = match event {
                Ok(event) => event,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            if peer.is_transport_closed() {
                return;
            }
            let sent = match event {
                ChangeEvent::ToolsListChanged => peer.notify_tool_list_changed().await,
                ChangeEvent::PromptsListChanged => peer.notify_prompt_list_changed().await,
                ChangeEvent::ResourcesListChanged => peer.notify_resource_list_changed().await,
                ChangeEvent::ResourceUpdated { uri } => {
                    let Some(session) = session.upgrade() else {
                        return;
                    };
                    let subscribed = session
                        .subscriptions
                        .lock()
                        .expect("subscriptions lock")
                        .contains(&uri);
                    drop(session);
                    if !subscribed {
                        continue;
                    }
                    let params = serde_json::from_value(serde_json::json!({ "uri": uri }))
                        .expect("resource updated params");
                    peer.notify_resource_updated(params).await
                }
            };
            if sent.is_err() {
                return;
            }
        }
    });
}

/// Serves one `subscriptions/listen` stream until the client closes it,
/// holding its resource subscriptions with their providers meanwhile.
pub(super) async fn listen(bus: &ChangeBus, registry: Arc<Registry>, context: SubscriptionContext) {
    let mut events = bus.subscribe();
    let held = Mutex::default();
    for uri in context.accepted().resource_subscriptions.iter().flatten() {
        if let Err(error) = Held::hold(&held, &registry, uri).await {
            tracing::debug!(%uri, %error, "a listen stream's subscription was not passed on");
        }
    }
    // A stream may outlive many reloads: it keeps no registry.
    drop(registry);
    let sink = context.sink();
    loop {
        let event = tokio::select! {
            () = context.cancelled() => return,
            event = events.recv() => event,
        };
        let event = match event {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let accepted = sink.accepted();
        let sent = match event {
            ChangeEvent::ToolsListChanged if accepted.tools_list_changed == Some(true) => {
                sink.notify_tool_list_changed().await
            }
            ChangeEvent::PromptsListChanged if accepted.prompts_list_changed == Some(true) => {
                sink.notify_prompt_list_changed().await
            }
            ChangeEvent::ResourcesListChanged if accepted.resources_list_changed == Some(true) => {
                sink.notify_resource_list_changed().await
            }
            ChangeEvent::ResourceUpdated { uri }
                if accepted
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|u| u.contains(&uri)) =>
            {
                sink.notify_resource_updated(uri).await
            }
            _ => continue,
        };
        if sent.is_err() {
            return;
        }
    }
}
