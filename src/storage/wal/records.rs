//! The WAL's records as keys and stored bytes: a key is the big-endian u64 sequence
//! number of one decision, its value the framed `Vec<Change>` (`storage::codec`).

use crate::storage::StorageError;

/// WAL records as stored, with their sequence numbers (shipped between nodes).
pub type Records = Vec<(u64, Vec<u8>)>;

/// The WAL records of a realm after record `after` up to record `upto`, as stored
/// (framed, versioned bytes), for shipping to another node. Refused when record
/// `after + 1` is no longer in the WAL (a snapshot covered it and its hold was not set)
/// or when `after` is beyond `upto`.
pub fn tail(wal: &sled::Tree, after: u64, upto: u64) -> Result<Records, StorageError> {
    if after > upto {
        return Err(StorageError::Invalid(format!(
            "position {after} is beyond the realm's last durable record {upto}"
        )));
    }
    let mut out = Vec::new();
    let mut expected = after + 1;
    for entry in wal.range((after + 1).to_be_bytes()..=upto.to_be_bytes()) {
        let (k, v) = entry?;
        let seq = key_seq(&k);
        if seq != expected {
            return Err(StorageError::Invalid(format!(
                "record {expected} is no longer in the WAL (a snapshot covered it): \
                 export the realm again"
            )));
        }
        out.push((seq, v.to_vec()));
        expected += 1;
    }
    if expected <= upto {
        return Err(StorageError::Invalid(format!(
            "record {expected} is no longer in the WAL (a snapshot covered it): export \
             the realm again"
        )));
    }
    Ok(out)
}

/// The sequence number of a WAL or snapshot key.
pub fn key_seq(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[8 - n..].copy_from_slice(&k[k.len() - n..]);
    u64::from_be_bytes(b)
}
