//! The filesystem: a FUSE pass-through to a backing folder (the disk) that keeps each
//! file's writes since its last `fsync`/`fdatasync` in memory (`Pending`, the
//! simulated page cache) until that sync, and loses them at a power cut.
//!
//! # The model
//!
//! - Data (`write`, and a size change by `truncate`/`ftruncate`/`O_TRUNC`) is held per
//!   file until an `fsync` or `fdatasync` of that file (any descriptor of it), which
//!   writes it to the backing file in order; reads see it over the backing bytes.
//!   Closing a file syncs nothing.
//! - Metadata (create, mkdir, rename, unlink, rmdir, chmod, chown) reaches the backing
//!   folder at once and is never lost: the model is a filesystem whose namespace
//!   operations are synchronous. A real one (ext4, XFS) may also lose a rename or a
//!   create made since the last `fsync` of its folder; that is not simulated here, so a
//!   missing directory `fsync` goes unnoticed. A directory `fsync` succeeds and does
//!   nothing.
//! - A power cut drops every held change; torn, one file (chosen at random among those
//!   holding changes) first gets a prefix of its changes, the last of them cut at a
//!   sector boundary (512 bytes: a disk writes a sector whole) or not written at all.
//!   Nothing is written back on its own: a file never synced (sled's `conf`) stays at
//!   risk until the next cut, where a real kernel writes it back within seconds.
//! - The cut comes from outside (after the server is killed), or from inside: armed,
//!   the filesystem cuts the power itself at its n-th write or sync, failing that one
//!   and everything after it with EIO, so that cuts land between a write and its sync.
//! - The backing files are written but not fsynced by a sync: the disk is the backing
//!   folder as the host sees it (the host does not lose power).
//! - No `direct_io`: the kernel's own page cache serves reads and `mmap` (the search
//!   index maps its files); writes go through to this filesystem at once (no
//!   write-back cache), and a new mount after a cut starts with a cold cache.
//!
//! Symbolic links, hard links, extended attributes and `fallocate` are not supported
//! (hearth uses none of them).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
    WriteFlags,
};
use rand::rngs::StdRng;
use rand::Rng;

use super::pending::Pending;

/// How long the kernel may keep an answer: every change goes through this mount, so
/// its caches stay right.
const TTL: Duration = Duration::from_secs(1);

/// A file or folder the kernel knows by number.
#[derive(Debug)]
struct Node {
    /// Relative to the backing folder; `None` once unlinked (still open).
    path: Option<PathBuf>,
    pending: Pending,
    open: u32,
}

/// An open file: its backing file, read and written at offsets.
#[derive(Debug)]
struct Handle {
    ino: u64,
    file: File,
}

/// What a cut dropped.
#[derive(Debug, Default, Clone)]
pub struct Cut {
    /// Files that held unsynced changes.
    pub files: usize,
    /// Unsynced bytes written and dropped (or, for the torn file, partly kept).
    pub bytes: u64,
    /// The torn file: its path, how many of its changes reached the disk whole, of
    /// how many, and how many bytes of the next one.
    pub torn: Option<(PathBuf, usize, usize, usize)>,
}

/// Counters since the mount.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub writes: u64,
    pub syncs: u64,
}

/// The filesystem's state, shared between the kernel's requests and the cut.
#[derive(Debug)]
pub struct State {
    backing: PathBuf,
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next_ino: u64,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    /// After a cut every request fails with EIO and the disk is left alone.
    dead: bool,
    pub counts: Counts,
    /// Armed: the power goes out by itself at the n-th write or sync from now (that
    /// one fails), torn with the generator if one is given.
    trip: Option<(u64, Option<StdRng>)>,
    /// The cut made by the trip, once it went off.
    pub tripped: Option<Cut>,
}

impl State {
    pub fn new(backing: &Path) -> State {
        let mut nodes = HashMap::new();
        nodes.insert(
            1,
            Node {
                path: Some(PathBuf::new()),
                pending: Pending::default(),
                open: 0,
            },
        );
        State {
            backing: backing.to_path_buf(),
            nodes,
            by_path: HashMap::from([(PathBuf::new(), 1)]),
            next_ino: 2,
            handles: HashMap::new(),
            next_fh: 1,
            dead: false,
            counts: Counts::default(),
            trip: None,
            tripped: None,
        }
    }

    /// The power goes out: every unsynced change is dropped (torn: one file keeps a
    /// prefix of its own), and the filesystem answers nothing more.
    pub fn cut(&mut self, tear: Option<&mut StdRng>) -> Cut {
        self.dead = true;
        let mut dirty: Vec<u64> = self
            .nodes
            .iter()
            .filter(|(_, n)| !n.pending.is_empty())
            .map(|(i, _)| *i)
            .collect();
        dirty.sort_unstable();
        let mut cut = Cut {
            files: dirty.len(),
            bytes: dirty
                .iter()
                .filter_map(|i| self.nodes.get(i))
                .map(|n| n.pending.bytes())
                .sum(),
            torn: None,
        };
        if let Some(rng) = tear {
            let linked: Vec<u64> = dirty
                .iter()
                .copied()
                .filter(|i| self.nodes.get(i).is_some_and(|n| n.path.is_some()))
                .collect();
            if !linked.is_empty() {
                let ino = linked[rng.gen_range(0..linked.len())];
                if let Some(node) = self.nodes.get_mut(&ino) {
                    let rel = node.path.clone().unwrap_or_default();
                    let n = node.pending.len();
                    let whole = rng.gen_range(0..n);
                    let points = node.pending.tear_points(whole);
                    let part = points[rng.gen_range(0..points.len())];
                    let applied = OpenOptions::new()
                        .write(true)
                        .open(self.backing.join(&rel))
                        .and_then(|f| node.pending.apply_prefix(&f, whole, part));
                    if applied.is_ok() {
                        cut.torn = Some((rel, whole, n, part));
                    }
                }
            }
        }
        for node in self.nodes.values_mut() {
            node.pending.drop_all();
        }
        cut
    }

    /// Arms the trip: the power goes out at the `after`-th write or sync from now.
    pub fn arm(&mut self, after: u64, tear: Option<StdRng>) {
        self.trip = Some((after.max(1), tear));
    }

    /// One more write or sync: `true` when the power went out at it.
    fn tick(&mut self) -> bool {
        let fire = match &mut self.trip {
            Some((left, _)) => {
                *left -= 1;
                *left == 0
            }
            None => false,
        };
        if fire {
            let mut tear = self.trip.take().and_then(|(_, t)| t);
            let cut = self.cut(tear.as_mut());
            self.tripped = Some(cut);
        }
        fire
    }

    /// Writes every held change to the disk (a clean unmount: the page cache is
    /// written back).
    pub fn write_back(&mut self) -> io::Result<()> {
        let backing = self.backing.clone();
        for node in self.nodes.values_mut() {
            if node.pending.is_empty() {
                continue;
            }
            if let Some(rel) = &node.path {
                let f = OpenOptions::new().write(true).open(backing.join(rel))?;
                node.pending.apply(&f)?;
            }
            node.pending.drop_all();
        }
        self.dead = true;
        Ok(())
    }

    fn full(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            self.backing.clone()
        } else {
            self.backing.join(rel)
        }
    }

    fn ino_for(&mut self, rel: &Path) -> u64 {
        if let Some(i) = self.by_path.get(rel) {
            return *i;
        }
        let i = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(
            i,
            Node {
                path: Some(rel.to_path_buf()),
                pending: Pending::default(),
                open: 0,
            },
        );
        self.by_path.insert(rel.to_path_buf(), i);
        i
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        let node = self.nodes.get(&parent.0).ok_or(Errno::ENOENT)?;
        let dir = node.path.as_ref().ok_or(Errno::ENOENT)?;
        Ok(dir.join(name))
    }

    fn attr_of(&self, ino: u64, md: &Metadata) -> FileAttr {
        let size = match self.nodes.get(&ino) {
            Some(n) if md.is_file() => n.pending.size(md.len()),
            _ => md.len(),
        };
        attr(ino, md, size)
    }

    /// A node's attributes: from its path, else (unlinked) from an open handle.
    fn getattr(&self, ino: u64, fh: Option<u64>) -> Result<FileAttr, Errno> {
        let node = self.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        let md = match &node.path {
            Some(rel) => std::fs::symlink_metadata(self.full(rel))?,
            None => {
                let h = fh
                    .and_then(|f| self.handles.get(&f))
                    .or_else(|| self.handles.values().find(|h| h.ino == ino))
                    .ok_or(Errno::ENOENT)?;
                h.file.metadata()?
            }
        };
        Ok(self.attr_of(ino, &md))
    }

    fn entry(&mut self, rel: &Path) -> Result<FileAttr, Errno> {
        let md = std::fs::symlink_metadata(self.full(rel))?;
        let ino = self.ino_for(rel);
        Ok(self.attr_of(ino, &md))
    }

    /// `O_TRUNC`: a change held like any other, unless the file is already empty.
    fn truncate_to_empty(&mut self, ino: u64, disk: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            if disk > 0 || !n.pending.is_empty() {
                n.pending.truncate(0);
            }
        }
    }

    fn open_handle(&mut self, ino: u64, file: File) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.handles.insert(fh, Handle { ino, file });
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.open += 1;
        }
        fh
    }

    /// A name goes away: its node is forgotten, or kept while it is open.
    fn unlinked(&mut self, rel: &Path) {
        if let Some(ino) = self.by_path.remove(rel) {
            let open = self.nodes.get(&ino).is_some_and(|n| n.open > 0);
            if open {
                if let Some(n) = self.nodes.get_mut(&ino) {
                    n.path = None;
                }
            } else {
                self.nodes.remove(&ino);
            }
        }
    }

    fn renamed(&mut self, from: &Path, to: &Path) {
        self.unlinked(to);
        let moved: Vec<(PathBuf, u64)> = self
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        for (old, ino) in moved {
            self.by_path.remove(&old);
            let suffix = old.strip_prefix(from).unwrap_or(Path::new(""));
            let new = if suffix.as_os_str().is_empty() {
                to.to_path_buf()
            } else {
                to.join(suffix)
            };
            if let Some(n) = self.nodes.get_mut(&ino) {
                n.path = Some(new.clone());
            }
            self.by_path.insert(new, ino);
        }
    }
}

fn attr(ino: u64, md: &Metadata, size: u64) -> FileAttr {
    let kind = if md.is_dir() {
        FileType::Directory
    } else if md.file_type().is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    };
    let at = |secs: i64, nsecs: i64| {
        UNIX_EPOCH + Duration::new(secs.max(0) as u64, nsecs.clamp(0, 999_999_999) as u32)
    };
    let ctime = at(md.ctime(), md.ctime_nsec());
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: at(md.atime(), md.atime_nsec()),
        mtime: at(md.mtime(), md.mtime_nsec()),
        ctime,
        crtime: ctime,
        kind,
        perm: (md.mode() & 0o7777) as u16,
        nlink: md.nlink() as u32,
        uid: md.uid(),
        gid: md.gid(),
        rdev: md.rdev() as u32,
        blksize: 4096,
        flags: 0,
    }
}

/// The filesystem the kernel talks to.
#[derive(Debug)]
pub struct LazyFs {
    pub state: Arc<Mutex<State>>,
}

impl LazyFs {
    /// Runs `f` on the state, or answers EIO after a cut.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> Result<T, Errno>) -> Result<T, Errno> {
        let mut s = hearth::locks::lock(&self.state);
        if s.dead {
            return Err(Errno::EIO);
        }
        f(&mut s)
    }

    /// `with`, for a request answered with nothing or the error.
    fn answer(&self, reply: ReplyEmpty, f: impl FnOnce(&mut State) -> Result<(), Errno>) {
        match self.with(f) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}

fn io_err(e: io::Error) -> Errno {
    Errno::from(e)
}

fn open_rw(path: &Path, create: Option<(u32, bool)>) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if let Some((mode, excl)) = create {
        o.mode(mode);
        if excl {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    o.open(path)
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.with(|s| {
            let rel = s.child(parent, name)?;
            s.entry(&rel)
        }) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.with(|s| s.getattr(ino.0, fh.map(|f| f.0))) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self.with(|s| {
            let path = s
                .nodes
                .get(&ino.0)
                .ok_or(Errno::ENOENT)?
                .path
                .clone()
                .map(|r| s.full(&r));
            if let Some(p) = &path {
                if let Some(m) = mode {
                    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m & 0o7777))?;
                }
                if uid.is_some() || gid.is_some() {
                    std::os::unix::fs::chown(p, uid, gid)?;
                }
            }
            if let Some(size) = size {
                // A size change is data: held until the file is synced.
                if let Some(n) = s.nodes.get_mut(&ino.0) {
                    n.pending.truncate(size);
                }
            }
            s.getattr(ino.0, fh.map(|f| f.0))
        }) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        match self.with(|s| {
            let rel = s.child(parent, name)?;
            let full = s.full(&rel);
            std::fs::create_dir(&full)?;
            std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode & !umask))?;
            s.entry(&rel)
        }) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & 0o170000 != 0o100000 {
            reply.error(Errno::ENOSYS);
            return;
        }
        match self.with(|s| {
            let rel = s.child(parent, name)?;
            open_rw(&s.full(&rel), Some(((mode & !umask) & 0o7777, true)))?;
            s.entry(&rel)
        }) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        match self.with(|s| {
            let rel = s.child(parent, name)?;
            let excl = flags & nix::fcntl::OFlag::O_EXCL.bits() != 0;
            let file = open_rw(&s.full(&rel), Some(((mode & !umask) & 0o7777, excl)))?;
            let md = file.metadata()?;
            let ino = s.ino_for(&rel);
            if flags & nix::fcntl::OFlag::O_TRUNC.bits() != 0 {
                s.truncate_to_empty(ino, md.len());
            }
            let a = s.attr_of(ino, &md);
            let fh = s.open_handle(ino, file);
            Ok((a, fh))
        }) {
            Ok((a, fh)) => {
                reply.created(&TTL, &a, Generation(0), FileHandle(fh), FopenFlags::empty())
            }
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.with(|s| {
            let rel = s
                .nodes
                .get(&ino.0)
                .and_then(|n| n.path.clone())
                .ok_or(Errno::ENOENT)?;
            let file = open_rw(&s.full(&rel), None)?;
            if flags.0 & nix::fcntl::OFlag::O_TRUNC.bits() != 0 {
                s.truncate_to_empty(ino.0, file.metadata()?.len());
            }
            Ok(s.open_handle(ino.0, file))
        }) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.with(|s| {
            let h = s.handles.get(&fh.0).ok_or(Errno::EBADF)?;
            let disk = h.file.metadata()?.len();
            let mut buf = vec![0u8; size as usize];
            let mut got = 0;
            while got < buf.len() {
                match h.file.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_err(e)),
                }
            }
            let node = s.nodes.get(&ino.0).ok_or(Errno::ENOENT)?;
            let n = node.pending.overlay(disk, offset, &mut buf);
            buf.truncate(n);
            Ok(buf)
        }) {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.with(|s| {
            if !s.handles.contains_key(&fh.0) {
                return Err(Errno::EBADF);
            }
            s.counts.writes += 1;
            if s.tick() {
                return Err(Errno::EIO);
            }
            let node = s.nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)?;
            node.pending.write(offset, data);
            Ok(data.len() as u32)
        }) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A close writes nothing back.
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let mut s = hearth::locks::lock(&self.state);
        if let Some(h) = s.handles.remove(&fh.0) {
            let gone = match s.nodes.get_mut(&h.ino) {
                Some(n) => {
                    n.open = n.open.saturating_sub(1);
                    n.open == 0 && n.path.is_none()
                }
                None => false,
            };
            if gone {
                s.nodes.remove(&h.ino);
            }
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.answer(reply, |s| {
            s.counts.syncs += 1;
            if s.tick() {
                return Err(Errno::EIO);
            }
            let State { handles, nodes, .. } = s;
            let h = handles.get(&fh.0).ok_or(Errno::EBADF)?;
            let node = nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)?;
            node.pending.apply(&h.file).map_err(io_err)
        });
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let listed = self.with(|s| {
            let rel = s
                .nodes
                .get(&ino.0)
                .and_then(|n| n.path.clone())
                .ok_or(Errno::ENOENT)?;
            let mut names: Vec<(std::ffi::OsString, bool)> = std::fs::read_dir(s.full(&rel))?
                .filter_map(Result::ok)
                .map(|e| (e.file_name(), e.file_type().is_ok_and(|t| t.is_dir())))
                .collect();
            names.sort();
            let mut out = vec![
                (ino.0, FileType::Directory, ".".into()),
                (1, FileType::Directory, "..".into()),
            ];
            for (name, dir) in names {
                let child = s.ino_for(&rel.join(&name));
                let kind = if dir {
                    FileType::Directory
                } else {
                    FileType::RegularFile
                };
                out.push((child, kind, name));
            }
            Ok(out)
        });
        match listed {
            Ok(entries) => {
                for (i, (child, kind, name)) in
                    entries.into_iter().enumerate().skip(offset as usize)
                {
                    if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // Namespace changes reached the disk when they were made.
        self.answer(reply, |s| {
            s.counts.syncs += 1;
            if s.tick() {
                return Err(Errno::EIO);
            }
            Ok(())
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.answer(reply, |s| {
            let rel = s.child(parent, name)?;
            std::fs::remove_file(s.full(&rel))?;
            s.unlinked(&rel);
            Ok(())
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.answer(reply, |s| {
            let rel = s.child(parent, name)?;
            std::fs::remove_dir(s.full(&rel))?;
            s.unlinked(&rel);
            Ok(())
        });
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        self.answer(reply, |s| {
            if !flags.is_empty() {
                // RENAME_NOREPLACE is checked here; RENAME_EXCHANGE is not supported.
                if flags != RenameFlags::RENAME_NOREPLACE {
                    return Err(Errno::EINVAL);
                }
            }
            let from = s.child(parent, name)?;
            let to = s.child(newparent, newname)?;
            if !flags.is_empty() && s.full(&to).symlink_metadata().is_ok() {
                return Err(Errno::EEXIST);
            }
            std::fs::rename(s.full(&from), s.full(&to))?;
            s.renamed(&from, &to);
            Ok(())
        });
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self
            .with(|s| nix::sys::statvfs::statvfs(&s.backing).map_err(|e| Errno::from_i32(e as i32)))
        {
            Ok(v) => reply.statfs(
                v.blocks(),
                v.blocks_free(),
                v.blocks_available(),
                v.files(),
                v.files_free(),
                v.block_size() as u32,
                v.name_max() as u32,
                v.fragment_size() as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::from_i32(95)); // EOPNOTSUPP
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        _fh_in: FileHandle,
        _offset_in: u64,
        _ino_out: INodeNo,
        _fh_out: FileHandle,
        _offset_out: u64,
        _len: u64,
        _flags: fuser::CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        // The caller copies by reading and writing.
        reply.error(Errno::ENOSYS);
    }

    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: i64,
        _whence: i32,
        reply: fuser::ReplyLseek,
    ) {
        // The kernel then seeks by itself.
        reply.error(Errno::ENOSYS);
    }
}
