//! Simulated users: `hearth realm populate` adds members with API keys and no password
//! (no argon2 hash), in large WAL records, to a stopped server's realm, and writes their
//! credentials to `load-users.tsv` in the data folder, where `hearth load` finds them
//! again on the next run.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use hearth::realm::channels::{pick_color, NewSubscription};
use hearth::realm::{Change, ChannelChange, Cx, NewUser, Role, SystemClock, UserChange};
use hearth::storage::DurabilityMode;
use hearth::StartError;

/// Name of the credentials file, in the data folder.
pub const CREDENTIALS_FILE: &str = "load-users.tsv";
/// Users created per WAL record.
const USERS_PER_RECORD: usize = 1000;

/// `hearth realm populate`.
#[derive(Debug, Clone, Args)]
pub struct PopulateArgs {
    /// Folder of the embedded database (its server must be stopped).
    #[arg(long, env = "HEARTH_DATA", default_value = "./data")]
    pub data: PathBuf,
    /// The realm to add users to ("zulip" is the development realm).
    #[arg(long, default_value = hearth::DEV_SUBDOMAIN)]
    pub subdomain: String,
    /// How many simulated users the realm should have (`load0@hearth.invalid`, ...);
    /// those that exist already are kept, with their keys.
    #[arg(long)]
    pub users: usize,
    /// Also subscribe every simulated user to this existing channel (by name), so
    /// that messages sent to it reach their event queues (`hearth load
    /// --messages-per-minute`).
    #[arg(long)]
    pub subscribe: Option<String>,
}

/// One simulated user's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub email: String,
    pub api_key: String,
}

/// The email of simulated user `i`.
pub fn load_email(i: usize) -> String {
    format!("load{i}@hearth.invalid")
}

/// Where the credentials of `data` are kept.
pub fn credentials_path(data: &Path) -> PathBuf {
    data.join(CREDENTIALS_FILE)
}

/// Reads a credentials file (`email<TAB>api_key` per line).
pub fn read_credentials(path: &Path) -> Result<Vec<Credential>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (email, key) = line
                .split_once('\t')
                .ok_or_else(|| format!("{}: not 'email<TAB>key': {line}", path.display()))?;
            Ok(Credential {
                email: email.to_owned(),
                api_key: key.to_owned(),
            })
        })
        .collect()
}

/// Credentials from the data folder's file when it holds at least `users` of them.
pub fn reuse_credentials(data: &Path, users: usize) -> Option<Vec<Credential>> {
    let mut creds = read_credentials(&credentials_path(data)).ok()?;
    (creds.len() >= users).then(|| {
        creds.truncate(users);
        creds
    })
}

/// Adds the missing simulated users `0..users` to the realm in `data` (its server
/// stopped), snapshots it, and writes every simulated user's credentials to
/// `load-users.tsv` there (mode 0600). Returns them.
pub fn populate(args: &PopulateArgs) -> Result<Vec<Credential>, StartError> {
    let (store, _) = hearth::open_data_folder(&args.data, DurabilityMode::Never)?;
    if !store
        .realm_subdomains()
        .iter()
        .any(|s| s == &args.subdomain)
    {
        store.durability.shutdown();
        return Err(StartError::Realm(format!(
            "no realm '{}' in {}: create it first (`hearth realm create`, or `hearth serve --dev` once)",
            args.subdomain,
            args.data.display()
        )));
    }
    let mut realm_store = store.realm(&args.subdomain)?;
    let mut realm = realm_store
        .recover()?
        .ok_or_else(|| StartError::Realm(format!("realm '{}' has no history", args.subdomain)))?
        .realm;
    let clock = SystemClock;
    let mut cx = Cx::new(&clock);
    let mut creds = Vec::with_capacity(args.users);
    let mut pending = Vec::new();
    let mut next_id = realm.next_user_id;
    for i in 0..args.users {
        let email = load_email(i);
        if let Some(user) = realm.user_by_delivery_email(&email) {
            creds.push(Credential {
                email,
                api_key: user.api_key.clone(),
            });
            continue;
        }
        let api_key = cx.api_key();
        creds.push(Credential {
            email: email.clone(),
            api_key: api_key.clone(),
        });
        pending.push(Change::User(UserChange::UserCreated(NewUser {
            user_id: next_id,
            delivery_email: email,
            full_name: format!("Load User {i}"),
            role: Role::Member,
            bot_type: None,
            bot_owner_id: None,
            timezone: "UTC".into(),
            api_key,
            password_hash: None,
            date_joined: cx.now_secs(),
        })));
        next_id += 1;
    }
    let added = pending.len();
    for chunk in pending.chunks(USERS_PER_RECORD) {
        realm_store.append(chunk)?;
        chunk.iter().for_each(|c| realm.apply(c));
    }
    let mut subscribed = 0;
    if let Some(name) = &args.subscribe {
        let Some(channel) = realm.channel_by_name(name) else {
            store.durability.shutdown();
            return Err(StartError::Realm(format!(
                "no channel '{name}' in realm '{}'",
                args.subdomain
            )));
        };
        let channel_id = channel.id;
        let subs: Vec<NewSubscription> = creds
            .iter()
            .filter_map(|c| realm.user_by_delivery_email(&c.email))
            .filter(|u| !channel.is_subscribed(u.id))
            .map(|u| NewSubscription {
                channel_id,
                user_id: u.id,
                color: pick_color(&[]),
            })
            .collect();
        subscribed = subs.len();
        for chunk in subs.chunks(USERS_PER_RECORD) {
            let change = [Change::Channel(ChannelChange::Subscribed {
                subs: chunk.to_vec(),
            })];
            realm_store.append(&change)?;
            change.iter().for_each(|c| realm.apply(c));
        }
    }
    if added + subscribed > 0 {
        realm_store.snapshot(&realm)?;
    }
    drop(realm_store);
    store.durability.shutdown();
    drop(store);
    write_credentials(&credentials_path(&args.data), &creds).map_err(|e| {
        StartError::DataFolder {
            path: args.data.display().to_string(),
            cause: e.to_string(),
        }
    })?;
    tracing::info!(
        "realm '{}': {added} simulated users added, {} in all; credentials in {}",
        args.subdomain,
        creds.len(),
        credentials_path(&args.data).display()
    );
    Ok(creds)
}

/// Writes the credentials to a new file only its owner may read, renamed over `path`.
fn write_credentials(path: &Path, creds: &[Credential]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let result = options.open(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        for c in creds {
            writeln!(w, "{}\t{}", c.email, c.api_key)?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
