//! Snapshot sections: state added to the realm after snapshot schema 7 is stored beside
//! the realm's record, one section per resource, each with its own version, instead of
//! inside it. A new resource is a new section that older snapshots simply lack (it
//! starts empty), and a change to one resource's shape freezes that resource's old
//! type alone, never the whole `Realm` (`legacy.rs` holds the frozen realms of schemas
//! 1 to 6).
//!
//! Snapshot schema 8 is `(Realm, Vec<Section>)`: the realm's own record exactly as
//! schema 7 (the sectioned fields are `#[serde(skip)]` in `Realm`), then the sections.
//! Each section's bytes are the bincode of its resource's type at its version.
//!
//! | Section | Version | Type |
//! |---------|---------|------|
//! | `bot_services` | 1 | `realm::bot_services::BotServiceState` |
//! | `missed_mail` | 1 | `realm::missed_mail::MissedMailState` |

use serde::{Deserialize, Serialize};

use super::frame::{config, decode_payload, CodecError};
use crate::realm::Realm;

/// One resource's state in a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub name: String,
    pub version: u16,
    pub bytes: Vec<u8>,
}

/// The name and version of the `bot_services` section.
const BOT_SERVICES: (&str, u16) = ("bot_services", 1);
/// The name and version of the `missed_mail` section.
const MISSED_MAIL: (&str, u16) = ("missed_mail", 1);

fn section<T: Serialize>((name, version): (&str, u16), value: &T) -> Result<Section, CodecError> {
    Ok(Section {
        name: name.to_owned(),
        version,
        bytes: bincode::serde::encode_to_vec(value, config())?,
    })
}

/// The sections of a realm, in a fixed order. A resource in its empty state is left
/// out (an older snapshot reads the same).
pub fn sections_of(realm: &Realm) -> Result<Vec<Section>, CodecError> {
    let mut out = Vec::new();
    if realm.bot_services != Default::default() {
        out.push(section(BOT_SERVICES, &realm.bot_services)?);
    }
    if realm.missed_mail != Default::default() {
        out.push(section(MISSED_MAIL, &realm.missed_mail)?);
    }
    Ok(out)
}

/// Puts each section's state into `realm`. A section this build does not know, or a
/// version newer than it writes, is an error: the snapshot was written by a newer
/// hearth, and dropping its state would lose it.
pub fn apply_sections(realm: &mut Realm, sections: Vec<Section>) -> Result<(), CodecError> {
    for s in sections {
        match (s.name.as_str(), s.version) {
            (name, 1) if name == BOT_SERVICES.0 => {
                realm.bot_services = decode_payload(&s.bytes)?;
            }
            (name, 1) if name == MISSED_MAIL.0 => {
                realm.missed_mail = decode_payload(&s.bytes)?;
            }
            _ => return Err(CodecError::Section(s.name, s.version)),
        }
    }
    Ok(())
}
