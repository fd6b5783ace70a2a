//! Item 9: `GET /portal/login` writes a pre-login row (the login's state,
//! verifier and nonce) that lives minutes, not a signed-in session's hours,
//! and the purge loop deletes it once expired. Read from the app's own
//! SQLite file.

use std::{sync::Arc, time::Duration};

use reqwest::StatusCode;
use sqlx::Row;
use teamgate::store::{Clock, ManualClock, SystemClock};

use crate::{
    helpers::TestApp,
    portal_idp::{Browser, portal_app_with},
};

const MINUTE_MS: i64 = 60_000;

/// (rows, longest lifetime in ms) of the portal's sessions of `member`
/// (empty: pre-login rows).
async fn rows(app: &TestApp, member: &str) -> (i64, i64) {
    let pool = sqlx::SqlitePool::connect(&app.store_url()).await.unwrap();
    let row = sqlx::query(
        "select count(*) as n, coalesce(max(expires_ms - created_ms), 0) as life \
         from portal_sessions where member = ?",
    )
    .bind(member)
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    (row.get("n"), row.get("life"))
}

#[tokio::test]
async fn pre_login_rows_live_minutes_and_are_purged() {
    let clock = Arc::new(ManualClock::new(SystemClock.now_ms()));
    let (app, _idp) = portal_app_with(clock.clone(), |c| {
        c.store.purge_interval = Duration::from_millis(100);
    })
    .await;
    let ann = Browser::sign_in(&app, "ann").await;
    let plain = teamgate::outbound::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for _ in 0..3 {
        let login = plain
            .get(format!("{}/portal/login", app.base()))
            .send()
            .await
            .unwrap();
        assert_eq!(login.status(), StatusCode::SEE_OTHER);
        let cookie = login.headers()["set-cookie"].to_str().unwrap().to_owned();
        assert!(cookie.contains("Max-Age=600"), "{cookie}");
    }
    let (count, life) = rows(&app, "").await;
    assert_eq!(count, 3, "one pre-login row per visit");
    assert!(
        life <= 10 * MINUTE_MS,
        "a pre-login row lives {} minutes",
        life / MINUTE_MS
    );
    // Signed in, the session is a full one (session_absolute, 12 h by default).
    assert_eq!(rows(&app, "ann").await, (1, 12 * 60 * MINUTE_MS));

    clock.advance(11 * MINUTE_MS);
    let mut left = count;
    for _ in 0..50 {
        left = rows(&app, "").await.0;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "expired pre-login rows are purged");
    assert_eq!(rows(&app, "ann").await.0, 1, "the member's session stays");
    let page = ann.get(&format!("{}/portal/activity", app.base())).await;
    assert_eq!(page.status(), StatusCode::OK);
}
