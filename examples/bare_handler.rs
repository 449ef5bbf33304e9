//! The bare actix-web handler the `features` load figures are ratios to: one route answering a
//! small JSON body, no middleware at all, the same number of workers as the server measured.
//!
//!   cargo build --release --example bare_handler
//!   target/release/examples/bare_handler 127.0.0.1:18701 2

use actix_web::{web, App, HttpResponse, HttpServer};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:18701".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(2);
    HttpServer::new(|| {
        App::new().route(
            "/",
            web::get().to(|| async {
                HttpResponse::Ok()
                    .content_type("application/json")
                    .body(r#"{"server_count":12345}"#)
            }),
        )
    })
    .workers(workers)
    .bind(bind)?
    .run()
    .await
}
