//! The reference of the request-path benchmarks: a minimal actix-web server that
//! answers Zulip's success body to any request, with no checks (the same handler as
//! `hearth load --ceiling`), in a process of its own so that `wrk` drives it and hearth
//! side by side, in one run, on the same machine.
//!
//! ```sh
//! cargo build --release --example minimal_handler
//! target/release/examples/minimal_handler 127.0.0.1:21301 2 &   # address, workers
//! wrk -t1 -c64 -d10s http://127.0.0.1:21301/api/v1/users/me
//! ```
//!
//! See `benches/RESULTS.md` for the runs and `benches/wrk/` for the request scripts.
#![allow(clippy::print_stdout)]

use actix_web::{web, App, HttpResponse, HttpServer};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:21301".to_owned());
    let workers = args
        .next()
        .and_then(|w| w.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let server = HttpServer::new(|| {
        // The body is read (as a handler taking a form does), so a kept-alive
        // connection takes the next request without draining it first.
        App::new().default_service(web::to(|_body: web::Bytes| async {
            HttpResponse::Ok()
                .content_type("application/json")
                .body(r#"{"result":"success","msg":""}"#)
        }))
    })
    .workers(workers)
    .bind(&addr)?;
    println!("minimal handler on http://{addr}, {workers} workers");
    server.run().await
}
