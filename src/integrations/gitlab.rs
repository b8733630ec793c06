//! `gitlab`: GitLab's project webhooks. The event is the `X-Gitlab-Event` header,
//! refined by the payload (`Issue Hook open`, `Merge Request Hook merge`, `Note Hook
//! MergeRequest`, ...): those are the event types `only_events` / `exclude_events`
//! match. `branches=a,b` limits pushes to those branches.
//!
//! Topics: `project / branch` for pushes, pipelines and jobs, `project / MR #n title`
//! and `project / issue #n title` for merge requests, issues and their notes, the
//! project's name otherwise. When the URL names the topic, each message starts with
//! the project, linked.

use serde_json::Value;

use super::git::{self, Commit, ItemEvent, Push};
use super::{int, items, nonempty, opt_s, s, HookError, HookOutcome, HookRequest};

/// The event types this integration sends messages for.
pub const EVENTS: &[&str] = &[
    "Push Hook",
    "Tag Push Hook",
    "Issue Hook open",
    "Issue Hook close",
    "Issue Hook reopen",
    "Issue Hook update",
    "Confidential Issue Hook open",
    "Merge Request Hook open",
    "Merge Request Hook update",
    "Merge Request Hook merge",
    "Merge Request Hook close",
    "Merge Request Hook reopen",
    "Merge Request Hook approved",
    "Note Hook Commit",
    "Note Hook MergeRequest",
    "Note Hook Issue",
    "Note Hook Snippet",
    "Pipeline Hook",
    "Job Hook",
    "Test Hook",
];

/// The SHA of no commit: a push whose `after` is this deleted its branch.
const NO_COMMIT: &str = "0000000000000000000000000000000000000000";

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let header = r.event_header("X-Gitlab-Event")?.to_owned();
    let p = r.json()?;
    let event = match header.as_str() {
        "Issue Hook" | "Confidential Issue Hook" | "Merge Request Hook" => {
            format!(
                "{header} {}",
                opt_s(&p, "/object_attributes/action").unwrap_or("???")
            )
        }
        "Note Hook" | "Confidential Note Hook" => format!(
            "{header} {}",
            opt_s(&p, "/object_attributes/noteable_type").unwrap_or("???")
        ),
        // GitLab's old name for job events.
        "Build Hook" => "Job Hook".to_owned(),
        _ => header.clone(),
    };
    let event = event.replace("Confidential Note Hook", "Note Hook");
    if event == "Push Hook" {
        if let Some(wanted) = (r.param)("branches") {
            let branch = git::ref_name(s(&p, "/ref")?);
            if !wanted.split(',').any(|b| b.trim() == branch) {
                return Ok(HookOutcome::Nothing);
            }
        }
    }
    let user_topic = r.user_topic().is_some();
    let g = Gl {
        p: &p,
        with_title: user_topic,
    };
    let (topic, mut content) = match event.as_str() {
        "Push Hook" => (g.branch_topic("/ref")?, g.push()?),
        "Tag Push Hook" => (g.project()?.to_owned(), g.tag_push()?),
        "Test Hook" => (
            g.project()?.to_owned(),
            format!("GitLab webhook for **{}** is configured.", g.project()?),
        ),
        e if e.starts_with("Issue Hook ") || e.starts_with("Confidential Issue Hook ") => {
            let topic = g.item_topic("issue", "/object_attributes")?;
            (topic, g.issue(e.rsplit(' ').next().unwrap_or_default())?)
        }
        e if e.starts_with("Merge Request Hook ") => {
            let topic = g.item_topic("MR", "/object_attributes")?;
            (
                topic,
                g.merge_request(e.rsplit(' ').next().unwrap_or_default())?,
            )
        }
        "Note Hook Commit" => (g.project()?.to_owned(), g.commit_note()?),
        "Note Hook MergeRequest" => (
            g.item_topic("MR", "/merge_request")?,
            g.note("MR", "/merge_request", "merge_requests")?,
        ),
        "Note Hook Issue" => (
            g.item_topic("issue", "/issue")?,
            g.note("issue", "/issue", "issues")?,
        ),
        "Note Hook Snippet" => (
            g.snippet_topic()?,
            g.note("snippet", "/snippet", "snippets")?,
        ),
        "Pipeline Hook" => (g.branch_topic("/object_attributes/ref")?, g.pipeline()?),
        "Job Hook" => (
            git::branch_topic(s(&p, "/repository/name")?, git::ref_name(s(&p, "/ref")?)),
            g.job()?,
        ),
        _ => return Err(HookError::Unsupported(event)),
    };
    if user_topic {
        let project = format!("[[{}]({})] ", g.project()?, s(&p, "/project/web_url")?);
        content.insert_str(0, &project);
    }
    Ok(HookOutcome::send(topic, content, &event))
}

/// A payload and whether messages name the item's title (the URL named the topic).
struct Gl<'a> {
    p: &'a Value,
    with_title: bool,
}

impl Gl<'_> {
    fn project(&self) -> Result<&str, HookError> {
        s(self.p, "/project/name")
    }

    /// The actor of issue, merge request and note events.
    fn user(&self) -> Result<&str, HookError> {
        s(self.p, "/user/name")
    }

    fn branch_topic(&self, ref_pointer: &str) -> Result<String, HookError> {
        Ok(git::branch_topic(
            self.project()?,
            git::ref_name(s(self.p, ref_pointer)?),
        ))
    }

    /// `project / MR #3 title` of the item at `at` (the object, or a note's item).
    fn item_topic(&self, kind: &str, at: &str) -> Result<String, HookError> {
        let item = self.p.pointer(at).ok_or(HookError::Anomalous)?;
        let number = int(item, "/iid")?;
        Ok(match nonempty(item, "/title") {
            Some(title) => git::item_topic(self.project()?, kind, number, title),
            None => format!("{} / {kind} #{number}", self.project()?),
        })
    }

    fn snippet_topic(&self) -> Result<String, HookError> {
        Ok(git::item_topic(
            self.project()?,
            "snippet",
            int(self.p, "/snippet/id")?,
            s(self.p, "/snippet/title")?,
        ))
    }

    fn title(&self, pointer: &str) -> Option<&str> {
        if self.with_title {
            opt_s(self.p, pointer)
        } else {
            None
        }
    }

    fn push(&self) -> Result<String, HookError> {
        let p = self.p;
        let pusher = s(p, "/user_name")?;
        let branch = git::ref_name(s(p, "/ref")?);
        let after = s(p, "/after")?;
        if after == NO_COMMIT {
            return Ok(format!("{pusher} deleted branch {branch}."));
        }
        let compare = format!(
            "{}/-/compare/{}...{after}",
            s(p, "/project/web_url")?,
            s(p, "/before")?
        );
        let commits: Vec<Commit> = items(p, "/commits")
            .iter()
            .map(|c| {
                Ok(Commit {
                    author: s(c, "/author/name")?.to_owned(),
                    sha: s(c, "/id")?.to_owned(),
                    url: s(c, "/url")?.to_owned(),
                    message: s(c, "/message")?.to_owned(),
                })
            })
            .collect::<Result<_, HookError>>()?;
        // GitLab sends at most 20 commits of a push, and counts them all.
        let total = p
            .get("total_commits_count")
            .and_then(Value::as_u64)
            .unwrap_or(commits.len() as u64);
        Ok(git::push_message(&Push {
            pusher,
            compare_url: Some(&compare),
            branch,
            commits: &commits,
            not_sent: usize::try_from(total.saturating_sub(commits.len() as u64))
                .unwrap_or(usize::MAX),
            deleted: false,
            forced: false,
        }))
    }

    fn tag_push(&self) -> Result<String, HookError> {
        let p = self.p;
        let verb = if nonempty(p, "/checkout_sha").is_some() {
            "pushed"
        } else {
            "removed"
        };
        Ok(format!(
            "{} {verb} tag {}.",
            s(p, "/user_name")?,
            git::ref_name(s(p, "/ref")?)
        ))
    }

    /// Who is assigned: `assignees` (names), else `assignee`.
    fn assignees(&self) -> Vec<String> {
        let names: Vec<String> = items(self.p, "/assignees")
            .iter()
            .filter_map(|a| opt_s(a, "/name").map(str::to_owned))
            .collect();
        if names.is_empty() {
            opt_s(self.p, "/assignee/name")
                .map(str::to_owned)
                .into_iter()
                .collect()
        } else {
            names
        }
    }

    fn issue(&self, action: &str) -> Result<String, HookError> {
        let p = self.p;
        let opened = action == "open";
        let description = if opened {
            opt_s(p, "/object_attributes/description").map(strip_hidden_comments)
        } else {
            None
        };
        Ok(git::item_message(&ItemEvent {
            actor: self.user()?,
            action: match action {
                "open" => "created",
                "close" => "closed",
                "reopen" => "reopened",
                "update" => "updated",
                other => other,
            },
            kind: "issue",
            number: Some(int(p, "/object_attributes/iid")?),
            url: s(p, "/object_attributes/url")?,
            title: self.title("/object_attributes/title"),
            assignees: if opened { self.assignees() } else { Vec::new() },
            text: description.as_deref(),
            ..ItemEvent::default()
        }))
    }

    fn merge_request(&self, action: &str) -> Result<String, HookError> {
        let p = self.p;
        let opened = action == "open";
        let new_commits = action == "update" && nonempty(p, "/object_attributes/oldrev").is_some();
        let branches = if opened {
            Some((
                s(p, "/object_attributes/source_branch")?,
                s(p, "/object_attributes/target_branch")?,
            ))
        } else {
            None
        };
        let description = if opened || (action == "update" && !new_commits) {
            opt_s(p, "/object_attributes/description").map(strip_hidden_comments)
        } else {
            None
        };
        Ok(git::item_message(&ItemEvent {
            actor: self.user()?,
            action: match action {
                "open" => "created",
                "update" if new_commits => "added commit(s) to",
                "update" => "updated",
                "merge" => "merged",
                "close" => "closed",
                "reopen" => "reopened",
                "approved" => "approved",
                "unapproved" => "unapproved",
                other => other,
            },
            kind: "MR",
            number: Some(int(p, "/object_attributes/iid")?),
            url: s(p, "/object_attributes/url")?,
            title: self.title("/object_attributes/title"),
            branches,
            assignees: if opened { self.assignees() } else { Vec::new() },
            text: description.as_deref(),
            ..ItemEvent::default()
        }))
    }

    fn commit_note(&self) -> Result<String, HookError> {
        let p = self.p;
        Ok(format!(
            "{} [commented]({}) on [{}]({}):{}",
            self.user()?,
            s(p, "/object_attributes/url")?,
            git::short_sha(s(p, "/commit/id")?),
            s(p, "/commit/url")?,
            super::quoted(s(p, "/object_attributes/note")?)
        ))
    }

    /// A note on the item at `at`, whose page is `project/-/<path>/<number>`.
    fn note(&self, kind: &str, at: &str, path: &str) -> Result<String, HookError> {
        let p = self.p;
        let item = p.pointer(at).ok_or(HookError::Anomalous)?;
        let number = match item.get("iid") {
            Some(_) => int(item, "/iid")?,
            None => int(item, "/id")?,
        };
        let url = format!("{}/-/{path}/{number}", s(p, "/project/web_url")?);
        let action = format!("[commented]({}) on", s(p, "/object_attributes/url")?);
        Ok(git::item_message(&ItemEvent {
            actor: self.user()?,
            action: &action,
            kind,
            number: Some(number),
            url: &url,
            title: if self.with_title {
                opt_s(item, "/title")
            } else {
                None
            },
            text: Some(s(p, "/object_attributes/note")?),
            ..ItemEvent::default()
        }))
    }

    fn pipeline(&self) -> Result<String, HookError> {
        let p = self.p;
        let id = int(p, "/object_attributes/id")?;
        let url = match nonempty(p, "/object_attributes/url") {
            Some(url) => url.to_owned(),
            None => format!("{}/-/pipelines/{id}", s(p, "/project/web_url")?),
        };
        let status = s(p, "/object_attributes/status")?;
        let what = match status {
            "pending" => "was created".to_owned(),
            "running" => "started".to_owned(),
            other => format!("changed status to {other}"),
        };
        let mut out = format!("[Pipeline (#{id})]({url}) {what}");
        let builds = items(p, "/builds");
        if builds.is_empty() {
            out.push('.');
            return Ok(out);
        }
        out.push_str(" with build(s):");
        for b in builds {
            let name = s(b, "/name")?;
            let job = match int(b, "/id") {
                Ok(job) => format!("[{name}]({}/-/jobs/{job})", s(p, "/project/web_url")?),
                Err(_) => name.to_owned(),
            };
            out.push_str(&format!("\n* {job} - {}", s(b, "/status")?));
        }
        Ok(out)
    }

    fn job(&self) -> Result<String, HookError> {
        let p = self.p;
        let what = match s(p, "/build_status")? {
            "created" => "was created".to_owned(),
            "running" => "started".to_owned(),
            other => format!("changed status to {other}"),
        };
        Ok(format!(
            "Build {} from {} stage {what}.",
            s(p, "/build_name")?,
            s(p, "/build_stage")?
        ))
    }
}

/// A description without its `<!-- hidden -->` comments (issue templates have them).
fn strip_hidden_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::strip_hidden_comments;

    #[test]
    fn hidden_comments_are_left_out_of_descriptions() {
        assert_eq!(
            strip_hidden_comments("Steps<!-- fill\nthis in -->\n\nmore<!-- -->"),
            "Steps\n\nmore"
        );
    }
}
