//! The one place that knows how records are encoded on disk.
//!
//! Frame: `[format version: u8][crc32 of payload: u32 LE][bincode payload]`. The version
//! byte lets the encoding change without touching anything else; the checksum tells a
//! torn or corrupt record from a good one.

use serde::{de::DeserializeOwned, Serialize};

/// The current format version of every record hearth writes.
pub const FORMAT_VERSION: u8 = 1;
const HEADER: usize = 5;

/// Why a record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("record too short ({0} bytes)")]
    Truncated(usize),
    #[error("unknown format version {0}")]
    Version(u8),
    #[error("checksum mismatch")]
    Checksum,
    #[error("bincode encode: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    #[error("bincode decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    #[error("{0} trailing bytes after the record")]
    Trailing(usize),
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a value into a framed record.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    let payload = bincode::serde::encode_to_vec(value, config())?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes a framed record, checking version and checksum.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    if bytes.len() < HEADER {
        return Err(CodecError::Truncated(bytes.len()));
    }
    if bytes[0] != FORMAT_VERSION {
        return Err(CodecError::Version(bytes[0]));
    }
    let crc = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    let payload = &bytes[HEADER..];
    if crc32fast::hash(payload) != crc {
        return Err(CodecError::Checksum);
    }
    let (value, used) = bincode::serde::decode_from_slice(payload, config())?;
    if used != payload.len() {
        return Err(CodecError::Trailing(payload.len() - used));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::{dev::dev_realm_changes, Change, Cx, Realm};

    #[test]
    fn changes_round_trip() {
        let mut cx = Cx::seeded(1_700_000_000_000, 1);
        let changes = dev_realm_changes(&mut cx).expect("seed");
        let bytes = encode(&changes).expect("encode");
        let back: Vec<Change> = decode(&bytes).expect("decode");
        assert_eq!(back, changes);
    }

    #[test]
    fn realm_round_trips_and_rebuilds_indexes() {
        let mut cx = Cx::seeded(1_700_000_000_000, 1);
        let changes = dev_realm_changes(&mut cx).expect("seed");
        let mut realm = Realm::from_first_change(&changes[0]).expect("realm");
        changes.iter().for_each(|c| realm.apply(c));
        let mut back: Realm = decode(&encode(&realm).expect("encode")).expect("decode");
        back.rebuild_indexes();
        assert_eq!(back, realm);
        assert!(back.user_by_delivery_email("hamlet@zulip.com").is_some());
    }

    #[test]
    fn corruption_is_detected() {
        let mut bytes = encode(&vec![1u64, 2, 3]).expect("encode");
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        assert!(matches!(
            decode::<Vec<u64>>(&bytes),
            Err(CodecError::Checksum)
        ));
        assert!(matches!(
            decode::<Vec<u64>>(&bytes[..3]),
            Err(CodecError::Truncated(3))
        ));
        let mut v2 = encode(&1u8).expect("encode");
        v2[0] = 9;
        assert!(matches!(decode::<u8>(&v2), Err(CodecError::Version(9))));
    }
}
