//! User groups against every role: create, list, update, members and subgroups (seed
//! 4.9), deactivation with its objections (seed 4.16), reactivation, the realm's group
//! settings, reads, events and restarts. Table-driven cases (who, request, status, code,
//! msg, body) against a fresh development realm.
//!
//! The development realm: owner desdemona (9), administrator iago (11), moderator
//! shiva (15), members cordelia (8), hamlet (10), othello (12), prospero (14), guest
//! polonius (13), bot default-bot (16). System groups: role:nobody 1, role:owners 2,
//! role:administrators 3, role:moderators 4, role:fullmembers 5, role:members 6,
//! role:everyone 7, role:internet 8; groups users create start at 9. The realm lets
//! members create groups and owners manage all of them (`can_create_groups`
//! role:members, `can_manage_all_groups` role:owners), as Zulip's development realm.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::{json, Value};

const GUESTS: &str = "Not allowed for guest users";
const BOTS: &str = "This endpoint does not accept bot requests.";

/// Creates a group as `who` (description "d", these members); returns its id.
async fn create(s: &TestApp, who: &str, name: &str, members: &[i64]) -> i64 {
    create_with(s, who, name, members, &[]).await
}

async fn create_with(
    s: &TestApp,
    who: &str,
    name: &str,
    members: &[i64],
    extra: &[(&str, &str)],
) -> i64 {
    let members = json!(members).to_string();
    let mut params = vec![("name", name), ("description", "d"), ("members", &members)];
    params.extend_from_slice(extra);
    let body = s
        .ok("POST", "/api/v1/user_groups/create", who, &params)
        .await;
    body["group_id"].as_i64().expect("group_id")
}

/// A group as `GET /user_groups?include_deactivated_groups=true` shows it.
async fn group(s: &TestApp, id: i64) -> Value {
    let body = s
        .ok(
            "GET",
            "/api/v1/user_groups",
            IAGO,
            &[("include_deactivated_groups", "true")],
        )
        .await;
    body["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no group {id}"))
}

fn members_path(id: i64) -> String {
    format!("/api/v1/user_groups/{id}/members")
}

fn subgroups_path(id: i64) -> String {
    format!("/api/v1/user_groups/{id}/subgroups")
}

fn ids(v: &[i64]) -> String {
    json!(v).to_string()
}

// ---- POST /user_groups/create ------------------------------------------------------

#[actix_web::test]
async fn create_every_role() {
    let mut s = TestApp::spawn().await;
    let make = |name: &str| {
        p(&[
            ("name", name),
            ("description", "a group"),
            ("members", "[10]"),
        ])
    };
    let table = vec![
        ok(DESDEMONA, make("by-owner"), json!({"group_id": 10})),
        ok(IAGO, make("by-admin"), json!({"group_id": 11})),
        ok(SHIVA, make("by-moderator"), json!({"group_id": 12})),
        ok(HAMLET, make("by-member"), json!({"group_id": 13})),
        bad(POLONIUS, make("by-guest"), GUESTS),
        bad(DEFAULT_BOT, make("by-bot"), BOTS),
        // The role checks come before the parameters.
        bad(POLONIUS, vec![], GUESTS),
        bad(DEFAULT_BOT, vec![], BOTS),
    ];
    run_cases(&s, "POST", "/api/v1/user_groups/create", &table).await;

    // Only owners may change can_create_groups; then only administrators create.
    let admins_only = p(&[("can_create_groups", r#"{"new": 3}"#)]);
    let table = vec![
        not_admin(HAMLET, admins_only.clone()),
        not_owner(IAGO, admins_only.clone()),
        ok(
            DESDEMONA,
            admins_only.clone(),
            json!({"can_create_groups": 3}),
        ),
        // No change: nothing to report.
        ok(DESDEMONA, admins_only, json!({})),
    ];
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;
    let table = vec![
        bad(HAMLET, make("member-again"), INSUFFICIENT),
        bad(SHIVA, make("moderator-again"), INSUFFICIENT),
        ok(IAGO, make("admin-again"), json!({"group_id": 14})),
        ok(DESDEMONA, make("owner-again"), json!({"group_id": 15})),
    ];
    run_cases(&s, "POST", "/api/v1/user_groups/create", &table).await;

    // Survives a restart.
    s.restart().await;
    s.err(
        "POST",
        "/api/v1/user_groups/create",
        HAMLET,
        &[("name", "x"), ("description", "x"), ("members", "[]")],
        400,
        "BAD_REQUEST",
        INSUFFICIENT,
    )
    .await;
    let g = group(&s, 13).await;
    assert_eq!(g["name"], "by-member");
    assert_eq!(g["creator_id"], HAMLET_ID);
    assert_eq!(g["members"], json!([HAMLET_ID]));
    s.stop().await;
}

#[actix_web::test]
async fn create_validation() {
    let s = TestApp::spawn().await;
    let other = create(&s, IAGO, "existing", &[]).await;
    s.ok(
        "POST",
        &format!("/api/v1/user_groups/{other}/deactivate"),
        IAGO,
        &[],
    )
    .await;
    let base = |extra: &[(&'static str, &str)]| {
        let mut v = p(&[("name", "new"), ("description", "d"), ("members", "[]")]);
        for (k, val) in extra {
            v.retain(|(key, _)| key != k);
            v.push((k, (*val).to_owned()));
        }
        v
    };
    let without = |name: &str| {
        let mut v = base(&[]);
        v.retain(|(k, _)| *k != name);
        v
    };
    let table = vec![
        // Every required parameter is looked for first, in Zulip's order.
        missing(HAMLET, vec![], "description"),
        missing(
            HAMLET,
            p(&[("description", "d"), ("can_manage_group", "oops")]),
            "members",
        ),
        missing(HAMLET, without("name"), "name"),
        bad(HAMLET, base(&[("members", "10")]), "members is not a list"),
        bad(
            HAMLET,
            base(&[("members", "[10")]),
            "members is not valid JSON",
        ),
        bad(
            HAMLET,
            base(&[("members", "[\"a\"]")]),
            "members[0] is not an integer",
        ),
        bad(
            HAMLET,
            base(&[("subgroups", "{}")]),
            "subgroups is not a list",
        ),
        bad(
            HAMLET,
            base(&[("can_manage_group", "oops"), ("members", "x")]),
            "can_manage_group is not valid JSON",
        ),
        bad(
            HAMLET,
            base(&[("can_manage_group", r#"{"direct_members": []}"#)]),
            "can_manage_group[\"direct_subgroups\"] field is missing: Field required",
        ),
        // Members, then the name, then each setting, then the name's uniqueness, then
        // the subgroups.
        bad(
            HAMLET,
            base(&[("members", "[10, 999]"), ("name", "")]),
            "Invalid user ID: 999",
        ),
        bad(HAMLET, base(&[("members", "[-1]")]), "Invalid user ID: -1"),
        bad(
            HAMLET,
            base(&[("name", " ")]),
            "User group name can't be empty!",
        ),
        bad(
            HAMLET,
            base(&[("name", &"x".repeat(101))]),
            "User group name cannot exceed 100 characters.",
        ),
        bad(
            HAMLET,
            base(&[("name", "role:admins")]),
            "User group name cannot start with 'role:'.",
        ),
        bad(
            HAMLET,
            base(&[("name", "@all")]),
            "User group name cannot start with '@'.",
        ),
        bad(
            HAMLET,
            base(&[("name", "channel:x")]),
            "User group name cannot start with 'channel:'.",
        ),
        bad(
            HAMLET,
            base(&[("name", "existing"), ("can_manage_group", "999")]),
            "Invalid user group",
        ),
        bad(
            HAMLET,
            base(&[("name", "existing")]),
            "User group 'existing' already exists.",
        ),
        bad(
            HAMLET,
            base(&[("can_manage_group", "7")]),
            "'can_manage_group' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_add_members_group", "7")]),
            "'can_add_members_group' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_join_group", "7")]),
            "'can_join_group' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_remove_members_group", "7")]),
            "'can_remove_members_group' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_mention_group", "8")]),
            "'can_mention_group' setting cannot be set to 'role:internet' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_leave_group", "8")]),
            "'can_leave_group' setting cannot be set to 'role:internet' group.",
        ),
        bad(
            HAMLET,
            base(&[("can_mention_group", &other.to_string())]),
            "User group is deactivated.",
        ),
        bad(
            HAMLET,
            base(&[(
                "can_mention_group",
                r#"{"direct_members": [10, 999], "direct_subgroups": []}"#,
            )]),
            "Invalid user ID: 999",
        ),
        bad(
            HAMLET,
            base(&[(
                "can_mention_group",
                r#"{"direct_members": [10], "direct_subgroups": [999]}"#,
            )]),
            "Invalid user group ID: 999",
        ),
        bad(
            HAMLET,
            base(&[(
                "can_mention_group",
                &format!(r#"{{"direct_members": [10], "direct_subgroups": [{other}]}}"#),
            )]),
            "User group is deactivated.",
        ),
        // A lone subgroup is that group.
        bad(
            HAMLET,
            base(&[(
                "can_mention_group",
                r#"{"direct_members": [], "direct_subgroups": [999]}"#,
            )]),
            "Invalid user group",
        ),
        bad(
            HAMLET,
            base(&[("subgroups", "[2, 999]")]),
            "Invalid user group ID: 999",
        ),
        bad(
            HAMLET,
            base(&[("subgroups", &ids(&[other]))]),
            "User group is deactivated.",
        ),
    ];
    run_cases(&s, "POST", "/api/v1/user_groups/create", &table).await;

    // Nothing was created by the failures.
    let body = s
        .ok(
            "GET",
            "/api/v1/user_groups",
            IAGO,
            &[("include_deactivated_groups", "true")],
        )
        .await;
    // The system groups, hamletcharacters and the one created above.
    assert_eq!(body["user_groups"].as_array().unwrap().len(), 10);

    // Values Zulip accepts: role:everyone where allowed, anonymous values (an empty
    // one is role:nobody), subgroups, and repeated members.
    let id = create_with(
        &s,
        HAMLET,
        "settings",
        &[10, 10, 12],
        &[
            ("can_mention_group", "7"),
            ("can_leave_group", "1"),
            (
                "can_manage_group",
                r#"{"direct_members": [12, 10, 12], "direct_subgroups": [3]}"#,
            ),
            (
                "can_join_group",
                r#"{"direct_members": [], "direct_subgroups": []}"#,
            ),
            (
                "can_remove_members_group",
                r#"{"direct_members": [], "direct_subgroups": [4]}"#,
            ),
            ("subgroups", "[4, 2, 4]"),
        ],
    )
    .await;
    let g = group(&s, id).await;
    let created = g["date_created"].as_i64().expect("date_created");
    assert_eq!(
        g,
        json!({
            "id": id,
            "name": "settings",
            "creator_id": HAMLET_ID,
            "date_created": created,
            "description": "d",
            "members": [HAMLET_ID, OTHELLO_ID],
            "direct_subgroup_ids": [OWNERS, MODERATORS],
            "is_system_group": false,
            "can_add_members_group": {"direct_members": [HAMLET_ID], "direct_subgroups": []},
            "can_join_group": NOBODY,
            "can_leave_group": NOBODY,
            "can_manage_group": {"direct_members": [HAMLET_ID, OTHELLO_ID], "direct_subgroups": [ADMINS]},
            "can_mention_group": EVERYONE,
            "can_remove_members_group": MODERATORS,
            "deactivated": false,
        })
    );
}

// ---- GET /user_groups and the reads ------------------------------------------------

#[actix_web::test]
async fn listing_and_reads() {
    let s = TestApp::spawn().await;
    let body = s.ok("GET", "/api/v1/user_groups", HAMLET, &[]).await;
    let groups = body["user_groups"].as_array().unwrap();
    // The system groups and the development realm's hamletcharacters.
    assert_eq!(groups.len(), 9);
    // System groups as Zulip shows them (recording 16b).
    let system = |i: usize| groups[i].clone();
    assert_eq!(
        system(0),
        json!({
            "id": NOBODY, "name": "role:nobody", "creator_id": null, "date_created": null,
            "description": "Nobody", "members": [], "direct_subgroup_ids": [],
            "is_system_group": true, "can_add_members_group": NOBODY, "can_join_group": NOBODY,
            "can_leave_group": NOBODY, "can_manage_group": NOBODY, "can_mention_group": NOBODY,
            "can_remove_members_group": NOBODY, "deactivated": false,
        })
    );
    assert_eq!(system(1)["members"], json!([DESDEMONA_ID]));
    assert_eq!(system(2)["members"], json!([IAGO_ID]));
    assert_eq!(system(2)["direct_subgroup_ids"], json!([OWNERS]));
    assert_eq!(system(3)["members"], json!([SHIVA_ID]));
    assert_eq!(
        system(4)["description"],
        "Members of this organization, not including new accounts and guests"
    );
    let members = json!([6, 7, 8, 10, 12, 14, 16, 17, 18, 19, 20, 21]);
    assert_eq!(system(4)["members"], members);
    assert_eq!(system(5)["members"], members);
    assert_eq!(system(5)["direct_subgroup_ids"], json!([FULL_MEMBERS]));
    assert_eq!(system(6)["members"], json!([POLONIUS_ID]));
    assert_eq!(system(7)["description"], "Everyone on the Internet");
    assert_eq!(system(7)["direct_subgroup_ids"], json!([EVERYONE]));

    for (who, msg) in [(POLONIUS, GUESTS), (DEFAULT_BOT, BOTS)] {
        for path in [
            "/api/v1/user_groups".to_owned(),
            members_path(MEMBERS),
            format!("/api/v1/user_groups/{MEMBERS}/members/{HAMLET_ID}"),
            subgroups_path(MEMBERS),
        ] {
            s.err("GET", &path, who, &[], 400, "BAD_REQUEST", msg).await;
        }
    }

    // Members: recursive, or direct only.
    let team = create(&s, HAMLET, "team", &[HAMLET_ID]).await;
    let outer = create_with(
        &s,
        HAMLET,
        "outer",
        &[CORDELIA_ID],
        &[("subgroups", &ids(&[team, ADMINS]))],
    )
    .await;
    let table = vec![
        ok(
            HAMLET,
            vec![],
            json!({"members": [CORDELIA_ID, DESDEMONA_ID, HAMLET_ID, IAGO_ID]}),
        ),
        ok(
            HAMLET,
            p(&[("direct_member_only", "true")]),
            json!({"members": [CORDELIA_ID]}),
        ),
        bad(
            HAMLET,
            p(&[("direct_member_only", "yes")]),
            "direct_member_only is not valid JSON",
        ),
    ];
    run_cases(&s, "GET", &members_path(outer), &table).await;
    let table = vec![
        ok(
            IAGO,
            vec![],
            json!({"members": [DESDEMONA_ID, IAGO_ID, SHIVA_ID]}),
        ),
        ok(
            IAGO,
            p(&[("direct_member_only", "true")]),
            json!({"members": [SHIVA_ID]}),
        ),
    ];
    run_cases(&s, "GET", &members_path(MODERATORS), &table).await;
    s.err(
        "GET",
        &members_path(999),
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "Invalid user group",
    )
    .await;
    s.err(
        "GET",
        "/api/v1/user_groups/abc/members",
        HAMLET,
        &[],
        400,
        "BAD_REQUEST",
        "user_group_id is not an integer",
    )
    .await;

    // Membership of one user.
    let is = |g: i64, u: i64| format!("/api/v1/user_groups/{g}/members/{u}");
    for (g, u, direct, want) in [
        (outer, HAMLET_ID, "false", true),
        (outer, HAMLET_ID, "true", false),
        (outer, CORDELIA_ID, "true", true),
        (outer, DESDEMONA_ID, "false", true),
        (outer, OTHELLO_ID, "false", false),
        (MEMBERS, SHIVA_ID, "false", true),
        (MEMBERS, SHIVA_ID, "true", false),
        (MEMBERS, HAMLET_ID, "true", true),
        (EVERYONE, POLONIUS_ID, "true", true),
        (NOBODY, DESDEMONA_ID, "false", false),
    ] {
        let body = s
            .ok("GET", &is(g, u), IAGO, &[("direct_member_only", direct)])
            .await;
        assert_eq!(body["is_user_group_member"], want, "{g} {u} {direct}");
    }
    for (g, u, msg) in [
        (outer, 999, "No such user"),
        (outer, BOT_ID, "No such user"),
        (999, HAMLET_ID, "Invalid user group"),
    ] {
        s.err("GET", &is(g, u), IAGO, &[], 400, "BAD_REQUEST", msg)
            .await;
    }

    // Subgroups: recursive, or direct only.
    let table = vec![
        ok(HAMLET, vec![], json!({"subgroups": [OWNERS, ADMINS, team]})),
        ok(
            HAMLET,
            p(&[("direct_subgroup_only", "true")]),
            json!({"subgroups": [ADMINS, team]}),
        ),
    ];
    run_cases(&s, "GET", &subgroups_path(outer), &table).await;
    let table = vec![
        ok(
            HAMLET,
            vec![],
            json!({"subgroups": [OWNERS, ADMINS, MODERATORS, FULL_MEMBERS]}),
        ),
        ok(
            HAMLET,
            p(&[("direct_subgroup_only", "true")]),
            json!({"subgroups": [FULL_MEMBERS]}),
        ),
    ];
    run_cases(&s, "GET", &subgroups_path(MEMBERS), &table).await;

    // A deactivated group: listed only when asked for, and not readable.
    let team = create(&s, HAMLET, "lone", &[HAMLET_ID]).await;
    s.ok(
        "POST",
        &format!("/api/v1/user_groups/{team}/deactivate"),
        HAMLET,
        &[],
    )
    .await;
    let listed = |body: &Value| -> Vec<i64> {
        body["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_i64().unwrap())
            .collect()
    };
    let body = s.ok("GET", "/api/v1/user_groups", HAMLET, &[]).await;
    assert!(!listed(&body).contains(&team));
    let body = s
        .ok(
            "GET",
            "/api/v1/user_groups",
            HAMLET,
            &[("include_deactivated_groups", "true")],
        )
        .await;
    assert!(listed(&body).contains(&team));
    for path in [
        members_path(team),
        subgroups_path(team),
        is(team, HAMLET_ID),
    ] {
        s.err(
            "GET",
            &path,
            HAMLET,
            &[],
            400,
            "BAD_REQUEST",
            "User group is deactivated.",
        )
        .await;
    }
}

// ---- POST /user_groups/{id}/members (seed 4.9) -------------------------------------

fn add(users: &[i64]) -> Vec<(&'static str, String)> {
    vec![("add", ids(users))]
}

fn delete(users: &[i64]) -> Vec<(&'static str, String)> {
    vec![("delete", ids(users))]
}

/// A group's direct members.
async fn direct_members(s: &TestApp, id: i64) -> Value {
    group(s, id).await["members"].clone()
}

#[actix_web::test]
async fn members_every_role() {
    let mut s = TestApp::spawn().await;
    // hamlet's group: he manages it and adds members; nobody may join; everyone may
    // leave; nobody else may remove members (Zulip's defaults).
    let crew = create(&s, HAMLET, "crew", &[HAMLET_ID]).await;
    let table = vec![
        // Joining needs can_join_group (role:nobody) or can_add_members_group.
        bad(CORDELIA, add(&[CORDELIA_ID]), INSUFFICIENT),
        // Administrators do not manage other users' groups; owners manage all.
        bad(IAGO, add(&[IAGO_ID]), INSUFFICIENT),
        bad(SHIVA, add(&[OTHELLO_ID]), INSUFFICIENT),
        bad(POLONIUS, add(&[POLONIUS_ID]), GUESTS),
        bad(DEFAULT_BOT, add(&[BOT_ID]), BOTS),
        bad(POLONIUS, vec![], GUESTS),
        ok(HAMLET, add(&[CORDELIA_ID]), json!({})),
        ok(DESDEMONA, add(&[OTHELLO_ID, PROSPERO_ID, OTHELLO_ID]), json!({})),
        bad(HAMLET, add(&[PROSPERO_ID, SHIVA_ID]), "User 14 is already a member of this group"),
        bad(HAMLET, add(&[SHIVA_ID, 999]), "Invalid user ID: 999"),
        // Bots and guests can be members.
        ok(HAMLET, add(&[BOT_ID, POLONIUS_ID]), json!({})),
        // Leaving needs can_leave_group (role:everyone), but guests may not call.
        ok(CORDELIA, delete(&[CORDELIA_ID]), json!({})),
        bad(POLONIUS, delete(&[POLONIUS_ID]), GUESTS),
        bad(OTHELLO, delete(&[PROSPERO_ID]), INSUFFICIENT),
        bad(OTHELLO, delete(&[OTHELLO_ID, PROSPERO_ID]), INSUFFICIENT),
        bad(HAMLET, delete(&[CORDELIA_ID]), "There is no member '8' in this user group"),
        bad(HAMLET, delete(&[999]), "Invalid user ID: 999"),
        ok(HAMLET, delete(&[PROSPERO_ID, POLONIUS_ID]), json!({})),
        ok(DESDEMONA, delete(&[BOT_ID]), json!({})),
        // All or nothing: a failing later list undoes nothing because nothing is done.
        bad(
            HAMLET,
            vec![("add", ids(&[SHIVA_ID])), ("delete", ids(&[CORDELIA_ID]))],
            "There is no member '8' in this user group",
        ),
        // Each list sees what the one before it did.
        ok(
            HAMLET,
            vec![("add", ids(&[PROSPERO_ID])), ("delete", ids(&[PROSPERO_ID]))],
            json!({}),
        ),
        bad(
            HAMLET,
            vec![],
            "Nothing to do. Specify at least one of \"add\", \"delete\", \"add_subgroups\" or \"delete_subgroups\".",
        ),
        bad(
            HAMLET,
            vec![("add", "[]".into()), ("delete_subgroups", "[]".into())],
            "Nothing to do. Specify at least one of \"add\", \"delete\", \"add_subgroups\" or \"delete_subgroups\".",
        ),
        bad(HAMLET, vec![("add", "12".into())], "add is not a list"),
        bad(HAMLET, vec![("delete", "[1".into())], "delete is not valid JSON"),
        bad(HAMLET, vec![("add_subgroups", "[\"x\"]".into())], "add_subgroups[0] is not an integer"),
    ];
    run_cases(&s, "POST", &members_path(crew), &table).await;
    assert_eq!(
        direct_members(&s, crew).await,
        json!([HAMLET_ID, OTHELLO_ID])
    );

    // Unknown and system groups; user ids are checked before the group when removing.
    let table = vec![
        bad(DESDEMONA, add(&[HAMLET_ID]), "Invalid user group"),
        bad(DESDEMONA, delete(&[999]), "Invalid user ID: 999"),
        bad(DESDEMONA, delete(&[HAMLET_ID]), "Invalid user group"),
    ];
    run_cases(&s, "POST", &members_path(999), &table).await;
    for id in [NOBODY, MEMBERS, EVERYONE] {
        let table = vec![
            bad(DESDEMONA, add(&[HAMLET_ID]), INSUFFICIENT),
            bad(DESDEMONA, delete(&[HAMLET_ID]), INSUFFICIENT),
            bad(
                DESDEMONA,
                vec![("add_subgroups", ids(&[crew]))],
                INSUFFICIENT,
            ),
        ];
        run_cases(&s, "POST", &members_path(id), &table).await;
    }

    // The group's own permissions: anyone may join, members may add, moderators may
    // remove.
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{crew}"),
        HAMLET,
        &[
            ("can_join_group", r#"{"new": 6}"#),
            (
                "can_add_members_group",
                r#"{"new": {"direct_members": [8], "direct_subgroups": []}}"#,
            ),
            ("can_remove_members_group", r#"{"new": 4}"#),
        ],
    )
    .await;
    let table = vec![
        ok(PROSPERO, add(&[PROSPERO_ID]), json!({})),
        bad(PROSPERO, add(&[SHIVA_ID]), INSUFFICIENT),
        ok(CORDELIA, add(&[SHIVA_ID, CORDELIA_ID]), json!({})),
        bad(CORDELIA, delete(&[SHIVA_ID]), INSUFFICIENT),
        ok(SHIVA, delete(&[PROSPERO_ID]), json!({})),
        ok(IAGO, delete(&[CORDELIA_ID]), json!({})),
    ];
    run_cases(&s, "POST", &members_path(crew), &table).await;

    // Since feature level 391 a deactivated group's members can change.
    s.ok(
        "POST",
        &format!("/api/v1/user_groups/{crew}/deactivate"),
        HAMLET,
        &[],
    )
    .await;
    let table = vec![
        ok(HAMLET, add(&[PROSPERO_ID]), json!({})),
        ok(HAMLET, delete(&[SHIVA_ID]), json!({})),
    ];
    run_cases(&s, "POST", &members_path(crew), &table).await;

    let want = json!([HAMLET_ID, OTHELLO_ID, PROSPERO_ID]);
    assert_eq!(direct_members(&s, crew).await, want);
    s.restart().await;
    assert_eq!(direct_members(&s, crew).await, want);
    s.ok("POST", &members_path(crew), HAMLET, &[("delete", "[12]")])
        .await;
    assert_eq!(
        direct_members(&s, crew).await,
        json!([HAMLET_ID, PROSPERO_ID])
    );
    s.stop().await;
}

// ---- subgroups: POST /user_groups/{id}/subgroups and the members endpoint ---------

#[actix_web::test]
async fn subgroups_every_role() {
    let mut s = TestApp::spawn().await;
    let a = create(&s, HAMLET, "a", &[HAMLET_ID]).await;
    let b = create(&s, HAMLET, "b", &[]).await;
    let c = create(&s, CORDELIA, "c", &[CORDELIA_ID]).await;
    let d = create(&s, HAMLET, "d", &[]).await;
    let add_sub = |g: &[i64]| vec![("add", ids(g))];
    let del_sub = |g: &[i64]| vec![("delete", ids(g))];
    let nothing = "Nothing to do. Specify at least one of \"add\" or \"delete\".";
    let table = vec![
        bad(CORDELIA, add_sub(&[b]), INSUFFICIENT),
        // Recording 16c2: an administrator who does not manage the group.
        bad(IAGO, add_sub(&[b]), INSUFFICIENT),
        bad(POLONIUS, add_sub(&[b]), GUESTS),
        bad(DEFAULT_BOT, add_sub(&[b]), BOTS),
        bad(HAMLET, vec![], nothing),
        bad(HAMLET, vec![("add", "[]".into())], nothing),
        ok(HAMLET, add_sub(&[b, MODERATORS]), json!({})),
        bad(
            HAMLET,
            add_sub(&[b]),
            format!("User group {b} is already a subgroup of this group."),
        ),
        bad(
            HAMLET,
            add_sub(&[OWNERS, 999]),
            "Invalid user group ID: 999",
        ),
        bad(HAMLET, add_sub(&[-3]), "Invalid user group ID: -3"),
        bad(
            HAMLET,
            add_sub(&[a]),
            format!("User group {a} is already a subgroup of one of the passed subgroups."),
        ),
        ok(DESDEMONA, del_sub(&[MODERATORS]), json!({})),
        bad(
            HAMLET,
            del_sub(&[MODERATORS]),
            "User group 4 is not a subgroup of this group.",
        ),
        bad(HAMLET, del_sub(&[999]), "Invalid user group ID: 999"),
    ];
    run_cases(&s, "POST", &subgroups_path(a), &table).await;

    // Cycles through several groups: a > b; c > a; then b > c would close the loop.
    s.ok("POST", &subgroups_path(c), CORDELIA, &[("add", &ids(&[a]))])
        .await;
    let table = vec![
        bad(
            HAMLET,
            add_sub(&[c]),
            format!("User group {b} is already a subgroup of one of the passed subgroups."),
        ),
        bad(
            HAMLET,
            add_sub(&[d, b]),
            format!("User group {b} is already a subgroup of one of the passed subgroups."),
        ),
        ok(HAMLET, add_sub(&[d]), json!({})),
    ];
    run_cases(&s, "POST", &subgroups_path(b), &table).await;

    // Adding subgroups follows can_add_members_group, removing them can_manage_group.
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{a}"),
        HAMLET,
        &[("can_add_members_group", r#"{"new": 6}"#)],
    )
    .await;
    let table = vec![
        ok(OTHELLO, add_sub(&[EVERYONE]), json!({})),
        bad(OTHELLO, del_sub(&[EVERYONE]), INSUFFICIENT),
        ok(HAMLET, del_sub(&[EVERYONE]), json!({})),
    ];
    run_cases(&s, "POST", &subgroups_path(a), &table).await;

    // System groups cannot be changed.
    for id in [NOBODY, ADMINS, INTERNET] {
        s.err(
            "POST",
            &subgroups_path(id),
            DESDEMONA,
            &[("add", &ids(&[a]))],
            400,
            "BAD_REQUEST",
            INSUFFICIENT,
        )
        .await;
    }
    s.err(
        "POST",
        &subgroups_path(999),
        DESDEMONA,
        &[("add", &ids(&[a]))],
        400,
        "BAD_REQUEST",
        "Invalid user group",
    )
    .await;

    // The members endpoint takes subgroups too, after the users.
    let e = create(&s, HAMLET, "e", &[]).await;
    let table = vec![
        ok(
            HAMLET,
            vec![
                ("add", ids(&[OTHELLO_ID])),
                ("add_subgroups", ids(&[e, OWNERS])),
            ],
            json!({}),
        ),
        bad(
            HAMLET,
            vec![
                ("delete", ids(&[OTHELLO_ID])),
                ("delete_subgroups", ids(&[MEMBERS])),
            ],
            "User group 6 is not a subgroup of this group.",
        ),
        ok(
            HAMLET,
            vec![("delete_subgroups", ids(&[OWNERS]))],
            json!({}),
        ),
    ];
    run_cases(&s, "POST", &members_path(a), &table).await;

    // A deactivated group cannot become a subgroup (nor be removed as one), but a
    // deactivated group's own subgroups can change.
    let f = create(&s, HAMLET, "f", &[]).await;
    s.ok(
        "POST",
        &format!("/api/v1/user_groups/{f}/deactivate"),
        HAMLET,
        &[],
    )
    .await;
    let table = vec![
        bad(HAMLET, add_sub(&[f]), "User group is deactivated."),
        bad(HAMLET, del_sub(&[f]), "User group is deactivated."),
    ];
    run_cases(&s, "POST", &subgroups_path(a), &table).await;
    s.ok(
        "POST",
        &subgroups_path(f),
        HAMLET,
        &[("add", &ids(&[ADMINS]))],
    )
    .await;

    for round in 0..2 {
        assert_eq!(group(&s, a).await["direct_subgroup_ids"], json!([b, e]));
        assert_eq!(group(&s, b).await["direct_subgroup_ids"], json!([d]));
        assert_eq!(group(&s, c).await["direct_subgroup_ids"], json!([a]));
        assert_eq!(group(&s, f).await["direct_subgroup_ids"], json!([ADMINS]));
        let body = s.ok("GET", &subgroups_path(c), HAMLET, &[]).await;
        assert_eq!(body["subgroups"], json!([a, b, d, e]));
        if round == 0 {
            s.restart().await;
        }
    }
    // The cycle check still holds after the restart.
    s.err(
        "POST",
        &subgroups_path(d),
        HAMLET,
        &[("add", &ids(&[c]))],
        400,
        "BAD_REQUEST",
        &format!("User group {d} is already a subgroup of one of the passed subgroups."),
    )
    .await;
    s.stop().await;
}

// ---- POST /user_groups/{id}/deactivate (seed 4.16) ---------------------------------

fn deactivate_path(id: i64) -> String {
    format!("/api/v1/user_groups/{id}/deactivate")
}

#[actix_web::test]
async fn deactivation_every_role_and_objection() {
    let mut s = TestApp::spawn().await;
    // Recording 16: a group used as a subgroup, by a channel and by the realm.
    let g = create(&s, IAGO, "oracle-group", &[IAGO_ID]).await;
    let parent = create(&s, IAGO, "oracle-parent", &[IAGO_ID]).await;
    let user = create_with(
        &s,
        HAMLET,
        "user",
        &[],
        &[("can_mention_group", &g.to_string())],
    )
    .await;
    let later = create(&s, HAMLET, "later", &[]).await;
    let gone = create_with(
        &s,
        HAMLET,
        "gone",
        &[],
        &[("can_mention_group", &g.to_string())],
    )
    .await;
    s.ok(
        "POST",
        &subgroups_path(parent),
        IAGO,
        &[("add", &ids(&[g]))],
    )
    .await;
    let set = |v: i64| format!(r#"{{"new": {v}}}"#);
    s.ok(
        "PATCH",
        "/api/v1/streams/3",
        IAGO,
        &[
            ("can_remove_subscribers_group", &set(g)),
            ("can_add_subscribers_group", &set(g)),
        ],
    )
    .await;
    // An anonymous value holding the group as a subgroup is a use too.
    s.ok(
        "PATCH",
        "/api/v1/streams/4",
        IAGO,
        &[(
            "can_subscribe_group",
            &format!(r#"{{"new": {{"direct_members": [10], "direct_subgroups": [{g}]}}}}"#),
        )],
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("can_create_groups", &set(g))],
    )
    .await;
    // The group's own setting, and a group whose setting holds it anonymously.
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{g}"),
        IAGO,
        &[("can_leave_group", &set(g))],
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{later}"),
        HAMLET,
        &[
            (
                "can_join_group",
                &format!(r#"{{"new": {{"direct_members": [], "direct_subgroups": [{g}, 2]}}}}"#),
            ),
            ("can_add_members_group", &set(g)),
        ],
    )
    .await;
    // Uses that do not count: an archived channel, a deactivated group.
    s.ok(
        "POST",
        "/api/v1/channels/create",
        IAGO,
        &[
            ("name", "old"),
            ("can_add_subscribers_group", &g.to_string()),
        ],
    )
    .await;
    let old = s.stream_id("old").await;
    s.ok("DELETE", &format!("/api/v1/streams/{old}"), IAGO, &[])
        .await;
    s.ok("POST", &deactivate_path(gone), HAMLET, &[]).await;

    let objections = json!([
        {"type": "subgroup", "supergroup_ids": [parent]},
        {"type": "channel", "channel_id": 3, "settings": ["can_add_subscribers_group", "can_remove_subscribers_group"]},
        {"type": "channel", "channel_id": 4, "settings": ["can_subscribe_group"]},
        {"type": "user_group", "group_id": g, "settings": ["can_leave_group"]},
        {"type": "user_group", "group_id": user, "settings": ["can_mention_group"]},
        {"type": "user_group", "group_id": later, "settings": ["can_add_members_group", "can_join_group"]},
        {"type": "realm", "settings": ["can_create_groups"]},
    ]);
    let in_use = |who| Case {
        who,
        params: vec![],
        status: 400,
        code: "CANNOT_DEACTIVATE_GROUP_IN_USE",
        msg: "Cannot deactivate user group in use.".into(),
        fields: json!({"objections": objections}),
    };
    let table = vec![
        // No role decorator: guests and bots get the permission error.
        bad(POLONIUS, vec![], INSUFFICIENT),
        bad(DEFAULT_BOT, vec![], INSUFFICIENT),
        bad(HAMLET, vec![], INSUFFICIENT),
        bad(SHIVA, vec![], INSUFFICIENT),
        in_use(IAGO),
        in_use(DESDEMONA),
    ];
    run_cases(&s, "POST", &deactivate_path(g), &table).await;
    // Recordings 16f and 16g.
    for (id, msg) in [
        (EVERYONE, INSUFFICIENT),
        (NOBODY, INSUFFICIENT),
        (99999, "Invalid user group"),
    ] {
        for who in [IAGO, POLONIUS] {
            s.err(
                "POST",
                &deactivate_path(id),
                who,
                &[],
                400,
                "BAD_REQUEST",
                msg,
            )
            .await;
        }
    }

    // The indexes behind the objections survive a restart.
    s.restart().await;
    s.err(
        "POST",
        &deactivate_path(g),
        IAGO,
        &[],
        400,
        "CANNOT_DEACTIVATE_GROUP_IN_USE",
        "Cannot deactivate user group in use.",
    )
    .await;

    // Take the uses away one at a time.
    s.ok(
        "POST",
        &subgroups_path(parent),
        IAGO,
        &[("delete", &ids(&[g]))],
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/streams/3",
        IAGO,
        &[
            ("can_remove_subscribers_group", &set(ADMINS)),
            ("can_add_subscribers_group", &set(NOBODY)),
        ],
    )
    .await;
    s.ok(
        "PATCH",
        "/api/v1/streams/4",
        IAGO,
        &[("can_subscribe_group", &set(NOBODY))],
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{user}"),
        HAMLET,
        &[("can_mention_group", &set(EVERYONE))],
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{later}"),
        HAMLET,
        &[
            ("can_join_group", &set(NOBODY)),
            ("can_add_members_group", &set(NOBODY)),
        ],
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{g}"),
        IAGO,
        &[("can_leave_group", &set(EVERYONE))],
    )
    .await;
    let body = s
        .err(
            "POST",
            &deactivate_path(g),
            IAGO,
            &[],
            400,
            "CANNOT_DEACTIVATE_GROUP_IN_USE",
            "Cannot deactivate user group in use.",
        )
        .await;
    assert_eq!(
        body["objections"],
        json!([{"type": "realm", "settings": ["can_create_groups"]}])
    );
    s.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("can_create_groups", &set(MEMBERS))],
    )
    .await;
    s.ok("POST", &deactivate_path(g), IAGO, &[]).await;
    // A second time; and a deactivated group cannot be used any more.
    s.err(
        "POST",
        &deactivate_path(g),
        IAGO,
        &[],
        400,
        "BAD_REQUEST",
        "User group is deactivated.",
    )
    .await;
    s.err(
        "PATCH",
        "/api/v1/streams/3",
        IAGO,
        &[("can_remove_subscribers_group", &set(g))],
        400,
        "BAD_REQUEST",
        "User group is deactivated.",
    )
    .await;
    s.err(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("can_manage_all_groups", &set(g))],
        400,
        "BAD_REQUEST",
        "User group is deactivated.",
    )
    .await;
    s.err(
        "POST",
        &subgroups_path(parent),
        IAGO,
        &[("add", &ids(&[g]))],
        400,
        "BAD_REQUEST",
        "User group is deactivated.",
    )
    .await;

    // Kept, deactivated, across a restart; reactivated by PATCH deactivated=false.
    s.restart().await;
    assert_eq!(group(&s, g).await["deactivated"], true);
    assert_eq!(group(&s, g).await["name"], "oracle-group");
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{g}"),
        IAGO,
        &[("deactivated", "true")],
    )
    .await;
    assert_eq!(group(&s, g).await["deactivated"], true);
    s.err(
        "PATCH",
        &format!("/api/v1/user_groups/{g}"),
        HAMLET,
        &[("deactivated", "false")],
        400,
        "BAD_REQUEST",
        INSUFFICIENT,
    )
    .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{g}"),
        IAGO,
        &[("deactivated", "false")],
    )
    .await;
    s.restart().await;
    assert_eq!(group(&s, g).await["deactivated"], false);
    s.ok(
        "POST",
        &subgroups_path(parent),
        IAGO,
        &[("add", &ids(&[g]))],
    )
    .await;
    let body = s
        .err(
            "POST",
            &deactivate_path(g),
            IAGO,
            &[],
            400,
            "CANNOT_DEACTIVATE_GROUP_IN_USE",
            "Cannot deactivate user group in use.",
        )
        .await;
    assert_eq!(
        body["objections"],
        json!([{"type": "subgroup", "supergroup_ids": [parent]}])
    );
    // A deactivated supergroup is no objection.
    s.ok("POST", &deactivate_path(parent), IAGO, &[]).await;
    s.ok("POST", &deactivate_path(g), IAGO, &[]).await;
    s.stop().await;
}

// ---- PATCH /user_groups/{id} -------------------------------------------------------

#[actix_web::test]
async fn update_every_role() {
    let mut s = TestApp::spawn().await;
    let crew = create(&s, HAMLET, "crew", &[HAMLET_ID]).await;
    create(&s, CORDELIA, "taken", &[]).await;
    let set = |name: &'static str, v: &str| vec![(name, v.to_owned())];
    let table = vec![
        bad(HAMLET, vec![], "No new data supplied"),
        bad(HAMLET, p(&[("bogus", "1")]), "No new data supplied"),
        bad(POLONIUS, p(&[("name", "x")]), GUESTS),
        bad(DEFAULT_BOT, p(&[("name", "x")]), BOTS),
        bad(CORDELIA, p(&[("name", "x")]), INSUFFICIENT),
        bad(IAGO, p(&[("name", "x")]), INSUFFICIENT),
        ok(
            HAMLET,
            p(&[("name", "crew2"), ("description", "The crew")]),
            json!({}),
        ),
        ok(DESDEMONA, p(&[("description", "Owned")]), json!({})),
        // The same name is no change.
        ok(HAMLET, p(&[("name", "crew2")]), json!({})),
        bad(
            HAMLET,
            p(&[("name", "taken")]),
            "User group 'taken' already exists.",
        ),
        bad(
            HAMLET,
            p(&[("name", "role:crew")]),
            "User group name cannot start with 'role:'.",
        ),
        bad(
            HAMLET,
            p(&[("name", "")]),
            "User group name can't be empty!",
        ),
        bad(
            HAMLET,
            p(&[("deactivated", "maybe")]),
            "deactivated is not valid JSON",
        ),
        bad(
            HAMLET,
            p(&[("deactivated", "1")]),
            "deactivated is not a boolean",
        ),
        ok(HAMLET, set("can_mention_group", r#"{"new": 6}"#), json!({})),
        coded(
            HAMLET,
            set("can_mention_group", r#"{"new": 7, "old": 1}"#),
            "EXPECTATION_MISMATCH",
            "'old' value does not match the expected value.",
        ),
        ok(
            HAMLET,
            set("can_mention_group", r#"{"new": 7, "old": 6}"#),
            json!({}),
        ),
        ok(
            HAMLET,
            set(
                "can_mention_group",
                r#"{"new": 7, "old": {"direct_members": [], "direct_subgroups": [7]}}"#,
            ),
            json!({}),
        ),
        bad(
            HAMLET,
            set("can_manage_group", r#"{"new": 7}"#),
            "'can_manage_group' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            HAMLET,
            set("can_manage_group", r#"{"old": 1}"#),
            "can_manage_group[\"new\"] field is missing: Field required",
        ),
        bad(
            HAMLET,
            set("can_manage_group", "[1]"),
            "can_manage_group is not valid",
        ),
        bad(
            HAMLET,
            set(
                "can_manage_group",
                r#"{"new": {"direct_members": [999], "direct_subgroups": []}}"#,
            ),
            "Invalid user ID: 999",
        ),
        // A value equal to the current one is not checked again.
        ok(
            HAMLET,
            set(
                "can_manage_group",
                r#"{"new": {"direct_members": [10], "direct_subgroups": []}}"#,
            ),
            json!({}),
        ),
        // hamlet hands the group over to othello and the members.
        ok(
            HAMLET,
            set(
                "can_manage_group",
                r#"{"new": {"direct_members": [12], "direct_subgroups": [6]}}"#,
            ),
            json!({}),
        ),
        bad(POLONIUS, p(&[("description", "x")]), GUESTS),
        ok(CORDELIA, p(&[("description", "By a member")]), json!({})),
        ok(
            OTHELLO,
            set(
                "can_manage_group",
                r#"{"new": {"direct_members": [12], "direct_subgroups": []}}"#,
            ),
            json!({}),
        ),
        bad(HAMLET, p(&[("description", "x")]), INSUFFICIENT),
    ];
    run_cases(&s, "PATCH", &format!("/api/v1/user_groups/{crew}"), &table).await;
    for (id, msg) in [(MEMBERS, INSUFFICIENT), (999, "Invalid user group")] {
        s.err(
            "PATCH",
            &format!("/api/v1/user_groups/{id}"),
            DESDEMONA,
            &[("name", "x")],
            400,
            "BAD_REQUEST",
            msg,
        )
        .await;
    }

    for round in 0..2 {
        let g = group(&s, crew).await;
        assert_eq!(g["name"], "crew2", "round {round}");
        assert_eq!(g["description"], "By a member");
        assert_eq!(g["can_mention_group"], EVERYONE);
        assert_eq!(
            g["can_manage_group"],
            json!({"direct_members": [OTHELLO_ID], "direct_subgroups": []})
        );
        assert_eq!(
            g["can_add_members_group"],
            json!({"direct_members": [HAMLET_ID], "direct_subgroups": []})
        );
        if round == 0 {
            s.restart().await;
        }
    }
    // The name index follows renames across restarts.
    s.err(
        "POST",
        "/api/v1/user_groups/create",
        HAMLET,
        &[("name", "crew2"), ("description", ""), ("members", "[]")],
        400,
        "BAD_REQUEST",
        "User group 'crew2' already exists.",
    )
    .await;
    create(&s, HAMLET, "crew", &[]).await;
    s.stop().await;
}

// ---- the realm's group settings: PATCH /realm --------------------------------------

#[actix_web::test]
async fn realm_group_settings() {
    let mut s = TestApp::spawn().await;
    let g = create(&s, HAMLET, "managers", &[HAMLET_ID]).await;
    let set = |name: &'static str, v: &str| vec![(name, v.to_owned())];
    let table = vec![
        not_admin(SHIVA, set("can_manage_all_groups", r#"{"new": 3}"#)),
        not_owner(IAGO, set("can_manage_all_groups", r#"{"new": 3}"#)),
        bad(
            DESDEMONA,
            set("can_manage_all_groups", r#"{"new": 1}"#),
            "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
        ),
        bad(
            DESDEMONA,
            set("can_manage_all_groups", r#"{"new": 7}"#),
            "'can_manage_all_groups' setting cannot be set to 'role:everyone' group.",
        ),
        bad(
            DESDEMONA,
            set("can_create_groups", r#"{"new": 8}"#),
            "'can_create_groups' setting cannot be set to 'role:internet' group.",
        ),
        bad(
            DESDEMONA,
            set("can_create_groups", r#"{"new": 999}"#),
            "Invalid user group",
        ),
        coded(
            DESDEMONA,
            set("can_create_groups", r#"{"new": 3, "old": 2}"#),
            "EXPECTATION_MISMATCH",
            "'old' value does not match the expected value.",
        ),
        ok(
            DESDEMONA,
            set(
                "can_manage_all_groups",
                &format!(r#"{{"new": {{"direct_members": [12], "direct_subgroups": [{g}]}}}}"#),
            ),
            json!({"can_manage_all_groups": {"direct_members": [12], "direct_subgroups": [g]}}),
        ),
        ok(
            DESDEMONA,
            vec![
                ("can_create_groups", r#"{"new": 3, "old": 6}"#.into()),
                ("bogus", "1".into()),
            ],
            json!({"can_create_groups": 3, "ignored_parameters_unsupported": ["bogus"]}),
        ),
    ];
    run_cases(&s, "PATCH", "/api/v1/realm", &table).await;
    // Othello and the members of `managers` now manage every group; the owner no more.
    let crew = create(&s, IAGO, "crew", &[IAGO_ID]).await;
    for round in 0..2 {
        let body = s
            .ok(
                "POST",
                "/api/v1/register",
                HAMLET,
                &[("fetch_event_types", r#"["realm"]"#)],
            )
            .await;
        assert_eq!(body["realm_can_create_groups"], ADMINS, "round {round}");
        assert_eq!(
            body["realm_can_manage_all_groups"],
            json!({"direct_members": [OTHELLO_ID], "direct_subgroups": [g]})
        );
        assert_eq!(body["realm_can_add_custom_emoji_group"], MEMBERS);
        s.err(
            "POST",
            &members_path(crew),
            DESDEMONA,
            &[("add", "[9]")],
            400,
            "BAD_REQUEST",
            INSUFFICIENT,
        )
        .await;
        if round == 0 {
            s.restart().await;
        }
    }
    s.ok("POST", &members_path(crew), OTHELLO, &[("add", "[12]")])
        .await;
    s.ok("POST", &members_path(crew), HAMLET, &[("add", "[10]")])
        .await;
    s.ok(
        "PATCH",
        &format!("/api/v1/user_groups/{crew}"),
        HAMLET,
        &[("name", "renamed")],
    )
    .await;
    s.stop().await;
}

// ---- events and /register ----------------------------------------------------------

/// The `user_group` events of a queue, `id` dropped.
async fn group_events(s: &TestApp, who: &str, queue: &str) -> Vec<Value> {
    s.events(who, queue)
        .await
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("id");
            e
        })
        .collect()
}

#[actix_web::test]
async fn events_by_capability() {
    let s = TestApp::spawn().await;
    let types = r#"["user_group", "realm"]"#;
    let plain = s.register(HAMLET, &[("event_types", types)]).await;
    let capable = s
        .register(
            CORDELIA,
            &[
                ("event_types", types),
                (
                    "client_capabilities",
                    r#"{"include_deactivated_groups": true}"#,
                ),
            ],
        )
        .await;
    // A guest and a bot get group events too (every active user).
    let guest = s.register(POLONIUS, &[("event_types", types)]).await;

    let g = create_with(&s, HAMLET, "evt", &[HAMLET_ID], &[("subgroups", "[3]")]).await;
    let body = s.ok("GET", "/api/v1/user_groups", HAMLET, &[]).await;
    let created = body["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == g)
        .unwrap()["date_created"]
        .clone();
    let add = json!({
        "type": "user_group", "op": "add",
        "group": {
            "name": "evt", "creator_id": HAMLET_ID, "date_created": created,
            "members": [HAMLET_ID], "description": "d", "id": g, "is_system_group": false,
            "direct_subgroup_ids": [],
            "can_add_members_group": {"direct_members": [HAMLET_ID], "direct_subgroups": []},
            "can_join_group": NOBODY, "can_leave_group": EVERYONE,
            "can_manage_group": {"direct_members": [HAMLET_ID], "direct_subgroups": []},
            "can_mention_group": EVERYONE, "can_remove_members_group": NOBODY,
            "deactivated": false,
        }
    });
    let add_subgroups = json!({"type": "user_group", "op": "add_subgroups", "group_id": g, "direct_subgroup_ids": [ADMINS]});
    let path = format!("/api/v1/user_groups/{g}");
    s.ok(
        "PATCH",
        &path,
        HAMLET,
        &[
            ("name", "evt2"),
            ("description", "dd"),
            (
                "can_mention_group",
                r#"{"new": {"direct_members": [12], "direct_subgroups": [4]}}"#,
            ),
        ],
    )
    .await;
    let update =
        |data: Value| json!({"type": "user_group", "op": "update", "group_id": g, "data": data});
    s.ok(
        "POST",
        &members_path(g),
        HAMLET,
        &[
            ("add", "[14, 12]"),
            ("delete", "[10]"),
            ("delete_subgroups", "[3]"),
        ],
    )
    .await;
    let members = |op: &str, ids: Value| json!({"type": "user_group", "op": op, "group_id": g, "user_ids": ids});
    let common = vec![
        add.clone(),
        add_subgroups,
        update(json!({"name": "evt2"})),
        update(json!({"description": "dd"})),
        update(
            json!({"can_mention_group": {"direct_members": [OTHELLO_ID], "direct_subgroups": [MODERATORS]}}),
        ),
        members("add_members", json!([OTHELLO_ID, PROSPERO_ID])),
        members("remove_members", json!([HAMLET_ID])),
        json!({"type": "user_group", "op": "remove_subgroups", "group_id": g, "direct_subgroup_ids": [ADMINS]}),
    ];
    assert_eq!(group_events(&s, HAMLET, &plain).await, common);
    assert_eq!(group_events(&s, CORDELIA, &capable).await, common);
    assert_eq!(group_events(&s, POLONIUS, &guest).await, common);

    // Deactivation, a deactivated group's rename, and reactivation, by capability.
    s.ok("POST", &deactivate_path(g), HAMLET, &[]).await;
    s.ok("PATCH", &path, HAMLET, &[("name", "evt3")]).await;
    s.ok("PATCH", &path, HAMLET, &[("description", "ddd")])
        .await;
    s.ok("PATCH", &path, HAMLET, &[("deactivated", "false")])
        .await;
    let mut readded = add.clone();
    readded["group"]["name"] = "evt3".into();
    readded["group"]["description"] = "ddd".into();
    readded["group"]["members"] = json!([OTHELLO_ID, PROSPERO_ID]);
    readded["group"]["can_mention_group"] =
        json!({"direct_members": [OTHELLO_ID], "direct_subgroups": [MODERATORS]});
    let mut later = common.clone();
    later.extend([
        json!({"type": "user_group", "op": "remove", "group_id": g}),
        update(json!({"description": "ddd"})),
        readded,
    ]);
    assert_eq!(group_events(&s, HAMLET, &plain).await, later);
    let mut later = common.clone();
    later.extend([
        update(json!({"deactivated": true})),
        update(json!({"name": "evt3"})),
        update(json!({"description": "ddd"})),
        update(json!({"deactivated": false})),
    ]);
    assert_eq!(group_events(&s, CORDELIA, &capable).await, later);

    // A realm group setting.
    s.ok(
        "PATCH",
        "/api/v1/realm",
        DESDEMONA,
        &[("can_manage_all_groups", r#"{"new": 3}"#)],
    )
    .await;
    let events = group_events(&s, HAMLET, &plain).await;
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "realm", "op": "update_dict", "property": "default", "data": {"can_manage_all_groups": ADMINS}})
    );
}

/// Whether a user may see channel 8, "core team" (private).
async fn sees_core_team(s: &TestApp, who: &str) -> bool {
    let (status, body) = s.call("GET", "/api/v1/streams/8", who, &[]).await;
    match status {
        200 => true,
        400 if body["msg"] == "Invalid channel ID" => false,
        _ => panic!("GET /streams/8 as {who}: {body}"),
    }
}

#[actix_web::test]
async fn membership_changes_channel_access() {
    let s = TestApp::spawn().await;
    // "core team" is private; othello is not in it.
    let core = 8;
    let g = create(&s, HAMLET, "reviewers", &[]).await;
    s.ok(
        "PATCH",
        &format!("/api/v1/streams/{core}"),
        DESDEMONA,
        &[("can_add_subscribers_group", &format!(r#"{{"new": {g}}}"#))],
    )
    .await;
    let q = s
        .register(OTHELLO, &[("event_types", r#"["stream", "subscription"]"#)])
        .await;
    assert!(!sees_core_team(&s, OTHELLO).await);

    s.ok("POST", &members_path(g), HAMLET, &[("add", "[12]")])
        .await;
    assert!(sees_core_team(&s, OTHELLO).await);
    let subscribers = s
        .ok(
            "GET",
            &format!("/api/v1/streams/{core}/members"),
            DESDEMONA,
            &[],
        )
        .await["subscribers"]
        .clone();
    let events = s.events(OTHELLO, &q).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], "stream");
    assert_eq!(events[0]["op"], "create");
    assert_eq!(events[0]["streams"][0]["stream_id"], core);
    assert_eq!(events[1]["type"], "subscription");
    assert_eq!(events[1]["op"], "peer_add");
    assert_eq!(events[1]["stream_ids"], json!([core]));
    assert_eq!(events[1]["user_ids"], subscribers);

    // Through a subgroup too: access lost when the subgroup goes.
    let inner = create(&s, HAMLET, "inner", &[PROSPERO_ID]).await;
    s.ok(
        "POST",
        &subgroups_path(g),
        HAMLET,
        &[("add", &ids(&[inner]))],
    )
    .await;
    assert!(sees_core_team(&s, PROSPERO).await);
    let q2 = s
        .register(PROSPERO, &[("event_types", r#"["stream"]"#)])
        .await;
    s.ok(
        "POST",
        &subgroups_path(g),
        HAMLET,
        &[("delete", &ids(&[inner]))],
    )
    .await;
    assert!(!sees_core_team(&s, PROSPERO).await);
    let events = s.events(PROSPERO, &q2).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["op"], "delete");
    assert_eq!(events[0]["stream_ids"], json!([core]));

    s.ok("POST", &members_path(g), HAMLET, &[("delete", "[12]")])
        .await;
    let events = s.events(OTHELLO, &q).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[2]["type"], "stream");
    assert_eq!(events[2]["op"], "delete");
}

#[actix_web::test]
async fn register_state() {
    let s = TestApp::spawn().await;
    let g = create(&s, HAMLET, "gone", &[]).await;
    let kept = create(&s, HAMLET, "kept", &[HAMLET_ID]).await;
    s.ok("POST", &deactivate_path(g), HAMLET, &[]).await;
    let listed = |body: &Value| -> Vec<i64> {
        body["realm_user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_i64().unwrap())
            .collect()
    };
    let fetch = ("fetch_event_types", r#"["realm_user_groups", "realm"]"#);
    let body = s.ok("POST", "/api/v1/register", HAMLET, &[fetch]).await;
    assert_eq!(
        listed(&body),
        vec![1, 2, 3, 4, 5, 6, 7, 8, HAMLET_CHARACTERS, kept]
    );
    assert_eq!(body["realm_can_create_groups"], MEMBERS);
    assert_eq!(body["realm_can_manage_all_groups"], OWNERS);
    let body = s
        .ok(
            "POST",
            "/api/v1/register",
            HAMLET,
            &[
                fetch,
                (
                    "client_capabilities",
                    r#"{"include_deactivated_groups": true}"#,
                ),
            ],
        )
        .await;
    assert_eq!(
        listed(&body),
        vec![1, 2, 3, 4, 5, 6, 7, 8, HAMLET_CHARACTERS, g, kept]
    );
    let gone = body["realm_user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == g)
        .unwrap()
        .clone();
    assert_eq!(gone["deactivated"], true);
    assert_eq!(gone, group(&s, g).await);
}

// ---- the WAL: every new kind of change replays to the same realm -------------------

#[test]
fn wal_replay_rebuilds_groups_views_tokens_and_devices() {
    use hearth::realm::dev::dev_realm_changes;
    use hearth::realm::groups::{
        DeactivateGroup, GroupPatch, GroupPermission, MembersEndpoint, MembersUpdate, NewGroup,
        RealmSetting, SettingValue, UpdateGroup, UpdateGroupMembers,
    };
    use hearth::realm::navigation::{
        AddNavigationView, RemoveNavigationView, UpdateNavigationView,
    };
    use hearth::realm::push::{
        AddPushToken, DeviceOutcome, PushTokenKind, RegisterPushDevice, RemovePushToken,
    };
    use hearth::realm::{Change, Cx, Realm};
    use hearth::storage::{DurabilityMode, Store};

    let mut cx = Cx::seeded(1_700_000_000_000, 3);
    let seed = dev_realm_changes(&mut cx).unwrap();
    let mut live = Realm::from_first_change(&seed[0]).unwrap();
    seed.iter().for_each(|c| live.apply(c));
    let mut log: Vec<Change> = seed.clone();
    let mut run = |live: &mut Realm, changes: Vec<Change>| {
        changes.iter().for_each(|c| live.apply(c));
        log.extend(changes);
    };
    let user = |live: &Realm, id: u64| live.user(id).unwrap().clone();
    let (hamlet, desdemona) = (user(&live, 10), user(&live, 9));
    let group = |name: &str, subgroups: Vec<i64>| NewGroup {
        name: name.into(),
        description: "d".into(),
        members: vec![10, 12],
        subgroups,
        settings: vec![(GroupPermission::CanMention, SettingValue::Group(6))],
    };
    let a = live
        .decide_create_group(&hamlet, group("a", vec![]), &mut cx)
        .unwrap();
    run(&mut live, a.changes);
    let a = a.answer;
    let b = live
        .decide_create_group(&hamlet, group("b", vec![a as i64, 4]), &mut cx)
        .unwrap();
    run(&mut live, b.changes);
    let b = b.answer;
    let update = MembersUpdate {
        add: vec![14],
        delete: vec![12],
        add_subgroups: vec![2],
        delete_subgroups: vec![4],
    };
    let q = UpdateGroupMembers {
        id: b as i64,
        update,
        endpoint: MembersEndpoint::Members,
    };
    let changes = live.decide_update_members(&hamlet, q, &mut cx).unwrap();
    run(&mut live, changes.changes);
    let patch = GroupPatch {
        name: Some("b2".into()),
        description: Some("dd".into()),
        deactivated: None,
        settings: vec![(
            GroupPermission::CanManage,
            SettingValue::Members {
                members: vec![12],
                subgroups: vec![a as i64],
            },
            None,
        )],
    };
    let q = UpdateGroup {
        id: b as i64,
        patch,
    };
    let changes = live.decide_update_group(&hamlet, q, &mut cx).unwrap();
    run(&mut live, changes.changes);
    let c = live
        .decide_create_group(&hamlet, group("c", vec![]), &mut cx)
        .unwrap();
    run(&mut live, c.changes);
    let q = DeactivateGroup {
        id: c.answer as i64,
    };
    let changes = live.decide_deactivate_group(&hamlet, q, &mut cx).unwrap();
    run(&mut live, changes.changes);
    let settings = vec![(
        RealmSetting::CanCreateGroups,
        SettingValue::Group(b as i64),
        None,
    )];
    let changes = live
        .decide_update_realm_settings(&desdemona, settings)
        .unwrap()
        .changes;
    run(&mut live, changes);
    let add = |fragment: &str, is_pinned, name: Option<&str>| AddNavigationView {
        fragment: fragment.into(),
        is_pinned,
        name: name.map(Into::into),
    };
    let changes = live
        .decide_add_navigation_view(&hamlet, add("narrow/x", true, Some("X")), &mut cx)
        .unwrap();
    run(&mut live, changes.changes);
    let q = UpdateNavigationView {
        fragment: "narrow/x".into(),
        is_pinned: Some(false),
        name: Some("Y".into()),
    };
    let changes = live
        .decide_update_navigation_view(&hamlet, q, &mut cx)
        .unwrap();
    run(&mut live, changes.changes);
    let changes = live
        .decide_add_navigation_view(&hamlet, add("inbox", false, None), &mut cx)
        .unwrap();
    run(&mut live, changes.changes);
    let q = RemoveNavigationView {
        fragment: "inbox".into(),
    };
    let changes = live
        .decide_remove_navigation_view(&hamlet, q, &mut cx)
        .unwrap();
    run(&mut live, changes.changes);
    for (kind, token) in [
        (PushTokenKind::Apns, "abcd"),
        (PushTokenKind::Fcm, "f1"),
        (PushTokenKind::Fcm, "f2"),
    ] {
        let q = AddPushToken {
            kind,
            token: token.to_owned(),
            ios_app_id: (kind == PushTokenKind::Apns).then(|| "org.zulip.Zulip".to_owned()),
        };
        let changes = live
            .decide_add_push_token(&hamlet, q, &mut cx)
            .unwrap()
            .changes;
        run(&mut live, changes);
    }
    let q = RemovePushToken {
        kind: PushTokenKind::Fcm,
        token: "f1".into(),
    };
    let changes = live
        .decide_remove_push_token(&hamlet, q, &mut cx)
        .unwrap()
        .changes;
    run(&mut live, changes);
    let key = [vec![0x31], vec![5; 32]].concat();
    for account in [1, 2] {
        let q = RegisterPushDevice {
            push_account_id: account,
            token_kind: PushTokenKind::Apns,
            push_key: key.clone(),
        };
        let changes = live
            .decide_register_push_device(&hamlet, q, &mut cx)
            .unwrap()
            .changes;
        run(&mut live, changes);
    }
    for (push_account_id, outcome) in [(1, Ok(501)), (2, Err("REQUEST_EXPIRED".into()))] {
        let q = DeviceOutcome {
            push_account_id,
            outcome,
        };
        let changes = live
            .decide_push_device_outcome(&hamlet, q, &mut Cx::seeded(0, 1))
            .unwrap()
            .changes;
        run(&mut live, changes);
    }

    // Every change through the WAL, record by record, then recovered by replay.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), DurabilityMode::Never).unwrap();
    let mut rs = store.realm("zulip").unwrap();
    for change in &log {
        rs.append(std::slice::from_ref(change)).unwrap();
    }
    let recovered = rs.recover().unwrap().unwrap();
    assert_eq!(recovered.replayed, log.len() as u64);
    assert_eq!(recovered.realm, live);
    let realm = recovered.realm;
    assert_eq!(realm.group(b).unwrap().name, "b2");
    assert!(realm.is_group_deactivated(c.answer));
    assert_eq!(realm.navigation_views_of(10).len(), 1);
    assert_eq!(realm.push_tokens_of(10).len(), 2);
    let devices = realm.push_devices_of(10);
    assert_eq!(
        (devices[0].status(), devices[0].device_id),
        ("active", Some(501))
    );
    assert_eq!(devices[1].status(), "failed");
    // The derived indexes too: b is used by the realm and holds a as a subgroup.
    assert_eq!(
        realm.deactivation_objections(a),
        vec![
            json!({"type": "subgroup", "supergroup_ids": [b]}),
            json!({"type": "user_group", "group_id": b, "settings": ["can_manage_group"]}),
        ]
    );
    assert_eq!(
        realm.deactivation_objections(b),
        vec![json!({"type": "realm", "settings": ["can_create_groups"]})]
    );
}
