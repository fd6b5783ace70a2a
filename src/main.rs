use clap::Parser;

// See Cargo.toml: request-path allocation speed, and freed memory given back
// to the OS. The `jemalloc` feature (default) can be turned off for heap
// profilers that hook the system allocator.
#[cfg(feature = "jemalloc")]
#[allow(unsafe_code)] // jemalloc reads its options from this exported C string.
mod allocator {
    #[global_allocator]
    static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

    /// jemalloc's options, read before `main` runs. Freed pages go back to the OS
    /// a second after they were last used (a background thread does it, so an
    /// idle server shrinks too), skipping the "muzzy" stage that keeps them in
    /// RSS until the kernel needs memory. Holding thousands of idle sessions
    /// and streams, the server wants its RSS to follow what is live.
    #[unsafe(export_name = "_rjem_malloc_conf")]
    static MALLOC_CONF: ConfString =
        ConfString(c"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr());

    #[repr(transparent)]
    struct ConfString(*const std::ffi::c_char);
    // SAFETY: points at an immutable static C string.
    unsafe impl Sync for ConfString {}
}

fn main() -> std::process::ExitCode {
    let cli = teamgate::cli::Cli::parse();
    // `#[tokio::main]`'s runtime, plus: a worker going idle hands its cache
    // of freed memory back (see memory.rs).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(teamgate::memory::on_worker_park)
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(teamgate::cli::run(cli)),
        Err(error) => Err(error.into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("teamgate: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
