//! What the Git forges (GitHub, GitLab, Gitea, Forgejo) share: their topics, the
//! commit list of a push, and the sentence of a pull request or issue event.

/// Commits listed in a push message; the rest are counted.
pub const COMMITS_SHOWN: usize = 20;
/// Committers named in a push message; the rest are counted as "others".
const COMMITTERS_NAMED: usize = 3;

/// Zulip's topic of a branch: `repo / branch`.
pub fn branch_topic(repo: &str, branch: &str) -> String {
    format!("{repo} / {branch}")
}

/// Zulip's topic of a pull request or issue: `repo / PR #12 title`.
pub fn item_topic(repo: &str, kind: &str, number: i64, title: &str) -> String {
    format!("{repo} / {kind} #{number} {title}")
}

/// A commit of a push.
pub struct Commit {
    /// Who wrote it (a login where the forge gives one, else the author's name).
    pub author: String,
    pub sha: String,
    pub url: String,
    pub message: String,
}

/// The 11-character short id of a commit.
pub fn short_sha(sha: &str) -> &str {
    sha.get(..11).unwrap_or(sha)
}

/// `refs/heads/main` is `main`; `refs/tags/v1` is `v1`.
pub fn ref_name(r: &str) -> &str {
    r.strip_prefix("refs/heads/")
        .or_else(|| r.strip_prefix("refs/tags/"))
        .unwrap_or(r)
}

/// The bulleted commit list: each commit's first line and its short id, linked;
/// `not_sent` more commits the forge counted without sending them.
pub fn commit_list(commits: &[Commit], not_sent: usize) -> String {
    let mut out = String::new();
    for c in commits.iter().take(COMMITS_SHOWN) {
        let first_line = c.message.lines().next().unwrap_or_default();
        out.push_str(&format!(
            "* {first_line} ([{}]({}))\n",
            short_sha(&c.sha),
            c.url
        ));
    }
    let more = commits
        .len()
        .saturating_sub(COMMITS_SHOWN)
        .saturating_add(not_sent);
    if more > 0 {
        out.push_str(&format!("[and {more} more commit(s)]"));
    }
    out.trim_end().to_owned()
}

/// How a push went.
pub struct Push<'a> {
    pub pusher: &'a str,
    /// The compare view of the push, when the forge gives one.
    pub compare_url: Option<&'a str>,
    pub branch: &'a str,
    pub commits: &'a [Commit],
    /// Commits of the push the forge counted but did not send (GitLab sends the
    /// newest 20 and `total_commits_count`).
    pub not_sent: usize,
    pub deleted: bool,
    pub forced: bool,
}

/// The message of a push to a branch: who pushed how many commits where, who wrote
/// them when that is not only the pusher, and the commit list. A push of no commits
/// created, moved or deleted the branch.
pub fn push_message(p: &Push<'_>) -> String {
    let verb = if p.forced { "force pushed" } else { "pushed" };
    let linked = |text: &str| match p.compare_url {
        Some(url) if !url.is_empty() => format!("[{text}]({url})"),
        _ => text.to_owned(),
    };
    if p.commits.is_empty() {
        if p.deleted {
            return format!(
                "{} {} the branch {}.",
                p.pusher,
                linked("deleted"),
                p.branch
            );
        }
        return format!("{} {} the branch {}.", p.pusher, linked(verb), p.branch);
    }
    let n = p.commits.len();
    let plural = if n == 1 { "" } else { "s" };
    let mut head = format!(
        "{} {} to branch {}.",
        p.pusher,
        linked(&format!("{verb} {n} commit{plural}")),
        p.branch
    );
    let committers = committers(p.commits);
    let only_pusher = committers.len() == 1 && committers[0].0 == p.pusher;
    if !only_pusher {
        let named: Vec<String> = committers
            .iter()
            .map(|(name, count)| format!("{name} ({count})"))
            .collect();
        head.push_str(&format!(" Commits by {}.", and_list(&named)));
    }
    format!("{head}\n\n{}", commit_list(p.commits, p.not_sent))
}

/// Committers by number of commits (then by name); past three, the rest as "others".
fn committers(commits: &[Commit]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for c in commits {
        match counts.iter_mut().find(|(name, _)| *name == c.author) {
            Some((_, n)) => *n += 1,
            None => counts.push((c.author.clone(), 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if counts.len() > COMMITTERS_NAMED {
        let others: usize = counts[COMMITTERS_NAMED..].iter().map(|(_, n)| n).sum();
        counts.truncate(COMMITTERS_NAMED);
        counts.push(("others".to_owned(), others));
    }
    counts
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A pull request, merge request or issue event.
#[derive(Default)]
pub struct ItemEvent<'a> {
    pub actor: &'a str,
    /// What happened (`opened`, `merged`, `[commented](url) on`, ...).
    pub action: &'a str,
    /// `PR`, `MR`, `issue`, ...
    pub kind: &'a str,
    pub number: Option<i64>,
    pub url: &'a str,
    /// Shown only when the URL names the topic (else the topic carries it).
    pub title: Option<&'a str>,
    /// Source and target branches of an opened pull request.
    pub branches: Option<(&'a str, &'a str)>,
    pub assignees: Vec<String>,
    /// The one (un)assigned by an `assigned` / `unassigned` event.
    pub assignee_changed: Option<&'a str>,
    /// A description or comment, quoted.
    pub text: Option<&'a str>,
}

/// `alice opened [PR #5](url) from `feature` to `main` (assigned to bob):` and the
/// text quoted below.
pub fn item_message(e: &ItemEvent<'_>) -> String {
    let mut out = format!("{} {}", e.actor, e.action);
    if let Some(who) = e.assignee_changed {
        let preposition = if e.action == "unassigned" {
            "from"
        } else {
            "to"
        };
        out.push_str(&format!(" {who} {preposition}"));
    }
    let mut label = e.kind.to_owned();
    if let Some(n) = e.number {
        label.push_str(&format!(" #{n}"));
    }
    if let Some(title) = e.title {
        label.push_str(&format!(" {title}"));
    }
    out.push_str(&format!(" [{label}]({})", e.url));
    if let Some((from, to)) = e.branches {
        out.push_str(&format!(" from `{from}` to `{to}`"));
    }
    if !e.assignees.is_empty() {
        out.push_str(&format!(" (assigned to {})", and_list(&e.assignees)));
    }
    let text = e.text.filter(|t| !t.trim().is_empty());
    // A title that ends in punctuation needs no full stop after it.
    let ends_in_title = e.branches.is_none() && e.assignees.is_empty() && e.title.is_some();
    let title_punctuated = e
        .title
        .and_then(|t| t.chars().last())
        .is_some_and(|c| c.is_ascii_punctuation());
    match text {
        Some(t) => {
            out.push(':');
            out.push_str(&super::quoted(t));
        }
        None if ends_in_title && title_punctuated => {}
        None => out.push('.'),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(author: &str, n: usize) -> Commit {
        Commit {
            author: author.to_owned(),
            sha: format!("{n:040x}"),
            url: format!("https://example.com/c/{n}"),
            message: format!("Change {n}\n\nDetails."),
        }
    }

    #[test]
    fn a_push_names_its_committers_when_others_wrote_them() {
        let commits = vec![commit("alice", 1), commit("bob", 2), commit("bob", 3)];
        let text = push_message(&Push {
            pusher: "alice",
            compare_url: Some("https://example.com/compare"),
            branch: "main",
            commits: &commits,
            not_sent: 0,
            deleted: false,
            forced: false,
        });
        assert_eq!(
            text,
            "alice [pushed 3 commits](https://example.com/compare) to branch main. \
             Commits by bob (2) and alice (1).\n\n\
             * Change 1 ([00000000000](https://example.com/c/1))\n\
             * Change 2 ([00000000000](https://example.com/c/2))\n\
             * Change 3 ([00000000000](https://example.com/c/3))"
        );
    }

    #[test]
    fn long_pushes_are_cut_at_twenty_commits() {
        let commits: Vec<Commit> = (0..23).map(|n| commit("alice", n)).collect();
        let list = commit_list(&commits, 0);
        assert_eq!(list.lines().count(), 21);
        assert!(list.ends_with("[and 3 more commit(s)]"), "{list}");
        let five: Vec<Commit> = (0..5).map(|n| commit("a", n)).collect();
        let committers = committers(&five[..1]);
        assert_eq!(committers, vec![("a".to_owned(), 1)]);
        let many: Vec<Commit> = ["a", "b", "c", "d", "e"]
            .iter()
            .enumerate()
            .map(|(i, who)| commit(who, i))
            .collect();
        let named = super::committers(&many);
        assert_eq!(named.last(), Some(&("others".to_owned(), 2)));
    }

    #[test]
    fn item_sentences_end_as_their_title_does() {
        let base = ItemEvent {
            actor: "alice",
            action: "opened",
            kind: "issue",
            number: Some(4),
            url: "https://example.com/4",
            ..ItemEvent::default()
        };
        assert_eq!(
            item_message(&base),
            "alice opened [issue #4](https://example.com/4)."
        );
        let titled = ItemEvent {
            title: Some("Why?"),
            ..base
        };
        assert_eq!(
            item_message(&titled),
            "alice opened [issue #4 Why?](https://example.com/4)"
        );
    }
}
