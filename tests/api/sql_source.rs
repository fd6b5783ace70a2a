//! `[[sources.sql]]` on a real PostgreSQL (a fresh database per test, with a
//! sample schema the test creates) and on a SQLite file: bound parameters,
//! read-only enforced by the database, statement timeout, row limits,
//! caller-bound parameters, `execute_sql` and the catalog tools.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::Connection;
use teamgate::{
    auth::PersonalTokens,
    config::{AuthMode, SqlSourceConfig},
};

use crate::{
    databases::TestDb,
    helpers::{spawn_app_with, test_config},
    sdk::{self, call, text},
};

const SCHEMA: &str = "
    CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL, owner TEXT NOT NULL);
    INSERT INTO issues VALUES (1, 'Login fails', 'alice'), (2, 'Slow search', 'bob'),
        (3, 'Typo', 'alice');";

fn source(toml_text: &str) -> SqlSourceConfig {
    toml::from_str(toml_text).unwrap_or_else(|e| panic!("a valid [[sources.sql]]: {e}"))
}

/// The tools both engines get, with their own placeholders.
fn tools(url: &str, p: [&str; 2]) -> String {
    format!(
        r#"
name = "tracker"
url = "{url}"
statement_timeout = "1s"
max_rows = 100
[[tools]]
name = "find_issues"
description = "Issues with this title"
statement = "SELECT id, title, owner FROM issues WHERE title = {p0} ORDER BY id"
parameters = [{{ name = "title", type = "string", description = "exact title" }}]
[[tools]]
name = "sneaky_write"
description = "Declared read-only, but writes"
statement = "INSERT INTO issues (id, title, owner) VALUES (99, {p0}, 'x')"
parameters = [{{ name = "title", type = "string" }}]
[[tools]]
name = "rename"
description = "Renames an issue"
read_only = false
statement = "UPDATE issues SET title = {p0} WHERE id = {p1}"
parameters = [{{ name = "title", type = "string" }}, {{ name = "id", type = "integer" }}]
[[tools]]
name = "mine"
description = "The caller's issues"
statement = "SELECT title FROM issues WHERE owner = {p0} ORDER BY id"
parameters = [{{ name = "owner", type = "string" }}]
from_caller = {{ owner = "user" }}
"#,
        p0 = p[0],
        p1 = p[1],
    )
}

fn rows(result: &Value) -> &Vec<Value> {
    result["structuredContent"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("rows: {result}"))
}

/// What every engine must do with the tools above.
async fn common(client: &sdk::Client, engine: &str) {
    let found = call(client, "find_issues", json!({"title": "Slow search"})).await;
    assert_eq!(found["isError"], false, "{engine}: {found}");
    assert_eq!(
        rows(&found)[0],
        json!({"id": 2, "title": "Slow search", "owner": "bob"})
    );
    assert_eq!(found["structuredContent"]["truncated"], false);
    assert!(text(&found).contains("| id | title | owner |"), "{found}");

    // A parameter carrying SQL is data: nothing matches, the table stays.
    let injected = json!({"title": "'; DROP TABLE issues; --"});
    let result = call(client, "find_issues", injected).await;
    assert_eq!(result["isError"], false, "{engine}: {result}");
    assert!(rows(&result).is_empty(), "{result}");

    // The database, not a look at the text, refuses the write.
    let write = call(client, "sneaky_write", json!({"title": "x"})).await;
    assert_eq!(write["isError"], true, "{engine}: {write}");
    let expected = if engine == "sqlite" {
        "readonly database"
    } else {
        "read-only transaction"
    };
    assert!(text(&write).contains(expected), "{engine}: {write}");

    let renamed = call(client, "rename", json!({"title": "Login fails!", "id": 1})).await;
    assert_eq!(renamed["isError"], false, "{engine}: {renamed}");
    let again = call(client, "find_issues", json!({"title": "Login fails!"})).await;
    assert_eq!(
        rows(&again).len(),
        1,
        "a read_only = false tool commits: {again}"
    );

    // Still there, three rows, after the injection attempt.
    let all = call(
        client,
        "execute_sql",
        json!({"sql": "SELECT * FROM issues"}),
    )
    .await;
    assert_eq!(rows(&all).len(), 3, "{engine}: {all}");
    let delete = call(client, "execute_sql", json!({"sql": "DELETE FROM issues"})).await;
    assert_eq!(
        delete["isError"], true,
        "execute_sql is read-only: {delete}"
    );
    let many = "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 500) SELECT n FROM g";
    let many = call(client, "execute_sql", json!({"sql": many})).await;
    assert_eq!(rows(&many).len(), 100, "{engine}");
    assert_eq!(many["structuredContent"]["truncated"], true);
    assert!(
        text(&many).contains("truncated: more than max_rows (100)"),
        "{many}"
    );

    let tables = call(client, "list_tables", json!({})).await;
    assert!(tables.to_string().contains("issues"), "{engine}: {tables}");
    let columns = call(client, "describe_table", json!({"table": "issues"})).await;
    let names: Vec<&Value> = rows(&columns).iter().map(|r| &r["column_name"]).collect();
    assert_eq!(
        names,
        [&json!("id"), &json!("title"), &json!("owner")],
        "{columns}"
    );
}

fn with_catalog(mut source: SqlSourceConfig) -> SqlSourceConfig {
    source.execute_sql_tool = "execute_sql".into();
    source.list_tables_tool = "list_tables".into();
    source.describe_table_tool = "describe_table".into();
    source
}

#[tokio::test]
async fn postgres_tools_bind_parameters_and_the_database_enforces_read_only() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql(SCHEMA).execute(&mut conn).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE kinds (n NUMERIC(8,3), at TIMESTAMPTZ, doc JSONB, raw BYTEA, ok BOOL, f FLOAT8);
         INSERT INTO kinds VALUES (-1234.5, '2026-01-02 03:04:05+00', '{\"a\": [1]}', '\\x0102', true, 0.5), (NULL, NULL, NULL, NULL, NULL, NULL);",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    // Trust auth ignores the password; teamgate still scrubs it from results.
    let url = db.url.replacen("postgres@", "postgres:pw-5e1f9a77c3@", 1);
    let source = with_catalog(source(&tools(&url, ["$1", "$2"])));
    let app = spawn_app_with(|c| c.sources.sql = vec![source]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    common(&client, "postgres").await;
    let leak = json!({"sql": "SELECT 'pw-5e1f9a77c3' AS p"});
    let leak = call(&client, "execute_sql", leak).await;
    assert!(
        !leak.to_string().contains("pw-5e1f9a77c3"),
        "scrubbed: {leak}"
    );

    let kinds = call(
        &client,
        "execute_sql",
        json!({"sql": "SELECT * FROM kinds"}),
    )
    .await;
    assert_eq!(
        rows(&kinds)[0],
        json!({"n": "-1234.500", "at": "2026-01-02T03:04:05+00:00", "doc": {"a": [1]},
            "raw": "AQI=", "ok": true, "f": 0.5}),
        "{kinds}"
    );
    assert!(
        rows(&kinds)[1]
            .as_object()
            .unwrap()
            .values()
            .all(Value::is_null)
    );

    let slow = call(&client, "execute_sql", json!({"sql": "SELECT pg_sleep(5)"})).await;
    assert_eq!(slow["isError"], true);
    assert!(
        text(&slow).contains("longer than statement_timeout (1s)"),
        "{slow}"
    );
    let write = call(&client, "sneaky_write", json!({"title": "x"})).await;
    assert!(text(&write).contains("SQLSTATE 25006"), "{write}");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM issues")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 3, "nothing was written or dropped");
    client.cancel().await.unwrap();
    conn.close().await.unwrap();
    app.stop().await;
    db.cleanup().await;
}

async fn sqlite_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/team.db", dir.path().display());
    let options: sqlx::sqlite::SqliteConnectOptions = url.parse().unwrap();
    let mut conn = sqlx::SqliteConnection::connect_with(&options.create_if_missing(true))
        .await
        .unwrap();
    sqlx::raw_sql(SCHEMA).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    (dir, url)
}

#[tokio::test]
async fn sqlite_tools_bind_parameters_and_the_database_enforces_read_only() {
    let (_dir, url) = sqlite_file().await;
    let source = with_catalog(source(&tools(&url, ["?", "?"])));
    let app = spawn_app_with(|c| c.sources.sql = vec![source]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    common(&client, "sqlite").await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn caller_bound_parameters_limit_rows_to_the_callers_own_and_generic_tools_are_off() {
    let (_dir, url) = sqlite_file().await;
    let source = source(&tools(&url, ["?", "?"]));
    let app = spawn_app_with(|c| {
        c.auth.mode = AuthMode::Required;
        c.sources.sql = vec![source];
    })
    .await;
    let tokens = PersonalTokens::new(app.store.clone(), Duration::from_secs(30));
    let token = tokens
        .create("alice", "test", vec!["tools:*".into()], None)
        .await
        .unwrap();
    let (client, _) = sdk::connect_as(&app.url, Some(&token.token), None).await;
    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| &*t.name).collect();
    assert!(!names.contains(&"execute_sql"), "off by default: {names:?}");
    assert!(!names.contains(&"list_tables"), "off by default: {names:?}");
    let mine = listed.iter().find(|t| t.name == "mine").unwrap();
    let schema = serde_json::to_value(&mine.input_schema).unwrap();
    assert_eq!(schema["properties"], json!({}), "the bound one is hidden");
    let annotations = serde_json::to_value(&mine.annotations).unwrap();
    assert_eq!(annotations["readOnlyHint"], true);

    let result = call(&client, "mine", json!({"owner": "bob"})).await;
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([{"title": "Login fails"}, {"title": "Typo"}]),
        "alice's rows whatever she asks: {result}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn check_config_names_the_mistake_and_never_the_password() {
    let mut config = test_config();
    let mut wrong = source(&tools("postgres://app:hunter2-pw@db/x", ["$1", "$2"]));
    wrong.tools[0].statement = "SELECT 1 WHERE $1 = $2".into();
    config.sources.sql = vec![wrong];
    let error = config.validate().unwrap_err().to_string();
    assert!(
        error.contains("sources.sql[0].tools[0].statement"),
        "{error}"
    );
    assert!(error.contains("2 placeholder(s)"), "{error}");

    let mut config = test_config();
    config.sources.sql = vec![source(&tools("mysql://app:hunter2-pw@db/x", ["?", "?"]))];
    let error = config.validate().unwrap_err().to_string();
    assert!(error.contains("sources.sql[0].url"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}
