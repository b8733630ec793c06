//! The authorization matrix: every operation of the route table (`src/api/mod.rs`
//! `routes`) crossed with every kind of caller, on one server that holds two realms.
//!
//! Callers: no credentials, a bad API key, a deactivated user, a guest, a member, a
//! moderator, an administrator, the owner, a generic bot, the bot's owner (a member),
//! and a user of another realm: once with its own valid key on this realm's host
//! (`ForeignKey`: an unknown key here), once on its own realm's host with this realm's
//! ids (`Foreign`: they name nothing there).
//!
//! Each `Case` is one request (its path and parameters may depend on the caller, so
//! that a write that succeeds has an object of its own) and the whole expected answer
//! per caller: status, `code` and `msg` for errors, success otherwise. The answers are
//! Zulip's (`zerver/decorator.py`, `zerver/views/*.py`, `zerver/lib/*.py`), not what
//! hearth happened to answer. A refused request must change nothing: cases that name
//! an object read it (`probe`) before and after every refused call. The answers of the
//! other realm must never carry this realm's data. At the end, the objects no caller
//! may touch are compared with what they were before the matrix.
//!
//! `routes_are_all_covered` fails when the route table holds an operation the matrix
//! does not list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use crate::common::*;
use reqwest::Method;
use serde_json::{json, Value};

// ---- callers -----------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Who {
    /// No `Authorization` header.
    NoAuth,
    /// A member's email with a well-formed key that is not theirs.
    BadKey,
    /// A deactivated user's email and (former) key.
    Deactivated,
    /// The other realm's owner, with its valid key, on this realm's host.
    ForeignKey,
    /// The other realm's owner on its own host, using this realm's ids.
    Foreign,
    Guest,
    Member,
    Moderator,
    Admin,
    Owner,
    /// A generic bot owned by `BotOwner`.
    Bot,
    /// A member who owns `Bot`.
    BotOwner,
}
use Who::*;

/// The order in which every case is sent: the refused credentials first, then the
/// other realm, then the roles from the least to the most privileged (a bot before
/// its owner).
const CALLERS: [Who; 12] = [
    NoAuth,
    BadKey,
    Deactivated,
    ForeignKey,
    Foreign,
    Guest,
    Member,
    Moderator,
    Admin,
    Owner,
    Bot,
    BotOwner,
];

/// The callers that are users of this realm.
const USERS: [Who; 7] = [Guest, Member, Moderator, Admin, Owner, Bot, BotOwner];

impl Who {
    fn label(self) -> &'static str {
        match self {
            NoAuth => "noauth",
            BadKey => "badkey",
            Deactivated => "deactivated",
            ForeignKey => "foreignkey",
            Foreign => "foreign",
            Guest => "guest",
            Member => "member",
            Moderator => "moderator",
            Admin => "admin",
            Owner => "owner",
            Bot => "bot",
            BotOwner => "botowner",
        }
    }

    /// Refused before any rule runs.
    fn fails_auth(self) -> bool {
        matches!(self, NoAuth | BadKey | Deactivated | ForeignKey)
    }

    fn is_human(self) -> bool {
        self != Bot
    }
}

/// The deactivated caller, the password of the users the setup creates, and the
/// other realm.
const GONE_EMAIL: &str = "gone@authz.test";
const PASSWORD: &str = "authz matrix passphrase";
const OTHER_SUBDOMAIN: &str = "other";
const OTHER_OWNER: &str = "boss@other.test";

// ---- expected answers --------------------------------------------------------------

#[derive(Debug, Clone)]
enum Want {
    /// 200 `success`, and these JSON pointers hold these values.
    Ok(Vec<(&'static str, Value)>),
    /// A JSON error: status, `code`, `msg`.
    Err(u16, &'static str, String),
    /// A non-JSON answer with this status whose body contains this text.
    Page(u16, &'static str),
    /// A JSON document that is not a Zulip answer (no `result`): 200 and this key.
    Data(&'static str),
    /// Exactly this JSON document, not a Zulip answer, with this status (the refusals
    /// of Zulip's tus hook: `{"message": ...}`).
    Doc(u16, Value),
}

fn ok() -> Want {
    Want::Ok(Vec::new())
}

fn ok_with(pointer: &'static str, value: Value) -> Want {
    Want::Ok(vec![(pointer, value)])
}

fn err(status: u16, code: &'static str, msg: impl Into<String>) -> Want {
    Want::Err(status, code, msg.into())
}

fn bad(msg: impl Into<String>) -> Want {
    err(400, "BAD_REQUEST", msg)
}

fn not_admin() -> Want {
    err(
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
    )
}

fn not_owner() -> Want {
    err(
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization owner",
    )
}

fn no_bots() -> Want {
    bad("This endpoint does not accept bot requests.")
}

fn no_guests() -> Want {
    bad("Not allowed for guest users")
}

fn insufficient() -> Want {
    bad("Insufficient permission")
}

fn invalid_channel() -> Want {
    bad("Invalid channel ID")
}

fn invalid_message() -> Want {
    bad("Invalid message(s)")
}

fn no_such_user() -> Want {
    bad("No such user")
}

fn invalid_group() -> Want {
    bad("Invalid user group")
}

fn unknown_channel(id: i64) -> Want {
    err(
        400,
        "BAD_NARROW",
        format!("Invalid narrow operator: unknown channel {id}"),
    )
}

fn bad_queue(id: &str) -> Want {
    err(
        400,
        "BAD_EVENT_QUEUE_ID",
        format!("Bad event queue ID: {id}"),
    )
}

fn no_channel_id(id: i64) -> Want {
    err(
        400,
        "STREAM_DOES_NOT_EXIST",
        format!("Channel with ID '{id}' does not exist"),
    )
}

/// `require_member_or_admin` (`zerver/decorator.py`): guests, then bots, refused
/// before the view runs.
fn member_or_admin(w: Who, then: Want) -> Want {
    match w {
        Guest => no_guests(),
        Bot => no_bots(),
        _ => then,
    }
}

/// The answer to credentials that do not authenticate (`validate_api_key`: every
/// error becomes a 401 `UNAUTHORIZED` with its message). A key of the other realm is
/// unknown here (Zulip, whose keys are global, says "Account is not associated with
/// this subdomain", also 401 `UNAUTHORIZED`).
/// Zulip's tus hook's refusal of a request it cannot authenticate.
fn unauthenticated_upload() -> Want {
    Want::Doc(401, json!({"message": "Unauthenticated upload"}))
}

fn auth_failure(w: Who) -> Want {
    match w {
        NoAuth => err(
            401,
            "UNAUTHORIZED",
            "Not logged in: API authentication or user session required",
        ),
        BadKey | ForeignKey => err(401, "UNAUTHORIZED", "Invalid API key"),
        Deactivated => err(401, "USER_DEACTIVATED", "Account is deactivated"),
        _ => unreachable!("{w:?} authenticates"),
    }
}

// ---- the fixture -------------------------------------------------------------------

/// What the setup made in the development realm (realm A) and learned of the other
/// realm (realm B). `per` maps each caller to an object of its own.
struct Fx {
    /// Email and API key per caller (`NoAuth` has none).
    creds: HashMap<Who, (String, String)>,
    /// User id per caller (the other realm's owner's id there for the foreign ones).
    ids: HashMap<Who, i64>,
    other_host: String,
    othello: i64,
    bot: i64,
    verona: i64,
    /// A public channel only othello is in.
    public: i64,
    /// A private channel only othello is in.
    private: i64,
    /// A public channel othello is in, for unsubscribing others.
    removal: i64,
    /// A private channel othello and the bot's owner are in.
    owners: i64,
    /// Othello's messages: in the private channel, in the public one, one to react to.
    private_msg: i64,
    public_msg: i64,
    react_msg: i64,
    /// A group othello created (he and the owners' `can_manage_all_groups` manage it).
    group: i64,
    /// The id of `role:members` in each realm.
    members_group: i64,
    other_members_group: i64,
    linkifier: i64,
    linkifier_ids: Vec<i64>,
    field: i64,
    field_ids: Vec<i64>,
    folder: i64,
    folder_ids: Vec<i64>,
    /// Othello's scheduled message, attachment, navigation view, event queue.
    scheduled: i64,
    attachment: i64,
    attachment_path: String,
    /// Othello's resumable upload in progress (`/api/v1/tus/{upload_id}`).
    tus_upload: String,
    temporary_url: String,
    view_fragment: String,
    /// Othello's draft, saved snippet and reminder.
    draft: i64,
    snippet: i64,
    reminder: i64,
    othello_queue: String,
    /// The image URL of othello's shared emoji.
    emoji_image: String,
    /// The path of a written data export of iago's.
    export_download: String,
    /// Per caller: a member to deactivate and reactivate, a bot of the bot owner to
    /// deactivate, a channel to archive, a message of othello to delete, groups of
    /// othello to deactivate and to add as subgroups, othello's emoji, linkifiers and
    /// profile fields to delete.
    targets: HashMap<Who, i64>,
    bots: HashMap<Who, i64>,
    archive: HashMap<Who, i64>,
    doomed: HashMap<Who, i64>,
    groups: HashMap<Who, i64>,
    subgroups: HashMap<Who, i64>,
    emoji: HashMap<Who, String>,
    linkifiers: HashMap<Who, i64>,
    fields: HashMap<Who, i64>,
    /// Othello's email invitation; per caller, a reusable link of iago's to revoke;
    /// the path of iago's reusable link for the sign-up page.
    invite: i64,
    links: HashMap<Who, i64>,
    join_path: String,
}

impl Fx {
    /// The caller's own object of `map` (the refused credentials share the guest's:
    /// they never reach it).
    fn per<T: Clone>(&self, map: &HashMap<Who, T>, w: Who) -> T {
        map.get(&w)
            .or_else(|| map.get(&Guest))
            .cloned()
            .expect("an object per caller")
    }

    /// The caller's user id (the member's for the callers that are nobody).
    fn id(&self, w: Who) -> i64 {
        self.ids.get(&w).copied().unwrap_or(self.ids[&Member])
    }
}

// ---- cases ---------------------------------------------------------------------

type Params = Vec<(&'static str, String)>;

/// What a probe reads: as this user, GET this path (query included).
type Probe = fn(&Fx, Who) -> (&'static str, String);

/// One operation: its route-table entry, the request each caller sends, and the
/// answer each caller gets.
struct Case {
    method: &'static str,
    /// The route as the table spells it (`/api/v1/streams/{stream_id}`).
    route: &'static str,
    path: fn(&Fx, Who) -> String,
    params: fn(&Fx, Who) -> Params,
    want: fn(&Fx, Who) -> Want,
    /// `want` decides for every caller (no credentials needed, or read differently);
    /// otherwise the four refused credentials get `auth_failure`.
    all_callers: bool,
    /// A multipart body with one file under this field.
    file: Option<&'static str>,
    /// Request headers, and a body sent as it is (the tus protocol's requests).
    headers: &'static [(&'static str, &'static str)],
    raw_body: Option<&'static [u8]>,
    /// What a refused call must leave unchanged: read as this user with GET.
    probe: Option<Probe>,
    /// Where hearth is known to answer otherwise than Zulip.
    known: Option<Known>,
}

/// A known difference from Zulip: for the callers `hearth` names, hearth answers that
/// instead of `want`. The runner checks that it still does, so the difference is never
/// silent: every such cell is listed at the end of the run, and a cell that starts
/// answering as Zulip does (or anything else) fails until this is updated.
#[derive(Clone, Copy)]
struct Known {
    why: &'static str,
    hearth: fn(&Fx, Who) -> Option<Want>,
}

fn case(method: &'static str, route: &'static str) -> Case {
    Case {
        method,
        route,
        path: |_, _| String::new(),
        params: |_, _| Vec::new(),
        want: |_, _| ok(),
        all_callers: false,
        file: None,
        headers: &[],
        raw_body: None,
        probe: None,
        known: None,
    }
}

impl Case {
    fn at(mut self, path: fn(&Fx, Who) -> String) -> Case {
        self.path = path;
        self
    }

    fn with(mut self, params: fn(&Fx, Who) -> Params) -> Case {
        self.params = params;
        self
    }

    fn want(mut self, want: fn(&Fx, Who) -> Want) -> Case {
        self.want = want;
        self
    }

    fn all_callers(mut self) -> Case {
        self.all_callers = true;
        self
    }

    fn file(mut self, field: &'static str) -> Case {
        self.file = Some(field);
        self
    }

    /// Sends these headers and this body as it is.
    fn raw(
        mut self,
        headers: &'static [(&'static str, &'static str)],
        body: &'static [u8],
    ) -> Case {
        self.headers = headers;
        self.raw_body = Some(body);
        self
    }

    fn probe(mut self, probe: Probe) -> Case {
        self.probe = Some(probe);
        self
    }

    /// Marks a known difference from Zulip (see `Known`).
    fn differs(mut self, why: &'static str, hearth: fn(&Fx, Who) -> Option<Want>) -> Case {
        self.known = Some(Known { why, hearth });
        self
    }

    /// The concrete path: `at`, else the route itself.
    fn path_for(&self, fx: &Fx, w: Who) -> String {
        let p = (self.path)(fx, w);
        if p.is_empty() {
            self.route.to_owned()
        } else {
            p
        }
    }

    fn want_for(&self, fx: &Fx, w: Who) -> Want {
        if w.fails_auth() && !self.all_callers {
            auth_failure(w)
        } else {
            (self.want)(fx, w)
        }
    }
}

/// The JSON list of one id.
fn list(id: i64) -> String {
    json!([id]).to_string()
}

/// A channel narrow.
fn narrow(channel: i64) -> String {
    json!([{"operator": "channel", "operand": channel}]).to_string()
}

const NARROW_HIDES_CHANNELS: &str =
    "hearth hides a channel the caller cannot see from narrows (`parse_narrow` \
                 filters with `can_see_channel`) and answers BAD_NARROW; Zulip's `by_channel` \
                 looks the channel up unchecked and lets per-message access decide, which also \
                 lets a former subscriber of a private channel read their own history of it";

const SEND_HIDES_CHANNELS: &str = "hearth answers STREAM_DOES_NOT_EXIST for a channel \
     the sender cannot see (`channel_for_send` filters with `can_see_channel`), where Zulip \
     finds the channel and `access_stream_for_send_message` answers \"Not authorized to \
     send to channel '...'\"; and hearth lacks Zulip's rule that a bot may post wherever \
     its owner is subscribed";

/// The matrix, in the order it runs: writes that later cases depend on come before
/// them (subscribe before unsubscribe, reorders before creations, ...). The one case
/// that deactivates its callers runs after the final state check (`last_cases`).
fn cases() -> Vec<Case> {
    let mut c = Vec::new();

    // ---- without credentials ---------------------------------------------------------
    // First: the temporary URL lives 60 seconds.
    c.push(
        case("GET", "/user_uploads/temporary/{token}/{filename}")
            .at(|f, _| f.temporary_url.clone())
            .all_callers()
            .want(|_, w| match w {
                // The token names a file of this realm only.
                Foreign => bad("Invalid token"),
                _ => Want::Page(200, "authz attachment"),
            }),
    );
    c.push(case("GET", "/health").all_callers());
    // The emoji data `server_emoji_data_url` names: public, the same everywhere.
    c.push(
        case("GET", "/static/generated/emoji/emoji_api.json")
            .all_callers()
            .want(|_, _| Want::Data("code_to_names")),
    );
    // The icon: the same bytes for everyone, on every realm.
    for route in ["/static/images/logo/zulip-icon-128x128.png", "/favicon.ico"] {
        c.push(
            case("GET", route)
                .all_callers()
                .want(|_, _| Want::Page(200, "PNG")),
        );
    }
    c.push(case("GET", "/health/ready").all_callers());
    c.push(
        case("GET", "/api/v1/server_settings")
            .all_callers()
            .want(|_, w| match w {
                Foreign => ok_with("/realm_name", json!("Realm other")),
                _ => ok_with("/realm_name", json!("Zulip Dev")),
            }),
    );
    c.push(
        case("POST", "/api/v1/dev_fetch_api_key")
            .with(|_, _| p(&[("username", HAMLET)]))
            .all_callers()
            .want(|f, w| match w {
                // The other realm is not a development realm: no key without a
                // password there, whoever asks.
                Foreign => err(400, "BAD_REQUEST", "DevAuthBackend not enabled."),
                _ => ok_with("/user_id", json!(f.id(Member))),
            }),
    );
    c.push(
        case("POST", "/api/v1/fetch_api_key")
            .with(|_, _| p(&[("username", GONE_EMAIL), ("password", PASSWORD)]))
            .all_callers()
            .want(|_, w| match w {
                Foreign => err(
                    401,
                    "AUTHENTICATION_FAILED",
                    "Your username or password is incorrect",
                ),
                _ => err(401, "USER_DEACTIVATED", "Account is deactivated"),
            }),
    );
    // Custom emoji images are public, on their realm's host only.
    c.push(
        case("GET", "/user_avatars/{realm}/emoji/images/{file_name}")
            .at(|f, _| f.emoji_image.clone())
            .all_callers()
            .want(|_, w| match w {
                Foreign => err(404, "NOT_FOUND", "Not Found"),
                _ => Want::Page(200, "PNG"),
            }),
    );
    // A data export downloads without credentials (its token is the secret), on its
    // realm's host only.
    c.push(
        case("GET", "/user_avatars/exports/{realm}/{token}/{file_name}")
            .at(|f, _| f.export_download.clone())
            .all_callers()
            .want(|_, w| match w {
                Foreign => err(404, "NOT_FOUND", "Not Found"),
                _ => Want::Page(200, "HEARTHAR"),
            }),
    );
    // Othello's upload, linked from no message: only he may read it.
    c.push(
        case("GET", "/user_uploads/{realm_id}/{path:.*}")
            .at(|f, _| format!("/user_uploads/{}", f.attachment_path))
            .all_callers()
            .want(|_, w| match w {
                NoAuth | Guest | Member | Moderator | Admin | Owner | Bot | BotOwner => {
                    Want::Page(403, "You are not authorized to view this file.")
                }
                Foreign => Want::Page(404, "This file does not exist or has been deleted."),
                _ => auth_failure(w),
            }),
    );

    // ---- users ---------------------------------------------------------------------
    c.push(case("GET", "/api/v1/users/me").want(|f, w| ok_with("/user_id", json!(f.id(w)))));
    c.push(case("GET", "/api/v1/users"));
    c.push(
        case("POST", "/api/v1/users")
            .with(|_, w| {
                vec![
                    ("email", format!("new-{}@authz.test", w.label())),
                    ("password", PASSWORD.to_owned()),
                    ("full_name", format!("New {}", w.label())),
                ]
            })
            .want(|_, w| match w {
                // `create_user_backend`: `require_realm_admin`, then `can_create_users`.
                Admin | Foreign => ok(),
                Owner => bad("User not authorized to create users"),
                _ => not_admin(),
            })
            .probe(|_, w| (IAGO, format!("/api/v1/users/new-{}@authz.test", w.label()))),
    );
    c.push(
        case("POST", "/api/v1/users")
            .with(|_, w| {
                vec![
                    ("email", "welcome-bot@zulip.com".to_owned()),
                    ("password", PASSWORD.to_owned()),
                    ("full_name", format!("Not A Bot {}", w.label())),
                ]
            })
            .want(|_, w| match w {
                // Past the role checks, no caller may take a system bot's address.
                Admin | Foreign => bad("welcome-bot@zulip.com is reserved for system bots"),
                Owner => bad("User not authorized to create users"),
                _ => not_admin(),
            }),
    );
    c.push(
        case("GET", "/api/v1/users/{user}")
            .at(|f, _| format!("/api/v1/users/{}", f.othello))
            .want(|f, w| match w {
                Foreign => no_such_user(),
                _ => ok_with("/user/user_id", json!(f.othello)),
            }),
    );
    // The bot's name: its owner and the administrators (`access_user_by_id(for_admin)`).
    c.push(
        case("PATCH", "/api/v1/users/{user}")
            .at(|f, _| format!("/api/v1/users/{}", f.bot))
            .with(|_, w| vec![("full_name", format!("Authz Bot {}", w.label()))])
            .want(|_, w| match w {
                Admin | Owner | BotOwner => ok(),
                Foreign => no_such_user(),
                _ => insufficient(),
            })
            .probe(|f, _| (IAGO, format!("/api/v1/users/{}", f.bot))),
    );
    c.push(
        case("DELETE", "/api/v1/users/{user}")
            .at(|f, w| format!("/api/v1/users/{}", f.per(&f.targets, w)))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => no_such_user(),
                _ => insufficient(),
            })
            .probe(|f, w| (IAGO, format!("/api/v1/users/{}", f.per(&f.targets, w)))),
    );
    c.push(
        case("POST", "/api/v1/users/{user_id}/reactivate")
            .at(|f, w| format!("/api/v1/users/{}/reactivate", f.per(&f.targets, w)))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => no_such_user(),
                _ => insufficient(),
            })
            .probe(|f, w| (IAGO, format!("/api/v1/users/{}", f.per(&f.targets, w)))),
    );
    c.push(
        case("GET", "/api/v1/users/{user_id_or_email}/presence")
            .at(|f, _| format!("/api/v1/users/{}/presence", f.othello))
            .want(|_, w| match w {
                Foreign => no_such_user(),
                _ => ok(),
            }),
    );
    c.push(
        case("GET", "/api/v1/users/{user_id}/status")
            .at(|f, _| format!("/api/v1/users/{}/status", f.othello))
            .want(|_, w| match w {
                Foreign => no_such_user(),
                _ => ok(),
            }),
    );
    // `human_users_only`.
    c.push(
        case("POST", "/api/v1/users/me/presence")
            .with(|_, _| p(&[("status", "active")]))
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(
        case("POST", "/api/v1/users/me/status")
            .with(|_, w| vec![("status_text", format!("authz {}", w.label()))])
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(case("GET", "/api/v1/realm/presence"));

    // ---- bots ----------------------------------------------------------------------
    // Before any bot is created below.
    c.push(
        case("GET", "/api/v1/bots")
            // `get_bots_backend` is `require_member_or_admin`, and lists the caller's own
            // bots: an administrator who owns none sees none.
            .want(|_, w| match w {
                Admin => ok_with("/bots", json!([])),
                _ => member_or_admin(w, ok()),
            }),
    );
    c.push(
        case("POST", "/api/v1/bots")
            .with(|_, w| {
                vec![
                    ("full_name", format!("Made by {}", w.label())),
                    ("short_name", format!("made-{}", w.label())),
                ]
            })
            // `add_bot_backend` is `require_member_or_admin`.
            .want(|_, w| member_or_admin(w, ok())),
    );
    c.push(
        case("DELETE", "/api/v1/bots/{bot_id}")
            .at(|f, w| format!("/api/v1/bots/{}", f.per(&f.bots, w)))
            .want(|_, w| match w {
                Admin | Owner | BotOwner => ok(),
                Foreign => bad("No such bot"),
                _ => insufficient(),
            })
            .probe(|f, w| (IAGO, format!("/api/v1/users/{}", f.per(&f.bots, w)))),
    );

    // ---- channels ------------------------------------------------------------------
    c.push(case("GET", "/api/v1/streams"));
    c.push(
        case("POST", "/api/v1/channels/create")
            .with(|_, w| vec![("name", format!("authz-new-{}", w.label()))])
            // `create_channel` is `require_non_guest_user`.
            .want(|_, w| match w {
                Guest => no_guests(),
                _ => ok(),
            })
            .probe(|_, w| {
                (
                    IAGO,
                    format!("/api/v1/get_stream_id?stream=authz-new-{}", w.label()),
                )
            }),
    );
    // The private channel's metadata: its subscribers and the administrators.
    c.push(
        case("GET", "/api/v1/streams/{stream_id}")
            .at(|f, _| format!("/api/v1/streams/{}", f.private))
            .want(|f, w| match w {
                Admin | Owner => ok_with("/stream/stream_id", json!(f.private)),
                _ => invalid_channel(),
            }),
    );
    c.push(
        case("PATCH", "/api/v1/streams/{stream_id}")
            .at(|f, _| format!("/api/v1/streams/{}", f.public))
            .with(|_, w| vec![("description", format!("authz {}", w.label()))])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                // A guest cannot see a public channel it is not in.
                Guest | Foreign => invalid_channel(),
                _ => bad("You do not have permission to administer this channel."),
            })
            .probe(|f, _| (IAGO, format!("/api/v1/streams/{}", f.public))),
    );
    c.push(
        case("DELETE", "/api/v1/streams/{stream_id}")
            .at(|f, w| format!("/api/v1/streams/{}", f.per(&f.archive, w)))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                // A guest cannot see a public channel it is not in.
                Guest | Foreign => invalid_channel(),
                _ => bad("You do not have permission to administer this channel."),
            })
            .probe(|f, w| (IAGO, format!("/api/v1/streams/{}", f.per(&f.archive, w)))),
    );
    c.push(
        case("GET", "/api/v1/streams/{stream_id}/members")
            .at(|f, _| format!("/api/v1/streams/{}/members", f.private))
            .want(|f, w| match w {
                Admin | Owner => ok_with("/subscribers", json!([f.othello])),
                _ => invalid_channel(),
            }),
    );
    c.push(
        case("GET", "/api/v1/get_stream_id")
            .with(|_, _| p(&[("stream", "authz-private")]))
            // `json_get_stream_id`: `access_stream_by_name` with content access, which
            // administrators lack too.
            .want(|_, _| bad("Invalid channel name 'authz-private'")),
    );
    c.push(
        case("GET", "/api/v1/users/{user_id}/subscriptions/{stream_id}")
            .at(|f, _| format!("/api/v1/users/{}/subscriptions/{}", f.othello, f.private))
            .want(|_, w| match w {
                Admin | Owner => ok_with("/is_subscribed", json!(true)),
                Foreign => no_such_user(),
                _ => invalid_channel(),
            }),
    );
    c.push(
        case("POST", "/api/v1/users/me/subscriptions")
            .with(|_, _| {
                vec![(
                    "subscriptions",
                    json!([{"name": "authz-public"}]).to_string(),
                )]
            })
            // `add_subscriptions_backend` is `require_non_guest_user`: guests subscribe
            // nobody, themselves included.
            .want(|_, w| match w {
                Guest => no_guests(),
                _ => ok(),
            }),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/subscriptions")
            .with(|_, _| vec![("subscriptions", json!(["authz-public"]).to_string())])
            .want(|_, w| match w {
                Guest => ok_with("/not_removed", json!(["authz-public"])),
                _ => ok_with("/removed", json!(["authz-public"])),
            }),
    );
    // Removing someone else: `can_remove_subscribers_group` (administrators).
    c.push(
        case("DELETE", "/api/v1/users/me/subscriptions")
            .with(|f, _| {
                vec![
                    ("subscriptions", json!(["authz-removal"]).to_string()),
                    ("principals", list(f.othello)),
                ]
            })
            .want(|_, w| match w {
                Admin => ok_with("/removed", json!(["authz-removal"])),
                Owner => ok_with("/not_removed", json!(["authz-removal"])),
                // Principals are looked up first (`remove_subscriptions_backend`).
                Foreign => no_such_user(),
                _ => insufficient(),
            })
            .probe(|f, _| {
                (
                    IAGO,
                    format!("/api/v1/users/{}/subscriptions/{}", f.othello, f.removal),
                )
            }),
    );
    c.push(case("GET", "/api/v1/users/me/subscriptions"));
    c.push(
        case("POST", "/api/v1/users/me/subscriptions/properties")
            .with(|f, _| {
                vec![(
                    "subscription_data",
                    json!([{"stream_id": f.private, "property": "pin_to_top", "value": true}])
                        .to_string(),
                )]
            })
            .want(|_, _| invalid_channel()),
    );
    c.push(
        case("POST", "/api/v1/default_streams")
            .with(|f, _| vec![("stream_id", f.public.to_string())])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => invalid_channel(),
                _ => not_admin(),
            })
            .probe(|f, _| (IAGO, format!("/api/v1/streams/{}", f.public))),
    );
    c.push(
        case("DELETE", "/api/v1/default_streams")
            .with(|f, _| vec![("stream_id", f.public.to_string())])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => invalid_channel(),
                _ => not_admin(),
            })
            .probe(|f, _| (IAGO, format!("/api/v1/streams/{}", f.public))),
    );
    c.push(case("GET", "/api/v1/channel_folders"));
    // Before any folder is created: the order lists every folder.
    c.push(
        case("PATCH", "/api/v1/channel_folders")
            .with(|f, _| vec![("order", json!(f.folder_ids).to_string())])
            .want(|_, w| match w {
                // The other realm has no folder: any order lists them all.
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            })
            .probe(|_, _| (IAGO, "/api/v1/channel_folders".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/channel_folders/create")
            .with(|_, w| vec![("name", format!("authz folder {}", w.label()))])
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            })
            .probe(|_, _| {
                (
                    IAGO,
                    "/api/v1/channel_folders?include_archived=true".to_owned(),
                )
            }),
    );
    c.push(
        case("PATCH", "/api/v1/channel_folders/{channel_folder_id}")
            .at(|f, _| format!("/api/v1/channel_folders/{}", f.folder))
            .with(|_, w| vec![("description", format!("authz {}", w.label()))])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => bad("Invalid channel folder ID"),
                _ => not_admin(),
            })
            .probe(|_, _| {
                (
                    IAGO,
                    "/api/v1/channel_folders?include_archived=true".to_owned(),
                )
            }),
    );

    // ---- messages ------------------------------------------------------------------
    // A narrow to a channel is not an access check: nobody outside it finds anything.
    c.push(
        case("GET", "/api/v1/messages")
            .with(|f, _| {
                vec![
                    ("narrow", narrow(f.private)),
                    ("anchor", "newest".to_owned()),
                    ("num_before", "10".to_owned()),
                    ("num_after", "0".to_owned()),
                ]
            })
            .want(|f, w| match w {
                Foreign => unknown_channel(f.private),
                _ => ok_with("/messages", json!([])),
            })
            .differs(NARROW_HIDES_CHANNELS, |f, w| {
                (!matches!(w, Admin | Owner | Foreign)).then(|| unknown_channel(f.private))
            }),
    );
    c.push(
        case("POST", "/api/v1/messages")
            .with(|f, w| {
                vec![
                    ("type", "stream".to_owned()),
                    ("to", f.public.to_string()),
                    ("topic", "authz".to_owned()),
                    ("content", format!("sent by {}", w.label())),
                ]
            })
            .want(|f, w| match w {
                // `access_stream_for_send_message`: a guest only where it is subscribed.
                Guest => bad("Not authorized to send to channel 'authz-public'"),
                Foreign => no_channel_id(f.public),
                _ => ok(),
            })
            .differs(SEND_HIDES_CHANNELS, |f, w| {
                (w == Guest).then(|| no_channel_id(f.public))
            })
            .probe(|f, _| (OTHELLO, newest_in(f.public))),
    );
    c.push(
        case("POST", "/api/v1/messages")
            .with(|f, w| {
                vec![
                    ("type", "stream".to_owned()),
                    ("to", f.private.to_string()),
                    ("topic", "authz".to_owned()),
                    ("content", format!("sent by {}", w.label())),
                ]
            })
            .want(|f, w| match w {
                Foreign => no_channel_id(f.private),
                _ => bad("Not authorized to send to channel 'authz-private'"),
            })
            .differs(SEND_HIDES_CHANNELS, |f, w| {
                (!matches!(w, Admin | Owner | Foreign)).then(|| no_channel_id(f.private))
            })
            .probe(|f, _| (OTHELLO, newest_in(f.private))),
    );
    // An incoming webhook, with the caller's key in the URL as services send it
    // (`webhook_view`): a message to a public channel.
    c.push(
        case("POST", "/api/v1/external/{integration_name}")
            .at(|f, w| {
                // No credentials: no key in the URL.
                let mut pairs: Vec<(&str, String)> = f
                    .creds
                    .get(&w)
                    .map(|(_, key)| ("api_key", key.clone()))
                    .into_iter()
                    .collect();
                pairs.push(("stream", f.public.to_string()));
                pairs.push(("topic", "authz".to_owned()));
                let query = serde_urlencoded::to_string(pairs).unwrap();
                format!("/api/v1/external/slack_incoming?{query}")
            })
            .with(|_, w| {
                vec![(
                    "payload",
                    json!({ "text": format!("hooked by {}", w.label()) }).to_string(),
                )]
            })
            .all_callers()
            .want(|_, w| match w {
                NoAuth => err(
                    400,
                    "REQUEST_VARIABLE_MISSING",
                    "Missing 'api_key' argument",
                ),
                // `access_user_by_api_key`: its own errors, not Basic auth's.
                BadKey => err(401, "INVALID_API_KEY", "Invalid API key"),
                Deactivated => err(401, "USER_DEACTIVATED", "Account is deactivated"),
                ForeignKey => bad("Account is not associated with this subdomain"),
                Guest => bad("Not authorized to send to channel 'authz-public'"),
                // The other realm has no such channel: `check_send_webhook_message`
                // answers success and sends nothing.
                _ => ok(),
            })
            .differs(
                "hearth looks a key up in the realm of the Host only, so another \
                 realm's key is an unknown one (INVALID_API_KEY) rather than Zulip's \
                 \"Account is not associated with this subdomain\"; and a guest's send to \
                 a channel it cannot see is a channel that does not exist (see \
                 SEND_HIDES_CHANNELS), which a webhook answers with success",
                |_, w| match w {
                    ForeignKey => Some(err(401, "INVALID_API_KEY", "Invalid API key")),
                    Guest => Some(ok()),
                    _ => None,
                },
            )
            .probe(|f, _| (OTHELLO, newest_in(f.public))),
    );
    // A private channel the bot's owner is in: "bots can send to any channel their
    // owner can" (`access_stream_for_send_message`).
    c.push(
        case("POST", "/api/v1/messages")
            .with(|f, w| {
                vec![
                    ("type", "stream".to_owned()),
                    ("to", f.owners.to_string()),
                    ("topic", "authz".to_owned()),
                    ("content", format!("sent by {}", w.label())),
                ]
            })
            .want(|f, w| match w {
                Bot | BotOwner => ok(),
                Foreign => no_channel_id(f.owners),
                _ => bad("Not authorized to send to channel 'authz-owners'"),
            })
            .differs(SEND_HIDES_CHANNELS, |f, w| {
                matches!(w, Guest | Member | Moderator | Bot).then(|| no_channel_id(f.owners))
            })
            .probe(|f, _| (OTHELLO, newest_in(f.owners))),
    );
    // `do_update_message_flags` checks access to the messages the caller has no flags
    // for, when the change is not a no-op for them (adding `read` is one).
    c.push(
        case("POST", "/api/v1/messages/flags")
            .with(|f, _| {
                vec![
                    ("messages", list(f.private_msg)),
                    ("op", "add".to_owned()),
                    ("flag", "starred".to_owned()),
                ]
            })
            .want(|_, _| invalid_message()),
    );
    c.push(
        case("POST", "/api/v1/messages/flags/narrow")
            .with(|f, _| {
                vec![
                    ("narrow", narrow(f.private)),
                    ("anchor", "oldest".to_owned()),
                    ("num_before", "0".to_owned()),
                    ("num_after", "10".to_owned()),
                    ("op", "add".to_owned()),
                    ("flag", "starred".to_owned()),
                ]
            })
            .want(|f, w| match w {
                Foreign => unknown_channel(f.private),
                _ => ok_with("/processed_count", json!(0)),
            })
            .differs(NARROW_HIDES_CHANNELS, |f, w| {
                (!matches!(w, Admin | Owner | Foreign)).then(|| unknown_channel(f.private))
            }),
    );
    // Marking read: the caller's own unread messages only; a channel must be one whose
    // content the caller may access (`access_stream_by_id`), a topic one it received.
    c.push(case("POST", "/api/v1/mark_all_as_read").want(|_, _| ok_with("/complete", json!(true))));
    c.push(
        case("POST", "/api/v1/mark_stream_as_read")
            .with(|f, _| vec![("stream_id", f.public.to_string())])
            .want(|_, w| match w {
                // A guest cannot see a public channel it is not in.
                Guest | Foreign => invalid_channel(),
                _ => ok(),
            }),
    );
    c.push(
        case("POST", "/api/v1/mark_topic_as_read")
            .with(|f, _| {
                vec![
                    ("stream_id", f.public.to_string()),
                    ("topic_name", "authz nothing".to_owned()),
                ]
            })
            .want(|_, w| match w {
                Guest | Foreign => invalid_channel(),
                _ => bad("No such topic 'authz nothing'"),
            }),
    );
    c.push(
        case("POST", "/api/v1/messages/render")
            .with(|_, _| p(&[("content", "**authz**")]))
            .want(|_, _| ok_with("/rendered", json!("<p><strong>authz</strong></p>"))),
    );
    // Only messages the caller received match: nobody but othello got his private one.
    c.push(
        case("GET", "/api/v1/messages/matches_narrow")
            .with(|f, _| {
                vec![
                    ("msg_ids", list(f.private_msg)),
                    ("narrow", "[]".to_owned()),
                ]
            })
            .want(|_, _| ok_with("/messages", json!({}))),
    );
    c.push(
        case("GET", "/api/v1/messages/{message_id}")
            .at(|f, _| format!("/api/v1/messages/{}", f.private_msg))
            .want(|_, _| invalid_message()),
    );
    c.push(
        case("GET", "/api/v1/messages/{message_id}")
            .at(|f, _| format!("/api/v1/messages/{}", f.public_msg))
            .want(|f, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok_with("/message/id", json!(f.public_msg)),
            }),
    );
    c.push(
        case("PATCH", "/api/v1/messages/{message_id}")
            .at(|f, _| format!("/api/v1/messages/{}", f.public_msg))
            .with(|_, w| vec![("content", format!("edited by {}", w.label()))])
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => bad("You don't have permission to edit this message"),
            })
            .probe(|f, _| (OTHELLO, format!("/api/v1/messages/{}", f.public_msg))),
    );
    c.push(
        case("DELETE", "/api/v1/messages/{message_id}")
            .at(|f, w| format!("/api/v1/messages/{}", f.per(&f.doomed, w)))
            .want(|_, w| match w {
                // `can_delete_any_message_group` is `role:administrators`.
                Admin | Owner => ok(),
                Guest | Foreign => invalid_message(),
                _ => bad("You don't have permission to delete this message"),
            })
            .probe(|f, w| (OTHELLO, format!("/api/v1/messages/{}", f.per(&f.doomed, w)))),
    );
    c.push(
        case("GET", "/api/v1/messages/{message_id}/history")
            .at(|f, _| format!("/api/v1/messages/{}/history", f.public_msg))
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok(),
            }),
    );
    c.push(
        case("POST", "/api/v1/messages/{message_id}/reactions")
            .at(|f, _| format!("/api/v1/messages/{}/reactions", f.react_msg))
            .with(|_, _| p(&[("emoji_name", "smile")]))
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok(),
            })
            .probe(|f, _| (OTHELLO, format!("/api/v1/messages/{}", f.react_msg))),
    );
    c.push(
        case("DELETE", "/api/v1/messages/{message_id}/reactions")
            .at(|f, _| format!("/api/v1/messages/{}/reactions", f.react_msg))
            .with(|_, _| p(&[("emoji_name", "smile")]))
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok(),
            })
            .probe(|f, _| (OTHELLO, format!("/api/v1/messages/{}", f.react_msg))),
    );
    c.push(
        case("GET", "/api/v1/users/me/{stream_id}/topics")
            .at(|f, _| format!("/api/v1/users/me/{}/topics", f.private))
            .want(|_, _| invalid_channel()),
    );
    c.push(
        case("POST", "/api/v1/typing")
            .with(|f, _| {
                vec![
                    ("type", "stream".to_owned()),
                    ("stream_id", f.private.to_string()),
                    ("topic", "authz".to_owned()),
                    ("op", "start".to_owned()),
                ]
            })
            .want(|_, _| invalid_channel()),
    );
    // Typing while editing othello's message: only he may edit it.
    c.push(
        case("POST", "/api/v1/messages/{message_id}/typing")
            .at(|f, _| format!("/api/v1/messages/{}/typing", f.react_msg))
            .with(|_, _| p(&[("op", "start")]))
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => bad("You don't have permission to edit this message"),
            }),
    );
    // A topic with no messages: deleting it completes at once.
    c.push(
        case("POST", "/api/v1/streams/{stream_id}/delete_topic")
            // The other realm's own first channels hold the lowest ids (Verona's among
            // them): the foreign caller names one that is this realm's only.
            .at(|f, w| {
                let id = if w == Foreign { f.private } else { f.verona };
                format!("/api/v1/streams/{id}/delete_topic")
            })
            .with(|_, _| p(&[("topic_name", "authz nothing here")]))
            .want(|_, w| match w {
                Admin | Owner => ok_with("/complete", json!(true)),
                Foreign => invalid_channel(),
                _ => not_admin(),
            }),
    );
    // Each caller joins a channel of its own, created for it, and leaves it again; the
    // other realm's owner only leaves (creating a channel there would give it ids that
    // later cases expect to name nothing).
    c.push(
        case("PATCH", "/api/v1/users/me/subscriptions")
            .with(|_, w| {
                let name = format!("authz bulk {}", w.label());
                let mut params = vec![("delete", json!([name]).to_string())];
                if w != Foreign {
                    params.push(("add", json!([{ "name": name }]).to_string()));
                }
                params
            })
            .want(|_, w| match w {
                Guest => no_guests(),
                Foreign => err(
                    400,
                    "STREAM_DOES_NOT_EXIST",
                    "Channel 'authz bulk foreign' does not exist",
                ),
                _ => ok_with("/removed", json!([format!("authz bulk {}", w.label())])),
            }),
    );
    c.push(
        case("GET", "/api/v1/users/{user_id}/channels")
            .at(|f, _| format!("/api/v1/users/{}/channels", f.othello))
            .want(|_, w| match w {
                Foreign => no_such_user(),
                _ => ok(),
            }),
    );
    // Editing a bot: `require_member_or_admin`, then its owner and the administrators
    // (`access_bot_by_id`).
    c.push(
        case("PATCH", "/api/v1/bots/{bot_id}")
            .at(|f, _| format!("/api/v1/bots/{}", f.bot))
            .with(|_, _| vec![("full_name", "Renamed Bot".to_owned())])
            .want(|_, w| match w {
                Admin | Owner | BotOwner => ok(),
                Foreign => bad("No such bot"),
                _ => member_or_admin(w, insufficient()),
            }),
    );
    // Bot storage: every account keeps its own (`zerver/views/storage.py`).
    c.push(case("GET", "/api/v1/bot_storage"));
    c.push(
        case("PUT", "/api/v1/bot_storage")
            .with(|_, w| vec![("storage", format!(r#"{{"who": "{}"}}"#, w.label()))]),
    );
    c.push(case("DELETE", "/api/v1/bot_storage"));
    // The bot's key: its owner and the administrators (`access_bot_by_id`).
    c.push(
        case("GET", "/api/v1/bots/{bot_id}/api_key")
            .at(|f, _| format!("/api/v1/bots/{}/api_key", f.bot))
            .want(|_, w| match w {
                Admin | Owner | BotOwner => ok(),
                Foreign => bad("No such bot"),
                _ => insufficient(),
            }),
    );
    // Othello's status: administrators only (`access_user_by_id(for_admin=True)`).
    c.push(
        case("POST", "/api/v1/users/{user_id}/status")
            .at(|f, _| format!("/api/v1/users/{}/status", f.othello))
            .with(|_, w| vec![("status_text", format!("set by {}", w.label()))])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => no_such_user(),
                _ => insufficient(),
            })
            .probe(|f, _| (IAGO, format!("/api/v1/users/{}/status", f.othello))),
    );
    c.push(
        case("GET", "/api/v1/streams/{stream_id}/email_address")
            // The other realm's own first channels hold the lowest ids (Verona's among
            // them): the foreign caller names one that is this realm's only.
            .at(|f, w| {
                let id = if w == Foreign { f.private } else { f.verona };
                format!("/api/v1/streams/{id}/email_address")
            })
            .want(|_, w| match w {
                Foreign => invalid_channel(),
                _ => ok(),
            }),
    );
    // The matrix's realms have no moderation request channel: refused for every caller,
    // after the parameters.
    c.push(
        case("POST", "/api/v1/messages/{message_id}/report")
            .at(|f, _| format!("/api/v1/messages/{}/report", f.public_msg))
            .with(|_, _| p(&[("report_type", "spam")]))
            .want(|_, _| bad("Message reporting is not enabled in this organization.")),
    );
    c.push(
        case("POST", "/api/v1/realm/playgrounds")
            .with(|_, w| {
                vec![
                    ("name", format!("authz {}", w.label())),
                    ("pygments_language", "Rust".to_owned()),
                    ("url_template", "https://play.example/{code}".to_owned()),
                ]
            })
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            }),
    );
    c.push(
        case("DELETE", "/api/v1/realm/playgrounds/{playground_id}")
            .at(|_, _| "/api/v1/realm/playgrounds/999999".to_owned())
            .want(|_, w| match w {
                Admin | Owner | Foreign => bad("Invalid playground"),
                _ => not_admin(),
            }),
    );
    // Data exports: administrators and owners (`require_realm_admin`), both types.
    c.push(
        case("POST", "/api/v1/export/realm")
            .with(|_, w| {
                let t = if w == Owner { "2" } else { "1" };
                vec![("export_type", t.to_owned())]
            })
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            }),
    );
    c.push(case("GET", "/api/v1/export/realm").want(|_, w| match w {
        Admin | Owner | Foreign => ok(),
        _ => not_admin(),
    }));
    c.push(
        case("GET", "/api/v1/export/realm/consents").want(|_, w| match w {
            Admin | Owner | Foreign => ok(),
            _ => not_admin(),
        }),
    );
    c.push(
        case("DELETE", "/api/v1/export/realm/{export_id}")
            .at(|_, _| "/api/v1/export/realm/999999".to_owned())
            .want(|_, w| match w {
                Admin | Owner | Foreign => bad("Invalid data export ID"),
                _ => not_admin(),
            }),
    );
    // No video-call provider is configured: every authenticated caller hears so.
    c.push(
        case("GET", "/api/v1/calls/bigbluebutton/create")
            .with(|_, _| p(&[("meeting_name", "authz")]))
            .want(|_, _| bad("BigBlueButton is not configured.")),
    );
    c.push(
        case("POST", "/api/v1/calls/constructorgroups/create")
            .want(|_, _| bad("Constructor Groups is not configured.")),
    );
    // The matrix's server has a relay; each caller's legacy tokens (if any) are sent
    // a test notification.
    c.push(
        case("POST", "/api/v1/mobile_push/test_notification").want(|_, w| match w {
            Bot => no_bots(),
            _ => ok(),
        }),
    );
    c.push(case("GET", "/api/v1/scheduled_messages"));
    c.push(
        case("POST", "/api/v1/scheduled_messages")
            .with(|f, w| {
                // The other realm's own first channels hold the lowest ids (Verona's
                // among them): the foreign caller names one that is this realm's only.
                let to = if w == Foreign { f.private } else { f.verona };
                vec![
                    ("type", "stream".to_owned()),
                    ("to", to.to_string()),
                    ("topic", "authz".to_owned()),
                    ("content", format!("scheduled by {}", w.label())),
                    ("scheduled_delivery_timestamp", in_a_day().to_string()),
                ]
            })
            .want(|f, w| match w {
                Foreign => no_channel_id(f.private),
                _ => ok(),
            }),
    );
    c.push(
        case("PATCH", "/api/v1/scheduled_messages/{scheduled_message_id}")
            .at(|f, _| format!("/api/v1/scheduled_messages/{}", f.scheduled))
            .with(|_, w| vec![("content", format!("changed by {}", w.label()))])
            .want(|_, _| err(404, "BAD_REQUEST", "Scheduled message does not exist"))
            .probe(|_, _| (OTHELLO, "/api/v1/scheduled_messages".to_owned())),
    );
    c.push(
        case(
            "DELETE",
            "/api/v1/scheduled_messages/{scheduled_message_id}",
        )
        .at(|f, _| format!("/api/v1/scheduled_messages/{}", f.scheduled))
        .want(|_, _| err(404, "BAD_REQUEST", "Scheduled message does not exist"))
        .probe(|_, _| (OTHELLO, "/api/v1/scheduled_messages".to_owned())),
    );

    // ---- user groups ---------------------------------------------------------------
    c.push(case("GET", "/api/v1/user_groups").want(|_, w| member_or_admin(w, ok())));
    c.push(
        case("POST", "/api/v1/user_groups/create")
            .with(|_, w| {
                vec![
                    ("name", format!("authz-new-{}", w.label())),
                    ("description", "made by the matrix".to_owned()),
                    ("members", "[]".to_owned()),
                ]
            })
            .want(|_, w| member_or_admin(w, ok()))
            .probe(|_, _| (OTHELLO, "/api/v1/user_groups".to_owned())),
    );
    // Othello's group: he manages it, and so do the owners (`can_manage_all_groups`
    // is `role:owners`); an administrator is not enough.
    c.push(
        case("PATCH", "/api/v1/user_groups/{user_group_id}")
            .at(|f, _| format!("/api/v1/user_groups/{}", f.group))
            .with(|_, w| vec![("description", format!("authz {}", w.label()))])
            .want(|_, w| match w {
                Owner => ok(),
                Foreign => invalid_group(),
                _ => member_or_admin(w, insufficient()),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/user_groups".to_owned())),
    );
    c.push(
        case("GET", "/api/v1/user_groups/{user_group_id}/members")
            .at(|f, _| format!("/api/v1/user_groups/{}/members", f.group))
            .want(|_, w| match w {
                Foreign => invalid_group(),
                _ => member_or_admin(w, ok()),
            }),
    );
    c.push(
        case("POST", "/api/v1/user_groups/{user_group_id}/members")
            .at(|f, _| format!("/api/v1/user_groups/{}/members", f.group))
            .with(|f, w| vec![("add", list(f.id(w)))])
            .want(|_, w| match w {
                // `can_join_group` is nobody: joining needs `can_manage_group`.
                Owner => ok(),
                Foreign => invalid_group(),
                _ => member_or_admin(w, insufficient()),
            })
            .probe(|f, _| (OTHELLO, format!("/api/v1/user_groups/{}/members", f.group))),
    );
    c.push(
        case(
            "GET",
            "/api/v1/user_groups/{user_group_id}/members/{user_id}",
        )
        .at(|f, _| format!("/api/v1/user_groups/{}/members/{}", f.group, f.othello))
        .want(|_, w| match w {
            Foreign => invalid_group(),
            _ => member_or_admin(w, ok_with("/is_user_group_member", json!(true))),
        }),
    );
    c.push(
        case("GET", "/api/v1/user_groups/{user_group_id}/subgroups")
            .at(|f, _| format!("/api/v1/user_groups/{}/subgroups", f.group))
            .want(|_, w| match w {
                Foreign => invalid_group(),
                _ => member_or_admin(w, ok()),
            }),
    );
    c.push(
        case("POST", "/api/v1/user_groups/{user_group_id}/subgroups")
            .at(|f, _| format!("/api/v1/user_groups/{}/subgroups", f.group))
            .with(|f, w| vec![("add", list(f.per(&f.subgroups, w)))])
            .want(|_, w| match w {
                Owner => ok(),
                Foreign => invalid_group(),
                _ => member_or_admin(w, insufficient()),
            })
            .probe(|f, _| {
                (
                    OTHELLO,
                    format!("/api/v1/user_groups/{}/subgroups", f.group),
                )
            }),
    );
    c.push(
        case("POST", "/api/v1/user_groups/{user_group_id}/deactivate")
            .at(|f, w| format!("/api/v1/user_groups/{}/deactivate", f.per(&f.groups, w)))
            // `deactivate_user_group` has no `require_member_or_admin`: guests and bots
            // fail `access_user_group_for_update`.
            .want(|_, w| match w {
                Owner => ok(),
                Foreign => invalid_group(),
                _ => insufficient(),
            })
            .probe(|_, _| {
                (
                    OTHELLO,
                    "/api/v1/user_groups?include_deactivated_groups=true".to_owned(),
                )
            }),
    );

    // ---- invitations and the sign-up page ---------------------------------------------
    // Before any invitation of the other realm exists: this realm's ids name nothing
    // there.
    c.push(case("GET", "/api/v1/invites").want(|_, w| member_or_admin(w, ok())));
    c.push(
        case("POST", "/api/v1/invites/{invite_id}/resend")
            .at(|f, _| format!("/api/v1/invites/{}/resend", f.invite))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => bad("No such invitation"),
                _ => member_or_admin(w, bad("Must be an organization administrator")),
            })
            .probe(|_, _| (IAGO, "/api/v1/invites".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/invites/{invite_id}")
            .at(|f, _| format!("/api/v1/invites/{}", f.invite))
            .want(|_, w| match w {
                // Zulip revokes a revoked invitation again: the owner's call succeeds.
                Admin | Owner => ok(),
                Foreign => bad("No such invitation"),
                _ => member_or_admin(w, bad("Must be an organization administrator")),
            })
            .probe(|_, _| (IAGO, "/api/v1/invites".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/invites/multiuse/{invite_id}")
            .at(|f, w| format!("/api/v1/invites/multiuse/{}", f.per(&f.links, w)))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => bad("No such invitation"),
                _ => member_or_admin(w, bad("Must be an organization administrator")),
            })
            .probe(|_, _| (IAGO, "/api/v1/invites".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/invites")
            .with(|_, w| {
                p(&[
                    (
                        "invitee_emails",
                        &format!("authz-{}@invite.test", w.label()),
                    ),
                    ("stream_ids", "[]"),
                ])
            })
            // `can_invite_users_group` is `role:members`.
            .want(|_, w| member_or_admin(w, ok()))
            .probe(|_, _| (IAGO, "/api/v1/invites".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/invites")
            .with(|_, _| {
                p(&[
                    ("invitee_emails", "welcome-bot@zulip.com"),
                    ("stream_ids", "[]"),
                ])
            })
            .want(|_, w| {
                member_or_admin(
                    w,
                    err(
                        400,
                        "INVITATION_FAILED",
                        "We weren't able to invite anyone.",
                    ),
                )
            }),
    );
    c.push(
        case("POST", "/api/v1/invites/multiuse")
            // `create_multiuse_invite_group` is `role:administrators`.
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => member_or_admin(w, insufficient()),
            })
            .probe(|_, _| (IAGO, "/api/v1/invites".to_owned())),
    );
    c.push(
        case("GET", "/join/{key}/")
            .at(|f, _| f.join_path.clone())
            .all_callers()
            .want(|_, w| match w {
                Foreign => Want::Page(404, "This invitation link is not valid."),
                _ => Want::Page(200, "Iago invited you."),
            }),
    );
    c.push(
        case("GET", "/join/{key}")
            .at(|f, _| f.join_path.trim_end_matches('/').to_owned())
            .all_callers()
            // Followed to `/join/{key}/`, answered as there.
            .want(|_, w| match w {
                Foreign => Want::Page(404, "This invitation link is not valid."),
                _ => Want::Page(200, "Iago invited you."),
            }),
    );
    c.push(
        case("POST", "/join/{key}/")
            .at(|f, _| f.join_path.clone())
            .with(|_, _| p(&[("full_name", "Intruder"), ("password", PASSWORD)]))
            .all_callers()
            .want(|_, w| match w {
                Foreign => Want::Page(404, "This invitation link is not valid."),
                _ => Want::Page(400, "This form has expired or was not sent from this page."),
            }),
    );

    // ---- the web client's login pages (`web_sessions` tests them with a browser) --------
    for path in ["/login/", "/accounts/login/"] {
        c.push(
            case("GET", path)
                .all_callers()
                // An API key is no session: the page is shown, on either realm.
                .want(|_, _| Want::Page(200, "id=\"login_form\"")),
        );
    }
    c.push(
        case("GET", "/devlogin/")
            .all_callers()
            .want(|_, w| match w {
                Foreign => Want::Page(404, "DevAuthBackend not enabled."),
                _ => Want::Page(200, "Development login"),
            }),
    );
    // The client's page is for a session: an API key is sent to the login page.
    c.push(
        case("GET", "/")
            .all_callers()
            .want(|_, _| Want::Page(200, "id=\"login_form\"")),
    );
    c.push(
        case("GET", "/static/app/{file:.*}")
            .at(|_, _| "/static/app/index.html".to_owned())
            .all_callers()
            .want(|_, _| Want::Page(200, "<div id=\"app\">")),
    );
    // The forms refuse a post without the page's CSRF token, whoever sends it.
    for path in ["/accounts/login/", "/accounts/logout/"] {
        c.push(
            case("POST", path)
                .with(|_, _| p(&[("username", IAGO), ("password", PASSWORD)]))
                .all_callers()
                .want(|_, _| Want::Page(403, "CSRF verification failed")),
        );
    }
    // Password reset: the pages are for anyone; a link is the only credential.
    c.push(
        case("GET", "/accounts/password/reset/")
            .all_callers()
            .want(|_, _| Want::Page(200, "id=\"password_reset\"")),
    );
    c.push(
        case("GET", "/accounts/password/reset/done/")
            .all_callers()
            .want(|_, _| Want::Page(200, "Check your email")),
    );
    c.push(
        case("GET", "/accounts/password/reset/{user_id}/{token}/")
            .at(|_, _| format!("/accounts/password/reset/8/1-{}/", "0".repeat(64)))
            .all_callers()
            .want(|_, _| Want::Page(404, "not valid")),
    );
    c.push(
        case("POST", "/accounts/password/reset/")
            .with(|_, _| p(&[("email", IAGO)]))
            .all_callers()
            .want(|_, _| Want::Page(403, "CSRF verification failed")),
    );
    c.push(
        case("POST", "/accounts/password/reset/{user_id}/{token}/")
            .at(|_, _| format!("/accounts/password/reset/8/1-{}/", "0".repeat(64)))
            .with(|_, _| p(&[("new_password1", PASSWORD), ("new_password2", PASSWORD)]))
            .all_callers()
            .want(|_, _| Want::Page(403, "CSRF verification failed")),
    );
    c.push(
        case("POST", "/accounts/login/local/")
            .with(|_, _| p(&[("direct_email", IAGO)]))
            .all_callers()
            .want(|_, w| match w {
                Foreign => Want::Page(404, "DevAuthBackend not enabled."),
                _ => Want::Page(403, "CSRF verification failed"),
            }),
    );

    // ---- realm settings, emoji, linkifiers, profile fields ------------------------------
    c.push(
        case("PATCH", "/api/v1/realm")
            .with(|f, w| {
                let id = if w == Foreign {
                    f.other_members_group
                } else {
                    f.members_group
                };
                vec![("can_create_groups", json!({"new": id}).to_string())]
            })
            .want(|_, w| match w {
                // `can_create_groups` is for owners to change.
                Owner | Foreign => ok(),
                Admin => not_owner(),
                _ => not_admin(),
            }),
    );
    c.push(
        case("POST", "/api/v1/realm/test_welcome_bot_custom_message")
            .with(|_, w| {
                vec![(
                    "welcome_message_custom_text",
                    format!("A welcome for {}", w.label()),
                )]
            })
            // `send_test_welcome_bot_custom_message` is `require_realm_admin`.
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            }),
    );
    c.push(case("GET", "/api/v1/realm/emoji"));
    c.push(
        case("POST", "/api/v1/realm/emoji/{emoji_name:.+}")
            .at(|_, w| format!("/api/v1/realm/emoji/authz_up_{}", w.label()))
            .file("f1")
            // `upload_emoji` is `require_member_or_admin`; `can_add_custom_emoji_group`
            // is `role:members`.
            .want(|_, w| member_or_admin(w, ok()))
            .probe(|_, _| (OTHELLO, "/api/v1/realm/emoji".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/realm/emoji/{emoji_name:.+}")
            .at(|f, w| format!("/api/v1/realm/emoji/{}", f.per(&f.emoji, w)))
            .want(|f, w| match w {
                Admin | Owner => ok(),
                Foreign => err(
                    404,
                    "BAD_REQUEST",
                    format!("Emoji '{}' does not exist", f.per(&f.emoji, w)),
                ),
                _ => bad("Must be an organization administrator or emoji author"),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/emoji".to_owned())),
    );
    c.push(case("GET", "/api/v1/realm/linkifiers"));
    // Before any linkifier is added or removed: the order lists every linkifier.
    c.push(
        case("PATCH", "/api/v1/realm/linkifiers")
            .with(|f, _| vec![("ordered_linkifier_ids", json!(f.linkifier_ids).to_string())])
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => {
                    bad("The ordered list must enumerate all existing linkifiers exactly once")
                }
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/linkifiers".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/realm/filters")
            .with(|_, w| {
                vec![
                    ("pattern", format!("authz{}-(?P<id>[0-9]+)", w.label())),
                    ("url_template", "https://example.com/authz/{id}".to_owned()),
                ]
            })
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/linkifiers".to_owned())),
    );
    c.push(
        case("PATCH", "/api/v1/realm/filters/{filter_id}")
            .at(|f, _| format!("/api/v1/realm/filters/{}", f.linkifier))
            .with(|_, w| {
                vec![
                    ("pattern", "authzshared-(?P<id>[0-9]+)".to_owned()),
                    (
                        "url_template",
                        format!("https://example.com/{}/{{id}}", w.label()),
                    ),
                ]
            })
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => bad("Linkifier not found."),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/linkifiers".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/realm/filters/{filter_id}")
            .at(|f, w| format!("/api/v1/realm/filters/{}", f.per(&f.linkifiers, w)))
            .want(|_, w| match w {
                Admin | Owner => ok(),
                Foreign => bad("Linkifier not found."),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/linkifiers".to_owned())),
    );
    c.push(case("GET", "/api/v1/realm/profile_fields"));
    // Before any field is created: the order lists every field.
    c.push(
        case("PATCH", "/api/v1/realm/profile_fields")
            .with(|f, _| vec![("order", json!(f.field_ids).to_string())])
            .want(|_, w| match w {
                // The other realm has no field: any order lists them all.
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/profile_fields".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/realm/profile_fields")
            .with(|_, w| {
                vec![
                    ("name", format!("authz {}", w.label())),
                    ("field_type", "1".to_owned()),
                ]
            })
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/profile_fields".to_owned())),
    );
    c.push(
        case("PATCH", "/api/v1/realm/profile_fields/{field_id}")
            .at(|f, _| format!("/api/v1/realm/profile_fields/{}", f.field))
            .with(|_, w| vec![("hint", format!("authz {}", w.label()))])
            .want(|f, w| match w {
                Admin | Owner => ok(),
                Foreign => bad(format!("Field id {} not found.", f.field)),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/profile_fields".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/realm/profile_fields/{field_id}")
            .at(|f, w| format!("/api/v1/realm/profile_fields/{}", f.per(&f.fields, w)))
            .want(|f, w| match w {
                Admin | Owner => ok(),
                Foreign => bad(format!("Field id {} not found.", f.per(&f.fields, w))),
                _ => not_admin(),
            })
            .probe(|_, _| (OTHELLO, "/api/v1/realm/profile_fields".to_owned())),
    );
    // `human_users_only`.
    c.push(
        case("PATCH", "/api/v1/users/me/profile_data")
            .with(|f, w| {
                vec![(
                    "data",
                    json!([{"id": f.field, "value": format!("authz {}", w.label())}]).to_string(),
                )]
            })
            .want(|f, w| match w {
                Bot => no_bots(),
                Foreign => bad(format!("Field id {} not found.", f.field)),
                _ => ok(),
            }),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/profile_data")
            .with(|f, _| vec![("data", list(f.field))])
            .want(|f, w| match w {
                Bot => no_bots(),
                Foreign => bad(format!("Field id {} not found.", f.field)),
                _ => ok(),
            }),
    );

    // ---- personal data: drafts, saved snippets, reminders ------------------------------
    // Each caller's own, for everyone; othello's are nobody else's (404, as unknown).
    // The creations come after the edits: ids are per realm, and the other realm's
    // owner would otherwise edit their own draft or snippet by the same id.
    c.push(case("GET", "/api/v1/drafts"));
    c.push(
        case("PATCH", "/api/v1/drafts/{draft_id}")
            .at(|f, _| format!("/api/v1/drafts/{}", f.draft))
            .with(|_, _| {
                let draft = json!({"type": "", "to": [], "topic": "", "content": "taken"});
                vec![("draft", draft.to_string())]
            })
            .want(|_, _| err(404, "BAD_REQUEST", "Draft does not exist"))
            .probe(|_, _| (OTHELLO, "/api/v1/drafts".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/drafts/{draft_id}")
            .at(|f, _| format!("/api/v1/drafts/{}", f.draft))
            .want(|_, _| err(404, "BAD_REQUEST", "Draft does not exist"))
            .probe(|_, _| (OTHELLO, "/api/v1/drafts".to_owned())),
    );
    c.push(case("POST", "/api/v1/drafts").with(|_, w| {
        let draft = json!([{"type": "", "to": [], "topic": "", "content": w.label()}]);
        vec![("drafts", draft.to_string())]
    }));
    c.push(case("GET", "/api/v1/saved_snippets"));
    c.push(
        case("PATCH", "/api/v1/saved_snippets/{saved_snippet_id}")
            .at(|f, _| format!("/api/v1/saved_snippets/{}", f.snippet))
            .with(|_, _| p(&[("title", "Taken")]))
            .want(|_, _| err(404, "BAD_REQUEST", "Saved snippet does not exist."))
            .probe(|_, _| (OTHELLO, "/api/v1/saved_snippets".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/saved_snippets/{saved_snippet_id}")
            .at(|f, _| format!("/api/v1/saved_snippets/{}", f.snippet))
            .want(|_, _| err(404, "BAD_REQUEST", "Saved snippet does not exist."))
            .probe(|_, _| (OTHELLO, "/api/v1/saved_snippets".to_owned())),
    );
    c.push(
        case("POST", "/api/v1/saved_snippets")
            .with(|_, w| vec![("title", w.label().to_owned()), ("content", "x".to_owned())]),
    );
    c.push(case("GET", "/api/v1/reminders"));
    // Othello's message in a public channel: readable by every member, not by a guest
    // who is not subscribed; it does not exist in the other realm.
    c.push(
        case("POST", "/api/v1/reminders")
            .with(|f, _| {
                vec![
                    ("message_id", f.public_msg.to_string()),
                    ("scheduled_delivery_timestamp", in_a_day().to_string()),
                ]
            })
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok(),
            }),
    );
    c.push(
        case("DELETE", "/api/v1/reminders/{reminder_id}")
            .at(|f, _| format!("/api/v1/reminders/{}", f.reminder))
            .want(|_, _| err(404, "BAD_REQUEST", "Reminder does not exist"))
            .probe(|_, _| (OTHELLO, "/api/v1/reminders".to_owned())),
    );

    // ---- navigation views and events ---------------------------------------------------
    c.push(case("GET", "/api/v1/navigation_views"));
    c.push(case("POST", "/api/v1/navigation_views").with(|_, _| {
        p(&[
            ("fragment", "narrow/is/starred/authz"),
            ("is_pinned", "true"),
            ("name", "Authz"),
        ])
    }));
    // Views are per user: othello's is nobody else's to change.
    c.push(
        case("PATCH", "/api/v1/navigation_views/{fragment:.*}")
            .at(|f, _| format!("/api/v1/navigation_views/{}", f.view_fragment))
            .with(|_, _| p(&[("name", "Taken")]))
            .want(|_, _| err(404, "NOT_FOUND", "Navigation view does not exist."))
            .probe(|_, _| (OTHELLO, "/api/v1/navigation_views".to_owned())),
    );
    c.push(
        case("DELETE", "/api/v1/navigation_views/{fragment:.*}")
            .at(|f, _| format!("/api/v1/navigation_views/{}", f.view_fragment))
            .want(|_, _| err(404, "NOT_FOUND", "Navigation view does not exist."))
            .probe(|_, _| (OTHELLO, "/api/v1/navigation_views".to_owned())),
    );
    // ---- topics and people: each caller's own state ------------------------------------
    // Topic policies need the channel's content (`access_stream_by_id`): a guest is
    // not in othello's public channel, and nobody but othello is in his private one.
    c.push(
        case("POST", "/api/v1/user_topics")
            .with(|f, _| {
                vec![
                    ("stream_id", f.public.to_string()),
                    ("topic", "authz".to_owned()),
                    ("visibility_policy", "1".to_owned()),
                ]
            })
            .want(|_, w| match w {
                Guest | Foreign => invalid_channel(),
                _ => ok(),
            }),
    );
    c.push(
        case("PATCH", "/api/v1/users/me/subscriptions/muted_topics")
            .with(|f, _| {
                vec![
                    ("stream_id", f.private.to_string()),
                    ("topic", "authz".to_owned()),
                    ("op", "add".to_owned()),
                ]
            })
            .want(|_, _| invalid_channel()),
    );
    // Anyone may mute any user of the realm, bots included, but not themselves.
    c.push(
        case("POST", "/api/v1/users/me/muted_users/{muted_user_id}")
            .at(|f, _| format!("/api/v1/users/me/muted_users/{}", f.bot))
            .want(|_, w| match w {
                Bot => bad("Cannot mute self"),
                Foreign => no_such_user(),
                _ => ok(),
            }),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/muted_users/{muted_user_id}")
            .at(|f, _| format!("/api/v1/users/me/muted_users/{}", f.othello))
            .want(|_, w| match w {
                Foreign => no_such_user(),
                _ => bad("User is not muted"),
            }),
    );
    c.push(
        case("GET", "/api/v1/users/me/alert_words").want(|_, _| ok_with("/alert_words", json!([]))),
    );
    c.push(
        case("POST", "/api/v1/users/me/alert_words")
            .with(|_, _| p(&[("alert_words", r#"[" Authz ", ""]"#)]))
            .want(|_, _| ok_with("/alert_words", json!(["Authz"]))),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/alert_words")
            .with(|_, _| p(&[("alert_words", r#"["AUTHZ"]"#)]))
            .want(|_, _| ok_with("/alert_words", json!([]))),
    );
    c.push(
        case("POST", "/api/v1/register")
            .with(|_, _| {
                p(&[
                    ("event_types", "[\"message\"]"),
                    ("fetch_event_types", "[\"realm_user\"]"),
                ])
            })
            .want(|f, w| ok_with("/user_id", json!(f.id(w)))),
    );
    // Othello's queue is nobody else's to read or delete: `access_client_descriptor`
    // answers as for an unknown queue.
    c.push(
        case("GET", "/api/v1/events")
            .with(|f, _| {
                vec![
                    ("queue_id", f.othello_queue.clone()),
                    ("last_event_id", "-1".to_owned()),
                    ("dont_block", "true".to_owned()),
                ]
            })
            .want(|f, _| bad_queue(&f.othello_queue)),
    );
    c.push(
        case("DELETE", "/api/v1/events")
            .with(|f, _| vec![("queue_id", f.othello_queue.clone())])
            .want(|f, _| bad_queue(&f.othello_queue)),
    );

    // ---- push (`human_users_only`) ----------------------------------------------------
    // Before any device is registered.
    c.push(
        case("POST", "/api/v1/mobile_push/e2ee/test_notification").want(|_, w| match w {
            Bot => no_bots(),
            _ => err(
                400,
                "NO_ACTIVE_PUSH_DEVICE",
                "No active registered push device",
            ),
        }),
    );
    c.push(
        case("POST", "/api/v1/users/me/apns_device_token")
            .with(|_, _| p(&[("token", APNS_TOKEN), ("appid", "org.zulip.Zulip")]))
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/apns_device_token")
            .with(|_, _| p(&[("token", APNS_TOKEN)]))
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(
        case("POST", "/api/v1/users/me/android_gcm_reg_id")
            .with(|_, _| p(&[("token", "authz-fcm-token")]))
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(
        case("DELETE", "/api/v1/users/me/android_gcm_reg_id")
            .with(|_, _| p(&[("token", "authz-fcm-token")]))
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );
    c.push(
        case("POST", "/api/v1/mobile_push/register")
            .with(|_, _| {
                p(&[
                    ("token_kind", "fcm"),
                    ("push_account_id", "7"),
                    ("push_key", PUSH_KEY),
                    ("bouncer_public_key", "bouncer-public-key"),
                    ("encrypted_push_registration", "encrypted-registration"),
                ])
            })
            .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
    );

    // ---- uploads -------------------------------------------------------------------
    c.push(
        case("GET", "/api/v1/user_uploads/{realm_id}/{path:.*}")
            .at(|f, _| format!("/api/v1/user_uploads/{}", f.attachment_path))
            .want(|_, w| match w {
                Foreign => Want::Page(404, "This file does not exist or has been deleted."),
                _ => Want::Page(403, "You are not authorized to view this file."),
            }),
    );
    c.push(case("GET", "/api/v1/attachments"));
    c.push(
        case("DELETE", "/api/v1/attachments/{attachment_id}")
            .at(|f, _| format!("/api/v1/attachments/{}", f.attachment))
            .want(|_, _| bad("Invalid attachment"))
            .probe(|_, _| (OTHELLO, "/api/v1/attachments".to_owned())),
    );
    // After the refusals above: the other realm's first upload gets the id of
    // othello's.
    c.push(case("POST", "/api/v1/user_uploads").file("file"));

    // ---- resumable uploads (tus) -------------------------------------------------------
    // The capabilities need no credentials (tusd answers them itself); every other
    // request without valid credentials gets the refusal of Zulip's hook; othello's
    // upload is found by nobody else.
    c.push(
        case("OPTIONS", "/api/v1/tus")
            .all_callers()
            .want(|_, _| Want::Page(200, "")),
    );
    c.push(
        case("OPTIONS", "/api/v1/tus/{upload_id}")
            .at(|f, _| format!("/api/v1/tus/{}", f.tus_upload))
            .all_callers()
            .want(|_, _| Want::Page(200, "")),
    );
    c.push(
        case("POST", "/api/v1/tus")
            .raw(
                &[
                    ("Tus-Resumable", "1.0.0"),
                    ("Upload-Length", "5"),
                    ("Upload-Metadata", "filename YXV0aHoudHh0"),
                ],
                b"",
            )
            .all_callers()
            .want(|_, w| {
                if w.fails_auth() {
                    unauthenticated_upload()
                } else {
                    Want::Page(201, "")
                }
            }),
    );
    c.push(
        case("HEAD", "/api/v1/tus/{upload_id}")
            .at(|f, _| format!("/api/v1/tus/{}", f.tus_upload))
            .all_callers()
            // A HEAD answer has no body.
            .want(|_, w| Want::Page(if w.fails_auth() { 401 } else { 404 }, "")),
    );
    c.push(
        case("PATCH", "/api/v1/tus/{upload_id}")
            .at(|f, _| format!("/api/v1/tus/{}", f.tus_upload))
            .raw(
                &[
                    ("Tus-Resumable", "1.0.0"),
                    ("Upload-Offset", "0"),
                    ("Content-Type", "application/offset+octet-stream"),
                ],
                b"not yours",
            )
            .all_callers()
            .want(|_, w| {
                if w.fails_auth() {
                    unauthenticated_upload()
                } else {
                    Want::Page(404, "ERR_UPLOAD_NOT_FOUND: upload not found")
                }
            }),
    );
    c.push(
        case("DELETE", "/api/v1/tus/{upload_id}")
            .at(|f, _| format!("/api/v1/tus/{}", f.tus_upload))
            .raw(&[("Tus-Resumable", "1.0.0")], b"")
            .all_callers()
            .want(|_, w| {
                if w.fails_auth() {
                    unauthenticated_upload()
                } else {
                    Want::Page(404, "ERR_UPLOAD_NOT_FOUND: upload not found")
                }
            }),
    );

    // ---- personal settings, their realm defaults, read receipts ------------------------
    // `json_change_settings` is `human_users_only`; each caller changes its own.
    for route in [
        "/api/v1/settings",
        "/api/v1/settings/display",
        "/api/v1/settings/notifications",
    ] {
        c.push(
            case("PATCH", route)
                .with(|_, _| p(&[("enable_sounds", "false"), ("emojiset", "text")]))
                .want(|_, w| if w.is_human() { ok() } else { no_bots() }),
        );
    }
    c.push(
        case("PATCH", "/api/v1/realm/user_settings_defaults")
            .with(|_, _| p(&[("emojiset", "twitter")]))
            .want(|_, w| match w {
                Admin | Owner | Foreign => ok(),
                _ => not_admin(),
            }),
    );
    c.push(
        case("GET", "/api/v1/messages/{message_id}/read_receipts")
            .at(|f, _| format!("/api/v1/messages/{}/read_receipts", f.public_msg))
            .want(|_, w| match w {
                Guest | Foreign => invalid_message(),
                _ => ok(),
            }),
    );
    c
}

/// The cases whose successes end the callers: they run after the final state check.
fn last_cases() -> Vec<Case> {
    vec![
        // `deactivate_user_own_backend`: anyone but the last user or the last owner.
        case("DELETE", "/api/v1/users/me").want(|_, w| match w {
            // The other realm has a second user by then (`POST /users`).
            Owner | Foreign => err(
                400,
                "CANNOT_DEACTIVATE_LAST_USER",
                "Cannot deactivate the only organization owner.",
            ),
            _ => ok(),
        }),
    ]
}

const APNS_TOKEN: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
/// The cryptosystem byte 0x31 then 32 bytes of 0x07, in base64.
const PUSH_KEY: &str = "MQcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH";

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn in_a_day() -> i64 {
    now_secs() + 86_400
}

/// The newest messages of a channel (a probe of sends).
fn newest_in(channel: i64) -> String {
    let q = serde_urlencoded::to_string([
        ("narrow", narrow(channel)),
        ("anchor", "newest".to_owned()),
        ("num_before", "5".to_owned()),
        ("num_after", "0".to_owned()),
    ])
    .unwrap();
    format!("/api/v1/messages?{q}")
}

// ---- sending -------------------------------------------------------------------

/// What a request answered: status and body (JSON when it is JSON).
#[derive(Debug, Clone, PartialEq)]
enum Body {
    Json(Value),
    Text(String),
}

struct Answer {
    status: u16,
    body: Body,
}

impl Answer {
    fn text(&self) -> String {
        match &self.body {
            Body::Json(v) => v.to_string(),
            Body::Text(t) => t.clone(),
        }
    }
}

async fn answer(rb: reqwest::RequestBuilder) -> Answer {
    let resp = rb.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.expect("body read");
    let body = match serde_json::from_slice(&bytes) {
        Ok(v) => Body::Json(v),
        Err(_) => Body::Text(String::from_utf8_lossy(&bytes).into_owned()),
    };
    Answer { status, body }
}

/// Sends `case` as `w`.
async fn send_case(s: &TestApp, fx: &Fx, case: &Case, w: Who) -> Answer {
    let method = Method::from_bytes(case.method.as_bytes()).unwrap();
    let path = case.path_for(fx, w);
    let host = if w == Foreign {
        fx.other_host.as_str()
    } else {
        DEV_HOST
    };
    let creds = fx.creds.get(&w);
    let auth = match creds {
        Some((email, key)) => Auth::Basic(email, key),
        None => Auth::None,
    };
    let mut rb = s.request_on(host, method.clone(), &path, auth);
    for (name, value) in case.headers {
        rb = rb.header(*name, *value);
    }
    let params = (case.params)(fx, w);
    let rb = if let Some(body) = case.raw_body {
        rb.body(body.to_vec())
    } else if let Some(field) = case.file {
        let (name, bytes, mime) = if field == "file" {
            ("authz.txt", b"authz upload".to_vec(), "text/plain")
        } else {
            ("img.png", png(), "image/png")
        };
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name)
            .mime_str(mime)
            .unwrap();
        let mut form = reqwest::multipart::Form::new().part(field, part);
        for (k, v) in params {
            form = form.text(k, v);
        }
        rb.multipart(form)
    } else if method == Method::GET {
        rb.query(&params)
    } else {
        rb.form(&params)
    };
    answer(rb).await
}

/// A probe: GET `path` as `email` on the development realm.
async fn read_as(s: &TestApp, email: &str, path: &str) -> Answer {
    let key = s.api_key(email).await;
    answer(s.request(Method::GET, path, Auth::Basic(email, &key))).await
}

/// Compares an answer with what was wanted; `None` when it matches.
fn mismatch(want: &Want, got: &Answer) -> Option<String> {
    match (want, &got.body) {
        (Want::Ok(fields), Body::Json(body)) => {
            if got.status != 200 || body["result"] != "success" || body["msg"] != "" {
                return Some(format!("wanted success, got {} {body}", got.status));
            }
            for (pointer, value) in fields {
                if body.pointer(pointer) != Some(value) {
                    let got = body.pointer(pointer).map(Value::to_string);
                    return Some(format!(
                        "wanted {pointer} = {value}, got {:.300}",
                        got.unwrap_or_else(|| format!("nothing in {body}"))
                    ));
                }
            }
            None
        }
        (Want::Err(status, code, msg), Body::Json(body)) => {
            let same = got.status == *status
                && body["result"] == "error"
                && body["code"] == *code
                && body["msg"] == msg.as_str();
            (!same).then(|| {
                format!(
                    "wanted {status} {code} {msg:?}, got {} {} {}",
                    got.status, body["code"], body["msg"]
                )
            })
        }
        (Want::Data(key), Body::Json(body)) => (got.status != 200
            || body.get(*key).is_none()
            || body.get("result").is_some())
        .then(|| {
            format!(
                "wanted a document with {key:?}, got {} {body:.300}",
                got.status
            )
        }),
        (Want::Doc(status, doc), Body::Json(body)) => (got.status != *status || body != doc)
            .then(|| format!("wanted {status} {doc}, got {} {body:.300}", got.status)),
        (Want::Page(status, text), Body::Text(body)) => {
            (got.status != *status || !body.contains(text)).then(|| {
                format!(
                    "wanted a {status} page with {text:?}, got {} {body:.200}",
                    got.status
                )
            })
        }
        (want, _) => Some(format!(
            "wanted {want:?}, got {} {:.300}",
            got.status,
            got.text()
        )),
    }
}

/// What no answer of the other realm may contain: the development realm's name,
/// people and messages.
const LEAKS: [&str; 4] = ["Zulip Dev", "zulip.com", "Othello", "SECRET"];

/// What a run found.
#[derive(Default)]
struct Outcome {
    cells: usize,
    /// Every mismatch (all of them, so that one run shows the whole picture).
    failures: Vec<String>,
    /// The cells where hearth answers its known difference from Zulip.
    known: Vec<String>,
}

/// Runs `cases`.
async fn run(s: &TestApp, fx: &Fx, cases: &[Case], out: &mut Outcome) {
    for case in cases {
        for w in CALLERS {
            out.cells += 1;
            let zulip = case.want_for(fx, w);
            let known = case
                .known
                .filter(|_| case.all_callers || !w.fails_auth())
                .and_then(|k| (k.hearth)(fx, w).map(|hearth| (k.why, hearth)));
            let want = known.as_ref().map_or(&zulip, |(_, hearth)| hearth).clone();
            let probe = case.probe.map(|p| p(fx, w));
            let before = match &probe {
                Some((email, path)) => Some(read_as(s, email, path).await),
                None => None,
            };
            let got = send_case(s, fx, case, w).await;
            let label = format!("{} {} as {}", case.method, case.path_for(fx, w), w.label());
            match (&known, mismatch(&want, &got)) {
                (_, Some(m)) if mismatch(&zulip, &got).is_none() => out.failures.push(format!(
                    "{label}: answers as Zulip now, the known difference is gone \
                     (remove its `differs`): {m}"
                )),
                (_, Some(m)) => out.failures.push(format!("{label}: {m}")),
                (Some((why, _)), None) => out.known.push(format!(
                    "{label}: Zulip: {}; hearth: {}. {why}",
                    describe(&zulip),
                    describe(&want)
                )),
                (None, None) => {}
            }
            if w == Foreign {
                // The system bots' addresses are the server's, in every realm's
                // `cross_realm_bots` (as Zulip's `notification-bot@zulip.com` and
                // `welcome-bot@zulip.com`).
                let text = got
                    .text()
                    .replace("notification-bot@zulip.com", "")
                    .replace("welcome-bot@zulip.com", "");
                if let Some(leak) = LEAKS.iter().find(|l| text.contains(*l)) {
                    out.failures.push(format!(
                        "{label}: the other realm answered {leak:?}: {text:.300}"
                    ));
                }
            }
            if let (Some((email, path)), Some(before)) = (&probe, before) {
                let refused = !matches!(want, Want::Ok(_));
                let after = read_as(s, email, path).await;
                if refused && (after.status, &after.body) != (before.status, &before.body) {
                    out.failures.push(format!(
                        "{label}: refused, yet GET {path} as {email} changed from {:.300} to {:.300}",
                        before.text(),
                        after.text()
                    ));
                }
            }
        }
    }
}

/// A short form of an expected answer, for the report.
fn describe(want: &Want) -> String {
    match want {
        Want::Ok(_) => "200 success".to_owned(),
        Want::Err(status, code, msg) => format!("{status} {code} {msg:?}"),
        Want::Page(status, text) => format!("{status} page {text:?}"),
        Want::Data(key) => format!("200 document with {key:?}"),
        Want::Doc(status, doc) => format!("{status} document {doc}"),
    }
}

// ---- the route table -----------------------------------------------------------

#[test]
fn routes_are_all_covered() {
    let table: BTreeSet<(String, String)> = route_table().into_iter().collect();
    let covered: BTreeSet<(String, String)> = cases()
        .iter()
        .chain(last_cases().iter())
        .map(|c| (c.method.to_owned(), c.route.to_owned()))
        .collect();
    let missing: Vec<_> = table.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "operations of the route table the matrix does not cover: {missing:?}"
    );
    let stale: Vec<_> = covered.difference(&table).collect();
    assert!(
        stale.is_empty(),
        "matrix rows for operations not in the route table: {stale:?}"
    );
}

// ---- setup ---------------------------------------------------------------------

/// `POST` as `email` with one file part.
async fn upload(s: &TestApp, email: &str, path: &str, field: &str, name: &str) -> Value {
    let key = s.api_key(email).await;
    let (bytes, mime) = if name.ends_with(".png") {
        (png(), "image/png")
    } else {
        (b"authz attachment".to_vec(), "text/plain")
    };
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name(name.to_owned())
        .mime_str(mime)
        .unwrap();
    let form = reqwest::multipart::Form::new().part(field.to_owned(), part);
    let reply = send(
        s.request(Method::POST, path, Auth::Basic(email, &key))
            .multipart(form),
    )
    .await;
    assert_success(&reply).clone()
}

/// Creates a channel as `email` with only them in it.
async fn channel(s: &TestApp, email: &str, name: &str, private: bool) -> i64 {
    let subs = json!([{ "name": name }]).to_string();
    let private = private.to_string();
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        email,
        &[("subscriptions", &subs), ("invite_only", &private)],
    )
    .await;
    let body = s
        .ok("GET", "/api/v1/get_stream_id", email, &[("stream", name)])
        .await;
    body["stream_id"].as_i64().expect("stream_id")
}

async fn send_to(s: &TestApp, email: &str, channel: i64, content: &str) -> i64 {
    let to = channel.to_string();
    let body = s
        .ok(
            "POST",
            "/api/v1/messages",
            email,
            &[
                ("type", "stream"),
                ("to", &to),
                ("topic", "authz"),
                ("content", content),
            ],
        )
        .await;
    body["id"].as_i64().expect("id")
}

async fn group(s: &TestApp, email: &str, name: &str, members: &[i64]) -> i64 {
    let members = json!(members).to_string();
    let body = s
        .ok(
            "POST",
            "/api/v1/user_groups/create",
            email,
            &[
                ("name", name),
                ("description", "authz"),
                ("members", &members),
            ],
        )
        .await;
    body["group_id"].as_i64().expect("group_id")
}

async fn linkifier(s: &TestApp, name: &str) -> i64 {
    let pattern = format!("{name}-(?P<id>[0-9]+)");
    let body = s
        .ok(
            "POST",
            "/api/v1/realm/filters",
            IAGO,
            &[
                ("pattern", &pattern),
                ("url_template", "https://example.com/{id}"),
            ],
        )
        .await;
    body["id"].as_i64().expect("id")
}

async fn profile_field(s: &TestApp, name: &str) -> i64 {
    let body = s
        .ok(
            "POST",
            "/api/v1/realm/profile_fields",
            IAGO,
            &[("name", name), ("field_type", "1")],
        )
        .await;
    body["id"].as_i64().expect("id")
}

fn ids_of(list: &Value) -> Vec<i64> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|x| x["id"].as_i64().expect("id"))
        .collect()
}

/// The id of the system group `name` as `email` sees the groups of `host`'s realm.
async fn system_group(s: &TestApp, host: &str, email: &str, key: &str, name: &str) -> i64 {
    let reply = send(s.request_on(
        host,
        Method::GET,
        "/api/v1/user_groups",
        Auth::Basic(email, key),
    ))
    .await;
    assert_success(&reply)["user_groups"]
        .as_array()
        .expect("user_groups")
        .iter()
        .find(|g| g["name"] == name)
        .and_then(|g| g["id"].as_i64())
        .expect("a system group")
}

/// Builds realm A's objects and everyone's credentials.
async fn setup(s: &TestApp, other: &OtherRealm) -> Fx {
    let humans = [
        (Guest, POLONIUS),
        (Member, HAMLET),
        (Moderator, SHIVA),
        (Admin, IAGO),
        (Owner, DESDEMONA),
        (BotOwner, PROSPERO),
    ];
    let mut creds = HashMap::new();
    let mut ids = HashMap::new();
    for (w, email) in humans {
        creds.insert(w, (email.to_owned(), s.api_key(email).await));
        ids.insert(w, s.user_id(email).await);
    }
    let othello = s.user_id(OTHELLO).await;

    // The other realm starts with the Welcome Bot's messages: this realm's message ids
    // start past them, so that they name nothing there (the `Foreign` caller).
    let theirs = send(
        s.request_on(
            &other.host,
            Method::GET,
            "/api/v1/messages",
            Auth::Basic(&other.owner_email, &other.owner_key),
        )
        .query(&[
            ("anchor", "newest"),
            ("num_before", "1"),
            ("num_after", "0"),
        ]),
    )
    .await;
    let newest = assert_success(&theirs)["messages"][0]["id"]
        .as_i64()
        .expect("the other realm's newest message");
    for i in 0..newest {
        s.ok(
            "POST",
            "/api/v1/messages",
            IAGO,
            &[
                ("type", "stream"),
                ("to", "Verona"),
                ("topic", "authz filler"),
                ("content", &format!("filler {i}")),
            ],
        )
        .await;
    }

    // The generic bot, owned by a member.
    let bot = s
        .ok(
            "POST",
            "/api/v1/bots",
            PROSPERO,
            &[("full_name", "Authz Bot"), ("short_name", "authz")],
        )
        .await;
    let bot_id = bot["user_id"].as_i64().expect("user_id");
    let bot_user = s
        .ok("GET", &format!("/api/v1/users/{bot_id}"), IAGO, &[])
        .await;
    let bot_email = bot_user["user"]["delivery_email"]
        .as_str()
        .or(bot_user["user"]["email"].as_str())
        .expect("bot email")
        .to_owned();
    creds.insert(
        Bot,
        (bot_email, bot["api_key"].as_str().unwrap().to_owned()),
    );
    ids.insert(Bot, bot_id);

    // The other realm's owner, and a key of the right length that is nobody's.
    creds.insert(
        Foreign,
        (other.owner_email.clone(), other.owner_key.clone()),
    );
    creds.insert(
        ForeignKey,
        (other.owner_email.clone(), other.owner_key.clone()),
    );
    ids.insert(Foreign, other.owner_id as i64);
    ids.insert(ForeignKey, other.owner_id as i64);
    creds.insert(BadKey, (HAMLET.to_owned(), "x".repeat(32)));

    // A deactivated user: its key fetched while it was active.
    let gone = s.create_user(GONE_EMAIL, PASSWORD, "Gone").await;
    let gone_key = s.api_key(GONE_EMAIL).await;
    s.ok("DELETE", &format!("/api/v1/users/{gone}"), IAGO, &[])
        .await;
    creds.insert(Deactivated, (GONE_EMAIL.to_owned(), gone_key));

    let verona = s.stream_id("Verona").await;
    let public = channel(s, OTHELLO, "authz-public", false).await;
    let private = channel(s, OTHELLO, "authz-private", true).await;
    let removal = channel(s, OTHELLO, "authz-removal", false).await;
    let owners = channel(s, OTHELLO, "authz-owners", true).await;
    let prospero = ids[&BotOwner].to_string();
    s.ok(
        "POST",
        "/api/v1/users/me/subscriptions",
        OTHELLO,
        &[
            (
                "subscriptions",
                &json!([{"name": "authz-owners"}]).to_string(),
            ),
            ("principals", &format!("[{prospero}]")),
        ],
    )
    .await;
    let private_msg = send_to(s, OTHELLO, private, "SECRET in the private channel").await;
    let public_msg = send_to(s, OTHELLO, public, "SECRET in the public channel").await;
    let react_msg = send_to(s, OTHELLO, public, "SECRET to react to").await;

    let members_group = system_group(s, DEV_HOST, IAGO, &creds[&Admin].1, "role:members").await;
    let other_members_group = system_group(
        s,
        &other.host,
        &other.owner_email,
        &other.owner_key,
        "role:members",
    )
    .await;

    let mut targets = HashMap::new();
    let mut bots = HashMap::new();
    let mut archive = HashMap::new();
    let mut doomed = HashMap::new();
    let mut groups = HashMap::new();
    let mut subgroups = HashMap::new();
    let mut emoji = HashMap::new();
    let mut linkifiers = HashMap::new();
    let mut fields = HashMap::new();
    let mut links: HashMap<Who, i64> = HashMap::new();
    for w in USERS.into_iter().chain([Foreign]) {
        let l = w.label();
        let target = s
            .create_user(
                &format!("target-{l}@authz.test"),
                PASSWORD,
                &format!("Target {l}"),
            )
            .await;
        targets.insert(w, target as i64);
        let b = s
            .ok(
                "POST",
                "/api/v1/bots",
                PROSPERO,
                &[
                    ("full_name", &format!("Doomed bot {l}")),
                    ("short_name", &format!("doomed-{l}")),
                ],
            )
            .await;
        bots.insert(w, b["user_id"].as_i64().unwrap());
        archive.insert(
            w,
            channel(s, IAGO, &format!("authz-archive-{l}"), false).await,
        );
        doomed.insert(
            w,
            send_to(s, OTHELLO, public, &format!("SECRET to delete ({l})")).await,
        );
        groups.insert(
            w,
            group(s, OTHELLO, &format!("authz-doomed-{l}"), &[othello]).await,
        );
        subgroups.insert(w, group(s, OTHELLO, &format!("authz-sub-{l}"), &[]).await);
        let name = format!("authz_doomed_{l}");
        upload(
            s,
            OTHELLO,
            &format!("/api/v1/realm/emoji/{name}"),
            "f1",
            "img.png",
        )
        .await;
        emoji.insert(w, name);
        linkifiers.insert(w, linkifier(s, &format!("authzdoomed{l}")).await);
        fields.insert(w, profile_field(s, &format!("authz doomed {l}")).await);
        links.insert(w, links.len() as i64 + 1);
        s.ok("POST", "/api/v1/invites/multiuse", IAGO, &[]).await;
    }
    let join_link = s.ok("POST", "/api/v1/invites/multiuse", IAGO, &[]).await["invite_link"]
        .as_str()
        .unwrap()
        .to_owned();
    let join_path = join_link[join_link.find("/join/").unwrap()..].to_owned();
    s.ok(
        "POST",
        "/api/v1/invites",
        OTHELLO,
        &[
            ("invitee_emails", "invited@authz.test"),
            ("stream_ids", "[]"),
        ],
    )
    .await;
    let invite = 1;

    // The shared objects after the per-caller ones: their ids are then larger than
    // any the other realm reaches during the matrix, so that through its host they
    // name nothing.
    let group_id = group(s, OTHELLO, "authz-group", &[othello]).await;
    let linkifier_id = linkifier(s, "authzshared").await;
    let field = profile_field(s, "authz shared").await;
    let folder = s
        .ok(
            "POST",
            "/api/v1/channel_folders/create",
            IAGO,
            &[("name", "authz shared folder")],
        )
        .await["channel_folder_id"]
        .as_i64()
        .unwrap();

    upload(
        s,
        OTHELLO,
        "/api/v1/realm/emoji/authz_shared",
        "f1",
        "img.png",
    )
    .await;
    let realm_emoji = s.ok("GET", "/api/v1/realm/emoji", OTHELLO, &[]).await;
    let emoji_image = realm_emoji["emoji"]
        .as_object()
        .expect("emoji")
        .values()
        .find(|e| e["name"] == "authz_shared")
        .and_then(|e| e["source_url"].as_str())
        .expect("source_url")
        .to_owned();

    // A written data export, downloaded by its URL's path.
    let export_id = s.ok("POST", "/api/v1/export/realm", IAGO, &[]).await["id"].clone();
    let export_download = poll(
        std::time::Duration::from_secs(60),
        "the fixture's data export",
        || async {
            let listed = s.ok("GET", "/api/v1/export/realm", IAGO, &[]).await;
            listed["exports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["id"] == export_id)
                .and_then(|e| e["export_url"].as_str())
                .map(|u| u[u.find("/user_avatars/").unwrap()..].to_owned())
        },
    )
    .await;

    let linkifier_ids =
        ids_of(&s.ok("GET", "/api/v1/realm/linkifiers", IAGO, &[]).await["linkifiers"]);
    let field_ids =
        ids_of(&s.ok("GET", "/api/v1/realm/profile_fields", IAGO, &[]).await["custom_fields"]);
    let folders = s
        .ok(
            "GET",
            "/api/v1/channel_folders",
            IAGO,
            &[("include_archived", "true")],
        )
        .await;
    let folder_ids = ids_of(&folders["channel_folders"]);

    // Othello's own things.
    let when = in_a_day().to_string();
    let to = verona.to_string();
    let scheduled = s
        .ok(
            "POST",
            "/api/v1/scheduled_messages",
            OTHELLO,
            &[
                ("type", "stream"),
                ("to", &to),
                ("topic", "authz"),
                ("content", "SECRET scheduled"),
                ("scheduled_delivery_timestamp", &when),
            ],
        )
        .await["scheduled_message_id"]
        .as_i64()
        .unwrap();
    let view_fragment = format!("narrow/channel/{public}-authz-public");
    s.ok(
        "POST",
        "/api/v1/navigation_views",
        OTHELLO,
        &[
            ("fragment", &view_fragment),
            ("is_pinned", "true"),
            ("name", "Othello's view"),
        ],
    )
    .await;
    let draft = s
        .ok(
            "POST",
            "/api/v1/drafts",
            OTHELLO,
            &[(
                "drafts",
                &json!([{"type": "", "to": [], "topic": "", "content": "SECRET draft"}])
                    .to_string(),
            )],
        )
        .await["ids"][0]
        .as_i64()
        .unwrap();
    let snippet = s
        .ok(
            "POST",
            "/api/v1/saved_snippets",
            OTHELLO,
            &[("title", "SECRET"), ("content", "snippet")],
        )
        .await["saved_snippet_id"]
        .as_i64()
        .unwrap();
    let reminder = s
        .ok(
            "POST",
            "/api/v1/reminders",
            OTHELLO,
            &[
                ("message_id", &public_msg.to_string()),
                ("scheduled_delivery_timestamp", &when),
            ],
        )
        .await["reminder_id"]
        .as_i64()
        .unwrap();
    s.ok(
        "POST",
        "/api/v1/users/me/presence",
        OTHELLO,
        &[("status", "active")],
    )
    .await;
    let othello_queue = s.register(OTHELLO, &[]).await;
    let uploaded = upload(s, OTHELLO, "/api/v1/user_uploads", "file", "authz.txt").await;
    let attachment_path = uploaded["url"]
        .as_str()
        .unwrap()
        .strip_prefix("/user_uploads/")
        .unwrap()
        .to_owned();
    let attachments = s.ok("GET", "/api/v1/attachments", OTHELLO, &[]).await;
    let attachment = attachments["attachments"][0]["id"].as_i64().unwrap();
    let othello_key = s.api_key(OTHELLO).await;
    let created = s
        .request(
            Method::POST,
            "/api/v1/tus",
            Auth::Basic(OTHELLO, &othello_key),
        )
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "100")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let tus_upload = created.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    // Last: it lives 60 seconds, and the matrix reads it first.
    let temporary_url = s
        .ok(
            "GET",
            &format!("/api/v1/user_uploads/{attachment_path}"),
            OTHELLO,
            &[],
        )
        .await["url"]
        .as_str()
        .unwrap()
        .to_owned();

    Fx {
        creds,
        ids,
        other_host: other.host.clone(),
        othello,
        bot: bot_id,
        verona,
        public,
        private,
        removal,
        owners,
        private_msg,
        public_msg,
        react_msg,
        group: group_id,
        members_group,
        other_members_group,
        linkifier: linkifier_id,
        linkifier_ids,
        field,
        field_ids,
        folder,
        folder_ids,
        scheduled,
        attachment,
        attachment_path,
        tus_upload,
        temporary_url,
        view_fragment,
        draft,
        snippet,
        reminder,
        othello_queue,
        emoji_image,
        export_download,
        targets,
        bots,
        archive,
        doomed,
        groups,
        subgroups,
        emoji,
        linkifiers,
        fields,
        invite,
        links,
        join_path,
    }
}

/// The objects of realm A that no caller may change, as othello sees them.
async fn untouchable(s: &TestApp, fx: &Fx) -> Vec<(String, u16, Body)> {
    let paths = [
        format!("/api/v1/streams/{}", fx.private),
        format!("/api/v1/messages/{}", fx.private_msg),
        format!("/api/v1/messages/{}", fx.public_msg),
        newest_in(fx.private),
        format!("/api/v1/users/{}", fx.othello),
        "/api/v1/scheduled_messages".to_owned(),
        "/api/v1/navigation_views".to_owned(),
        format!("/api/v1/users/{}/subscriptions/{}", fx.othello, fx.private),
    ];
    let mut out = Vec::new();
    for path in paths {
        let a = read_as(s, OTHELLO, &path).await;
        out.push((path, a.status, a.body));
    }
    // Othello's attachments, without the realm-wide upload total.
    let a = read_as(s, OTHELLO, "/api/v1/attachments").await;
    let list = match &a.body {
        Body::Json(v) => Body::Json(v["attachments"].clone()),
        other => other.clone(),
    };
    out.push(("/api/v1/attachments".to_owned(), a.status, list));
    out
}

#[actix_web::test]
async fn every_operation_against_every_caller() {
    let started = Instant::now();
    let (relay_url, _relay, relay) = start_relay();
    let (s, other) = TestApp::spawn_two_realms(OTHER_SUBDOMAIN, OTHER_OWNER, move |c| {
        c.push_relay_url = Some(relay_url.clone())
    })
    .await;
    let fx = setup(&s, &other).await;
    let set_up = started.elapsed();
    let before = untouchable(&s, &fx).await;

    let mut out = Outcome::default();
    run(&s, &fx, &cases(), &mut out).await;

    let after = untouchable(&s, &fx).await;
    for (b, a) in before.iter().zip(&after) {
        if b != a {
            out.failures.push(format!(
                "GET {} as othello changed during the matrix: {:?} -> {:?}",
                b.0, b.2, a.2
            ));
        }
    }
    // Othello's queue survived every attempt to delete it.
    let (status, body) = s
        .call(
            "GET",
            "/api/v1/events",
            OTHELLO,
            &[
                ("queue_id", &fx.othello_queue),
                ("last_event_id", "-1"),
                ("dont_block", "true"),
            ],
        )
        .await;
    if status != 200 {
        out.failures
            .push(format!("othello's event queue is gone: {body}"));
    }

    run(&s, &fx, &last_cases(), &mut out).await;
    relay.stop(true).await;
    eprintln!(
        "authorization matrix: {} cases x {} callers = {} cells; setup {:?}, total {:?}",
        cases().len() + last_cases().len(),
        CALLERS.len(),
        out.cells,
        set_up,
        started.elapsed()
    );
    eprintln!(
        "{} cells answer a known difference from Zulip:\n{}",
        out.known.len(),
        out.known.join("\n")
    );
    assert!(
        out.failures.is_empty(),
        "{} of {} cells differ:\n{}",
        out.failures.len(),
        out.cells,
        out.failures.join("\n")
    );
}
