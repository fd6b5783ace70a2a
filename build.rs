// sqlx::migrate! embeds the migrations at compile time; without this, a new
// migration file would not rebuild the crate (what `sqlx migrate build-script` writes).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    if packs_relocations() {
        // The binary's relative relocations packed (DT_RELR): the loader then
        // reads a few KiB at start-up instead of a 1.8 MB table that otherwise
        // stays in an idle server's RSS (BENCHMARKS.md, issue 67).
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Only for a native Linux/glibc build on glibc 2.36 or later: the packed
/// binary needs that glibc at run time, and the glibc it is built on is the
/// oldest it runs on anyway (an older one would refuse to load it).
fn packs_relocations() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return false;
    }
    // "glibc 2.36"
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.trim().strip_prefix("glibc ").unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (2, 36)
}
