//! One file's simulated page cache: the writes and truncations made to it since its
//! last `fsync`/`fdatasync`, in order, over the bytes of its backing file (the disk).
//!
//! A read sees them over the backing bytes; a sync applies them to the backing file,
//! in order, and forgets them; a power cut forgets them, or (torn) applies a prefix of
//! them first, the last of that prefix only in part.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A change not yet on the disk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Write { at: u64, data: Vec<u8> },
    Truncate(u64),
}

/// A file's unsynced changes.
#[derive(Debug, Default)]
pub struct Pending {
    ops: Vec<Op>,
}

/// Contiguous writes are merged into one change up to this size (a torn prefix then
/// still ends inside a page or between two writes of a few pages).
const MERGE_LIMIT: usize = 64 * 1024;

/// What a disk writes whole.
pub const SECTOR: u64 = 512;

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// How many changes are held.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// The bytes written and not synced.
    pub fn bytes(&self) -> u64 {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Write { data, .. } => data.len() as u64,
                Op::Truncate(_) => 0,
            })
            .sum()
    }

    pub fn write(&mut self, at: u64, bytes: &[u8]) {
        if let Some(Op::Write { at: last, data }) = self.ops.last_mut() {
            if *last + data.len() as u64 == at && data.len() + bytes.len() <= MERGE_LIMIT {
                data.extend_from_slice(bytes);
                return;
            }
        }
        self.ops.push(Op::Write {
            at,
            data: bytes.to_vec(),
        });
    }

    pub fn truncate(&mut self, size: u64) {
        self.ops.push(Op::Truncate(size));
    }

    /// The file's size as its readers see it, over a backing file of `disk` bytes.
    pub fn size(&self, disk: u64) -> u64 {
        self.ops.iter().fold(disk, |size, op| match op {
            Op::Write { at, data } => size.max(at + data.len() as u64),
            Op::Truncate(to) => *to,
        })
    }

    /// Lays the held changes over `buf`, which holds the backing file's bytes from `at`
    /// (zeros past its end); returns how many bytes of `buf` are within the file.
    pub fn overlay(&self, disk: u64, at: u64, buf: &mut [u8]) -> usize {
        let end = at + buf.len() as u64;
        for op in &self.ops {
            match op {
                Op::Write { at: w, data } => {
                    let from = (*w).max(at);
                    let to = (w + data.len() as u64).min(end);
                    if from < to {
                        let src = &data[(from - w) as usize..(to - w) as usize];
                        buf[(from - at) as usize..(to - at) as usize].copy_from_slice(src);
                    }
                }
                // Past a truncation the file reads zeros until written again.
                Op::Truncate(to) => {
                    if *to < end {
                        let from = (*to).max(at);
                        buf[(from - at) as usize..].fill(0);
                    }
                }
            }
        }
        let size = self.size(disk);
        (size.saturating_sub(at)).min(buf.len() as u64) as usize
    }

    /// Writes every held change to the backing file, in order, and forgets them.
    pub fn apply(&mut self, file: &File) -> io::Result<()> {
        let n = self.ops.len();
        self.apply_prefix(file, n, 0)
    }

    /// A torn write-back: the first `whole` changes reach the disk, then the first
    /// `part` bytes of the next (a truncation is all or nothing: not applied), and the
    /// rest is lost. Forgets them all.
    pub fn apply_prefix(&mut self, file: &File, whole: usize, part: usize) -> io::Result<()> {
        let ops = std::mem::take(&mut self.ops);
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Write { at, data } if i < whole => file.write_all_at(data, *at)?,
                Op::Write { at, data } if i == whole => {
                    file.write_all_at(&data[..part.min(data.len())], *at)?;
                }
                Op::Truncate(to) if i < whole => file.set_len(*to)?,
                _ => break,
            }
        }
        Ok(())
    }

    /// Where a torn write-back may stop inside change `i`: after none of its bytes, or
    /// at a sector boundary (512 bytes, the unit a disk writes whole) within it.
    pub fn tear_points(&self, i: usize) -> Vec<usize> {
        let mut points = vec![0];
        if let Some(Op::Write { at, data }) = self.ops.get(i) {
            let end = at + data.len() as u64;
            let mut boundary = (at / SECTOR + 1) * SECTOR;
            while boundary < end {
                points.push((boundary - at) as usize);
                boundary += SECTOR;
            }
        }
        points
    }

    /// Forgets every held change (the power went out).
    pub fn drop_all(&mut self) {
        self.ops.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: &Pending, disk: &[u8], at: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        let start = (at as usize).min(disk.len());
        let stop = (at as usize + len).min(disk.len());
        buf[..stop - start].copy_from_slice(&disk[start..stop]);
        let n = p.overlay(disk.len() as u64, at, &mut buf);
        buf.truncate(n);
        buf
    }

    #[test]
    fn reads_see_unsynced_writes_over_the_disk() {
        let disk = b"hello world".to_vec();
        let mut p = Pending::default();
        p.write(6, b"there!");
        assert_eq!(p.size(11), 12);
        assert_eq!(read(&p, &disk, 0, 100), b"hello there!");
        assert_eq!(read(&p, &disk, 8, 2), b"er");
        p.truncate(5);
        assert_eq!(read(&p, &disk, 0, 100), b"hello");
        // Extended again past a truncation: zeros, not the old bytes.
        p.write(8, b"X");
        assert_eq!(read(&p, &disk, 0, 100), b"hello\0\0\0X");
        assert_eq!(p.bytes(), 7);
    }

    #[test]
    fn contiguous_writes_merge_and_a_tear_keeps_a_prefix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .expect("open");
        let mut p = Pending::default();
        p.write(0, b"abc");
        p.write(3, b"def");
        assert_eq!(p.len(), 1, "appends merge");
        p.write(100, b"far");
        assert_eq!(p.len(), 2);
        p.apply_prefix(&file, 0, 4).expect("tear");
        assert!(p.is_empty());
        assert_eq!(std::fs::read(&path).expect("read"), b"abcd");
        let mut p = Pending::default();
        p.write(1000, &[7u8; 1100]);
        assert_eq!(p.tear_points(0), [0, 24, 536, 1048]);
        let mut p = Pending::default();
        p.write(4, b"EFGH");
        p.truncate(6);
        p.apply(&file).expect("sync");
        assert_eq!(std::fs::read(&path).expect("read"), b"abcdEF");
    }
}
