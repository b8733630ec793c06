//! gzip (RFC 1952) for answers: a whole body compressed at once, and bodies joined
//! from pieces each compressed once and shared by every answer that sends them.
//!
//! A `Piece` is raw deflate data (RFC 1951) from a compressor of its own, ended by a
//! sync flush: its blocks are not final, it ends on a byte boundary, and it refers to
//! nothing before its start. Such pieces, in any order, make one deflate stream once
//! a final empty block closes it; `Joined` puts the gzip header before them and the
//! CRC-32 and length of the whole text (combined from the pieces', not recomputed)
//! after. A thousand answers that send the same listing send the same compressed
//! bytes, compressed once.

use std::io::Write;

use bytes::Bytes;
use crc32fast::Hasher as Crc;
use flate2::write::{DeflateEncoder, GzEncoder};
use flate2::Compression;

/// The gzip header: magic, deflate, no flags, no time, no extra flags, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// A final deflate block with nothing in it (fixed Huffman codes, end of block).
const FINAL_EMPTY_BLOCK: [u8; 2] = [0x03, 0x00];

/// Level of bodies compressed per answer (nginx's `gzip_comp_level` default, 1: the
/// fastest; JSON still shrinks to a fraction).
pub fn per_answer_level() -> Compression {
    Compression::fast()
}

/// Level of shared pieces, compressed once for many answers.
pub fn shared_level() -> Compression {
    Compression::new(6)
}

/// `bytes` as one gzip member.
pub fn compress(bytes: &[u8], level: Compression) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 4 + 64), level);
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// A piece of a body, compressed on its own (see the module doc).
#[derive(Debug, Clone)]
pub struct Piece {
    /// Raw deflate blocks, none final, ending on a byte boundary.
    pub deflated: Bytes,
    /// CRC-32 of the text.
    crc: Crc,
    /// Length of the text (modulo 2^32, as gzip's trailer has it).
    len: u32,
}

impl Piece {
    /// Compresses `text` as a piece.
    pub fn new(text: &[u8], level: Compression) -> Piece {
        let mut crc = Crc::new();
        crc.update(text);
        let mut encoder = DeflateEncoder::new(Vec::with_capacity(text.len() / 4 + 64), level);
        // Writing to a Vec cannot fail; `flush` is deflate's sync flush.
        let _ = encoder.write_all(text);
        let _ = encoder.flush();
        // Taken before the encoder is dropped (which would end the stream).
        let deflated = std::mem::take(encoder.get_mut());
        Piece {
            deflated: Bytes::from(deflated),
            crc,
            len: text.len() as u32,
        }
    }

    /// `text` in stored (uncompressed) deflate blocks: no compressor to set up, for
    /// the few bytes an answer adds around shared pieces.
    pub fn stored(text: &[u8]) -> Piece {
        let mut crc = Crc::new();
        crc.update(text);
        let mut deflated = Vec::with_capacity(text.len() + 5 * (text.len() / 65_535 + 1));
        for block in text.chunks(usize::from(u16::MAX)) {
            let len = block.len() as u16;
            // Not final, stored; the rest of the byte is padding.
            deflated.push(0);
            deflated.extend_from_slice(&len.to_le_bytes());
            deflated.extend_from_slice(&(!len).to_le_bytes());
            deflated.extend_from_slice(block);
        }
        Piece {
            deflated: Bytes::from(deflated),
            crc,
            len: text.len() as u32,
        }
    }

    /// Length of the text (modulo 2^32).
    pub fn text_len(&self) -> u32 {
        self.len
    }
}

/// A gzip body joined from pieces: its parts, in order, to be sent as they are.
#[derive(Debug, Clone, Default)]
pub struct Joined {
    parts: Vec<Bytes>,
    crc: Crc,
    len: u32,
}

impl Joined {
    pub fn new() -> Joined {
        Joined {
            parts: vec![Bytes::from_static(&HEADER)],
            crc: Crc::new(),
            len: 0,
        }
    }

    /// Appends a piece (shared: its bytes are not copied).
    pub fn push(&mut self, piece: &Piece) {
        if piece.deflated.is_empty() {
            return;
        }
        self.parts.push(piece.deflated.clone());
        self.crc.combine(&piece.crc);
        self.len = self.len.wrapping_add(piece.len);
    }

    /// Appends a short text, as it is (stored blocks).
    pub fn push_text(&mut self, text: &[u8]) {
        if !text.is_empty() {
            self.push(&Piece::stored(text));
        }
    }

    /// The parts of the whole member: header, pieces, final block and trailer.
    pub fn finish(mut self) -> Vec<Bytes> {
        let mut tail = Vec::with_capacity(10);
        tail.extend_from_slice(&FINAL_EMPTY_BLOCK);
        tail.extend_from_slice(&self.crc.clone().finalize().to_le_bytes());
        tail.extend_from_slice(&self.len.to_le_bytes());
        self.parts.push(Bytes::from(tail));
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    }

    #[test]
    fn a_whole_body_round_trips() {
        let text = br#"{"result":"success","msg":"","x":[1,2,3]}"#.repeat(100);
        let gz = compress(&text, per_answer_level());
        assert!(gz.len() < text.len() / 5);
        assert_eq!(gunzip(&gz), text);
    }

    #[test]
    fn pieces_joined_are_one_gzip_member_of_the_whole_text() {
        let a = br#"{"presences":{"#.to_vec();
        let b = br#""1":{"active_timestamp":1700000000,"idle_timestamp":1700000000}"#.repeat(300);
        let c = br#","2":{"active_timestamp":1700000001}"#.repeat(7);
        let shared_b = Piece::new(&b, shared_level());
        let shared_c = Piece::new(&c, shared_level());
        for _ in 0..2 {
            let mut joined = Joined::new();
            joined.push_text(&a);
            joined.push(&shared_b);
            joined.push(&Piece::new(b"", shared_level()));
            joined.push(&shared_c);
            joined.push_text(b"}}");
            let body: Vec<u8> = joined.finish().concat();
            let want = [a.as_slice(), &b, &c, b"}}"].concat();
            assert_eq!(gunzip(&body), want);
            assert!(body.len() < want.len() / 10);
        }
    }

    #[test]
    fn stored_pieces_of_any_length_join() {
        let long = b"0123456789".repeat(20_000);
        let mut joined = Joined::new();
        joined.push(&Piece::stored(&long));
        joined.push(&Piece::new(b"abc", per_answer_level()));
        joined.push_text(b"z");
        let body: Vec<u8> = joined.finish().concat();
        assert_eq!(gunzip(&body), [long.as_slice(), b"abc", b"z"].concat());
    }

    #[test]
    fn an_empty_join_is_the_empty_text() {
        let body: Vec<u8> = Joined::new().finish().concat();
        assert_eq!(gunzip(&body), b"");
    }
}
