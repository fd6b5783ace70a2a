//! The one integration-test binary: every test talks to a real server on a
//! loopback port through `helpers::spawn_app`.

mod auth;
mod bad_input;
mod config;
mod databases;
mod edge;
mod health;
mod helpers;
mod idp;
mod legacy;
mod modern;
mod mrtr;
mod replicas;
mod stdio;
mod store;
mod telemetry;
mod tidy;
