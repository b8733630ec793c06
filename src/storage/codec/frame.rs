//! The frame every record is stored in: `[schema version: u8][crc32 of payload: u32
//! LE][bincode payload]` (see the room's doc), and the bincode configuration.

use serde::{de::DeserializeOwned, Serialize};

pub(super) const HEADER: usize = 5;

/// Why a record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("record too short ({0} bytes)")]
    Truncated(usize),
    #[error("unknown schema version {0}")]
    Version(u8),
    #[error("checksum mismatch")]
    Checksum,
    #[error("bincode encode: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    #[error("bincode decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    #[error("{0} trailing bytes after the record")]
    Trailing(usize),
    #[error("unknown snapshot section '{0}' version {1} (written by a newer hearth?)")]
    Section(String, u16),
    #[error("snapshot section '{0}' given twice")]
    DuplicateSection(String),
    #[error("snapshot without its '{0}' section")]
    MissingSection(&'static str),
}

pub(super) fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a value into a frame of schema `version`.
pub fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Result<Vec<u8>, CodecError> {
    let payload = bincode::serde::encode_to_vec(value, config())?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.push(version);
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Checks a frame's length and checksum; returns its schema version and payload.
pub fn open_frame(bytes: &[u8]) -> Result<(u8, &[u8]), CodecError> {
    if bytes.len() < HEADER {
        return Err(CodecError::Truncated(bytes.len()));
    }
    let crc = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
    let payload = &bytes[HEADER..];
    if crc32fast::hash(payload) != crc {
        return Err(CodecError::Checksum);
    }
    Ok((bytes[0], payload))
}

/// Decodes a whole payload as `T` (trailing bytes are an error).
pub fn decode_payload<T: DeserializeOwned>(payload: &[u8]) -> Result<T, CodecError> {
    let (value, used) = bincode::serde::decode_from_slice(payload, config())?;
    if used != payload.len() {
        return Err(CodecError::Trailing(payload.len() - used));
    }
    Ok(value)
}

/// Encodes any value in a schema-1 frame (tests and tools that store ad-hoc values).
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    encode_versioned(1, value)
}

/// Decodes a schema-1 frame of any value (see `encode`).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    match open_frame(bytes)? {
        (1, payload) => decode_payload(payload),
        (v, _) => Err(CodecError::Version(v)),
    }
}
