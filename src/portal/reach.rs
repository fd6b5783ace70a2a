//! `GET /portal/admin/grants` (admins): what each `[[portal.grants]]` group's
//! scopes reach, tool by tool and prompt by prompt, decided by the same
//! `Caller::may` the engine lists and calls with; and what no group reaches
//! (a tool declared with `scopes = ["team:say"]` is not covered by
//! `tools:*`, so signed-in members never see it until a grant names it).

use std::sync::Arc;

use axum::{extract::State, response::Html};
use maud::html;

use super::{Portal, PortalError, pages::page, session::Member};
use crate::registry::{Caller, Identity, Kind, Registry};

/// One group's reach: its scopes, then the tools and prompts they cover.
struct Reach {
    group: String,
    scopes: Vec<String>,
    tools: Vec<String>,
    prompts: Vec<String>,
}

/// Tool and prompt names with the scopes each needs.
type Needs = Vec<(String, Vec<String>)>;

fn needs(registry: &Registry) -> (Needs, Needs) {
    let with_scopes = |kind: Kind, name: String| {
        let required = registry.required_scopes(kind, &name);
        (name, required)
    };
    let tools = (registry.tools().iter())
        .map(|t| with_scopes(Kind::Tool, t.name.to_string()))
        .collect();
    let prompts = (registry.prompts().iter())
        .map(|p| with_scopes(Kind::Prompt, p.name.clone()))
        .collect();
    (tools, prompts)
}

fn reached(caller: &Caller, items: &Needs) -> Vec<String> {
    (items.iter())
        .filter(|(_, required)| caller.may(required))
        .map(|(name, _)| name.clone())
        .collect()
}

pub(super) async fn grants(
    State(portal): State<Arc<Portal>>,
    member: Member,
) -> Result<Html<String>, PortalError> {
    member.require_admin()?;
    let registry = (portal.registry)();
    let (tools, prompts) = needs(&registry);
    let reaches: Vec<Reach> = (portal.portal.grants.iter())
        .map(|grant| {
            let caller: Caller = Identity {
                user: grant.who(),
                scopes: grant.scopes.clone(),
                token_id: None,
                claims: serde_json::Map::new(),
            }
            .into();
            Reach {
                group: grant.who(),
                scopes: grant.scopes.clone(),
                tools: reached(&caller, &tools),
                prompts: reached(&caller, &prompts),
            }
        })
        .collect();
    let unreached: Vec<&(String, Vec<String>)> = (tools.iter())
        .filter(|(name, _)| !reaches.iter().any(|r| r.tools.contains(name)))
        .collect();
    Ok(page(
        "Grants",
        Some(&member),
        html! {
            p { "What each group's " code { "[[portal.grants]]" } " scopes reach: a member of "
                "several groups may grant the scopes of all of them." }
            table id="grants" {
                thead { tr { th { "Group" } th { "Scopes" } th { "Tools" } th { "Prompts" } } }
                tbody { @for reach in &reaches {
                    tr data-group=(reach.group) {
                        td { (reach.group) }
                        td { @for scope in &reach.scopes { code { (scope) } " " } }
                        td { (reach.tools.len()) " of " (tools.len()) ": "
                             @for tool in &reach.tools { code.tool { (tool) } " " } }
                        td { (reach.prompts.len()) " of " (prompts.len()) }
                    }
                } }
            }
            @if !unreached.is_empty() {
                h2 { "Tools no group reaches" }
                p { "Add a scope each needs to a group's grant, or members who sign in never see them." }
                table id="unreached" {
                    thead { tr { th { "Tool" } th { "Needs every one of" } } }
                    tbody { @for (tool, required) in &unreached {
                        tr { td { code { (tool) } } td { @for scope in required { code { (scope) } " " } } }
                    } }
                }
            }
        },
    ))
}
