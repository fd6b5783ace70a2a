use clap::Parser;

// See Cargo.toml: request-path allocation speed, and freed memory given back to the OS.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = teamgate::cli::Cli::parse();
    match teamgate::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("teamgate: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
