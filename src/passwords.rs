//! Password hashing and verifying for the request path: bounded in time, memory and
//! concurrency.
//!
//! argon2 is slow on purpose and needs 19 MiB of working memory per hash (default
//! parameters). Run on the blocking pool, hundreds of hashes ran at once and the
//! allocator kept their memory: a burst of wrong-password logins, which needs no
//! account, grew the server by gigabytes. Here a fixed set of threads, one per core,
//! does every hash; each reuses one working-memory block, and drops it after a quiet
//! spell so the memory returns after a burst. At most [`QUEUE`] attempts wait; the
//! next ones are answered 429 at once, as Zulip's rate limiter does.
//!
//! [`verify`] without a stored hash (unknown user, deactivated user, user without a
//! password) checks the password against a dummy hash, so that it costs what a wrong
//! password costs and timing does not tell which accounts exist.

use std::sync::OnceLock;
use std::time::Duration;

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use tokio::sync::oneshot;

use crate::error::{ApiError, ApiResult};

/// How many attempts may wait for a hashing thread; the next ones get a 429.
pub const QUEUE: usize = 64;
/// The `retry-after` of that 429: the queue drains in well under this.
const RETRY_AFTER_SECS: f64 = 1.0;
/// A hashing thread idle this long frees its working memory.
const IDLE_RELEASE: Duration = Duration::from_secs(5);

enum Job {
    Hash {
        password: String,
        reply: oneshot::Sender<ApiResult<String>>,
    },
    Verify {
        password: String,
        stored: Option<String>,
        reply: oneshot::Sender<bool>,
    },
}

/// Hashes `password` with argon2id and a random salt (PHC string), on a hashing thread.
pub async fn hash(password: String) -> ApiResult<String> {
    let (reply, answer) = oneshot::channel();
    submit(Job::Hash { password, reply })?;
    answer.await.map_err(|_| gone())?
}

/// Checks `password` against `stored`, on a hashing thread. Without a stored hash it
/// does the same work against a dummy hash and answers `false`. Errs only when too
/// many attempts are already waiting (429) or the hashing threads are gone (500).
pub async fn verify(password: String, stored: Option<String>) -> ApiResult<bool> {
    let (reply, answer) = oneshot::channel();
    submit(Job::Verify {
        password,
        stored,
        reply,
    })?;
    answer.await.map_err(|_| gone())
}

fn gone() -> ApiError {
    tracing::error!("a password hashing thread stopped");
    ApiError::internal()
}

fn submit(job: Job) -> ApiResult<()> {
    match jobs().try_send(job) {
        Ok(()) => Ok(()),
        Err(TrySendError::Full(_)) => Err(ApiError::rate_limited(RETRY_AFTER_SECS)),
        Err(TrySendError::Disconnected(_)) => Err(gone()),
    }
}

/// The queue of the hashing threads, started on first use.
fn jobs() -> &'static Sender<Job> {
    static JOBS: OnceLock<Sender<Job>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let (tx, rx) = crossbeam_channel::bounded(QUEUE);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        for i in 0..threads {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("hearth-argon2-{i}"))
                .spawn(move || work(&rx));
            if let Err(e) = spawned {
                // With no thread at all the queue is disconnected: answers become 500s.
                tracing::error!("cannot start a password hashing thread: {e}");
            }
        }
        tx
    })
}

/// One hashing thread: takes jobs until the server ends.
fn work(jobs: &Receiver<Job>) {
    let mut memory = Vec::new();
    loop {
        match jobs.recv_timeout(IDLE_RELEASE) {
            // The client went away while the job waited: nobody reads the answer.
            Ok(Job::Hash { reply, .. }) if reply.is_closed() => {}
            Ok(Job::Verify { reply, .. }) if reply.is_closed() => {}
            Ok(Job::Hash { password, reply }) => {
                let _ = reply.send(hash_with(password.as_bytes(), &mut memory));
            }
            Ok(Job::Verify {
                password,
                stored,
                reply,
            }) => {
                let ok = match stored {
                    Some(stored) => verify_with(password.as_bytes(), &stored, &mut memory),
                    None => {
                        verify_with(password.as_bytes(), dummy_hash(&mut memory), &mut memory);
                        false
                    }
                };
                let _ = reply.send(ok);
            }
            Err(RecvTimeoutError::Timeout) => memory = Vec::new(),
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// The dummy hash of [`verify`] without a stored hash: a random password under the
/// default parameters, computed once.
fn dummy_hash(memory: &mut Vec<Block>) -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let mut password = [0u8; 32];
        OsRng.fill_bytes(&mut password);
        hash_with(&password, memory).unwrap_or_else(|_| {
            // Not reachable with the default parameters; verifying against it fails
            // fast, which only weakens the timing cover.
            String::new()
        })
    })
}

/// `argon2::PasswordHasher::hash_password` with the default parameters, in `memory`.
fn hash_with(password: &[u8], memory: &mut Vec<Block>) -> ApiResult<String> {
    let salt = SaltString::generate(&mut OsRng);
    let hashed = (|| {
        let argon2 = Argon2::default();
        let mut raw = [0u8; 64];
        let salt_bytes = salt.as_salt().decode_b64(&mut raw)?;
        let len = argon2
            .params()
            .output_len()
            .unwrap_or(Params::DEFAULT_OUTPUT_LEN);
        let blocks = blocks(memory, argon2.params());
        let output = Output::init_with(len, |out| {
            Ok(argon2.hash_password_into_with_memory(password, salt_bytes, out, &mut *blocks)?)
        })?;
        Ok::<_, argon2::password_hash::Error>(
            PasswordHash {
                algorithm: Algorithm::default().ident(),
                version: Some(Version::default().into()),
                params: ParamsString::try_from(argon2.params())?,
                salt: Some(salt.as_salt()),
                hash: Some(output),
            }
            .to_string(),
        )
    })();
    hashed.map_err(|e| {
        tracing::error!("argon2 hashing failed: {e}");
        ApiError::internal()
    })
}

/// `argon2::PasswordVerifier::verify_password`, in `memory`.
fn verify_with(password: &[u8], stored: &str, memory: &mut Vec<Block>) -> bool {
    let checked = (|| {
        let hash = PasswordHash::new(stored)?;
        let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
            return Err(argon2::password_hash::Error::PhcStringField);
        };
        let algorithm = Algorithm::try_from(hash.algorithm)?;
        let version = hash
            .version
            .map(Version::try_from)
            .transpose()?
            .unwrap_or_default();
        let argon2 = Argon2::new(algorithm, version, Params::try_from(&hash)?);
        let mut raw = [0u8; 64];
        let salt_bytes = salt.decode_b64(&mut raw)?;
        let blocks = blocks(memory, argon2.params());
        let computed = Output::init_with(expected.len(), |out| {
            Ok(argon2.hash_password_into_with_memory(password, salt_bytes, out, &mut *blocks)?)
        })?;
        // `Output` compares in constant time.
        Ok(computed == expected)
    })();
    checked.unwrap_or(false)
}

/// The first `params.block_count()` blocks of `memory`, grown if needed.
fn blocks<'m>(memory: &'m mut Vec<Block>, params: &Params) -> &'m mut [Block] {
    let count = params.block_count();
    if memory.len() < count {
        // Reserved above glibc's largest mmap threshold (32 MiB), so the block is
        // always its own mapping and freeing it returns it to the system; only the
        // pages used are resident. At 19 MiB, glibc moved its threshold past it after
        // the first free and kept every later block in its heaps.
        *memory = Vec::with_capacity(count.max(MMAPPED_BLOCKS));
        memory.resize(count, Block::default());
    }
    &mut memory[..count]
}

/// 33 MiB of blocks: see [`blocks`].
const MMAPPED_BLOCKS: usize = 33 * 1024;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use argon2::PasswordVerifier;

    #[tokio::test]
    async fn hash_then_verify() {
        let stored = hash("correct horse battery staple".into()).await.unwrap();
        assert!(
            stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{stored}"
        );
        assert!(
            verify("correct horse battery staple".into(), Some(stored.clone()))
                .await
                .unwrap()
        );
        assert!(!verify("wrong".into(), Some(stored.clone())).await.unwrap());
        assert!(!verify("".into(), Some(stored.clone())).await.unwrap());
        // The PHC string is the one argon2's own verifier reads.
        let parsed = PasswordHash::new(&stored).unwrap();
        Argon2::default()
            .verify_password(b"correct horse battery staple", &parsed)
            .unwrap();
        // And hashes made by argon2's own hasher verify here.
        let theirs = crate::realm::users::hash_password("pw-of-theirs").unwrap();
        assert!(verify("pw-of-theirs".into(), Some(theirs)).await.unwrap());
    }

    #[tokio::test]
    async fn no_stored_hash_verifies_against_the_dummy() {
        for password in ["", "anything", "correct horse battery staple"] {
            assert!(!verify(password.into(), None).await.unwrap());
        }
        // The dummy is a real argon2id hash with the default parameters, so checking
        // against it costs what checking a user's password costs.
        let dummy = dummy_hash(&mut Vec::new());
        let parsed = PasswordHash::new(dummy).unwrap();
        assert_eq!(parsed.algorithm, Algorithm::Argon2id.ident());
        let params = Params::try_from(&parsed).unwrap();
        let default = Params::default();
        assert_eq!(
            (params.m_cost(), params.t_cost(), params.p_cost()),
            (default.m_cost(), default.t_cost(), default.p_cost()),
            "{dummy}"
        );
        assert!(!verify_with(b"", dummy, &mut Vec::new()));
    }

    #[tokio::test]
    async fn malformed_stored_hashes_do_not_verify() {
        for stored in ["", "not a hash", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA"] {
            assert!(!verify("x".into(), Some(stored.into())).await.unwrap());
        }
    }
}
