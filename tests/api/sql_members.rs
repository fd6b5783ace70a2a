//! `[[sources.sql]]` with `${user:NAME}` in the URL (issue 62): each member
//! connects to PostgreSQL as their own role, so the database's grants decide
//! what each may read; a member without a value is sent to the Connections
//! page; the values are scrubbed from what the tools answer.

use std::time::Duration;

use serde_json::json;
use sqlx::Connection;
use teamgate::{
    auth::PersonalTokens,
    config::{AuthMode, Secret, SqlSourceConfig},
    store::Vault,
};

use crate::{
    databases::{TestDb, admin_connection},
    helpers::spawn_app_with,
    sdk::{self, call, text},
};

const KEY: &str = "sql-members-test-key-of-at-least-32-chars";

#[tokio::test]
async fn each_member_reaches_the_database_as_their_own_role() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let (reader, outsider) = (
        format!("tg_reader_{suffix}"),
        format!("tg_outsider_{suffix}"),
    );
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let setup = format!(
        "CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
         INSERT INTO issues VALUES (1, 'Login fails'), (2, 'Slow search');
         CREATE ROLE {reader} LOGIN; CREATE ROLE {outsider} LOGIN;
         GRANT SELECT ON issues TO {reader};"
    );
    sqlx::raw_sql(&setup).execute(&mut conn).await.unwrap();

    let url = db.url.replacen("postgres@", "${user:db_role}@", 1);
    let source: SqlSourceConfig = toml::from_str(&format!(
        r#"
name = "tracker"
url = "{url}"
max_member_pools = 2
execute_sql_tool = "execute_sql"
[[tools]]
name = "issues"
description = "Every issue"
statement = "SELECT id, title FROM issues ORDER BY id"
"#
    ))
    .unwrap();
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        c.credentials.keys = vec![Secret::new(KEY)];
        let slot = json!({"name": "db_role", "description": "your database role"});
        c.credentials.slots = vec![serde_json::from_value(slot).unwrap()];
        c.sources.sql = vec![source];
    })
    .await;
    let vault = Vault::new(app.store.clone(), &[KEY]);
    vault.set("alice", "db_role", &reader).await.unwrap();
    vault.set("bob", "db_role", &outsider).await.unwrap();
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let mut clients = Vec::new();
    for user in ["alice", "bob", "carol"] {
        let token = tokens.create(user, "test", vec!["tools:*".into()], None);
        let token = token.await.unwrap();
        clients.push(sdk::connect_as(&app.url, Some(&token.token), None).await.0);
    }
    let [alice, bob, carol] = &clients[..] else {
        unreachable!()
    };

    let read = call(alice, "issues", json!({})).await;
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(
        read["structuredContent"]["rows"],
        json!([{"id": 1, "title": "Login fails"}, {"id": 2, "title": "Slow search"}])
    );
    // Her role is her value: scrubbed, like any credential.
    let who = call(
        alice,
        "execute_sql",
        json!({"sql": "SELECT current_user AS who"}),
    )
    .await;
    assert_eq!(who["isError"], false, "{who}");
    assert!(!who.to_string().contains(&reader), "scrubbed: {who}");

    let refused = call(bob, "issues", json!({})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("SQLSTATE 42501"), "{refused}");
    assert!(
        !refused.to_string().contains(&outsider),
        "scrubbed: {refused}"
    );

    // No value set: the Connections page, not a connection as someone else.
    let unset = call(carol, "issues", json!({})).await;
    assert_eq!(unset["isError"], true, "{unset}");
    assert!(text(&unset).contains("/portal/connections"), "{unset}");
    assert!(text(&unset).contains("db_role"), "{unset}");

    for client in clients {
        client.cancel().await.unwrap();
    }
    app.stop().await;
    conn.close().await.unwrap();
    // The pools are gone with the app; the roles are the cluster's.
    let mut admin = admin_connection().await.unwrap();
    db.cleanup().await;
    for role in [reader, outsider] {
        sqlx::raw_sql(&format!("DROP ROLE IF EXISTS {role}"))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}
