//! Several nodes behind the router: real `hearth serve` processes on loopback ports, and
//! a real nginx running the configuration `hearth cluster nginx` generates. Routing by
//! Host, the official clients through the router, `X-Forwarded-For` from a trusted
//! proxy, a reload under load, and a realm moved between nodes with the admin
//! listener (freeze, ship, activate, drop).
//!
//! nginx comes from Debian's packages (`.ci/run` installs it). Without one these tests
//! say so and pass, unless `CI` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hearth::admin::client::AdminClient;
use reqwest::StatusCode;
use serde_json::Value;

use crate::common::child::ChildServer;
use crate::common::{open_store, run};
use crate::nginx::Nginx;

/// The domain of the placements here; `<realm>.cluster.test` is a realm's Host.
const DOMAIN: &str = "cluster.test";

/// nginx, or `None` (with the reason printed) when it is missing outside CI.
fn nginx() -> Option<PathBuf> {
    let found = crate::nginx::find();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nginx is missing: .ci/run installs it (apt-get install nginx-light)"
        );
        eprintln!("SKIPPED: nginx is not installed (apt-get install nginx-light)");
    }
    found
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `hearth realm create` on a stopped node's folder; the owner's API key.
pub(crate) fn create_realm(data: &Path, subdomain: &str, url: &str) -> (String, String) {
    let email = format!(
        "boss@{}.test",
        if subdomain.is_empty() {
            "root"
        } else {
            subdomain
        }
    );
    let rc = data.with_extension(format!("{subdomain}.zuliprc"));
    let out = run(&[
        "realm",
        "create",
        "--subdomain",
        subdomain,
        "--name",
        &format!("Realm {subdomain}"),
        "--owner-email",
        &email,
        "--owner-password",
        "a long and unguessable passphrase",
        "--data",
        data.to_str().unwrap(),
        "--url",
        url,
        "--zuliprc",
        rc.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    (email, key)
}

/// One node: a `hearth serve` on its own folder with its admin listener.
pub(crate) struct Node {
    server: Option<ChildServer>,
    /// `127.0.0.1:port` of its API.
    pub(crate) http: String,
    pub(crate) admin: AdminClient,
    pub(crate) admin_addr: String,
}

impl Node {
    pub(crate) fn start(data: &Path, extra: &[&str]) -> Node {
        Node::start_with(data, extra, &[])
    }

    /// `start` with environment variables for the node.
    fn start_env(data: &Path, envs: &[(&str, &str)]) -> Node {
        Node::start_with(data, &[], envs)
    }

    pub(crate) fn start_with(data: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Node {
        let mut args = vec![
            "--data",
            data.to_str().unwrap(),
            "--admin-bind",
            "127.0.0.1:0",
            "--trusted-proxy",
            ROUTER_SOURCES_NET,
        ];
        args.extend_from_slice(extra);
        let mut all = vec![("RUST_LOG", "info")];
        all.extend_from_slice(envs);
        let server = ChildServer::up(&args, &all);
        let admin_addr = server
            .log()
            .iter()
            .find_map(|l| {
                let at = l.find("admin on http://")? + "admin on http://".len();
                Some(l[at..].split('/').next()?.to_owned())
            })
            .expect("the admin listener's address in the log");
        let http = server.url.trim_start_matches("http://").to_owned();
        let admin = AdminClient::with_token_file(&admin_addr, &data.join("admin-token")).unwrap();
        Node {
            server: Some(server),
            http,
            admin,
            admin_addr,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.http)
    }

    fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

/// nginx running a generated configuration under its own prefix
/// (`benches/common/nginx.rs`, shared with the archive bench).
struct Router {
    nginx: Nginx,
    port: u16,
}

impl Router {
    /// Writes the placement (`realms`: subdomain -> node name), generates the
    /// configuration with `hearth cluster nginx` and starts nginx with it.
    fn start(nginx: &Path, nodes: &[(&str, &Node)], realms: &[(&str, &str)]) -> Router {
        let port = free_port();
        let nginx = Nginx::start(nginx, Path::new(crate::common::HEARTH), port, |placement| {
            write_placement(placement, port, nodes, realms)
        });
        Router { nginx, port }
    }

    /// A new placement, its configuration, and `nginx -s reload`.
    fn reload(&self, nodes: &[(&str, &Node)], realms: &[(&str, &str)]) {
        write_placement(&self.nginx.placement(), self.port, nodes, realms);
        self.nginx.reload();
    }

    /// The site of a realm through the router.
    fn site(&self, realm: &str) -> String {
        format!("http://{}:{}", host(realm), self.port)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

pub(crate) fn host(realm: &str) -> String {
    if realm.is_empty() {
        DOMAIN.to_owned()
    } else {
        format!("{realm}.{DOMAIN}")
    }
}

/// Where the test router's connections to the nodes leave from (`source_addresses`),
/// and the network the nodes trust as proxies: the test clients' own addresses
/// (127.0.0.x) are outside it.
const ROUTER_SOURCES: [&str; 2] = ["127.0.100.1", "127.0.100.2"];
const ROUTER_SOURCES_NET: &str = "127.0.100.0/24";

pub(crate) fn write_placement(
    path: &Path,
    port: u16,
    nodes: &[(&str, &Node)],
    realms: &[(&str, &str)],
) {
    let mut text = format!(
        "[router]\nlisten = \"127.0.0.1:{port}\"\ndomain = \"{DOMAIN}\"\n\
         source_addresses = [{}]\n\n",
        ROUTER_SOURCES.map(|a| format!("\"{a}\"")).join(", ")
    );
    for (name, node) in nodes {
        text += &format!(
            "[nodes.{name}]\nhttp = \"{}\"\nadmin = \"{}\"\n\n",
            node.http, node.admin_addr
        );
    }
    text += "[realms]\n";
    for (realm, node) in realms {
        text += &format!("\"{realm}\" = \"{node}\"\n");
    }
    std::fs::write(path, text).unwrap();
}

/// A request with a Host, Basic credentials, through `client`.
pub(crate) async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    host: &str,
    auth: Option<(&str, &str)>,
    form: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut rb = client.request(method.clone(), url).header("host", host);
    if let Some((email, key)) = auth {
        rb = rb.basic_auth(email, Some(key));
    }
    rb = if method == reqwest::Method::GET {
        rb.query(form)
    } else {
        rb.form(form)
    };
    // A kept-alive connection that nginx closes (an old worker after a reload, or its
    // idle timeout) just as a request goes out on it ends with no answer: closed
    // (`IncompleteMessage`), or reset when the request reached a socket nginx closed
    // unread (`ConnectionReset` while sending). The request was never read, and an
    // HTTP client sends it again on a new connection. Anything else is the test's
    // failure.
    let mut retries = 3;
    let res = loop {
        let attempt = rb.try_clone().expect("a form body clones").send().await;
        match attempt {
            Err(e)
                if retries > 0
                    && e.is_request()
                    && (format!("{e:?}").contains("IncompleteMessage")
                        || (format!("{e:?}").contains("SendRequest")
                            && format!("{e:?}").contains("ConnectionReset"))) =>
            {
                retries -= 1;
            }
            other => break other.unwrap(),
        }
    };
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, headers, body)
}

/// Sends a message to `general` as `who` and returns its id.
pub(crate) async fn send(
    client: &reqwest::Client,
    url: &str,
    host: &str,
    who: (&str, &str),
    content: &str,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    call(
        client,
        reqwest::Method::POST,
        &format!("{url}/api/v1/messages"),
        host,
        Some(who),
        &[
            ("type", "stream"),
            ("to", "general"),
            ("topic", "ledger"),
            ("content", content),
        ],
    )
    .await
}

/// The contents of the messages of topic "ledger".
pub(crate) async fn ledger_messages(
    client: &reqwest::Client,
    url: &str,
    host: &str,
    who: (&str, &str),
) -> Vec<String> {
    let (status, _, body) = call(
        client,
        reqwest::Method::GET,
        &format!("{url}/api/v1/messages"),
        host,
        Some(who),
        &[
            ("anchor", "newest"),
            ("num_before", "5000"),
            ("num_after", "0"),
            ("apply_markdown", "false"),
            ("narrow", r#"[{"operator":"topic","operand":"ledger"}]"#),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

fn python_script() -> &'static str {
    r#"
import socket, sys, threading, time
real = socket.getaddrinfo
def lookup(host, *args, **kwargs):
    # The realms' Hosts are the router on loopback; they are in no DNS.
    if isinstance(host, str) and host.endswith(".cluster.test"):
        host = "127.0.0.1"
    return real(host, *args, **kwargs)
socket.getaddrinfo = lookup
import zulip
site, email, key = sys.argv[1:4]
c = zulip.Client(email=email, api_key=key, site=site)
me = c.get_profile()
assert me["result"] == "success" and me["email"] == email, me
sent = c.send_message({"type": "stream", "to": "general", "topic": "router py", "content": "py through nginx"})
assert sent["result"] == "success", sent
got = c.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0,
                      "narrow": [{"operator": "topic", "operand": "router py"}]})
assert got["result"] == "success" and any(m["id"] == sent["id"] for m in got["messages"]), got
q = c.register(event_types=["message"])
assert q["result"] == "success", q
answer = {}
def poll():
    answer["events"] = c.get_events(queue_id=q["queue_id"], last_event_id=-1)
t = threading.Thread(target=poll)
t.start()
time.sleep(0.3)
second = c.send_message({"type": "stream", "to": "general", "topic": "router py", "content": "while polling"})
t.join(30)
ev = answer.get("events")
assert ev and ev["result"] == "success" and any(e["type"] == "message" and e["message"]["id"] == second["id"] for e in ev["events"]), ev
print("ok")
"#
}

/// The Python client (`HEARTH_PYTHON`) through the router; `None` when it is not set
/// (outside CI).
fn python_through(site: &str, email: &str, key: &str) -> Option<()> {
    let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
        assert!(std::env::var_os("CI").is_none(), "HEARTH_PYTHON under CI");
        eprintln!("SKIPPED the Python client through the router: HEARTH_PYTHON is not set");
        return None;
    };
    let out = Command::new(python)
        .args(["-c", python_script(), site, email, key])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(())
}

fn js_through(site: &str, email: &str, key: &str) {
    let Some(node) = std::env::var_os("HEARTH_NODE") else {
        assert!(std::env::var_os("CI").is_none(), "HEARTH_NODE under CI");
        eprintln!("SKIPPED zulip-js through the router: HEARTH_NODE is not set");
        return;
    };
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let out = Command::new(node)
        .arg(js.join("through_router.js"))
        .args([site, email, key])
        .current_dir(&js)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "zulip-js: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_router_sends_each_host_to_its_node_and_the_clients_work_through_it() {
    let Some(nginx) = nginx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    let root = create_realm(&a_dir, "", "http://cluster.test");
    let beta = create_realm(&b_dir, "beta", "http://beta.cluster.test");
    let gamma = create_realm(&b_dir, "gamma", "http://gamma.cluster.test");
    let a = Node::start(&a_dir, &[]);
    let b = Node::start(&b_dir, &[]);
    let router = Router::start(
        &nginx,
        &[("a", &a), ("b", &b)],
        &[("acme", "a"), ("", "a"), ("beta", "b"), ("gamma", "b")],
    );
    let rt = runtime();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let me = router.url("/api/v1/users/me");
        for (realm, (email, key)) in [
            ("acme", &acme),
            ("", &root),
            ("beta", &beta),
            ("gamma", &gamma),
        ] {
            let (status, _, body) = call(
                &http,
                reqwest::Method::GET,
                &me,
                &host(realm),
                Some((email, key)),
                &[],
            )
            .await;
            assert_eq!(status, 200, "{realm}: {body}");
            assert_eq!(body["email"], email.as_str());
            // The realm's name says which node's realm answered.
            let (_, _, settings) = call(
                &http,
                reqwest::Method::GET,
                &router.url("/api/v1/server_settings"),
                &host(realm),
                None,
                &[],
            )
            .await;
            assert_eq!(
                settings["realm_name"],
                format!("Realm {realm}"),
                "{settings}"
            );
        }
        // Credentials of a realm on node b are unknown to acme, on node a.
        let (status, _, body) = call(
            &http,
            reqwest::Method::GET,
            &me,
            &host("acme"),
            Some((&beta.0, &beta.1)),
            &[],
        )
        .await;
        assert_eq!(status, 401, "{body}");
        // A Host of no realm: hearth's own answer, from the router.
        let (status, _, body) = call(
            &http,
            reqwest::Method::GET,
            &me,
            "nowhere.cluster.test",
            None,
            &[],
        )
        .await;
        assert_eq!(status, 404);
        assert_eq!(body["code"], "NONEXISTENT_SUBDOMAIN");
        assert_eq!(body["msg"], "Invalid subdomain");
        // Node b itself knows nothing of acme (it has no root realm to fall back on).
        let (status, _, body) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/users/me", b.url()),
            &host("acme"),
            Some((&acme.0, &acme.1)),
            &[],
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["code"], "NONEXISTENT_SUBDOMAIN");
    });
    python_through(&router.site("acme"), &acme.0, &acme.1);
    js_through(&router.site("beta"), &beta.0, &beta.1);
}

/// A client connecting from `ip` (a loopback address of its own).
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

#[test]
fn forwarded_for_counts_per_client_behind_a_trusted_proxy_only() {
    let Some(nginx) = nginx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let a_dir = dir.path().join("a");
    create_realm(&a_dir, "acme", "http://acme.cluster.test");
    let a = Node::start(&a_dir, &["--rate-limit", "on", "--rate-limit-per-ip", "3"]);
    let router = Router::start(&nginx, &[("a", &a)], &[("acme", "a")]);
    let rt = runtime();
    rt.block_on(async {
        let anonymous = |client: reqwest::Client, url: String, xff: Option<String>| async move {
            let mut rb = client
                .get(format!("{url}/api/v1/users/me"))
                .header("host", host("acme"));
            if let Some(xff) = xff {
                rb = rb.header("x-forwarded-for", xff);
            }
            rb.send().await.unwrap().status()
        };
        let through = router.url("");
        // Through nginx, each client address has its own bucket of 3.
        let two = client_from("127.0.0.2");
        for _ in 0..3 {
            assert_eq!(anonymous(two.clone(), through.clone(), None).await, 401);
        }
        assert_eq!(anonymous(two.clone(), through.clone(), None).await, 429);
        // Another client behind the same proxy is not held up by it.
        let three = client_from("127.0.0.3");
        assert_eq!(anonymous(three.clone(), through.clone(), None).await, 401);
        // A hop the client wrote itself is not believed: it stays in its bucket.
        let forged = Some("10.9.9.9".to_owned());
        assert_eq!(anonymous(two.clone(), through.clone(), forged).await, 429);
        // Straight to the node from an untrusted peer, X-Forwarded-For is ignored.
        let four = client_from("127.0.0.4");
        let direct = a.url();
        for i in 0..3 {
            let xff = Some(format!("10.0.0.{i}"));
            assert_eq!(anonymous(four.clone(), direct.clone(), xff).await, 401);
        }
        let xff = Some("10.0.0.99".to_owned());
        assert_eq!(anonymous(four.clone(), direct.clone(), xff).await, 429);
    });
}

#[test]
fn a_reload_with_a_new_placement_drops_no_request_in_flight() {
    let Some(nginx) = nginx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    let beta = create_realm(&b_dir, "beta", "http://beta.cluster.test");
    let gamma = create_realm(&b_dir, "gamma", "http://gamma.cluster.test");
    let quick = ["--durability", "never", "--rate-limit", "off"];
    let a = Node::start(&a_dir, &quick);
    let b = Node::start(&b_dir, &quick);
    let nodes = [("a", &a), ("b", &b)];
    let router = Router::start(&nginx, &nodes, &[("acme", "a"), ("beta", "b")]);
    let rt = runtime();
    rt.block_on(async {
        let http = reqwest::Client::new();
        let url = router.url("");
        let who = (acme.0.as_str(), acme.1.as_str());
        let (_, _, q) = call(
            &http,
            reqwest::Method::POST,
            &format!("{url}/api/v1/register"),
            &host("acme"),
            Some(who),
            &[("event_types", r#"["message"]"#)],
        )
        .await;
        let queue = q["queue_id"].as_str().unwrap().to_owned();
        // A long-poll in flight across the reload.
        let poll = {
            let (http, url, acme) = (http.clone(), url.clone(), acme.clone());
            let queue = queue.clone();
            tokio::spawn(async move {
                call(
                    &http,
                    reqwest::Method::GET,
                    &format!("{url}/api/v1/events"),
                    &host("acme"),
                    Some((&acme.0, &acme.1)),
                    &[("queue_id", queue.as_str()), ("last_event_id", "-1")],
                )
                .await
            })
        };
        // Requests in flight across the reload: four loops of reads and writes.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut loops = Vec::new();
        for i in 0..4 {
            let (http, url, beta, stop) = (http.clone(), url.clone(), beta.clone(), stop.clone());
            loops.push(tokio::spawn(async move {
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let (status, _, body) = if i % 2 == 0 {
                        send(
                            &http,
                            &url,
                            &host("beta"),
                            (&beta.0, &beta.1),
                            &format!("{i}-{n}"),
                        )
                        .await
                    } else {
                        call(
                            &http,
                            reqwest::Method::GET,
                            &format!("{url}/api/v1/users/me"),
                            &host("beta"),
                            Some((&beta.0, &beta.1)),
                            &[],
                        )
                        .await
                    };
                    assert_eq!(status, 200, "{body}");
                    n += 1;
                }
                n
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        router.reload(&nodes, &[("acme", "a"), ("beta", "b"), ("gamma", "b")]);
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The new placement is in force: gamma is reachable.
        let (status, _, body) = call(
            &http,
            reqwest::Method::GET,
            &router.url("/api/v1/users/me"),
            &host("gamma"),
            Some((&gamma.0, &gamma.1)),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{body}");
        // The poll parked before the reload gets the event sent after it.
        let (status, _, sent) = send(&http, &url, &host("acme"), who, "after the reload").await;
        assert_eq!(status, 200, "{sent}");
        let (status, _, events) = tokio::time::timeout(Duration::from_secs(30), poll)
            .await
            .expect("the long-poll is answered")
            .unwrap();
        assert_eq!(status, 200, "{events}");
        assert!(
            events["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["message"]["id"] == sent["id"]),
            "{events}"
        );
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for l in loops {
            assert!(l.await.unwrap() > 0);
        }
    });
}

#[test]
fn a_realm_moves_by_freeze_ship_activate_and_drop() {
    let Some(nginx) = nginx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    create_realm(&a_dir, "keep", "http://keep.cluster.test");
    let who = (acme.0.as_str(), acme.1.as_str());
    let mut ledger: Vec<String> = Vec::new();
    let rt = runtime();
    let http = reqwest::Client::new();

    // Node a runs a while, then its folder is backed up and restored as node b's with
    // acme staged there: b holds acme as of that moment, and does not serve it.
    let mut a = Node::start(&a_dir, &["--snapshot-every", "5"]);
    rt.block_on(async {
        for i in 0..3 {
            let text = format!("before the backup {i}");
            let (status, _, body) = send(&http, &a.url(), &host("acme"), who, &text).await;
            assert_eq!(status, 200, "{body}");
            ledger.push(text);
        }
    });
    a.stop();
    let backup = dir.path().join("backup");
    let out = run(&[
        "backup",
        "--data",
        a_dir.to_str().unwrap(),
        "--out",
        backup.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&[
        "restore",
        "--from",
        backup.to_str().unwrap(),
        "--data",
        b_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rt.block_on(async {
        let store = open_store(&b_dir).await;
        store.stage("acme").unwrap();
        // b is another node: of a's realms it gets acme only (staged).
        store
            .drop_realm(
                "keep",
                &b_dir.join(format!("uploads/realm-{}", hex_of("keep"))),
            )
            .unwrap();
        store.durability.shutdown();
    });
    create_realm(&b_dir, "beta", "http://beta.cluster.test");
    let mut a = Node::start(&a_dir, &["--snapshot-every", "5"]);
    let mut b = Node::start(&b_dir, &[]);
    let router = Router::start(
        &nginx,
        &[("a", &a), ("b", &b)],
        &[("acme", "a"), ("keep", "a")],
    );

    rt.block_on(async {
        let status = b.admin.status().await.unwrap();
        let staged = status
            .iter()
            .find(|r| r.realm == "acme")
            .expect("acme on b");
        assert_eq!(staged.state, "staged");
        let from = staged.position;
        // b does not serve its staged acme.
        let (code, _, body) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/users/me", b.url()),
            &host("acme"),
            Some(who),
            &[],
        )
        .await;
        assert_eq!(
            code, 401,
            "keep answers for an unknown Host, never acme: {body}"
        );
        let on_a = a.admin.status().await.unwrap();
        assert_eq!(
            on_a.iter().find(|r| r.realm == "acme").unwrap().state,
            "active"
        );
        // The records since `from` are kept on a until shipped, snapshots or not.
        a.admin.hold("acme", from).await.unwrap();

        // More writes on a, through the router, past several snapshots.
        for i in 0..12 {
            let text = format!("after the backup {i}");
            let (status, _, body) = send(&http, &router.url(""), &host("acme"), who, &text).await;
            assert_eq!(status, 200, "{body}");
            ledger.push(text);
        }
        // A client long-polls acme on a.
        let (_, _, q) = call(
            &http,
            reqwest::Method::POST,
            &router.url("/api/v1/register"),
            &host("acme"),
            Some(who),
            &[("event_types", r#"["message"]"#)],
        )
        .await;
        let queue = q["queue_id"].as_str().unwrap().to_owned();
        let poll = {
            let (http, url, acme, queue) = (
                http.clone(),
                router.url("/api/v1/events"),
                acme.clone(),
                queue.clone(),
            );
            tokio::spawn(async move {
                call(
                    &http,
                    reqwest::Method::GET,
                    &url,
                    &host("acme"),
                    Some((&acme.0, &acme.1)),
                    &[("queue_id", queue.as_str()), ("last_event_id", "-1")],
                )
                .await
            })
        };

        // The freeze: writes answer 503 with Retry-After and change nothing; reads go on.
        let position = a.admin.freeze("acme").await.unwrap();
        let (status, headers, body) =
            send(&http, &router.url(""), &host("acme"), who, "frozen out").await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(headers["retry-after"], "1");
        assert_eq!(body["retry-after"], 1.0);
        assert_eq!(body["code"], "SERVER_NOT_READY");
        let read = ledger_messages(&http, &router.url(""), &host("acme"), who).await;
        assert_eq!(read, ledger, "reads continue during the freeze");
        assert_eq!(
            a.admin
                .status()
                .await
                .unwrap()
                .iter()
                .find(|r| r.realm == "acme")
                .unwrap()
                .state,
            "frozen"
        );

        // Shipping: a tail with a gap is refused, the right one is appended, and the
        // same again is an overlap.
        let gapped = a.admin.ship("acme", from + 1).await.unwrap();
        let err = b.admin.append("acme", &gapped).await.unwrap_err();
        assert!(err.contains("409") && err.contains("a gap"), "{err}");
        let tail = a.admin.ship("acme", from).await.unwrap();
        assert_eq!(tail.position, position);
        assert_eq!(tail.records as u64, position - from);
        assert_eq!(b.admin.append("acme", &tail).await.unwrap(), position);
        let err = b.admin.append("acme", &tail).await.unwrap_err();
        assert!(err.contains("409") && err.contains("an overlap"), "{err}");
        // Activate on b, and route acme there.
        assert_eq!(b.admin.activate("acme").await.unwrap(), position);
        router.reload(&[("a", &a), ("b", &b)], &[("acme", "b"), ("keep", "a")]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Drop on a: the parked poll is told its queue is gone.
        a.admin.drop_realm("acme").await.unwrap();
        let (status, _, answer) = tokio::time::timeout(Duration::from_secs(30), poll)
            .await
            .expect("answered")
            .unwrap();
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["code"], "BAD_EVENT_QUEUE_ID");
        // A later poll of that queue on a: the same; any other request: no such realm.
        let (status, _, answer) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/events", a.url()),
            &host("acme"),
            Some(who),
            &[("queue_id", queue.as_str()), ("last_event_id", "-1")],
        )
        .await;
        assert_eq!(
            (status.as_u16(), answer["code"].as_str()),
            (400, Some("BAD_EVENT_QUEUE_ID")),
            "{answer}"
        );
        let (status, _, answer) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/users/me", a.url()),
            &host("acme"),
            Some(who),
            &[],
        )
        .await;
        assert_eq!(
            (status.as_u16(), answer["code"].as_str()),
            (404, Some("NONEXISTENT_SUBDOMAIN")),
            "{answer}"
        );
        assert!(a
            .admin
            .status()
            .await
            .unwrap()
            .iter()
            .all(|r| r.realm != "acme"));
        // Through the router, acme is on b with every acknowledged write; it takes
        // writes again, and the client registers anew there.
        assert_eq!(
            ledger_messages(&http, &router.url(""), &host("acme"), who).await,
            ledger
        );
        let (status, _, body) = send(&http, &router.url(""), &host("acme"), who, "on b").await;
        assert_eq!(status, 200, "{body}");
        ledger.push("on b".into());
        let (status, _, q) = call(
            &http,
            reqwest::Method::POST,
            &router.url("/api/v1/register"),
            &host("acme"),
            Some(who),
            &[("event_types", r#"["message"]"#)],
        )
        .await;
        assert_eq!(status, 200, "{q}");
    });
    // Restarts: a never serves acme again; b does, whole.
    a.stop();
    b.stop();
    let a = Node::start(&a_dir, &[]);
    let b = Node::start(&b_dir, &[]);
    rt.block_on(async {
        let (status, _, _) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/users/me", a.url()),
            &host("acme"),
            Some(who),
            &[],
        )
        .await;
        assert_eq!(
            status, 401,
            "node a answers acme's Host with its other realm's refusal"
        );
        assert_eq!(
            ledger_messages(&http, &b.url(), &host("acme"), who).await,
            ledger
        );
        assert!(!a_dir
            .join(format!("uploads/realm-{}", hex_of("acme")))
            .exists());
    });
    drop(router);
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_write_of_the_python_client_completes_across_a_short_freeze() {
    let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
        assert!(std::env::var_os("CI").is_none(), "HEARTH_PYTHON under CI");
        eprintln!("SKIPPED: HEARTH_PYTHON is not set");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a_dir = dir.path().join("a");
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    let a = Node::start(&a_dir, &[]);
    let rt = runtime();
    rt.block_on(async {
        a.admin.freeze("acme").await.unwrap();
    });
    // The client sends while the realm is frozen; it is unfrozen 2.5 s later.
    let script = r#"
import sys, time, zulip
site, email, key = sys.argv[1:4]
c = zulip.Client(email=email, api_key=key, site=site)
c.ensure_session()
c.session.headers["Host"] = "acme.cluster.test"
started = time.time()
print("sending", flush=True)
r = c.send_message({"type": "stream", "to": "general", "topic": "freeze", "content": "across the freeze"})
assert r["result"] == "success", r
print("waited", round(time.time() - started, 1))
"#;
    let mut child = Command::new(python)
        .args(["-c", script, &a.url(), &acme.0, &acme.1])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    assert_eq!(lines.next().unwrap().unwrap(), "sending");
    std::thread::sleep(Duration::from_millis(2500));
    rt.block_on(async {
        a.admin.unfreeze("acme").await.unwrap();
    });
    let out = child.wait_with_output().unwrap();
    let stdout: String = lines.map(|l| l.unwrap()).collect();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let waited: f64 = stdout.trim().trim_start_matches("waited ").parse().unwrap();
    assert!(waited >= 2.0, "the send waited out the freeze: {stdout}");
    rt.block_on(async {
        let http = reqwest::Client::new();
        let (_, _, got) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/messages", a.url()),
            &host("acme"),
            Some((&acme.0, &acme.1)),
            &[
                ("anchor", "newest"),
                ("num_before", "10"),
                ("num_after", "0"),
                ("narrow", r#"[{"operator":"topic","operand":"freeze"}]"#),
            ],
        )
        .await;
        assert_eq!(got["messages"].as_array().unwrap().len(), 1, "once: {got}");
    });
}

#[test]
fn the_admin_listener_wants_its_token_and_writes_it_0600() {
    let dir = tempfile::tempdir().unwrap();
    let a_dir = dir.path().join("a");
    create_realm(&a_dir, "acme", "http://acme.cluster.test");
    let a = Node::start(&a_dir, &[]);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(a_dir.join("admin-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let rt = runtime();
    rt.block_on(async {
        let wrong = AdminClient::new(&a.admin_addr, "not-the-token");
        let err = wrong.status().await.unwrap_err();
        assert!(err.contains("401"), "{err}");
        let res = reqwest::Client::new()
            .get(format!("http://{}/admin/status", a.admin_addr))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        let status = a.admin.status().await.unwrap();
        assert_eq!(status.len(), 1);
        assert_eq!(status[0].realm, "acme");
        assert_eq!(status[0].state, "active");
        // Errors name what is wrong.
        let err = a.admin.freeze("nope").await.unwrap_err();
        assert!(
            err.contains("404") && err.contains("no realm 'nope'"),
            "{err}"
        );
        let err = a.admin.activate("acme").await.unwrap_err();
        assert!(err.contains("409") && err.contains("active"), "{err}");
        let err = a.admin.ship("acme", 10_000).await.unwrap_err();
        assert!(err.contains("beyond"), "{err}");
    });
}

#[actix_web::test]
async fn a_freeze_holds_for_the_writes_queued_at_the_actor() {
    use crate::common::{TestApp, DEV_HOST, HAMLET};
    use hearth::actor::{Freeze, Position};
    let app = TestApp::spawn().await;
    let actor = app.running.as_ref().unwrap().realm(DEV_HOST).unwrap();
    let contents: Vec<String> = (0..60).map(|i| format!("queued {i}")).collect();
    let forms: Vec<[(&str, &str); 4]> = contents
        .iter()
        .map(|c| {
            [
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "freeze"),
                ("content", c.as_str()),
            ]
        })
        .collect();
    let writes = forms
        .iter()
        .map(|form| app.post_as(HAMLET, "/api/v1/messages", form));
    // The freeze reaches the actor while writes are queued in its mailbox.
    let (replies, position) =
        futures_util::future::join(futures_util::future::join_all(writes), async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            actor.send(Freeze(true)).await.unwrap()
        })
        .await;
    let mut acknowledged = Vec::new();
    for ((status, headers, body), content) in replies.iter().zip(&contents) {
        match status.as_u16() {
            200 => acknowledged.push(content.clone()),
            503 => {
                assert_eq!(body["code"], "SERVER_NOT_READY", "{body}");
                assert_eq!(headers["retry-after"], "1");
            }
            other => panic!("{other}: {body}"),
        }
    }
    // Nothing was appended after the freeze's position, and what is stored is exactly
    // what was acknowledged.
    assert_eq!(actor.send(Position).await.unwrap(), (true, position));
    let (_, _, got) = app
        .get_as(
            HAMLET,
            "/api/v1/messages",
            &[
                ("anchor", "newest"),
                ("num_before", "100"),
                ("num_after", "0"),
                ("apply_markdown", "false"),
                ("narrow", r#"[{"operator":"topic","operand":"freeze"}]"#),
            ],
        )
        .await;
    let mut stored: Vec<String> = got["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    stored.sort();
    acknowledged.sort();
    assert_eq!(stored, acknowledged);
    // Reads went on; after the freeze, writes do too.
    actor.send(Freeze(false)).await.unwrap();
    let (status, _, body) = app
        .post_as(
            HAMLET,
            "/api/v1/messages",
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "freeze"),
                ("content", "after"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[test]
fn an_empty_node_starts_with_its_admin_listener_to_receive_a_realm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("empty");
    std::fs::create_dir(&data).unwrap();
    let node = Node::start(&data, &[]);
    runtime().block_on(async {
        assert_eq!(node.admin.status().await.unwrap(), vec![]);
        let (status, _, body) = call(
            &reqwest::Client::new(),
            reqwest::Method::GET,
            &format!("{}/api/v1/server_settings", node.url()),
            &host("acme"),
            None,
            &[],
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["code"], "NONEXISTENT_SUBDOMAIN");
    });
}

// ---------------------------------------------------------------------------------
// `hearth realm move`: the whole move, under writes, and a move cut short.

impl Node {
    pub(crate) fn kill_9(&mut self) {
        if let Some(s) = self.server.take() {
            s.kill_9();
        }
    }

    pub(crate) fn token_file(data: &Path) -> String {
        data.join("admin-token").to_str().unwrap().to_owned()
    }
}

/// Sends `text` through the router until it is acknowledged: a frozen realm answers
/// 503 with `Retry-After`, the rate limit 429 with `retry-after` (waited, then the same
/// write again, as Zulip's clients do). Any other refusal is counted in `others`. Answers whether it was acknowledged before `give_up`.
async fn send_until_acknowledged(
    http: &reqwest::Client,
    router: &str,
    who: (&str, &str),
    text: &str,
    others: &mut Vec<String>,
    give_up: Instant,
) -> bool {
    while Instant::now() < give_up {
        let (status, headers, body) = send(http, router, &host("acme"), who, text).await;
        match status.as_u16() {
            200 => return true,
            503 => {
                let wait: u64 = headers
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                tokio::time::sleep(Duration::from_millis(wait.min(1) * 50)).await;
            }
            429 => {
                let wait = body["retry-after"].as_f64().unwrap_or(0.1);
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
            }
            _ => {
                others.push(format!("{status} {body}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    false
}

/// The move command's arguments for acme from `a` to `b`.
pub(crate) fn move_args(a: (&Node, &Path), b: (&Node, &Path)) -> Vec<String> {
    vec![
        "realm".into(),
        "move".into(),
        "--subdomain".into(),
        "acme".into(),
        "--from".into(),
        a.0.admin_addr.clone(),
        "--from-token-file".into(),
        Node::token_file(a.1),
        "--to".into(),
        b.0.admin_addr.clone(),
        "--to-token-file".into(),
        Node::token_file(b.1),
    ]
}

fn run_owned(args: &[String]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args)
}

#[test]
fn hearth_realm_move_loses_no_acknowledged_write_and_clients_follow() {
    let Some(nginx) = nginx() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    create_realm(&a_dir, "keep", "http://keep.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let who = (acme.0.clone(), acme.1.clone());
    // One user writes as fast as the nodes answer: no rate limit in this test.
    let a = Node::start(&a_dir, &["--snapshot-every", "20", "--rate-limit", "off"]);
    let b = Node::start(&b_dir, &["--rate-limit", "off"]);
    let router = Router::start(
        &nginx,
        &[("a", &a), ("b", &b)],
        &[("acme", "a"), ("keep", "a")],
    );
    let reload = router.nginx.reload_command();
    let rt = runtime();
    let http = reqwest::Client::new();
    let url = router.url("");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));

    // A long-polling client through the router: on BAD_EVENT_QUEUE_ID it registers
    // again (through the router, so on the node that serves acme then), as Zulip's
    // clients do; it collects the contents it is told of.
    // It ends once it heard of the message "after", sent when the move is over.
    let poller = {
        let (http, url, who) = (http.clone(), url.clone(), who.clone());
        rt.spawn(async move {
            let mut seen: Vec<String> = Vec::new();
            let mut registrations = 0;
            'register: loop {
                let (status, _, q) = call(
                    &http,
                    reqwest::Method::POST,
                    &format!("{url}/api/v1/register"),
                    &host("acme"),
                    Some((&who.0, &who.1)),
                    &[("event_types", r#"["message"]"#)],
                )
                .await;
                if status != 200 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                registrations += 1;
                let queue = q["queue_id"].as_str().unwrap().to_owned();
                let mut last = -1i64;
                loop {
                    let (status, _, ev) = call(
                        &http,
                        reqwest::Method::GET,
                        &format!("{url}/api/v1/events"),
                        &host("acme"),
                        Some((&who.0, &who.1)),
                        &[
                            ("queue_id", queue.as_str()),
                            ("last_event_id", &last.to_string()),
                            ("dont_block", "false"),
                        ],
                    )
                    .await;
                    if status == 400 && ev["code"] == "BAD_EVENT_QUEUE_ID" {
                        continue 'register;
                    }
                    assert_eq!(status, 200, "{ev}");
                    for e in ev["events"].as_array().unwrap() {
                        last = last.max(e["id"].as_i64().unwrap());
                        if e["type"] == "message" {
                            seen.push(e["message"]["content"].as_str().unwrap().to_owned());
                        }
                    }
                    if seen.iter().any(|c| c == "after") {
                        break 'register;
                    }
                }
            }
            (seen, registrations)
        })
    };

    // Writers through the router, each write retried while frozen: the ledger holds
    // the acknowledged ones.
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (http, url, who, stop) = (http.clone(), url.clone(), who.clone(), stop.clone());
            rt.spawn(async move {
                let (mut ledger, mut others) = (Vec::new(), Vec::new());
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let text = format!("writer {w} message {i}");
                    let give_up = Instant::now() + Duration::from_secs(30);
                    if send_until_acknowledged(
                        &http,
                        &url,
                        (&who.0, &who.1),
                        &text,
                        &mut others,
                        give_up,
                    )
                    .await
                    {
                        ledger.push(text);
                    }
                    i += 1;
                    // About 150 writes a second in all: the ledger fits one read.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                (ledger, others)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));

    let mut args = move_args((&a, &a_dir), (&b, &b_dir));
    args.extend([
        "--placement".into(),
        router.nginx.placement().to_str().unwrap().into(),
        "--reload-command".into(),
        reload,
    ]);
    let out = run_owned(&args);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{said}");
    assert!(said.contains("writes waited"), "{said}");
    assert!(said.contains("dropped realm 'acme'"), "{said}");
    // Writes go on, now on b.
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut ledger = Vec::new();
    for w in writers {
        let (l, others) = rt.block_on(w).unwrap();
        assert!(
            others.is_empty(),
            "refusals other than the freeze: {others:?}"
        );
        ledger.extend(l);
    }
    assert!(ledger.len() > 10, "{}", ledger.len());
    rt.block_on(async {
        // Every acknowledged write is on b, once; the placement names b for acme.
        let mut stored = ledger_messages(&http, &b.url(), &host("acme"), (&who.0, &who.1)).await;
        stored.sort();
        let mut acknowledged = ledger.clone();
        acknowledged.sort();
        assert_eq!(stored, acknowledged);
        // b's search finds the moved messages: by a word every one has, and by a
        // phrase only one has (the index is derived, built on b from the rows).
        let search = |operand: String| {
            let (http, url, who) = (http.clone(), b.url(), who.clone());
            async move {
                let narrow = serde_json::json!([{"operator": "search", "operand": operand}]);
                let (status, _, body) = call(
                    &http,
                    reqwest::Method::GET,
                    &format!("{url}/api/v1/messages"),
                    &host("acme"),
                    Some((&who.0, &who.1)),
                    &[
                        ("anchor", "newest"),
                        ("num_before", "5000"),
                        ("num_after", "0"),
                        ("narrow", &narrow.to_string()),
                    ],
                )
                .await;
                assert_eq!(status, 200, "{body}");
                body["messages"].as_array().unwrap().len()
            }
        };
        assert_eq!(search("writer".into()).await, acknowledged.len());
        assert_eq!(search(format!("\"{}\"", acknowledged[0])).await, 1);
        let placement = std::fs::read_to_string(router.nginx.placement()).unwrap();
        assert!(placement.contains("acme = \"b\""), "{placement}");
        // a no longer has acme; b serves it, active.
        assert!(a
            .admin
            .status()
            .await
            .unwrap()
            .iter()
            .all(|r| r.realm != "acme"));
        let on_b = b.admin.status().await.unwrap();
        assert_eq!(
            on_b.iter().find(|r| r.realm == "acme").unwrap().state,
            "active"
        );
        // The long-polling client re-registered and hears of a message sent now.
        let (status, _, body) = send(&http, &url, &host("acme"), (&who.0, &who.1), "after").await;
        assert_eq!(status, 200, "{body}");
    });
    let (seen, registrations) = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(60), poller).await })
        .expect("the poller ends")
        .unwrap();
    assert!(
        registrations >= 2,
        "re-registered after the drop: {registrations}"
    );
    assert!(seen.contains(&"after".to_owned()), "{seen:?}");
    drop(router);
}

#[test]
fn a_move_cut_short_is_finished_by_running_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let who = (acme.0.as_str(), acme.1.as_str());
    let mut a = Node::start(&a_dir, &[]);
    let mut b = Node::start(&b_dir, &[]);
    let rt = runtime();
    let http = reqwest::Client::new();
    let mut ledger = Vec::new();
    let archive = dir.path().join("acme.archive");
    let mut late_uri = String::new();
    rt.block_on(async {
        for i in 0..5 {
            let text = format!("first {i}");
            let (status, _, body) = send(&http, &a.url(), &host("acme"), who, &text).await;
            assert_eq!(status, 200, "{body}");
            ledger.push(text);
        }
        // A move's first steps by hand: exported, imported staged, the source frozen.
        let at = a.admin.export("acme", &archive).await.unwrap();
        let (realm, staged_at) = b.admin.import(&archive).await.unwrap();
        assert_eq!((realm.as_str(), staged_at), ("acme", at));
        // An import of a realm the node has is refused.
        let err = b.admin.import(&archive).await.unwrap_err();
        assert!(err.contains("409"), "{err}");
        a.admin.freeze("acme").await.unwrap();
    });
    // The source dies; it comes back frozen (the freeze is durable).
    a.kill_9();
    let mut a = Node::start(&a_dir, &[]);
    rt.block_on(async {
        let on_a = a.admin.status().await.unwrap();
        assert_eq!(on_a[0].state, "frozen", "{on_a:?}");
        let (status, _, body) = send(&http, &a.url(), &host("acme"), who, "refused").await;
        assert_eq!(status, 503, "{body}");
    });
    // The move again: the staged copy is replaced, the source's state moves whole.
    let out = run_owned(&move_args((&a, &a_dir), (&b, &b_dir)));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("staged on"), "{said}");
    rt.block_on(async {
        assert_eq!(
            ledger_messages(&http, &b.url(), &host("acme"), who).await,
            ledger
        );
        let (status, _, body) = send(&http, &b.url(), &host("acme"), who, "on b").await;
        assert_eq!(status, 200, "{body}");
        ledger.push("on b".into());
    });
    // Back to a, cut short after the activation (before the drop): b is killed then,
    // and running the move again only drops it from b.
    rt.block_on(async {
        let position = b.admin.status().await.unwrap()[0].position;
        b.admin.hold("acme", position).await.unwrap();
        std::fs::remove_file(&archive).unwrap();
        let at = b.admin.export("acme", &archive).await.unwrap();
        a.admin.import(&archive).await.unwrap();
        // A file uploaded after the export: not in the archive, not in the WAL; the
        // move copies it (`copy_files_from`, which it runs before and in the freeze).
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(b"uploaded after the export".to_vec())
                .file_name("late.txt"),
        );
        let res = http
            .post(format!("{}/api/v1/user_uploads", b.url()))
            .header("host", host("acme"))
            .basic_auth(who.0, Some(who.1))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let uploaded: Value = res.json().await.unwrap();
        late_uri = uploaded["url"].as_str().unwrap().to_owned();
        assert_eq!(a.admin.copy_files_from(&b.admin, "acme").await.unwrap(), 1);
        assert_eq!(a.admin.copy_files_from(&b.admin, "acme").await.unwrap(), 0);
        let frozen = b.admin.freeze("acme").await.unwrap();
        if frozen > at {
            let tail = b.admin.ship("acme", at).await.unwrap();
            a.admin.append("acme", &tail).await.unwrap();
        }
        a.admin.activate("acme").await.unwrap();
    });
    b.kill_9();
    let b = Node::start(&b_dir, &[]);
    let out = run_owned(&move_args((&b, &b_dir), (&a, &a_dir)));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("already served"), "{said}");
    rt.block_on(async {
        assert!(b.admin.status().await.unwrap().is_empty());
        assert_eq!(
            ledger_messages(&http, &a.url(), &host("acme"), who).await,
            ledger
        );
    });
    a.stop();
    let a = Node::start(&a_dir, &[]);
    rt.block_on(async {
        assert_eq!(
            ledger_messages(&http, &a.url(), &host("acme"), who).await,
            ledger
        );
        let res = http
            .get(format!("{}{late_uri}", a.url()))
            .header("host", host("acme"))
            .basic_auth(who.0, Some(who.1))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{late_uri}");
        assert_eq!(
            &res.bytes().await.unwrap()[..],
            b"uploaded after the export"
        );
    });
}

#[test]
fn a_move_whose_target_dies_while_importing_is_redone() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let acme = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let who = (acme.0.as_str(), acme.1.as_str());
    let a = Node::start(&a_dir, &[]);
    // The target ends itself, as kill -9 would, in the middle of the import's messages.
    let mut b = Node::start_env(&b_dir, &[("HEARTH_ARCHIVE_FAULT", "abort:messages")]);
    let rt = runtime();
    let http = reqwest::Client::new();
    let mut ledger = Vec::new();
    rt.block_on(async {
        for i in 0..5 {
            let text = format!("before {i}");
            let (status, _, body) = send(&http, &a.url(), &host("acme"), who, &text).await;
            assert_eq!(status, 200, "{body}");
            ledger.push(text);
        }
    });
    let out = run_owned(&move_args((&a, &a_dir), (&b, &b_dir)));
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "the target died: {said}");
    eprintln!("{said}");
    assert!(said.contains("the move of realm 'acme' failed"), "{said}");
    b.kill_9();
    rt.block_on(async {
        // The source was never frozen: it serves and takes writes as before.
        let on_a = a.admin.status().await.unwrap();
        assert_eq!(on_a[0].state, "active", "{on_a:?}");
        let (status, _, body) = send(&http, &a.url(), &host("acme"), who, "between").await;
        assert_eq!(status, 200, "{body}");
        ledger.push("between".into());
    });
    // The target comes back with what the import left (never served), and the move
    // run again replaces it.
    let b = Node::start(&b_dir, &[]);
    rt.block_on(async {
        let (status, _, _) = call(
            &http,
            reqwest::Method::GET,
            &format!("{}/api/v1/users/me", b.url()),
            &host("acme"),
            Some(who),
            &[],
        )
        .await;
        assert_eq!(status, 404, "a half-imported realm is not served");
    });
    let out = run_owned(&move_args((&a, &a_dir), (&b, &b_dir)));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    rt.block_on(async {
        assert_eq!(
            ledger_messages(&http, &b.url(), &host("acme"), who).await,
            ledger
        );
        assert!(a.admin.status().await.unwrap().is_empty());
    });
}

/// `hearth realm import --admin` streams the archive from its file to the node, which
/// writes it to disk as it comes (`POST /admin/import`): here an archive of more than
/// 12 MiB (an uploaded file of that size), imported whole, and a copy damaged in its
/// middle refused, naming the part, with nothing of the realm left on the node.
#[test]
fn a_large_archive_streams_to_a_running_node_and_a_damaged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let (email, key) = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let a = Node::start(&a_dir, &[]);
    let b = Node::start(&b_dir, &[]);
    let rt = runtime();
    let http = reqwest::Client::new();
    // 12 MiB that do not repeat (an xorshift stream).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let big: Vec<u8> = (0..12 * 1024 * 1024 / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    let uri = rt.block_on(async {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(big.clone()).file_name("big.bin"),
        );
        let res = http
            .post(format!("{}/api/v1/user_uploads", a.url()))
            .header("host", host("acme"))
            .basic_auth(&email, Some(&key))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body: Value = res.json().await.unwrap();
        body["url"].as_str().unwrap().to_owned()
    });
    let archive = dir.path().join("acme.archive");
    let out = run(&[
        "realm",
        "export",
        "--admin",
        &a.admin_addr,
        "--admin-token-file",
        &Node::token_file(&a_dir),
        "--subdomain",
        "acme",
        "--out",
        archive.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&archive).unwrap();
    assert!(bytes.len() > big.len(), "{} bytes", bytes.len());
    let import = |path: &Path| {
        run(&[
            "realm",
            "import",
            "--admin",
            &b.admin_addr,
            "--admin-token-file",
            &Node::token_file(&b_dir),
            "--archive",
            path.to_str().unwrap(),
        ])
    };

    // One byte changed in the middle of the file's pieces.
    let damaged = dir.path().join("damaged.archive");
    let mut changed = bytes.clone();
    let middle = changed.len() / 2;
    changed[middle] ^= 0x55;
    std::fs::write(&damaged, &changed).unwrap();
    let out = import(&damaged);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "a damaged archive imported");
    assert!(said.contains("400"), "{said}");
    assert!(said.contains("part 'uploads'"), "{said}");
    rt.block_on(async {
        assert_eq!(b.admin.status().await.unwrap(), vec![]);
    });
    // The node kept nothing of it: no realm, no upload of the archive left behind.
    let left: Vec<String> = std::fs::read_dir(&b_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("admin-archive-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // The intact archive: imported staged, activated, its file served whole.
    let out = import(&archive);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rt.block_on(async {
        let on_b = b.admin.status().await.unwrap();
        assert_eq!(on_b.len(), 1);
        assert_eq!(
            (on_b[0].realm.as_str(), on_b[0].state.as_str()),
            ("acme", "staged")
        );
        b.admin.activate("acme").await.unwrap();
        let res = http
            .get(format!("{}{uri}", b.url()))
            .header("host", host("acme"))
            .basic_auth(&email, Some(&key))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert!(
            res.bytes().await.unwrap()[..] == big[..],
            "the file differs"
        );
    });
}

/// A data export (`POST /export/realm`) imported through the admin listener: it held no
/// key, so the import answers the owner's new one (and `realm import --admin` prints
/// it), which opens the realm once it is served; the old key does not.
#[test]
fn a_data_export_imported_through_the_admin_listener_answers_the_owners_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    let (email, old_key) = create_realm(&a_dir, "acme", "http://acme.cluster.test");
    std::fs::create_dir(&b_dir).unwrap();
    let a = Node::start(&a_dir, &[]);
    let b = Node::start(&b_dir, &[]);
    let rt = runtime();
    let http = reqwest::Client::new();
    let archive = dir.path().join("export.archive");
    rt.block_on(async {
        let call = |method: reqwest::Method, path: &str, key: &str| {
            http.request(method, format!("{}{path}", a.url()))
                .header("Host", host("acme"))
                .basic_auth(&email, Some(key))
        };
        let id = call(reqwest::Method::POST, "/api/v1/export/realm", &old_key)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["id"]
            .as_u64()
            .expect("an export id");
        let give_up = Instant::now() + Duration::from_secs(60);
        let url = loop {
            let list: Value = call(reqwest::Method::GET, "/api/v1/export/realm", &old_key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let e = list["exports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == id)
                .cloned()
                .unwrap();
            if let Some(url) = e["export_url"].as_str() {
                break url.to_owned();
            }
            assert!(Instant::now() < give_up, "the export did not finish: {e}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        // The URL names the realm's public address; the node answers on its own.
        let path = &url[url.find("/user_avatars/").unwrap()..];
        let bytes = http
            .get(format!("{}{path}", a.url()))
            .header("Host", host("acme"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        std::fs::write(&archive, &bytes).unwrap();

        let (realm, _, keys) = b.admin.import_with_keys(&archive).await.unwrap();
        assert_eq!(realm, "acme");
        assert_eq!(keys.len(), 1, "{keys:?}");
        assert_eq!(keys[0].0, email);
        assert_ne!(keys[0].1, old_key);
        b.admin.activate("acme").await.unwrap();
        let me = |key: String| {
            http.get(format!("{}/api/v1/users/me", b.url()))
                .header("Host", host("acme"))
                .basic_auth(&email, Some(key))
                .send()
        };
        assert_eq!(me(keys[0].1.clone()).await.unwrap().status(), 200);
        assert_eq!(me(old_key.clone()).await.unwrap().status(), 401);
    });
}
