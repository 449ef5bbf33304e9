//! The ceiling every load benchmark divides by: actix-web with no middleware at all, answering
//! `GET /bytes/{n}` (or a POST there) with `n` bytes of `application/json` (a slice of one buffer made at start, so
//! the handler costs a route match and a header). `benches/ceiling.sh` runs it beside botlist and
//! asks it for a body of the same size as each botlist answer, alternating the two.
//!
//!   cargo build --release --example bare
//!   target/release/examples/bare 127.0.0.1:18700 [WORKERS]
//!
//! WORKERS defaults to the number of cores, as botlist's `--workers` does.

use actix_web::web::{self, Bytes};
use actix_web::{App, HttpResponse, HttpServer};

/// The largest body it answers: larger than any page the benchmarks ask botlist for.
const MAX_BODY: usize = 8 << 20;

async fn bytes(body: web::Data<Bytes>, size: web::Path<usize>) -> HttpResponse {
    let size = (*size).min(MAX_BODY);
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body.slice(..size))
}

/// A POST's body is read and dropped first: the ceiling of a write route.
async fn posted(body: web::Data<Bytes>, size: web::Path<usize>, _posted: Bytes) -> HttpResponse {
    bytes(body, size).await
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:18700".into());
    let workers = args
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    // Printable JSON-ish bytes, so that nothing on the way treats the body specially.
    let mut buffer = Vec::with_capacity(MAX_BODY);
    while buffer.len() < MAX_BODY {
        buffer.extend_from_slice(b"{\"name\":\"Groovy Wizard 12345\",\"votes\":1234},");
    }
    buffer.truncate(MAX_BODY);
    let body = web::Data::new(Bytes::from(buffer));
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(body.clone())
                .route("/bytes/{size}", web::get().to(bytes))
                .route("/bytes/{size}", web::post().to(posted))
        })
        .workers(workers)
        .bind(&bind)?;
        println!("listening on {bind}");
        server.run().await
    })
}
