//! The damage judge: what a realm's trees must hold, given the manifest (`judge`, used
//! by start-up and by `hearth check` alike).

use super::scan::{End, Scan};
use crate::storage::wal::manifest::RealmMark;

/// One thing a realm's trees lack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub expected: String,
    pub found: String,
}

/// What `judge` makes of a realm's trees.
#[derive(Debug, Default)]
pub struct Verdict {
    /// What refuses a start, most specific first.
    pub problems: Vec<Problem>,
    /// What a start tolerates (a torn tail beyond the durable mark is cut).
    pub notes: Vec<String>,
}

/// Holds a realm's trees against its manifest mark (`None`: no manifest, or the realm
/// is not in it). Records and snapshots at or below the mark must be there and decode;
/// beyond it, an unreadable record is a torn tail (cut at start) and an unreadable
/// snapshot gives way to an older one. A WAL gap is always a problem: the state after
/// it would be partial.
pub fn judge(scan: &Scan, mark: Option<RealmMark>) -> Verdict {
    let m = mark.unwrap_or_default();
    let mut v = Verdict::default();
    let problem = |expected: String, found: String| Problem { expected, found };
    if let Some(e) = &scan.read_error {
        v.problems.push(problem(
            "the realm's WAL and snapshots readable".into(),
            format!(
                "the database cannot read them past record {} ({e})",
                scan.readable_upto
            ),
        ));
    }
    for (seq, e) in &scan.bad_snapshots {
        if *seq <= m.last_seq {
            v.problems.push(problem(
                format!(
                    "snapshot {seq} readable (the manifest counts records up to {} durable)",
                    m.last_seq
                ),
                format!("it does not decode ({e})"),
            ));
        } else {
            v.notes.push(format!(
                "snapshot {seq}, beyond the durable mark, does not decode ({e}): an older one is used"
            ));
        }
    }
    match &scan.end {
        Some(End::Unreadable(seq, e)) if *seq <= m.last_seq => v.problems.push(problem(
            format!(
                "WAL record {seq} readable (the manifest counts records up to {} durable)",
                m.last_seq
            ),
            format!("it does not decode ({e})"),
        )),
        Some(End::Unreadable(seq, e)) => v.notes.push(format!(
            "WAL record {seq} does not decode ({e}): a torn tail beyond the durable mark; \
             it and the {} records after it are cut at the next start",
            scan.after_end.saturating_sub(1)
        )),
        Some(End::Gap { expected, found }) => v.problems.push(problem(
            format!(
                "WAL record {expected} after snapshot {}",
                scan.base.unwrap_or(0)
            ),
            format!("a WAL gap: record {found} follows (the records in between are gone)"),
        )),
        None => {}
    }
    let covered = scan
        .bad_records
        .iter()
        .filter(|(seq, _)| *seq <= scan.base.unwrap_or(0))
        .count();
    if covered > 0 {
        v.notes.push(format!(
            "{covered} WAL records already covered by the snapshot do not decode (unused)"
        ));
    }
    if m.snapshot_seq > 0 && scan.base.unwrap_or(0) < m.snapshot_seq {
        v.problems.push(problem(
            format!(
                "a snapshot covering record {} or later (the manifest)",
                m.snapshot_seq
            ),
            match scan.base {
                Some(base) => format!("the newest readable snapshot covers record {base}"),
                None => "no readable snapshot".into(),
            },
        ));
    }
    if scan.readable_upto < m.last_seq {
        v.problems.push(problem(
            format!("records up to {} (the manifest)", m.last_seq),
            if scan.realm.is_some() {
                format!("records up to {} only", scan.readable_upto)
            } else {
                "no readable snapshot and no WAL record".into()
            },
        ));
    }
    if scan.realm.is_none() && v.problems.is_empty() {
        v.problems.push(problem(
            "the realm's snapshot or its first WAL record".into(),
            "neither can be read".into(),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realm::dev::dev_realm_changes;
    use crate::realm::{Cx, Realm};

    fn scan(base: Option<u64>, upto: u64, end: Option<End>) -> Scan {
        let changes = dev_realm_changes(&mut Cx::seeded(1, 1)).expect("seed");
        Scan {
            base,
            readable_upto: upto,
            end,
            after_end: 3,
            highest: upto + 3,
            realm: Realm::from_first_change(&changes[0]),
            ..Scan::default()
        }
    }

    fn mark(last_seq: u64, snapshot_seq: u64) -> Option<RealmMark> {
        Some(RealmMark {
            last_seq,
            snapshot_seq,
        })
    }

    #[test]
    fn a_torn_tail_beyond_the_mark_is_a_note_at_or_below_it_a_refusal() {
        let torn = scan(Some(10), 20, Some(End::Unreadable(21, "checksum".into())));
        let v = judge(&torn, mark(20, 10));
        assert!(v.problems.is_empty(), "{:?}", v.problems);
        assert!(v.notes[0].contains("torn tail"), "{:?}", v.notes);

        let damaged = scan(Some(10), 19, Some(End::Unreadable(20, "checksum".into())));
        let v = judge(&damaged, mark(20, 10));
        assert!(v.problems[0].expected.contains("WAL record 20 readable"));
        assert!(v.problems[0].found.contains("checksum"));
        assert!(v.problems[1].expected.contains("records up to 20"));
    }

    #[test]
    fn a_store_behind_its_manifest_or_missing_its_snapshot_is_refused() {
        let v = judge(&scan(Some(10), 15, None), mark(20, 10));
        assert_eq!(
            v.problems,
            vec![Problem {
                expected: "records up to 20 (the manifest)".into(),
                found: "records up to 15 only".into(),
            }]
        );
        let v = judge(&scan(Some(1), 30, None), mark(30, 25));
        assert!(v.problems[0].found.contains("covers record 1"));
        // Ahead of the manifest is fine: it may lag, never lead.
        assert!(judge(&scan(Some(30), 40, None), mark(30, 25))
            .problems
            .is_empty());
        // Without a manifest only what start-up always refused is refused.
        assert!(judge(&scan(None, 40, None), None).problems.is_empty());
        let gap = scan(
            Some(5),
            9,
            Some(End::Gap {
                expected: 10,
                found: 12,
            }),
        );
        assert!(judge(&gap, None).problems[0].found.contains("WAL gap"));
    }

    #[test]
    fn an_unreadable_snapshot_counts_only_at_or_below_the_mark() {
        let mut s = scan(Some(10), 20, None);
        s.bad_snapshots = vec![(25, "checksum mismatch".into())];
        let v = judge(&s, mark(20, 10));
        assert!(v.problems.is_empty() && v.notes.len() == 1, "{v:?}");
        s.bad_snapshots = vec![(15, "checksum mismatch".into())];
        let v = judge(&s, mark(20, 10));
        assert!(
            v.problems[0].expected.contains("snapshot 15 readable"),
            "{v:?}"
        );
    }
}
