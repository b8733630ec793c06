//! `gitea` and `forgejo`: Gitea's webhooks, which Forgejo (a fork of Gitea) sends
//! unchanged. The event is the `X-Gitea-Event` header (`X-Forgejo-Event` for Forgejo,
//! which sends both): `push`, `create`, `pull_request`, `issues`, `issue_comment`,
//! `release`, the types `only_events` / `exclude_events` match. `branches=a,b` limits
//! pushes to those branches.
//!
//! Topics (Zulip's): `repo / branch` for pushes and new branches, `repo / PR #id title`
//! (the pull request's `id`, as Zulip's Gitea topics have it), `repo / issue #n title`,
//! `repo / tag release-name` for releases.

use serde_json::Value;

use super::git::{self, Commit, ItemEvent, Push};
use super::{flag, int, items, nonempty, opt_s, s, HookError, HookOutcome, HookRequest};

/// The event types this integration sends messages for.
pub const EVENTS: &[&str] = &[
    "push",
    "create",
    "pull_request",
    "issues",
    "issue_comment",
    "release",
];

pub fn handle_gitea(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let event = r.event_header("X-Gitea-Event")?.to_owned();
    handle(r, &event)
}

pub fn handle_forgejo(r: &HookRequest<'_>) -> Result<HookOutcome, HookError> {
    let event = r.event_header("X-Forgejo-Event")?.to_owned();
    handle(r, &event)
}

fn handle(r: &HookRequest<'_>, event: &str) -> Result<HookOutcome, HookError> {
    let p = r.json()?;
    let with_title = r.user_topic().is_some();
    let repo = s(&p, "/repository/name")?;
    let (topic, content) = match event {
        "push" => {
            let branch = git::ref_name(s(&p, "/ref")?);
            if let Some(wanted) = (r.param)("branches") {
                if !wanted.split(',').any(|b| b.trim() == branch) {
                    return Ok(HookOutcome::Nothing);
                }
            }
            (git::branch_topic(repo, branch), push(&p)?)
        }
        "create" => {
            let branch = s(&p, "/ref")?;
            let url = format!("{}/src/{branch}", s(&p, "/repository/html_url")?);
            (
                git::branch_topic(repo, branch),
                format!(
                    "{} created branch [{branch}]({url}).",
                    s(&p, "/sender/username")?
                ),
            )
        }
        "pull_request" => (
            git::item_topic(
                repo,
                "PR",
                int(&p, "/pull_request/id")?,
                s(&p, "/pull_request/title")?,
            ),
            pull_request(&p, with_title)?,
        ),
        "issues" | "issue_comment" => (
            git::item_topic(
                repo,
                "issue",
                int(&p, "/issue/number")?,
                s(&p, "/issue/title")?,
            ),
            issue(&p, event, with_title)?,
        ),
        "release" => {
            let tag = s(&p, "/release/tag_name")?;
            let name = s(&p, "/release/name")?;
            (
                format!("{repo} / {tag} {name}"),
                format!(
                    "{} {} release [{name}]({}) for tag {tag}.",
                    s(&p, "/release/author/username")?,
                    s(&p, "/action")?,
                    s(&p, "/repository/html_url")?
                ),
            )
        }
        other => return Err(HookError::Unsupported(other.to_owned())),
    };
    Ok(HookOutcome::send(topic, content, event))
}

fn push(p: &Value) -> Result<String, HookError> {
    let commits: Vec<Commit> = items(p, "/commits")
        .iter()
        .map(|c| {
            let author = match nonempty(c, "/author/username") {
                Some(login) => login.to_owned(),
                None => s(c, "/author/name")?
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            };
            Ok(Commit {
                author,
                sha: s(c, "/id")?.to_owned(),
                url: s(c, "/url")?.to_owned(),
                message: s(c, "/message")?.to_owned(),
            })
        })
        .collect::<Result<_, HookError>>()?;
    Ok(git::push_message(&Push {
        pusher: s(p, "/sender/username")?,
        compare_url: opt_s(p, "/compare_url"),
        branch: git::ref_name(s(p, "/ref")?),
        commits: &commits,
        not_sent: 0,
        deleted: false,
        forced: false,
    }))
}

fn pull_request(p: &Value, with_title: bool) -> Result<String, HookError> {
    let (actor, action) = if flag(p, "/pull_request/merged") {
        (s(p, "/pull_request/merged_by/username")?, "merged")
    } else {
        (s(p, "/pull_request/user/username")?, s(p, "/action")?)
    };
    let branches = if action == "edited" {
        None
    } else {
        match (
            opt_s(p, "/pull_request/head/ref").or_else(|| opt_s(p, "/pull_request/head_branch")),
            opt_s(p, "/pull_request/base/ref").or_else(|| opt_s(p, "/pull_request/base_branch")),
        ) {
            (Some(head), Some(base)) => Some((head, base)),
            _ => None,
        }
    };
    let assignee = opt_s(p, "/pull_request/assignee/login");
    Ok(git::item_message(&ItemEvent {
        actor,
        action,
        kind: "PR",
        number: Some(int(p, "/pull_request/number")?),
        url: s(p, "/pull_request/html_url")?,
        title: if with_title {
            Some(s(p, "/pull_request/title")?)
        } else {
            None
        },
        branches,
        assignees: assignee.map(str::to_owned).into_iter().collect(),
        // The description, when the pull request is opened.
        text: if action == "opened" {
            opt_s(p, "/pull_request/body")
        } else {
            None
        },
        ..ItemEvent::default()
    }))
}

fn issue(p: &Value, event: &str, with_title: bool) -> Result<String, HookError> {
    let number = int(p, "/issue/number")?;
    let url = format!("{}/issues/{number}", s(p, "/repository/html_url")?);
    let comment_action;
    let (action, text, assignees) = if event == "issue_comment" {
        let link = s(p, "/comment/html_url")?;
        comment_action = match s(p, "/action")? {
            "created" => format!("[commented]({link}) on"),
            other => format!("{other} a [comment]({link}) on"),
        };
        (comment_action.as_str(), s(p, "/comment/body")?, Vec::new())
    } else {
        let assignee = opt_s(p, "/issue/assignee/login").map(str::to_owned);
        (
            s(p, "/action")?,
            s(p, "/issue/body")?,
            assignee.into_iter().collect(),
        )
    };
    Ok(git::item_message(&ItemEvent {
        actor: s(p, "/sender/login")?,
        action,
        kind: "issue",
        number: Some(number),
        url: &url,
        title: if with_title {
            Some(s(p, "/issue/title")?)
        } else {
            None
        },
        assignees,
        text: Some(text),
        ..ItemEvent::default()
    }))
}
