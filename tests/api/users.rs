//! `GET /users/:user_id`: the profile shape, ids and 404s.

use std::collections::BTreeSet;

use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_error, key_set, keys, spawn_app, TestApp};

/// The profile fields without `avatar`, which is left out when unset.
const PROFILE_FIELDS_WITHOUT_AVATAR: [&str; 13] = [
    "id",
    "username",
    "display_name",
    "banner",
    "bio",
    "pronouns",
    "platform_id",
    "socials",
    "admin",
    "mod",
    "supporter",
    "certified",
    "created_at",
];

fn profile_keys(with_avatar: bool) -> BTreeSet<String> {
    let mut expected = key_set(&PROFILE_FIELDS_WITHOUT_AVATAR);
    if with_avatar {
        expected.insert("avatar".into());
    }
    expected
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, exactly.
fn is_utc_millis_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digit_at = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];
    bytes.len() == 24
        && digit_at.iter().all(|&i| bytes[i].is_ascii_digit())
        && [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ]
        .iter()
        .all(|&(i, c)| bytes[i] == c)
        && chrono::DateTime::parse_from_rfc3339(text).is_ok()
}

async fn get_profile(app: &TestApp, id: &str) -> Value {
    let response = app.get(&format!("/users/{id}")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json; charset=utf-8")
    );
    response.json().await.expect("json")
}

fn id_of(profile: &Value) -> String {
    profile["id"].as_str().expect("an id").to_owned()
}

#[actix_web::test]
async fn a_minimal_profile_has_exactly_the_spec_fields_without_avatar() {
    let app = spawn_app().await;
    let created = app.create_user("alice").await;

    let profile = get_profile(&app, &id_of(&created)).await;

    assert_eq!(keys(&profile), profile_keys(false), "{profile}");
    assert_eq!(profile, created, "GET shows what POST answered");
}

#[actix_web::test]
async fn unset_optional_fields_are_null_and_socials_empty() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("bob").await);

    let profile = get_profile(&app, &id).await;

    assert_eq!(profile["username"], "bob");
    for field in ["display_name", "banner", "bio", "pronouns", "platform_id"] {
        assert_eq!(profile[field], Value::Null, "{field} in {profile}");
    }
    assert!(
        profile.get("avatar").is_none(),
        "avatar is absent when unset: {profile}"
    );
    assert_eq!(profile["socials"], json!([]));
    assert_eq!(profile["admin"], false);
    assert_eq!(profile["mod"], false);
    assert_eq!(profile["supporter"], false);
    assert_eq!(profile["certified"], false);
}

#[actix_web::test]
async fn every_field_set_is_shown_with_avatar_present() {
    let app = spawn_app().await;
    let created = app
        .create_profile(json!({
            "username": "carol.dev_1",
            "display_name": "Carol",
            "avatar": "https://cdn.example.com/avatars/carol.png",
            "banner": "https://cdn.example.com/banners/carol.png",
            "bio": "Writes **bots**.\nLikes tea.",
            "pronouns": "she/her",
            "platform_id": "123456789012345678",
            "socials": [
                { "type": "github", "url": "https://github.com/carol" },
                { "type": "website", "url": "https://carol.example.com" }
            ],
            "admin": true,
            "mod": true,
        }))
        .await;

    let profile = get_profile(&app, &id_of(&created)).await;

    assert_eq!(keys(&profile), profile_keys(true), "{profile}");
    assert_eq!(profile["username"], "carol.dev_1");
    assert_eq!(profile["display_name"], "Carol");
    assert_eq!(
        profile["avatar"],
        "https://cdn.example.com/avatars/carol.png"
    );
    assert_eq!(
        profile["banner"],
        "https://cdn.example.com/banners/carol.png"
    );
    assert_eq!(profile["bio"], "Writes **bots**.\nLikes tea.");
    assert_eq!(profile["pronouns"], "she/her");
    assert_eq!(
        profile["platform_id"], "123456789012345678",
        "a snowflake is a JSON string"
    );
    assert_eq!(
        profile["socials"],
        json!([
            { "type": "github", "url": "https://github.com/carol" },
            { "type": "website", "url": "https://carol.example.com" }
        ])
    );
    assert_eq!(profile["admin"], true);
    assert_eq!(profile["mod"], true);
}

#[actix_web::test]
async fn the_moderator_flag_is_named_mod() {
    let app = spawn_app().await;
    let created = app
        .create_profile(json!({ "username": "moddy", "mod": true }))
        .await;

    let profile = get_profile(&app, &id_of(&created)).await;

    assert_eq!(profile["mod"], true);
    assert_eq!(profile["admin"], false);
    for other_name in ["moderator", "is_mod", "moderator_flag"] {
        assert!(
            profile.get(other_name).is_none(),
            "{other_name} in {profile}"
        );
    }
}

#[actix_web::test]
async fn supporter_and_certified_are_always_false() {
    let app = spawn_app().await;
    let created = app
        .create_profile(json!({ "username": "staff", "admin": true, "mod": true }))
        .await;

    let profile = get_profile(&app, &id_of(&created)).await;

    assert_eq!(profile["supporter"], false);
    assert_eq!(profile["certified"], false);
}

#[actix_web::test]
async fn created_at_is_utc_with_milliseconds() {
    let app = spawn_app().await;
    let first = get_profile(&app, &id_of(&app.create_user("early").await)).await;
    app.clock.advance(Duration::milliseconds(1_234));
    let second = get_profile(&app, &id_of(&app.create_user("later").await)).await;

    let first_at = first["created_at"].as_str().expect("a string");
    let second_at = second["created_at"].as_str().expect("a string");
    assert!(is_utc_millis_timestamp(first_at), "{first_at}");
    assert!(is_utc_millis_timestamp(second_at), "{second_at}");
    assert_eq!(
        first_at, "2026-11-15T12:00:00.000Z",
        "the creation instant of the app's clock"
    );
    assert_eq!(
        second_at, "2026-11-15T12:00:01.234Z",
        "milliseconds are kept"
    );
}

#[actix_web::test]
async fn the_id_is_a_lowercase_hyphenated_uuid() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("dave").await);

    assert_eq!(id.len(), 36);
    assert_eq!(id, id.to_lowercase());
    assert_eq!(id.matches('-').count(), 4);
    assert_eq!(get_profile(&app, &id).await["id"], id.as_str());
}

#[actix_web::test]
async fn an_uppercase_uuid_finds_the_profile() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("erin").await);

    let profile = get_profile(&app, &id.to_uppercase()).await;

    assert_eq!(profile["id"], id.as_str(), "the id is shown lowercase");
    assert_eq!(profile["username"], "erin");
}

#[actix_web::test]
async fn an_unknown_uuid_is_not_found() {
    let app = spawn_app().await;
    app.create_user("frank").await;

    let response = app.get("/users/6f9619ff-8b86-4d11-b42d-00c04fc964ff").await;

    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
}

#[actix_web::test]
async fn ids_that_are_not_uuids_are_not_found() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("grace").await);
    let simple = id.replace('-', "");
    let braced = format!("%7B{id}%7D");
    let longer = format!("{id}0");
    let shorter = id[..35].to_owned();

    for bad in [
        "not-a-uuid",
        "123456789012345678",
        "grace",
        simple.as_str(),
        braced.as_str(),
        longer.as_str(),
        shorter.as_str(),
    ] {
        let response = app.get(&format!("/users/{bad}")).await;
        assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
    }
}

#[actix_web::test]
async fn a_profile_is_public_and_ignores_a_token() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("heidi").await);

    let without = app.get(&format!("/users/{id}")).await;
    let with_unknown_token = app
        .get_with(&format!("/users/{id}"), "not-a-real-token")
        .await;

    assert_eq!(without.status(), StatusCode::OK);
    assert_eq!(with_unknown_token.status(), StatusCode::OK);
}

#[actix_web::test]
async fn a_deleted_profile_is_not_found() {
    let app = spawn_app().await;
    let id = id_of(&app.create_user("ivan").await);

    let deleted = app
        .admin(Method::DELETE, &format!("/admin/users/{id}"), None)
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    let response = app.get(&format!("/users/{id}")).await;
    assert_error(response, StatusCode::NOT_FOUND, "not_found").await;
}
