//! MCP Apps (SEP-1865; issue 66 part 1) in the configuration: the UI a
//! declared tool's results are shown with (`ui`), and a files source's
//! HTML files served as `ui://<source>/<path>` pages (`apps`), with the
//! Content Security Policy the host builds for them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `ui = { resource = "ui://pages/status.html", visibility = ["model", "app"] }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolUi {
    /// The `ui://` resource the host renders the tool's results with.
    pub resource: String,
    /// Who may call the tool: `"model"`, `"app"` (its page only); unset: both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<UiVisibility>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiVisibility {
    Model,
    App,
}

impl ToolUi {
    /// The tool's `_meta.ui`, as the extension writes it.
    pub fn meta(&self) -> Value {
        let mut ui = json!({ "resourceUri": self.resource });
        if let Some(visibility) = &self.visibility {
            ui["visibility"] = json!(visibility);
        }
        ui
    }
}

/// `apps = { csp = { connect_domains = [...] }, prefers_border = true }` on
/// a files source: its `.html` files are MCP Apps pages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppPages {
    /// Origins the pages may reach; none: the host's restrictive default.
    #[serde(default)]
    pub csp: AppCsp,
    /// Whether the host should draw a border and background around a page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppCsp {
    /// fetch, XHR and WebSocket origins (`connect-src`).
    #[serde(default)]
    pub connect_domains: Vec<String>,
    /// Scripts, images, styles, fonts and media (`script-src`, `img-src`, ...).
    #[serde(default)]
    pub resource_domains: Vec<String>,
    /// Nested frames (`frame-src`).
    #[serde(default)]
    pub frame_domains: Vec<String>,
    /// `base-uri`.
    #[serde(default)]
    pub base_uri_domains: Vec<String>,
}

impl AppPages {
    /// A page's `_meta.ui` (CSP and border), as the extension writes it.
    pub fn meta(&self) -> Value {
        let mut csp = Map::new();
        let AppCsp {
            connect_domains,
            resource_domains,
            frame_domains,
            base_uri_domains,
        } = &self.csp;
        for (key, domains) in [
            ("connectDomains", connect_domains),
            ("resourceDomains", resource_domains),
            ("frameDomains", frame_domains),
            ("baseUriDomains", base_uri_domains),
        ] {
            if !domains.is_empty() {
                csp.insert(key.into(), json!(domains));
            }
        }
        let mut ui = json!({ "csp": csp });
        if let Some(border) = self.prefers_border {
            ui["prefersBorder"] = border.into();
        }
        ui
    }

    /// The first domain that names no origin (`https://host[:port]`, a
    /// `*.` subdomain wildcard allowed), with its key.
    pub fn bad_domain(&self) -> Option<(&'static str, &str)> {
        let c = &self.csp;
        let keys = [
            ("connect_domains", &c.connect_domains),
            ("resource_domains", &c.resource_domains),
            ("frame_domains", &c.frame_domains),
            ("base_uri_domains", &c.base_uri_domains),
        ];
        keys.into_iter().find_map(|(key, list)| {
            let bad = list.iter().find(|d| !origin(d))?;
            Some((key, bad.as_str()))
        })
    }
}

fn origin(domain: &str) -> bool {
    let rest = ["https://", "http://", "wss://", "ws://"]
        .iter()
        .find_map(|scheme| domain.strip_prefix(scheme));
    rest.is_some_and(|host| {
        !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*'))
    })
}

/// A declared tool's `ui` names a `ui://` page; a files source's `apps`
/// CSP names origins.
pub(super) fn validate(config: &super::Config) -> Result<(), super::ConfigError> {
    let invalid = |key: String, why: String| super::ConfigError::Invalid { key, why };
    let tools = &config.tools;
    let http = (tools.http.iter().enumerate()).map(|(i, t)| (&t.ui, "tools.http", i));
    let command = (tools.command.iter().enumerate()).map(|(i, t)| (&t.ui, "tools.command", i));
    for (ui, key, i) in http.chain(command) {
        if let Some(ui) = ui.as_ref().filter(|ui| !ui.resource.starts_with("ui://")) {
            let why = format!("{:?} is not a ui:// URI (MCP Apps pages are)", ui.resource);
            return Err(invalid(format!("{key}[{i}].ui.resource"), why));
        }
    }
    for (i, source) in config.sources.files.iter().enumerate() {
        let bad = source.apps.as_ref().and_then(AppPages::bad_domain);
        if let Some((key, domain)) = bad {
            let why = format!("{domain:?} is not an origin such as https://api.example.com");
            return Err(invalid(format!("sources.files[{i}].apps.csp.{key}"), why));
        }
    }
    Ok(())
}
