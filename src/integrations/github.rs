//! `github`: GitHub's repository and organization webhooks. The event is the
//! `X-GitHub-Event` header, refined by the payload's `action` into the event types
//! `only_events` / `exclude_events` match (Zulip's names: `push_commits`,
//! `opened_pull_request`, ...). `branches=a,b` limits pushes to those branches.
//!
//! Topics: `repo / branch` for pushes, `repo / PR #n title` and `repo / issue #n title`
//! for pull requests, issues and their comments, the repository's name otherwise.

use serde_json::Value;

use super::git::{self, Commit, ItemEvent, Push};
use super::{flag, int, items, nonempty, opt_s, s, HookError, HookOutcome, HookRequest};

/// The event types this integration sends messages for.
pub const EVENTS: &[&str] = &[
    "push_commits",
    "push_tags",
    "opened_pull_request",
    "updated_pull_request",
    "closed_pull_request",
    "assigned_or_unassigned_pull_request",
    "pull_request_review_requested",
    "pull_request_ready_for_review",
    "pull_request_review",
    "pull_request_review_comment",
    "issues",
    "issue_labeled_or_unlabeled",
    "issue_comment",
    "commit_comment",
    "create",
    "delete",
    "release",
    "fork",
    "watch",
    "star",
    "ping",
];

/// Events GitHub sends that are not worth a message.
const IGNORED_EVENTS: &[&str] = &[
    "check_suite",
    "label",
    "meta",
    "milestone",
    "organization",
    "project_card",
    "repository_vulnerability_alert",
];

/// Pull request actions that are not worth a message.
const IGNORED_PR_ACTIONS: &[&str] = &[
    "approved",
    "converted_to_draft",
    "labeled",
    "review_request_removed",
    "unlabeled",
];

pub fn handle(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let header = r.event_header("X-GitHub-Event")?.to_owned();
    let p = r.json()?;
    let with_title = r.user_topic().is_some();
    // An edited comment whose text did not change says nothing new.
    if header.contains("comment")
        && opt_s(&p, "/action") == Some("edited")
        && opt_s(&p, "/changes/body/from") == opt_s(&p, "/comment/body")
    {
        return Ok(HookOutcome::Nothing);
    }
    let Some(event) = event_type(&header, &p, (r.param)("branches").as_deref())? else {
        return Ok(HookOutcome::Nothing);
    };
    let g = Gh { p: &p, with_title };
    let content = match event {
        "push_commits" => g.push_commits()?,
        "push_tags" => g.push_tags()?,
        "opened_pull_request" | "updated_pull_request" => g.pr_opened_or_updated()?,
        "closed_pull_request" => g.pr_closed()?,
        "assigned_or_unassigned_pull_request" => g.pr_assignment()?,
        "pull_request_review_requested" => g.pr_review_requested()?,
        "pull_request_ready_for_review" => format!(
            "{} marked [PR #{}]({}) as ready for review.",
            g.sender()?,
            int(&p, "/pull_request/number")?,
            s(&p, "/pull_request/html_url")?
        ),
        "pull_request_review" => g.pr_review()?,
        "pull_request_review_comment" => g.pr_review_comment()?,
        "issues" => g.issue()?,
        "issue_labeled_or_unlabeled" => g.issue_label()?,
        "issue_comment" => g.issue_comment()?,
        "commit_comment" => g.commit_comment()?,
        "create" | "delete" => format!(
            "{} {} {} {}.",
            g.sender()?,
            if event == "create" {
                "created"
            } else {
                "deleted"
            },
            s(&p, "/ref_type")?,
            s(&p, "/ref")?
        ),
        "release" => g.release()?,
        "fork" => format!(
            "{} forked [{}]({}).",
            g.sender()?,
            s(&p, "/forkee/name")?,
            s(&p, "/forkee/html_url")?
        ),
        "watch" => format!(
            "{} starred the repository [{}]({}).",
            g.sender()?,
            s(&p, "/repository/full_name")?,
            s(&p, "/repository/html_url")?
        ),
        "star" => format!(
            "[{}]({}) {} the repository [{}]({}).",
            g.sender()?,
            s(&p, "/sender/html_url")?,
            if opt_s(&p, "/action") == Some("created") {
                "starred"
            } else {
                "unstarred"
            },
            s(&p, "/repository/full_name")?,
            s(&p, "/repository/html_url")?
        ),
        "ping" => format!(
            "{} connected this GitHub webhook: its notifications arrive here.",
            g.sender()?
        ),
        _ => return Err(HookError::Unsupported(event.to_owned())),
    };
    Ok(HookOutcome::send(topic(&p, event)?, content, event))
}

/// Zulip's event type for a header and payload: `None` for one that is not worth a
/// message.
fn event_type(
    header: &str,
    p: &Value,
    branches: Option<&str>,
) -> Result<Option<&'static str>, HookError> {
    let action = opt_s(p, "/action").unwrap_or_default();
    let known = match header {
        "pull_request" => match action {
            "opened" | "reopened" => "opened_pull_request",
            "synchronize" | "edited" => "updated_pull_request",
            "assigned" | "unassigned" => "assigned_or_unassigned_pull_request",
            "closed" => "closed_pull_request",
            "review_requested" => "pull_request_review_requested",
            "ready_for_review" => "pull_request_ready_for_review",
            a if IGNORED_PR_ACTIONS.contains(&a) => return Ok(None),
            _ => return Err(unsupported(header, p)),
        },
        "pull_request_review" => {
            // GitHub follows a review with an empty "edited" event for its body.
            let empty_edit = action == "edited"
                && p.get("changes")
                    .and_then(Value::as_object)
                    .is_none_or(|c| c.is_empty());
            if empty_edit {
                return Ok(None);
            }
            "pull_request_review"
        }
        "push" => {
            let r = s(p, "/ref")?;
            if r.starts_with("refs/heads/gh-readonly-queue/") {
                return Ok(None);
            }
            if let Some(branch) = r.strip_prefix("refs/heads/") {
                if let Some(wanted) = branches {
                    if !wanted.split(',').any(|b| b.trim() == branch) {
                        return Ok(None);
                    }
                }
                "push_commits"
            } else {
                "push_tags"
            }
        }
        "issues" => match action {
            "labeled" | "unlabeled" => "issue_labeled_or_unlabeled",
            _ => "issues",
        },
        h => match EVENTS.iter().find(|e| **e == h) {
            Some(e) => e,
            None if IGNORED_EVENTS.contains(&h) => return Ok(None),
            None => return Err(unsupported(header, p)),
        },
    };
    Ok(Some(known))
}

/// `header:action` (`???` without an action) as the unsupported event's type.
fn unsupported(header: &str, p: &Value) -> HookError {
    HookError::Unsupported(format!("{header}:{}", opt_s(p, "/action").unwrap_or("???")))
}

fn topic(p: &Value, event: &str) -> Result<String, HookError> {
    let repo = || s(p, "/repository/name");
    Ok(if event.contains("pull_request") {
        git::item_topic(
            repo()?,
            "PR",
            int(p, "/pull_request/number")?,
            s(p, "/pull_request/title")?,
        )
    } else if event.starts_with("issue") {
        git::item_topic(
            repo()?,
            issue_kind(p),
            int(p, "/issue/number")?,
            s(p, "/issue/title")?,
        )
    } else if event == "push_commits" {
        git::branch_topic(repo()?, git::ref_name(s(p, "/ref")?))
    } else if event == "ping" && p.get("repository").is_none_or(Value::is_null) {
        s(p, "/organization/login")?.to_owned()
    } else {
        repo()?.to_owned()
    })
}

/// A comment on a pull request comes as an issue comment whose issue has a
/// `pull_request` key.
fn issue_kind(p: &Value) -> &'static str {
    if p.pointer("/issue/pull_request").is_some() {
        "PR"
    } else {
        "issue"
    }
}

/// A payload and whether its messages name the item's title (the URL named the topic).
struct Gh<'a> {
    p: &'a Value,
    with_title: bool,
}

impl Gh<'_> {
    fn sender(&self) -> Result<&str, HookError> {
        s(self.p, "/sender/login")
    }

    fn title(&self, pointer: &str) -> Result<Option<&str>, HookError> {
        Ok(if self.with_title {
            Some(s(self.p, pointer)?)
        } else {
            None
        })
    }

    fn push_commits(&self) -> Result<String, HookError> {
        let p = self.p;
        let commits: Vec<Commit> = items(p, "/commits")
            .iter()
            .map(|c| {
                Ok(Commit {
                    author: nonempty(c, "/author/username")
                        .map_or_else(|| s(c, "/author/name"), Ok)?
                        .to_owned(),
                    sha: s(c, "/id")?.to_owned(),
                    url: s(c, "/url")?.to_owned(),
                    message: s(c, "/message")?.to_owned(),
                })
            })
            .collect::<Result<_, HookError>>()?;
        Ok(git::push_message(&Push {
            pusher: self.sender()?,
            compare_url: opt_s(p, "/compare"),
            branch: git::ref_name(s(p, "/ref")?),
            commits: &commits,
            not_sent: 0,
            deleted: flag(p, "/deleted"),
            forced: flag(p, "/forced"),
        }))
    }

    fn push_tags(&self) -> Result<String, HookError> {
        let tag = git::ref_name(s(self.p, "/ref")?);
        let verb = if flag(self.p, "/created") {
            "pushed"
        } else {
            "removed"
        };
        let stop = if tag.ends_with(|c: char| c.is_ascii_punctuation()) {
            ""
        } else {
            "."
        };
        Ok(format!("{} {verb} tag {tag}{stop}", self.sender()?))
    }

    fn pr_opened_or_updated(&self) -> Result<String, HookError> {
        let p = self.p;
        let action = match s(p, "/action")? {
            "synchronize" => "updated",
            a => a,
        };
        let has_new_body = p.pointer("/changes/body").is_some();
        let text = if action == "opened" || action == "reopened" || has_new_body {
            opt_s(p, "/pull_request/body")
        } else {
            None
        };
        let branches = if action == "opened" {
            Some((
                s(p, "/pull_request/head/label")?,
                s(p, "/pull_request/base/label")?,
            ))
        } else {
            None
        };
        let assignees = opt_s(p, "/pull_request/assignee/login")
            .map(str::to_owned)
            .into_iter()
            .collect();
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action,
            kind: "PR",
            number: Some(int(p, "/pull_request/number")?),
            url: s(p, "/pull_request/html_url")?,
            title: self.title("/pull_request/title")?,
            branches,
            assignees,
            text,
            ..ItemEvent::default()
        }))
    }

    fn pr_closed(&self) -> Result<String, HookError> {
        let p = self.p;
        let action = if flag(p, "/pull_request/merged") {
            "merged"
        } else {
            "closed without merge"
        };
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action,
            kind: "PR",
            number: Some(int(p, "/pull_request/number")?),
            url: s(p, "/pull_request/html_url")?,
            title: self.title("/pull_request/title")?,
            ..ItemEvent::default()
        }))
    }

    fn pr_assignment(&self) -> Result<String, HookError> {
        let p = self.p;
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action: s(p, "/action")?,
            kind: "PR",
            number: Some(int(p, "/pull_request/number")?),
            url: s(p, "/pull_request/html_url")?,
            title: self.title("/pull_request/title")?,
            assignee_changed: Some(s(p, "/assignee/login")?),
            ..ItemEvent::default()
        }))
    }

    fn pr_review_requested(&self) -> Result<String, HookError> {
        let p = self.p;
        let reviewer = match p.get("requested_reviewer") {
            Some(who) => format!("[{}]({})", s(who, "/login")?, s(who, "/html_url")?),
            None => format!(
                "[{}]({})",
                s(p, "/requested_team/name")?,
                s(p, "/requested_team/html_url")?
            ),
        };
        let mut label = format!("PR #{}", int(p, "/pull_request/number")?);
        if let Some(title) = self.title("/pull_request/title")? {
            label.push_str(&format!(" {title}"));
        }
        Ok(format!(
            "{} requested {reviewer} for a review on [{label}]({}).",
            self.sender()?,
            s(p, "/pull_request/html_url")?
        ))
    }

    /// The pull request a review names when the topic does not (`<word> #N title`).
    fn pr_title(&self, word: &str) -> Result<Option<String>, HookError> {
        if !self.with_title {
            return Ok(None);
        }
        let p = self.p;
        Ok(Some(format!(
            "{word} #{} {}",
            int(p, "/pull_request/number")?,
            s(p, "/pull_request/title")?
        )))
    }

    fn pr_review(&self) -> Result<String, HookError> {
        let p = self.p;
        let title = self.pr_title("for")?;
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action: "submitted",
            kind: "PR review",
            url: s(p, "/review/html_url")?,
            title: title.as_deref(),
            text: opt_s(p, "/review/body"),
            ..ItemEvent::default()
        }))
    }

    fn pr_review_comment(&self) -> Result<String, HookError> {
        let p = self.p;
        let action = s(p, "/action")?;
        let title = self.pr_title("on")?;
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action,
            kind: "PR review comment",
            url: s(p, "/comment/html_url")?,
            title: title.as_deref(),
            text: if action == "created" {
                opt_s(p, "/comment/body")
            } else {
                None
            },
            ..ItemEvent::default()
        }))
    }

    fn issue(&self) -> Result<String, HookError> {
        let p = self.p;
        let action = s(p, "/action")?;
        let assignment = action == "assigned" || action == "unassigned";
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action,
            kind: "issue",
            number: Some(int(p, "/issue/number")?),
            url: s(p, "/issue/html_url")?,
            title: self.title("/issue/title")?,
            assignee_changed: if assignment {
                opt_s(p, "/assignee/login")
            } else {
                None
            },
            text: if assignment {
                None
            } else {
                opt_s(p, "/issue/body")
            },
            ..ItemEvent::default()
        }))
    }

    fn issue_label(&self) -> Result<String, HookError> {
        let p = self.p;
        let added = s(p, "/action")? == "labeled";
        let mut label = format!("Issue #{}", int(p, "/issue/number")?);
        if let Some(title) = self.title("/issue/title")? {
            label.push_str(&format!(" {title}"));
        }
        Ok(format!(
            "[{}]({}) {} the {} label {} [{label}]({}).",
            self.sender()?,
            s(p, "/sender/html_url")?,
            if added { "added" } else { "removed" },
            s(p, "/label/name")?,
            if added { "to" } else { "from" },
            s(p, "/issue/html_url")?
        ))
    }

    fn issue_comment(&self) -> Result<String, HookError> {
        let p = self.p;
        let action = comment_action(p)?;
        Ok(git::item_message(&ItemEvent {
            actor: self.sender()?,
            action: &action,
            kind: issue_kind(p),
            number: Some(int(p, "/issue/number")?),
            url: s(p, "/issue/html_url")?,
            title: self.title("/issue/title")?,
            text: Some(s(p, "/comment/body")?),
            ..ItemEvent::default()
        }))
    }

    fn commit_comment(&self) -> Result<String, HookError> {
        let p = self.p;
        let comment_url = s(p, "/comment/html_url")?;
        let commit_url = comment_url.split('#').next().unwrap_or(comment_url);
        let sha = s(p, "/comment/commit_id")?;
        Ok(format!(
            "{} [commented]({comment_url}) on [{}]({commit_url}):{}",
            self.sender()?,
            git::short_sha(sha),
            super::quoted(s(p, "/comment/body")?)
        ))
    }

    fn release(&self) -> Result<String, HookError> {
        let p = self.p;
        let tag = s(p, "/release/tag_name")?;
        let name = nonempty(p, "/release/name").unwrap_or(tag);
        Ok(format!(
            "{} {} release [{name}]({}) for tag {tag}.",
            self.sender()?,
            s(p, "/action")?,
            s(p, "/release/html_url")?
        ))
    }
}

/// `[commented](url) on`, or `edited a [comment](url) on`.
fn comment_action(p: &Value) -> Result<String, HookError> {
    let url = s(p, "/comment/html_url")?;
    Ok(match s(p, "/action")? {
        "created" => format!("[commented]({url}) on"),
        other => format!("{other} a [comment]({url}) on"),
    })
}
