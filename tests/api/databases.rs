//! Real databases for tests: a SQLite file per test, and a fresh PostgreSQL
//! database per test on the server named by TEAMGATE_TEST_POSTGRES
//! (default: this machine's 127.0.0.1:5432, user postgres, trust auth).

use std::sync::Arc;

use sqlx::Connection;
use teamgate::store::{ManualClock, Store};

pub(crate) const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

fn admin_url() -> String {
    std::env::var("TEAMGATE_TEST_POSTGRES").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned())
}

/// A connection to the maintenance database, if a server answers.
pub(crate) async fn admin_connection() -> Option<sqlx::PgConnection> {
    sqlx::PgConnection::connect(&admin_url()).await.ok()
}

/// A database that exists for one test.
pub(crate) struct TestDb {
    pub name: &'static str,
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    drop_pg: Option<String>,
}

impl TestDb {
    pub(crate) fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            name: "sqlite",
            url: format!("sqlite://{}/teamgate.db", dir.path().display()),
            _dir: Some(dir),
            drop_pg: None,
        }
    }

    /// A fresh PostgreSQL database, or `None` (with a printed reason) when
    /// no server answers. CI always has one.
    pub(crate) async fn postgres() -> Option<Self> {
        let admin = admin_url();
        let mut conn = match sqlx::PgConnection::connect(&admin).await {
            Ok(conn) => conn,
            Err(error) => {
                eprintln!("SKIP PostgreSQL tests: no server at {admin} ({error})");
                return None;
            }
        };
        let name = format!("teamgate_test_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("create database {name}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let base = admin.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap();
        Some(Self {
            name: "postgres",
            url: format!("{base}/{name}"),
            _dir: None,
            drop_pg: Some(name),
        })
    }

    /// SQLite always, PostgreSQL when reachable.
    pub(crate) async fn all() -> Vec<Self> {
        let mut dbs = vec![Self::sqlite()];
        dbs.extend(Self::postgres().await);
        dbs
    }

    pub(crate) async fn store(&self, clock: Arc<ManualClock>) -> Store {
        let store = Store::connect(&self.url, clock)
            .await
            .expect("store connects");
        store.migrate().await.expect("migrations apply");
        store
    }

    /// Drops a PostgreSQL database (connections are closed by force).
    pub(crate) async fn cleanup(self) {
        if let Some(name) = &self.drop_pg
            && let Ok(mut conn) = sqlx::PgConnection::connect(&admin_url()).await
        {
            let _ = sqlx::query(&format!("drop database if exists {name} with (force)"))
                .execute(&mut conn)
                .await;
        }
    }
}
