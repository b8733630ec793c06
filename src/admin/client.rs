//! `AdminClient`: the admin protocol (see the module above) from the other side, for
//! the operator's commands (`hearth realm move`) and tests.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

/// A node's admin listener and its token.
#[derive(Clone)]
pub struct AdminClient {
    /// `http://host:port` (no trailing slash).
    base: String,
    token: String,
    http: reqwest::Client,
}

/// One realm of `GET /admin/status`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RealmStatus {
    pub realm: String,
    /// `active`, `frozen` or `staged`.
    pub state: String,
    pub position: u64,
}

/// A WAL tail from `ship`: the framed records and the last durable position.
#[derive(Debug, Clone)]
pub struct Tail {
    /// The records, framed (`super::encode_records`), ready for `append`.
    pub bytes: Vec<u8>,
    /// How many records.
    pub records: usize,
    /// The last durable record of the realm on the shipping node.
    pub position: u64,
}

impl AdminClient {
    /// `url`: the listener (`http://127.0.0.1:9993`, or without the scheme).
    pub fn new(url: &str, token: &str) -> AdminClient {
        let url = url.trim_end_matches('/');
        let base = if url.contains("://") {
            url.to_owned()
        } else {
            format!("http://{url}")
        };
        AdminClient {
            base,
            token: token.trim().to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// With the token read from a node's `admin-token` file.
    pub fn with_token_file(url: &str, path: &Path) -> Result<AdminClient, String> {
        let token = super::read_token(path)
            .map_err(|e| format!("cannot read the admin token {}: {e}", path.display()))?;
        Ok(AdminClient::new(url, &token))
    }

    async fn answer(&self, res: reqwest::Response) -> Result<Value, String> {
        let status = res.status();
        let body: Value = res
            .json()
            .await
            .map_err(|e| format!("{}: unreadable answer ({status}): {e}", self.base))?;
        if !status.is_success() {
            let msg = body["msg"].as_str().unwrap_or("no message");
            return Err(format!("{}: {} {msg}", self.base, status.as_u16()));
        }
        Ok(body)
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        let res = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        self.answer(res).await
    }

    fn position(v: &Value) -> u64 {
        v["position"].as_u64().unwrap_or(0)
    }

    /// `GET /admin/status`.
    pub async fn status(&self) -> Result<Vec<RealmStatus>, String> {
        let res = self
            .http
            .get(format!("{}/admin/status", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        let body = self.answer(res).await?;
        serde_json::from_value(body["realms"].clone()).map_err(|e| e.to_string())
    }

    /// `POST /admin/freeze`: the position every acknowledged write is at or below.
    pub async fn freeze(&self, realm: &str) -> Result<u64, String> {
        Ok(Self::position(
            &self
                .post("/admin/freeze", json!({ "realm": realm }))
                .await?,
        ))
    }

    /// `POST /admin/unfreeze`.
    pub async fn unfreeze(&self, realm: &str) -> Result<u64, String> {
        Ok(Self::position(
            &self
                .post("/admin/unfreeze", json!({ "realm": realm }))
                .await?,
        ))
    }

    /// `POST /admin/hold`: snapshots keep the records after `after`.
    pub async fn hold(&self, realm: &str, after: u64) -> Result<(), String> {
        self.post("/admin/hold", json!({ "realm": realm, "after": after }))
            .await
            .map(drop)
    }

    /// `POST /admin/release`.
    pub async fn release(&self, realm: &str) -> Result<(), String> {
        self.post("/admin/release", json!({ "realm": realm }))
            .await
            .map(drop)
    }

    /// `GET /admin/wal`: the records after `after`.
    pub async fn ship(&self, realm: &str, after: u64) -> Result<Tail, String> {
        let res = self
            .http
            .get(format!("{}/admin/wal", self.base))
            .query(&[("realm", realm), ("after", &after.to_string())])
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        if !res.status().is_success() {
            return self.answer(res).await.map(|_| Tail {
                bytes: Vec::new(),
                records: 0,
                position: 0,
            });
        }
        let header = |name: &str| {
            res.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let position = header("x-hearth-position");
        let records = header("x-hearth-records") as usize;
        let bytes = res
            .bytes()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?
            .to_vec();
        Ok(Tail {
            bytes,
            records,
            position,
        })
    }

    /// `POST /admin/wal`: appends a shipped tail to a staged realm; its new position.
    pub async fn append(&self, realm: &str, tail: &Tail) -> Result<u64, String> {
        let res = self
            .http
            .post(format!("{}/admin/wal", self.base))
            .query(&[("realm", realm)])
            .bearer_auth(&self.token)
            .header("content-type", "application/octet-stream")
            .body(tail.bytes.clone())
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        Ok(Self::position(&self.answer(res).await?))
    }

    /// `POST /admin/settle`: the staged realm's snapshot brought up to its last
    /// appended record; its position and how many records that replayed.
    pub async fn settle(&self, realm: &str) -> Result<(u64, u64), String> {
        let body = self
            .post("/admin/settle", json!({ "realm": realm }))
            .await?;
        Ok((
            Self::position(&body),
            body["replayed"].as_u64().unwrap_or(0),
        ))
    }

    /// `POST /admin/activate`: its position once served.
    pub async fn activate(&self, realm: &str) -> Result<u64, String> {
        Ok(Self::position(
            &self
                .post("/admin/activate", json!({ "realm": realm }))
                .await?,
        ))
    }

    /// `POST /admin/drop`.
    pub async fn drop_realm(&self, realm: &str) -> Result<(), String> {
        self.post("/admin/drop", json!({ "realm": realm }))
            .await
            .map(drop)
    }

    /// `POST /admin/export`: writes the realm's archive to `out` (a new file); its WAL
    /// position.
    pub async fn export(&self, realm: &str, out: &Path) -> Result<u64, String> {
        use std::io::Write;
        let mut res = self
            .http
            .post(format!("{}/admin/export", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "realm": realm }))
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        if !res.status().is_success() {
            return self.answer(res).await.map(|_| 0);
        }
        let position = res
            .headers()
            .get("x-hearth-position")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| format!("{}: an export without its position", self.base))?;
        let mut file =
            std::fs::File::create_new(out).map_err(|e| format!("{}: {e}", out.display()))?;
        while let Some(piece) = res
            .chunk()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?
        {
            file.write_all(&piece)
                .map_err(|e| format!("{}: {e}", out.display()))?;
        }
        file.sync_all()
            .map_err(|e| format!("{}: {e}", out.display()))?;
        Ok(position)
    }

    /// `POST /admin/import`: imports the archive at `path` staged; its realm and WAL
    /// position.
    ///
    /// The file is streamed from the disk as it is sent, never read whole into memory.
    pub async fn import(&self, path: &Path) -> Result<(String, u64), String> {
        self.import_with_keys(path)
            .await
            .map(|(realm, at, _)| (realm, at))
    }

    /// `import`, with the owners' new API keys when the archive was a data export
    /// (which holds none): `(email, key)`.
    pub async fn import_with_keys(
        &self,
        path: &Path,
    ) -> Result<(String, u64, Vec<(String, String)>), String> {
        let at = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = tokio::fs::File::open(path).await.map_err(at)?;
        let len = file.metadata().await.map_err(at)?.len();
        let res = self
            .http
            .post(format!("{}/admin/import", self.base))
            .bearer_auth(&self.token)
            .header("content-type", "application/octet-stream")
            .header("content-length", len)
            .body(reqwest::Body::from(file))
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        let body = self.answer(res).await?;
        let realm = body["realm"].as_str().unwrap_or_default().to_owned();
        let keys = serde_json::from_value(body["new_owner_keys"].clone()).unwrap_or_default();
        Ok((realm, Self::position(&body), keys))
    }

    /// `GET /admin/files`: the names of the realm's stored files.
    pub async fn files(&self, realm: &str) -> Result<Vec<String>, String> {
        let res = self
            .http
            .get(format!("{}/admin/files", self.base))
            .query(&[("realm", realm)])
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| format!("{}: {e}", self.base))?;
        let body = self.answer(res).await?;
        serde_json::from_value(body["files"].clone()).map_err(|e| e.to_string())
    }

    /// Copies the files `from` has for `realm` and this node lacks to this node (the
    /// realm staged here); how many.
    pub async fn copy_files_from(&self, from: &AdminClient, realm: &str) -> Result<usize, String> {
        let have: std::collections::HashSet<String> =
            self.files(realm).await?.into_iter().collect();
        let mut copied = 0;
        for name in from.files(realm).await? {
            if have.contains(&name) {
                continue;
            }
            let res = from
                .http
                .get(format!("{}/admin/file", from.base))
                .query(&[("realm", realm), ("sha256", &name)])
                .bearer_auth(&from.token)
                .send()
                .await
                .map_err(|e| format!("{}: {e}", from.base))?;
            if !res.status().is_success() {
                from.answer(res).await?;
                continue;
            }
            let bytes = res
                .bytes()
                .await
                .map_err(|e| format!("{}: {e}", from.base))?;
            let res = self
                .http
                .post(format!("{}/admin/file", self.base))
                .query(&[("realm", realm), ("sha256", &name)])
                .bearer_auth(&self.token)
                .header("content-type", "application/octet-stream")
                .body(bytes)
                .send()
                .await
                .map_err(|e| format!("{}: {e}", self.base))?;
            self.answer(res).await?;
            copied += 1;
        }
        Ok(copied)
    }
}
