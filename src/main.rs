use clap::Parser;

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
