// sqlx::migrate! embeds the migrations at compile time; without this, a new
// migration file would not rebuild the crate (what `sqlx migrate build-script` writes).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    // The binary's relative relocations packed (DT_RELR, glibc 2.36+): the
    // dynamic loader then reads a few KiB at start-up instead of a 1.8 MB
    // table that otherwise stays in an idle server's RSS (BENCHMARKS.md).
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
