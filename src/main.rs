use std::sync::Arc;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use botlist::config::Cli;
use botlist::domain::time::SystemClock;
use botlist::startup::{Application, Settings};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Cli::parse().into_serve_args();
    let app = Application::build(Settings::from_args(&args), Arc::new(SystemClock)).await?;
    if let Some(demo) = &app.demo {
        println!("demo directory loaded: {} bots", app.directory.len());
        println!(
            "  admin token:        {}",
            app.admin_token.as_deref().unwrap_or("")
        );
        println!("  demo bot id:        {}", demo.bot_id);
        println!("  demo bot platform:  {}", demo.bot_platform_id);
        println!("  demo bot token:     {}", demo.bot_token.as_str());
        println!("  a recent voter:     {}", demo.recent_voter);
        println!("  a profile id:       {}", demo.profile_id);
    }
    println!("listening on {}", app.base_url());
    app.run_until_stopped().await
}
