//! Alert words: `GET`, `POST` and `DELETE /users/me/alert_words`.

use serde_json::{Map, Value};

use super::params::Params;
use super::{success, ApiRequest, ApiResponse, CallOpts, Outcome};
use crate::error::{ApiError, ApiResult};
use crate::realm::alert_words::{clean_alert_words, ChangeAlertWords, MAX_ALERT_WORD_LENGTH};
use crate::realm::Realm;

fn words_body(words: Vec<Value>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("alert_words".into(), Value::Array(words));
    body
}

/// `alert_words`: a required JSON list of strings; added words at most
/// `MAX_ALERT_WORD_LENGTH` characters each.
fn alert_words(p: &Params, limit: bool) -> ApiResult<Vec<String>> {
    let words = p
        .opt_str_list("alert_words")?
        .ok_or_else(|| ApiError::missing("alert_words"))?;
    if limit {
        if let Some(i) = words
            .iter()
            .position(|w| w.chars().count() > MAX_ALERT_WORD_LENGTH)
        {
            return Err(ApiError::bad_request(format!(
                "alert_words[{i}] is too long (limit: {MAX_ALERT_WORD_LENGTH} characters)"
            )));
        }
    }
    Ok(words)
}

/// # `GET /users/me/alert_words`
pub async fn get_alert_words(req: ApiRequest) -> ApiResponse {
    req.read(CallOpts::USER, |c| {
        let me = c.me()?;
        let words = c
            .realm
            .alert_words_of(me.id)
            .iter()
            .cloned()
            .map(Value::from);
        Ok(Outcome::read(words_body(words.collect())))
    })
    .await
    .map(success)
}

async fn change(req: ApiRequest, add: bool) -> ApiResponse {
    let words = req
        .write(
            move |_, _, p| {
                let words = alert_words(p, add)?;
                Ok(ChangeAlertWords {
                    words: if add { clean_alert_words(words) } else { words },
                    add,
                })
            },
            Realm::decide_change_alert_words,
        )
        .await?;
    req.reply(words_body(words.into_iter().map(Value::from).collect()))
}

/// # `POST /users/me/alert_words`
pub async fn add_alert_words(req: ApiRequest) -> ApiResponse {
    change(req, true).await
}

/// # `DELETE /users/me/alert_words`
pub async fn remove_alert_words(req: ApiRequest) -> ApiResponse {
    change(req, false).await
}
