//! The endpoints a member may connect to (issue 60): `/mcp`, and each
//! toolset whose groups are empty or include one of theirs, with its URL,
//! what it is for, how clients find its tools, and the client setups.
//! Also which toolset a token made on the portal may be limited to.

use std::sync::Arc;

use axum::{extract::State, response::Html};
use maud::{Markup, html};

use super::{Portal, PortalError, pages::page, session::Member, setup};
use crate::{
    config::Discovery,
    registry::{Kind, Registry, Toolset, scope_covers},
};

/// What a snippet holds where the member's token goes.
const TOKEN_HERE: &str = "<your token>";

impl Portal {
    /// The URL of the endpoint of `toolset` (`None`: the main one).
    pub(super) fn endpoint_url(&self, toolset: Option<&str>) -> String {
        let main = &self.config.server.public_url;
        match toolset {
            None => main.clone(),
            Some(name) => format!("{}/{name}", main.trim_end_matches('/')),
        }
    }

    /// The path of the endpoint of `toolset`: `/mcp`, `/mcp/oncall`.
    pub(super) fn endpoint_path(&self, toolset: Option<&str>) -> String {
        let main = &self.config.mcp.path;
        match toolset {
            None => main.clone(),
            Some(name) => format!("{}/{name}", main.trim_end_matches('/')),
        }
    }

    /// The toolset a new token is limited to: none when `name` is empty;
    /// refused when no toolset has that name or the member may not connect
    /// to it (the form is never trusted: its list is only what was shown).
    pub(super) fn token_limit(
        &self,
        member: &Member,
        name: &str,
    ) -> Result<Option<Arc<Toolset>>, PortalError> {
        if name.is_empty() {
            return Ok(None);
        }
        let registry = (self.registry)();
        let Some(toolset) = registry.toolset(name) else {
            return Err(PortalError::BadRequest(format!(
                "no toolset is named {name}"
            )));
        };
        if !toolset.open_to(&member.session.groups) {
            return Err(PortalError::Forbidden(format!(
                "your groups ({}) are none of those that may connect to the toolset {name}",
                member.session.groups.join(", ")
            )));
        }
        Ok(Some(toolset.clone()))
    }
}

/// The toolsets `member` may connect to, by name.
pub(super) fn open_to(registry: &Registry, member: &Member) -> Vec<Arc<Toolset>> {
    (registry.toolsets())
        .filter(|t| t.open_to(&member.session.groups))
        .cloned()
        .collect()
}

/// The name a client knows the endpoint by: `teamgate`, `teamgate-oncall`.
pub(super) fn server_name(toolset: Option<&str>) -> String {
    match toolset {
        None => "teamgate".into(),
        Some(name) => format!("teamgate-{name}"),
    }
}

/// A discovery mode's name, as the configuration spells it.
pub(super) fn mode(discovery: Discovery) -> &'static str {
    match discovery {
        Discovery::List => "list",
        Discovery::Search => "search",
    }
}

/// How clients find an endpoint's tools, in a phrase.
pub(super) fn discovery(toolset: Option<&Toolset>, tools: &[String]) -> String {
    match toolset.map(|t| (t.discovery, t)) {
        Some((Discovery::Search, t)) => {
            let pinned = tools.iter().filter(|n| t.always_listed(n)).count();
            format!(
                "search: tools/list gives search_tools, call_tool and {pinned} pinned tool(s); \
                 the rest are found with search_tools"
            )
        }
        _ => "list: tools/list gives every tool".into(),
    }
}

/// The names of the tools the endpoint of `toolset` offers (`None`: the main one).
pub(super) fn offered(registry: &Registry, toolset: Option<&str>) -> Vec<String> {
    (registry.tools().iter())
        .map(|t| t.name.to_string())
        .filter(|n| registry.on_endpoint(toolset, Kind::Tool, n))
        .collect()
}

/// `GET /portal/endpoints`: the endpoints the member may connect to.
pub(super) async fn list(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    let registry = (portal.registry)();
    let grantable = portal.grantable(&member);
    let reach = |names: Vec<String>| -> Vec<String> {
        let covered = |n: &String| {
            (registry.required_scopes(Kind::Tool, n).iter()).all(|r| scope_covers(&grantable, r))
        };
        names.into_iter().filter(covered).collect()
    };
    let main = registry.discovery(None).map(|t| t.as_ref());
    let main_tools = offered(&registry, None);
    let open = open_to(&registry, &member);
    let mut sections = vec![endpoint(
        &portal,
        None,
        (discovery(main, &main_tools), reach(main_tools)),
        "Every member. Any of your tokens not limited to a toolset works here.",
    )];
    for toolset in &open {
        let tools = offered(&registry, Some(&toolset.name));
        let who = if toolset.groups.is_empty() {
            "Every member. Any of your tokens not limited to another toolset works here.".to_owned()
        } else {
            let oauth = if portal.authz.is_some() {
                ", or sign in from your client (it asks for this endpoint's URL)"
            } else {
                ""
            };
            format!(
                "The groups {}. A personal token carries no groups: make one limited to this \
                 toolset on the Tokens page{oauth}.",
                toolset.groups.join(", ")
            )
        };
        let found = (discovery(Some(toolset), &tools), reach(tools));
        sections.push(endpoint(&portal, Some(toolset), found, &who));
    }
    let path = |name: Option<&str>| portal.endpoint_path(name);
    Ok(page(
        "Your endpoints",
        Some(&member),
        html! {
            p { "The MCP endpoints you may connect to. Each setup below needs a token from the "
                a href="/portal/" { "Tokens" } " page in place of " code { (TOKEN_HERE) } "." }
            ul id="endpoints" {
                li { a href="#endpoint-main" { code { (path(None)) } } " every tool your scopes allow" }
                @for t in &open {
                    li { a href={ "#endpoint-" (t.name) } { code { (path(Some(&t.name))) } } " " (t.description) }
                }
            }
            @for section in sections { (section) }
        },
    ))
}

/// One endpoint's section: its path, what it is for, and the setups.
fn endpoint(
    portal: &Portal,
    toolset: Option<&Toolset>,
    (discovery, tools): (String, Vec<String>),
    who: &str,
) -> Markup {
    let name = toolset.map(|t| t.name.as_str());
    let url = portal.endpoint_url(name);
    let path = portal.endpoint_path(name);
    let description = match toolset {
        Some(t) => t.description.as_str(),
        None => "Every tool your scopes allow.",
    };
    html! {
        section.endpoint id={ "endpoint-" (name.unwrap_or("main")) } {
            h2 { code { (path) } @if let Some(name) = name { " " span.muted { "toolset " (name) } } }
            @if !description.is_empty() { p.description { (description) } }
            table.endpoint { tbody {
                tr { th { "URL" } td { code.url { (url) } } }
                tr { th { "Discovery" } td { (discovery) } }
                tr { th { "Who may connect" } td { (who) } }
                tr { th { "Tools your scopes reach" } td.tools {
                    (tools.len())
                    @if !tools.is_empty() && tools.len() <= 8 { ": " (tools.join(", ")) }
                    @if tools.len() > 8 { details { summary { "names" } (tools.join(", ")) } }
                } }
            } }
            (setup::render_first(&server_name(name), &url, TOKEN_HERE, 1))
        }
    }
}
