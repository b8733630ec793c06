//! Topic visibility: `POST /user_topics` and the legacy
//! `PATCH /users/me/subscriptions/muted_topics`, parsed in Zulip's parameter order.

use serde_json::Map;

use super::params::Params;
use super::{ApiRequest, ApiResponse};
use crate::error::{ApiError, ApiResult};
use crate::realm::messages::send::MAX_TOPIC_LENGTH;
use crate::realm::user_topics::{SetUserTopic, TopicChannel, VisibilityPolicy};
use crate::realm::Realm;

/// `topic`: at most `max_topic_length` characters; the realm's empty-topic name is the
/// empty topic.
fn topic(version: &Realm, p: &Params) -> ApiResult<String> {
    let topic = p.str("topic")?;
    if topic.chars().count() > MAX_TOPIC_LENGTH {
        return Err(ApiError::bad_request(format!(
            "topic is too long (limit: {MAX_TOPIC_LENGTH} characters)"
        )));
    }
    if topic == version.settings.empty_topic_display_name {
        return Ok(String::new());
    }
    Ok(topic)
}

/// # `POST /user_topics`
pub async fn update_user_topic(req: ApiRequest) -> ApiResponse {
    req.write(
        |version, _, p| {
            let stream_id = p.int("stream_id")?;
            let topic = topic(version, p)?;
            let raw = p.int("visibility_policy")?;
            let policy = VisibilityPolicy::from_value(raw).ok_or_else(|| {
                ApiError::bad_request(
                    "Invalid visibility_policy: Value error, Not in the list of possible values",
                )
            })?;
            Ok(SetUserTopic {
                channel: TopicChannel::Id(stream_id),
                topic,
                policy,
                legacy: false,
            })
        },
        Realm::decide_set_user_topic,
    )
    .await?;
    req.reply(Map::new())
}

/// # `PATCH /users/me/subscriptions/muted_topics`
pub async fn update_muted_topic(req: ApiRequest) -> ApiResponse {
    req.write(
        |version, _, p| {
            let policy = match p.str("op")?.as_str() {
                "add" => VisibilityPolicy::Muted,
                "remove" => VisibilityPolicy::Inherit,
                _ => return Err(ApiError::bad_request("Invalid op")),
            };
            let topic = topic(version, p)?;
            let stream = p.opt_str("stream");
            let stream_id = p.opt_int("stream_id")?;
            // Zulip's `check_for_exactly_one_stream_arg`.
            let channel = match (stream_id, stream) {
                // A plain `JsonableError` with the missing-argument text: no
                // `REQUEST_VARIABLE_MISSING` code, no `var_name`.
                (None, None) => return Err(ApiError::bad_request("Missing 'stream_id' argument")),
                (Some(_), Some(_)) => {
                    return Err(ApiError::bad_request(
                        "Unsupported parameter combination: stream_id, stream",
                    )
                    .with("parameters", "stream_id, stream"))
                }
                (Some(id), None) => TopicChannel::Id(id),
                (None, Some(name)) => TopicChannel::Name(name),
            };
            Ok(SetUserTopic {
                channel,
                topic,
                policy,
                legacy: true,
            })
        },
        Realm::decide_set_user_topic,
    )
    .await?;
    req.reply(Map::new())
}
