//! The real `zulip-botserver` 0.9.1 behind an outgoing-webhook bot, running
//! `zulip_bots`' stateful `incrementor`: mentioned, it answers `1` through the API,
//! keeps its count in `/bot_storage`, and edits its message on every later mention.
//! Then hearth is killed (`kill -9`) with a delivery pending while the botserver is
//! down, and the delivery is made after the restart (answered by the restarted
//! botserver, whose incrementor counts from 1 again).
//!
//! The botserver is the `zulip-botserver` beside `HEARTH_PYTHON` (`.ci/run` installs
//! `zulip-botserver==0.9.1` and `zulip-bots==0.9.1` into that virtualenv). Without
//! `HEARTH_PYTHON` the test says so and passes, except under CI, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::child::ChildServer;
use crate::common::*;

const OWNER: &str = "hamlet@zulip.com";

fn botserver_program() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("HEARTH_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "HEARTH_PYTHON must name a Python with zulip-botserver==0.9.1 under CI"
        );
        eprintln!(
            "SKIPPED botserver: HEARTH_PYTHON is not set. Set it to a virtualenv's python \
             with zulip-botserver==0.9.1 and zulip-bots==0.9.1 installed"
        );
        return None;
    };
    let program = PathBuf::from(python).with_file_name("zulip-botserver");
    assert!(
        program.is_file(),
        "{} is missing: pip install zulip-botserver==0.9.1 zulip-bots==0.9.1",
        program.display()
    );
    Some(program)
}

/// A running botserver, killed when dropped.
struct Botserver(Child);

impl Drop for Botserver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_botserver(program: &PathBuf, config: &PathBuf, port: u16) -> Botserver {
    let child = Command::new(program)
        .arg("--config-file")
        .arg(config)
        .args(["--hostname", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start zulip-botserver");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "zulip-botserver did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    Botserver(child)
}

/// The incrementor's message in topic `count` of Verona after message `after`, once
/// its content is `want`.
async fn wait_for_count(url: &str, auth: &str, bot_id: i64, after: i64, want: &str) -> Value {
    poll(
        Duration::from_secs(60),
        &format!("the count {want}"),
        || async {
            let r: Value = client()
                .get(format!("{url}/api/v1/messages"))
                .header("authorization", auth)
                .query(&[
                    ("anchor", "newest"),
                    ("num_before", "20"),
                    ("num_after", "0"),
                    ("apply_markdown", "false"),
                    (
                        "narrow",
                        &json!([{"operator": "channel", "operand": "Verona"},
                            {"operator": "topic", "operand": "count"}])
                        .to_string(),
                    ),
                ])
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            let from_bot: Vec<&Value> = r["messages"]
                .as_array()?
                .iter()
                .filter(|m| m["sender_id"] == bot_id && m["id"].as_i64() > Some(after))
                .collect();
            // The incrementor keeps one message and edits it.
            assert!(
                from_bot.len() <= 1,
                "one message from the bot: {from_bot:?}"
            );
            from_bot
                .first()
                .filter(|m| m["content"] == want)
                .map(|m| (*m).clone())
        },
    )
    .await
}

/// Mentions the incrementor; answers the message's id.
async fn mention(url: &str, auth: &str) -> i64 {
    let r: Value = client()
        .post(format!("{url}/api/v1/messages"))
        .header("authorization", auth)
        .form(&[
            ("type", "stream"),
            ("to", "Verona"),
            ("topic", "count"),
            ("content", "@**Incrementor** count"),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["result"], "success", "{r}");
    r["id"].as_i64().unwrap()
}

#[actix_web::test]
async fn zulip_botserver_runs_the_incrementor_across_a_kill_9() {
    let Some(program) = botserver_program() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap().to_owned();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    let url = server.url.clone();
    let key = dev_key_at(&url, OWNER).await;
    let auth = basic(OWNER, &key);
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let payload_url = serde_json::to_string(&format!("http://127.0.0.1:{port}/")).unwrap();
    let bot: Value = client()
        .post(format!("{url}/api/v1/bots"))
        .header("authorization", &auth)
        .form(&[
            ("full_name", "Incrementor"),
            ("short_name", "incrementor"),
            ("bot_type", "3"),
            ("payload_url", payload_url.as_str()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(bot["result"], "success", "{bot}");
    let bot_id = bot["user_id"].as_i64().unwrap();
    let bot_key = bot["api_key"].as_str().unwrap().to_owned();
    let state: Value = client()
        .post(format!("{url}/api/v1/register"))
        .header("authorization", &auth)
        .form(&[("fetch_event_types", r#"["realm_bot"]"#)])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = state["realm_bots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["user_id"] == bot_id)
        .unwrap()
        .clone();
    let token = entry["services"][0]["token"].as_str().unwrap().to_owned();
    let email = entry["email"].as_str().unwrap().to_owned();
    let config = dir.path().join("botserverrc");
    let write_config = |site: &str| {
        std::fs::write(
            &config,
            format!("[incrementor]\nemail={email}\nkey={bot_key}\nsite={site}\ntoken={token}\n"),
        )
        .unwrap();
    };
    write_config(&url);
    let botserver = start_botserver(&program, &config, port);
    mention(&url, &auth).await;
    wait_for_count(&url, &auth, bot_id, 0, "1").await;
    mention(&url, &auth).await;
    wait_for_count(&url, &auth, bot_id, 0, "2").await;

    // The botserver goes down; a mention is acknowledged, its delivery pending (the
    // connection is refused and retried), and hearth is killed.
    drop(botserver);
    let pending = mention(&url, &auth).await;
    server.kill_9();
    let server = ChildServer::up(&["--dev", "--data", &data], &[]);
    // The restarted server listens on another port: the botserver is told.
    write_config(&server.url);
    let _botserver = start_botserver(&program, &config, port);
    // `zulip_bots` 0.9.1's incrementor starts its count again when its process starts
    // (its `initialize` looks at the process's own cache only), so the delivery made
    // after the restart is answered with a new message `1`, as against Zulip.
    wait_for_count(&server.url, &auth, bot_id, pending, "1").await;
    server.stop();
}
