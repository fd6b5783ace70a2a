//! What sign-in reads from a verified ID token besides the member: the
//! groups (`groups_claim`), the values of the other claims the grants match
//! on (Google's `hd`, a verified `email`), the names of the token's claims
//! and its distributed ones (Entra ID's groups overage); and, for a member
//! whose groups grant no scope, which claim held what and why nothing
//! matched, so the admin fixes the mapping without decoding tokens.

use serde_json::{Map, Value};

use super::{Portal, session::Member};
use crate::{config::PortalConfig, store::SignInClaims};

/// The most values kept from one claim (a member in thousands of groups).
const MAX_VALUES: usize = 256;
/// The most values, and characters of each, a message shows.
const SHOWN: usize = 10;
const SHOWN_CHARS: usize = 64;

/// The string values of a claim: a string, or the strings of a list.
fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => (items.iter())
            .filter_map(Value::as_str)
            .take(MAX_VALUES)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// The member's groups and the rest of what the grants need.
pub(super) fn read(
    claims: &Map<String, Value>,
    portal: &PortalConfig,
) -> (Vec<String>, SignInClaims) {
    let groups = strings(claims.get(&portal.groups_claim));
    // An unverified address is anyone's to type: never matched.
    let verified = claims.get("email_verified") == Some(&Value::Bool(true));
    let values = (portal.claims_read().into_iter())
        .filter(|name| *name != "email" || verified)
        .map(|name| (name.to_owned(), strings(claims.get(name))))
        .filter(|(_, values)| !values.is_empty())
        .collect();
    let distributed = match claims.get("_claim_names") {
        Some(Value::Object(names)) => names.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let signed_in = SignInClaims {
        values,
        names: claims.keys().cloned().collect(),
        distributed,
    };
    (groups, signed_in)
}

impl Portal {
    /// The scopes a signed-in member may grant.
    pub(super) fn grantable(&self, member: &Member) -> Vec<String> {
        let session = &member.session;
        self.portal
            .grantable(&session.groups, &session.claims.values)
    }
}

/// Values as a message shows them: quoted, the first few, each cut short.
fn shown(values: &[String]) -> String {
    let mut quoted: Vec<String> = (values.iter().take(SHOWN))
        .map(|v| match v.char_indices().nth(SHOWN_CHARS) {
            Some((at, _)) => format!("{:?}…", &v[..at]),
            None => format!("{v:?}"),
        })
        .collect();
    if values.len() > SHOWN {
        quoted.push("…".into());
    }
    let count = match values.len() {
        1 => "1 value".to_owned(),
        n => format!("{n} values"),
    };
    format!("[{}] ({count})", quoted.join(", "))
}

/// Why a member's sign-in granted no scope: which claim was read, what it
/// held (or that it was missing, and which claims the token had: names
/// only), and what the grants look for.
pub(super) fn explain(portal: &PortalConfig, groups: &[String], claims: &SignInClaims) -> String {
    let claim = &portal.groups_claim;
    let by_group: Vec<&str> = (portal.grants.iter())
        .filter(|g| !g.group.is_empty())
        .map(|g| g.group.as_str())
        .collect();
    let names = claims.names.join(", ");
    if portal.grants.is_empty() {
        return "no [[portal.grants]] is configured".into();
    }
    // Without group grants a missing groups claim is expected (Google).
    let told = if by_group.is_empty() && groups.is_empty() {
        None
    } else if claims.distributed.contains(claim) {
        Some(format!(
            "the ID token's `{claim}` claim was not in the token: the provider sent it \
             elsewhere (`_claim_names`; Entra ID does this, the groups overage, for a member \
             of more than 200 groups) and teamgate does not fetch it; map app roles \
             (groups_claim = \"roles\") or send only the groups assigned to the application"
        ))
    } else if !claims.names.contains(claim) {
        Some(format!(
            "the ID token has no `{claim}` claim (groups_claim); its claims are: {names}"
        ))
    } else if groups.is_empty() {
        Some(format!(
            "the ID token's `{claim}` claim held no group names"
        ))
    } else {
        Some(format!(
            "the ID token's `{claim}` claim held {}",
            shown(groups)
        ))
    };
    let mut why: Vec<String> = told.into_iter().collect();
    if !groups.is_empty() {
        why.push(if by_group.is_empty() {
            "no [[portal.grants]] names a group".to_owned()
        } else {
            format!(
                "no [[portal.grants]] group matches them; the grants name: {}",
                by_group.join(", ")
            )
        });
    }
    for name in portal.claims_read() {
        let looked: Vec<String> = (portal.grants.iter())
            .filter(|g| {
                g.group.is_empty() && (g.claim == name || (g.claim.is_empty() && name == "email"))
            })
            .map(|g| g.who())
            .collect();
        let present = claims.names.iter().any(|n| n == name);
        let held = match claims.values.get(name) {
            Some(values) => format!("held {}", shown(values)),
            None if present && name == "email" => {
                "is not verified (email_verified is not true)".to_owned()
            }
            None if present => "held no string".to_owned(),
            None => format!("is missing (its claims are: {names})"),
        };
        why.push(format!(
            "grants for {} found none: the ID token's `{name}` {held}",
            looked.join(", ")
        ));
    }
    why.join("; ")
}
