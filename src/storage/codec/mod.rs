//! The codec room: the one place that knows how records are encoded on disk.
//!
//! It owns the frame (`frame`), the record types' schema versions and their decoding
//! (this file), the snapshot's sections (`sections`) and the frozen types of every
//! older schema (`legacy`). It promises that what it encodes today decodes in every
//! later build: a record is never rewritten to be read again. It stores nothing and
//! calls no other storage room: every room that writes a record calls it.
//!
//! Frame: `[schema version: u8][crc32 of payload: u32 LE][bincode payload]`. The
//! checksum tells a torn or corrupt record from a good one. bincode is positional, so
//! the payload's layout is exactly its Rust type: adding a field to `User` or a variant
//! to `Change` changes it. Each record type therefore carries its own schema version:
//!
//! - `Realm` (snapshots): `REALM_SCHEMA`; `Vec<Change>` (WAL records): `CHANGES_SCHEMA`;
//!   `PresenceEntry` (a user's coalesced presence): `PRESENCE_SCHEMA`.
//! - A snapshot (schema 9) is one section per resource, each with its own version
//!   (`sections`): a resource's new shape is a new version of its section alone, and a
//!   new resource is a new section. Snapshots of schemas 7 and 8 are read through the
//!   sections' first versions; those of schemas 1 to 6 through the whole realms frozen
//!   in `legacy.rs`, migrated forward.
//! - `decode_changes` dispatches on the WAL record's version: the current one decodes
//!   into today's `Change`; an older one into that version's types, frozen in
//!   `legacy.rs`, and migrates forward. Changing a stored type of a WAL record means:
//!   copy its current definition into `legacy.rs` as the old version, bump the schema
//!   constant, add the migration step and its arm here (a variant added at the end of
//!   an enum needs none: bincode names variants by position).
//! - The golden fixtures in `tests/fixtures/` (records of every schema) must keep
//!   decoding.
//!
//! Schema 1 is the format hearth wrote from its first release (the byte was called the
//! format version then), so every existing data folder reads as schema 1.

mod frame;
pub mod legacy;
pub mod sections;

pub use frame::{decode, decode_payload, encode, encode_versioned, open_frame, CodecError};

use crate::realm::presence::PresenceEntry;
use crate::realm::{Change, Realm};

/// Schema version of the snapshot record hearth writes: schema 9 is the realm's
/// sections, one per resource (`storage::codec::sections`).
pub const REALM_SCHEMA: u8 = 9;
/// Schema version of the WAL record (`Vec<Change>`) hearth writes.
pub const CHANGES_SCHEMA: u8 = 3;
/// Schema version of the presence record (`PresenceEntry`) hearth writes.
pub const PRESENCE_SCHEMA: u8 = 1;
/// Encodes a snapshot record.
pub fn encode_realm(realm: &Realm) -> Result<Vec<u8>, CodecError> {
    encode_versioned(REALM_SCHEMA, &sections::sections_of(realm)?)
}

/// Decodes a snapshot record of any known schema version (indexes not rebuilt).
pub fn decode_realm(bytes: &[u8]) -> Result<Realm, CodecError> {
    let (version, payload) = open_frame(bytes)?;
    match version {
        1 => decode_payload::<legacy::v1::Realm>(payload).map(legacy::v1::realm_to_current),
        2 => decode_payload::<legacy::v2::Realm>(payload).map(legacy::v2::realm_to_current),
        3 => decode_payload::<legacy::v3::Realm>(payload).map(legacy::v3::realm_to_current),
        4 => decode_payload::<legacy::v4::Realm>(payload).map(legacy::v4::realm_to_current),
        5 => decode_payload::<legacy::v5::Realm>(payload).map(legacy::v5::realm_to_current),
        6 => decode_payload::<legacy::v6::Realm>(payload).map(legacy::v6::realm_to_current),
        // Schema 7's record is the first version of the first sections in a row;
        // schema 8 is that record followed by the sections added after it.
        7 => {
            let (realm, used) = sections::realm_of_record_v7(payload)?;
            if used != payload.len() {
                return Err(CodecError::Trailing(payload.len() - used));
            }
            Ok(realm)
        }
        8 => {
            let (mut realm, used) = sections::realm_of_record_v7(payload)?;
            let sections = decode_payload::<Vec<sections::Section>>(&payload[used..])?;
            sections::apply_sections(&mut realm, sections)?;
            Ok(realm)
        }
        REALM_SCHEMA => sections::realm_of_sections(decode_payload(payload)?),
        v => Err(CodecError::Version(v)),
    }
}

/// Encodes a WAL record: the changes of one decision.
pub fn encode_changes(changes: &[Change]) -> Result<Vec<u8>, CodecError> {
    encode_versioned(CHANGES_SCHEMA, &changes)
}

/// Decodes a WAL record of any known schema version.
pub fn decode_changes(bytes: &[u8]) -> Result<Vec<Change>, CodecError> {
    let (version, payload) = open_frame(bytes)?;
    match version {
        1 => decode_payload::<Vec<legacy::v1::Change>>(payload).map(legacy::v1::changes_to_current),
        2 => decode_payload::<Vec<legacy::v2::Change>>(payload).map(legacy::v2::changes_to_current),
        CHANGES_SCHEMA => decode_payload::<Vec<Change>>(payload),
        v => Err(CodecError::Version(v)),
    }
}

/// Encodes a presence record: one user's coalesced presence.
pub fn encode_presence(entry: &PresenceEntry) -> Result<Vec<u8>, CodecError> {
    encode_versioned(PRESENCE_SCHEMA, entry)
}

/// Decodes a presence record of any known schema version.
pub fn decode_presence(bytes: &[u8]) -> Result<PresenceEntry, CodecError> {
    match open_frame(bytes)? {
        (1, payload) => decode_payload(payload),
        (v, _) => Err(CodecError::Version(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::frame::HEADER;
    use super::*;
    use crate::realm::{dev::dev_realm_changes, Change, Cx, Realm};

    #[test]
    fn changes_round_trip() {
        let mut cx = Cx::seeded(1_700_000_000_000, 1);
        let changes = dev_realm_changes(&mut cx).expect("seed");
        let bytes = encode_changes(&changes).expect("encode");
        assert_eq!(bytes[0], CHANGES_SCHEMA);
        assert_eq!(decode_changes(&bytes).expect("decode"), changes);
    }

    #[test]
    fn realm_round_trips_and_rebuilds_indexes() {
        let mut cx = Cx::seeded(1_700_000_000_000, 1);
        let changes = dev_realm_changes(&mut cx).expect("seed");
        let mut realm = Realm::from_first_change(&changes[0]).expect("realm");
        changes.iter().for_each(|c| realm.apply(c));
        let bytes = encode_realm(&realm).expect("encode");
        assert_eq!(bytes[0], REALM_SCHEMA);
        let mut back = decode_realm(&bytes).expect("decode");
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
        let unknown = encode_versioned(CHANGES_SCHEMA + 1, &Vec::<Change>::new()).expect("encode");
        assert!(matches!(
            decode_changes(&unknown),
            Err(CodecError::Version(v)) if v == CHANGES_SCHEMA + 1
        ));
    }

    /// The migration pattern of `legacy.rs`, on a stand-in type: a record written with
    /// schema 1 of a type that later gained a field decodes through its frozen copy.
    #[test]
    fn an_old_schema_decodes_through_its_frozen_type() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct UserV1 {
            id: u64,
            name: String,
        }
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct UserV2 {
            id: u64,
            name: String,
            pronouns: String,
        }
        fn decode_user(bytes: &[u8]) -> Result<UserV2, CodecError> {
            match open_frame(bytes)? {
                (1, p) => decode_payload::<UserV1>(p).map(|u| UserV2 {
                    id: u.id,
                    name: u.name,
                    pronouns: String::new(),
                }),
                (2, p) => decode_payload(p),
                (v, _) => Err(CodecError::Version(v)),
            }
        }
        let old = encode_versioned(
            1,
            &UserV1 {
                id: 7,
                name: "Ann".into(),
            },
        )
        .expect("encode");
        // Decoding the old bytes as the new type directly fails: bincode is positional.
        assert!(decode_payload::<UserV2>(&old[HEADER..]).is_err());
        let want = UserV2 {
            id: 7,
            name: "Ann".into(),
            pronouns: String::new(),
        };
        assert_eq!(decode_user(&old).expect("migrated"), want);
        let new = encode_versioned(2, &want).expect("encode");
        assert_eq!(decode_user(&new).expect("current"), want);
    }
}
