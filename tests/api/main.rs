//! The one integration-test binary: every test talks to a real server on a
//! loopback port through `helpers::spawn_app` (or the real binary through
//! `binary::serve`), most of them with the official SDK client in `sdk`.

mod auth;
mod bad_input;
mod binary;
mod command_tools;
mod config;
mod databases;
mod deploy_checks;
mod docs_persist;
mod docs_sections;
mod docs_source;
mod edge;
mod files_source;
mod health;
mod helpers;
mod http_tools;
mod idp;
mod legacy;
mod modern;
mod mrtr;
mod portal;
mod portal_idp;
mod prompts;
mod reload;
mod replicas;
mod safety;
mod sdk;
mod sec_authz;
mod sec_commands;
mod sec_edge;
mod sec_files;
mod sec_secrets;
mod sec_streams;
mod stdio;
mod store;
mod telemetry;
mod tidy;
mod upstream_pins;
mod upstream_policies;
mod upstream_relay;
mod upstream_remote;
mod upstream_resources;
mod upstream_supervision;
mod upstream_uris;
mod upstreams;
