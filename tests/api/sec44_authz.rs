//! Issue 44's findings on the portal and the authorization server, each
//! against a real server (the real `oidc-provider` behind the portal):
//! the audit CSV's formula defusing, registered client names, refresh
//! without `client_id`, `/authorize` errors before consent, pre-login
//! session rows and the per-address limit in front of the portal's and the
//! authorization server's routes.

mod csv;
mod limits;
mod names;
mod prelogin;
mod redirect;
mod refresh;
