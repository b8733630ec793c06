//! The ceiling: a minimal actix-web server, in a process of its own
//! (`hearth-tools ceiling --bind ADDR`), that the driver measures the same way as
//! hearth so that hearth's figures are ratios of it.
//!
//! - Any request: Zulip's success body, `{"result":"success","msg":""}`, no checks.
//! - The fan-out reference: `POST /api/v1/register` answers a queue; `GET
//!   /api/v1/events` parks until an event newer than its `last_event_id` exists;
//!   `POST /api/v1/users/me/status` makes the next `user_status` event, encodes its
//!   answer once, and wakes every parked poll, which all answer the same bytes.
//!
//! The driver starts it as a child process ([`Child::spawn`]); it exits when its
//! standard input closes, so a driver that dies takes it along.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use bytes::Bytes;
use clap::Args;
use serde::Deserialize;
use tokio::sync::watch;

/// `hearth-tools ceiling`.
#[derive(Debug, Clone, Args)]
pub struct CeilingArgs {
    /// Address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub bind: String,
    /// HTTP workers (default: the number of cores).
    #[arg(long)]
    pub workers: Option<usize>,
}

/// The first line the ceiling prints: this, then its `http://addr`.
const LISTENING: &str = "ceiling listening on ";
/// Zulip's success body.
const SUCCESS: &str = r#"{"result":"success","msg":""}"#;
/// How long a poll is parked before an empty answer (Zulip's heartbeat is 60 s).
const HEARTBEAT: Duration = Duration::from_secs(50);

/// The newest event: its id and the answer every poll before it gets.
struct Events {
    newest: watch::Sender<(i64, Bytes)>,
}

#[derive(Deserialize)]
struct EventsQuery {
    #[serde(default = "minus_one")]
    last_event_id: i64,
    #[serde(default)]
    dont_block: bool,
}

fn minus_one() -> i64 {
    -1
}

#[derive(Deserialize)]
struct StatusForm {
    #[serde(default)]
    status_text: String,
}

fn json(body: Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

/// (Its body is read so that the connection is kept.)
async fn register(_body: Bytes, events: web::Data<Events>) -> HttpResponse {
    let newest = events.newest.borrow().0;
    json(Bytes::from(format!(
        r#"{{"result":"success","msg":"","queue_id":"ceiling","last_event_id":{newest}}}"#
    )))
}

fn no_events() -> HttpResponse {
    json(Bytes::from_static(
        br#"{"result":"success","msg":"","events":[],"queue_id":"ceiling"}"#,
    ))
}

async fn poll(q: web::Query<EventsQuery>, events: web::Data<Events>) -> HttpResponse {
    if q.dont_block {
        return no_events();
    }
    let mut rx = events.newest.subscribe();
    let deadline = tokio::time::Instant::now() + HEARTBEAT;
    loop {
        {
            let newest = rx.borrow_and_update();
            if newest.0 > q.last_event_id {
                return json(newest.1.clone());
            }
        }
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => continue,
            _ => return no_events(),
        }
    }
}

async fn status(form: web::Form<StatusForm>, events: web::Data<Events>) -> HttpResponse {
    let id = events.newest.borrow().0 + 1;
    let event = serde_json::json!({
        "result": "success",
        "msg": "",
        "events": [{
            "type": "user_status",
            "user_id": 8,
            "away": false,
            "status_text": form.status_text,
            "id": id,
        }],
        "queue_id": "ceiling",
    });
    // Encoded once; every poll answers these bytes.
    events
        .newest
        .send_replace((id, Bytes::from(event.to_string())));
    json(Bytes::from_static(SUCCESS.as_bytes()))
}

/// Runs the ceiling until its standard input closes (or it is killed).
pub fn serve(args: &CeilingArgs) -> Result<(), String> {
    // Each parked poll is a socket.
    let _ = hearth::api::wire::raise_open_files_limit();
    actix_web::rt::System::new().block_on(async move {
        let events = web::Data::new(Events {
            newest: watch::Sender::new((-1, Bytes::new())),
        });
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(events.clone())
                .route("/api/v1/register", web::post().to(register))
                .route("/api/v1/events", web::get().to(poll))
                .route("/api/v1/users/me/status", web::post().to(status))
                // The body is read (and dropped): a request whose body is left unread
                // ends its connection, and the ceiling would measure reconnections.
                .default_service(web::to(|_body: Bytes| async {
                    json(Bytes::from_static(SUCCESS.as_bytes()))
                }))
        })
        .backlog(4096)
        .max_connections(1 << 20)
        .disable_signals();
        if let Some(w) = args.workers {
            server = server.workers(w.max(1));
        }
        let server = server
            .bind(&args.bind)
            .map_err(|e| format!("ceiling {}: {e}", args.bind))?;
        let addr = server
            .addrs()
            .first()
            .copied()
            .ok_or("the ceiling has no address")?;
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{LISTENING}http://{addr}")
                .and_then(|()| out.flush())
                .map_err(|e| format!("ceiling: {e}"))?;
        }
        let server = server.run();
        // Stop when the driver closes our standard input (or dies).
        std::thread::spawn(|| {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
        server.await.map_err(|e| format!("ceiling: {e}"))
    })
}

/// A ceiling process started by the driver; killed when dropped.
pub struct Child {
    pub url: String,
    child: std::process::Child,
}

impl Child {
    /// Starts `hearth-tools ceiling` (this executable) on a free port of 127.0.0.1.
    pub fn spawn(workers: Option<usize>) -> Result<Child, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this executable: {e}"))?;
        let mut cmd = Command::new(exe);
        cmd.args(["ceiling", "--bind", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(w) = workers {
            cmd.args(["--workers", &w.to_string()]);
        }
        let mut child = cmd.spawn().map_err(|e| format!("ceiling process: {e}"))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        match line.trim().strip_prefix(LISTENING) {
            Some(url) => Ok(Child {
                url: url.to_owned(),
                child,
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!(
                    "the ceiling process did not start ({:?})",
                    line.trim()
                ))
            }
        }
    }

    /// The process id (for its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU seconds a process has used (`/proc/<pid>/stat`; `None` elsewhere).
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.rfind(')')?;
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let ticks: u64 = fields
        .get(11..13)?
        .iter()
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    Some(ticks as f64 / 100.0)
}
