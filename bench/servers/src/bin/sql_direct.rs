//! The query of bench/sql.sh's SQL tool run directly with sqlx: `CONCURRENCY`
//! tasks on one pool of as many connections, each running the statement in a
//! read-only transaction as teamgate's SQL source does, for `SECONDS`. Prints
//! requests per second and the p50/p99 latency.
//!
//!   sql-direct URL CONCURRENCY SECONDS

use std::time::{Duration, Instant};

use sqlx::{Executor, postgres::PgPoolOptions};

const STATEMENT: &str = "SELECT id, title, owner FROM issues WHERE id = $1";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, concurrency, seconds] = &args[..] else {
        eprintln!("usage: sql-direct URL CONCURRENCY SECONDS");
        std::process::exit(2);
    };
    let concurrency: u32 = concurrency.parse().expect("a concurrency");
    let run_for = Duration::from_secs(seconds.parse().expect("seconds"));
    let pool = PgPoolOptions::new()
        .max_connections(concurrency)
        .connect(url)
        .await
        .expect("the database answers");
    let end = Instant::now() + run_for;
    let mut tasks = Vec::new();
    for task in 0..concurrency {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut id = i64::from(task);
            while Instant::now() < end {
                let start = Instant::now();
                let mut tx = pool.begin().await.expect("a connection");
                tx.execute("SET TRANSACTION READ ONLY; SET LOCAL statement_timeout = 10000")
                    .await
                    .expect("setup");
                let rows = sqlx::query(STATEMENT)
                    .bind(id % 1000 + 1)
                    .fetch_all(&mut *tx)
                    .await
                    .expect("the query");
                tx.rollback().await.expect("rollback");
                assert_eq!(rows.len(), 1);
                latencies.push(start.elapsed());
                id += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("a task"));
    }
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
    println!(
        "sql-direct c={concurrency}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms ({} queries)",
        all.len() as f64 / run_for.as_secs_f64(),
        at(0.50).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0,
        all.len()
    );
}
