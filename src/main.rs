use clap::Parser;

// See Cargo.toml: request-path allocation speed, and freed memory given back
// to the OS (its options: .cargo/config.toml). The `jemalloc` feature
// (default) can be turned off for heap profilers that hook the system
// allocator.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let cli = teamgate::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
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
