//! The registry a configuration describes: the fixtures and built-in
//! tools it enables, its declared capabilities, and the upstream servers'
//! tools, prompts and resources, in the order clients see them.

use std::sync::Arc;

use crate::{
    config::{Config, member_slots},
    providers::{self, builtin::Builtin, declared::WithPolicies},
    registry::{ChangeBus, Guardrails, Registry, Slots, ToolProvider},
    telemetry::{Metrics, UpstreamGauge},
    upstream::{Status, Upstreams},
};

/// Registers the providers the configuration enables; with `upstreams`,
/// the upstream servers' offers too (starting or stopping connections).
pub(crate) fn build_registry(
    config: &Config,
    bus: &ChangeBus,
    upstreams: Option<&Upstreams>,
) -> anyhow::Result<Arc<Registry>> {
    let providers = &config.providers;
    let mut builder = Registry::builder()
        .toolsets(&config.toolsets)
        .main_endpoint(config.mcp.discovery, &config.mcp.always);
    #[cfg(feature = "conformance")]
    if providers.conformance.enabled {
        use crate::providers::conformance;
        // The suite calls the first listed tool with `{}` and reads the first
        // listed resource, so the conformance fixtures come first.
        let mrtr = Arc::new(conformance::ConformanceMrtr);
        builder = builder
            .tools(Arc::new(conformance::ConformanceTools))
            .tools(mrtr.clone())
            .tools(Arc::new(conformance::ConformanceModern::new(bus.clone())))
            .tools(Arc::new(conformance::ConformanceTasks))
            .resources(Arc::new(conformance::ConformanceResources))
            .prompts(Arc::new(conformance::ConformancePrompts))
            .prompts(mrtr)
            .subscribable();
    }
    let builtin = providers
        .builtin
        .enabled
        .then(|| Arc::new(Builtin::new(&config.mcp.server_name)));
    if let Some(builtin) = &builtin {
        builder = builder.tools(builtin.clone()).prompts(builtin.clone());
    }
    builder = providers::declare(config, bus, builder)?;
    builder = builder.guardrails(Guardrails::build(&config.guardrails)?);
    if let Some(upstreams) = upstreams {
        // The fallbacks it reads are among the secrets `declare` holds.
        let slots = Slots::new(config, &mut Vec::new())?;
        upstreams.allow_oauth_at(&config.tools.http_allowlist);
        let offered = upstreams.reconcile(&config.upstreams, &slots)?;
        for ((provider, secrets), upstream) in offered.into_iter().zip(&config.upstreams) {
            // Always wrapped: an upstream's destructive annotation asks for
            // confirmation even where no policy is configured.
            let policies = (upstream.policies(), upstream.unconfirmed());
            // Results of a member's own connection (their credential or
            // OAuth token) are cached per member.
            let per_member = (upstream.headers.values()).any(|t| !member_slots(t).is_empty())
                || upstream.auth == crate::config::UpstreamAuth::Oauth
                || upstream.may_detect_oauth();
            let max = config.tools.cache_max_entries;
            let provider: Arc<dyn ToolProvider> =
                WithPolicies::new(provider, policies, max, per_member);
            builder = builder.tools(provider).secrets(secrets);
        }
        // After teamgate's own resources: those keep their URIs.
        let own = builder.resource_providers().to_vec();
        for (prompts, resources) in upstreams.passthrough(&own, bus) {
            builder = builder.prompts(prompts).resources(resources);
        }
    }
    let registry = Arc::new(builder.build()?);
    if let Some(builtin) = builtin {
        builtin.offered_by(&registry);
    }
    Ok(registry)
}

/// `/metrics` reads each upstream's state and hears each forwarded call.
pub(crate) fn observe_upstreams(metrics: &Metrics, upstreams: &Arc<Upstreams>) {
    let calls = metrics.clone();
    upstreams.on_call(Arc::new(move |upstream, outcome, took| {
        calls.upstream_call(upstream, outcome, took.as_secs_f64());
    }));
    let watched = Arc::downgrade(upstreams);
    metrics.watch_upstreams(Arc::new(move || {
        let Some(upstreams) = watched.upgrade() else {
            return Vec::new();
        };
        let states = upstreams.states().into_iter();
        states
            .map(|state| UpstreamGauge {
                up: state.status == Status::Up,
                tools: state.tools,
                dropped: state.dropped,
                name: state.name,
            })
            .collect()
    }));
}
