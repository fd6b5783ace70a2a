// sqlx::migrate! embeds the migrations at compile time; without this, a new
// migration file would not rebuild the crate (what `sqlx migrate build-script` writes).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
