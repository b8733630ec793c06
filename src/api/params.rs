//! Zulip parameter decoding: one bag of parameters from the query string and the form
//! body (urlencoded or multipart), typed getters with Zulip's own error texts, and a
//! record of which keys were read, so the rest can be reported in
//! `ignored_parameters_unsupported`.

use std::cell::Cell;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Most items a JSON list parameter may hold (`subscriptions`, `principals`,
/// `user_ids`, ...): a decision's cost grows with its lists, so one request cannot hold
/// the realm for long. Above it: `x is too long (limit: 10000 items)`.
pub const MAX_LIST_ITEMS: usize = 10_000;

/// The parameters of one request.
#[derive(Debug, Default, Clone)]
pub struct Params {
    /// Name -> value, sorted by name, one value a name. Body values win over
    /// query-string ones (Django reads POST first), and a later value over an earlier
    /// one. A request sends a handful: a sorted list is found by bisection, with no
    /// allocation beyond its own.
    values: Vec<(String, String)>,
    /// Whether a rule asked for each of `values` (for `unused`).
    used: Vec<Cell<bool>>,
}

impl Params {
    /// Builds the bag: query-string pairs first, then body pairs over them.
    pub fn new(query: Vec<(String, String)>, body: Vec<(String, String)>) -> Self {
        let mut pairs = query;
        pairs.extend(body);
        // A stable sort keeps the pairs of one name in the order they came.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut values: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for (name, value) in pairs {
            match values.last_mut() {
                Some(last) if last.0 == name => last.1 = value,
                _ => values.push((name, value)),
            }
        }
        let used = vec![Cell::new(false); values.len()];
        Params { values, used }
    }

    /// The place of `name` in `values`.
    fn find(&self, name: &str) -> Option<usize> {
        self.values
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
    }

    /// The value of `name`, without marking it read.
    fn value(&self, name: &str) -> Option<&String> {
        self.find(name).map(|i| &self.values[i].1)
    }

    /// Builds a bag from literal pairs (tests, internal calls).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Self::new(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            Vec::new(),
        )
    }

    fn raw(&self, name: &str) -> Option<&str> {
        // Only names that were sent matter to `unused`.
        let i = self.find(name)?;
        self.used[i].set(true);
        Some(self.values[i].1.as_str())
    }

    /// A value without marking it read (handlers that prepare work off the actor).
    pub fn peek(&self, name: &str) -> Option<String> {
        self.value(name).cloned()
    }

    /// Sorted names that were sent but never read.
    pub fn unused(&self) -> Vec<String> {
        self.values
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !used.get())
            .map(|((k, _), _)| k.clone())
            .collect()
    }

    /// Whether a parameter was sent (marks it read).
    pub fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }

    /// An optional plain string.
    pub fn opt_str(&self, name: &str) -> Option<String> {
        self.raw(name).map(str::to_owned)
    }

    /// A required plain string: `Missing 'x' argument`.
    pub fn str(&self, name: &str) -> ApiResult<String> {
        self.opt_str(name).ok_or_else(|| ApiError::missing(name))
    }

    /// An optional JSON-encoded value: `x is not valid JSON`; a list longer than
    /// `MAX_LIST_ITEMS` is refused.
    pub fn opt_json(&self, name: &str) -> ApiResult<Option<Value>> {
        let Some(s) = self.raw(name) else {
            return Ok(None);
        };
        let v: Value = parse_json(name, s)?;
        if v.as_array().is_some_and(|l| l.len() > MAX_LIST_ITEMS) {
            return Err(ApiError::bad_request(format!(
                "{name} is too long (limit: {MAX_LIST_ITEMS} items)"
            )));
        }
        Ok(Some(v))
    }

    /// An optional JSON boolean: `x is not a boolean`.
    pub fn opt_bool(&self, name: &str) -> ApiResult<Option<bool>> {
        // The usual texts, without a JSON parse (the same answer as one).
        if let Some(i) = self.find(name) {
            if let text @ ("true" | "false") = self.values[i].1.as_str() {
                self.used[i].set(true);
                return Ok(Some(text == "true"));
            }
        }
        self.opt_json(name)?
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| ApiError::bad_request(format!("{name} is not a boolean")))
            })
            .transpose()
    }

    /// Checks an optional JSON boolean as Zulip's parser does, without marking it
    /// read: for parameters hearth accepts but does not act on, so a well-formed value
    /// is still reported in `ignored_parameters_unsupported`.
    pub fn check_unread_bool(&self, name: &str) -> ApiResult<()> {
        let Some(s) = self.value(name) else {
            return Ok(());
        };
        let v: Value = parse_json(name, s)?;
        if v.is_boolean() {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!("{name} is not a boolean")))
        }
    }

    /// Checks an optional JSON list without marking it read (see `check_unread_bool`).
    pub fn check_unread_list(&self, name: &str) -> ApiResult<()> {
        let Some(s) = self.value(name) else {
            return Ok(());
        };
        let v: Value = parse_json(name, s)?;
        if v.is_array() {
            Ok(())
        } else {
            Err(ApiError::bad_request(format!("{name} is not a list")))
        }
    }

    /// A JSON boolean with a default.
    pub fn bool_or(&self, name: &str, default: bool) -> ApiResult<bool> {
        Ok(self.opt_bool(name)?.unwrap_or(default))
    }

    /// An optional JSON integer: `x is not an integer`.
    pub fn opt_int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.opt_json(name)?
            .map(|v| as_int(&v).ok_or_else(|| not_int(name)))
            .transpose()
    }

    /// A required JSON integer.
    pub fn int(&self, name: &str) -> ApiResult<i64> {
        self.opt_int(name)?.ok_or_else(|| ApiError::missing(name))
    }

    /// An optional JSON list of integers: `x is not a list`, `x[i] is not an integer`.
    pub fn opt_int_list(&self, name: &str) -> ApiResult<Option<Vec<i64>>> {
        self.opt_list(name, "an integer", as_int)
    }

    /// An optional JSON list of strings: `x is not a list`, `x[i] is not a string`.
    pub fn opt_str_list(&self, name: &str) -> ApiResult<Option<Vec<String>>> {
        self.opt_list(name, "a string", |v| v.as_str().map(str::to_owned))
    }

    /// An optional JSON list whose items `item` converts; `what` names the item type in
    /// Zulip's `x[i] is not <what>`.
    fn opt_list<T>(
        &self,
        name: &str,
        what: &str,
        item: impl Fn(&Value) -> Option<T>,
    ) -> ApiResult<Option<Vec<T>>> {
        let Some(v) = self.opt_json(name)? else {
            return Ok(None);
        };
        let list = v
            .as_array()
            .ok_or_else(|| ApiError::bad_request(format!("{name} is not a list")))?;
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                item(v).ok_or_else(|| ApiError::bad_request(format!("{name}[{i}] is not {what}")))
            })
            .collect::<ApiResult<Vec<_>>>()
            .map(Some)
    }

    /// An optional JSON object: `x is not a dict`.
    pub fn opt_object(&self, name: &str) -> ApiResult<Option<serde_json::Map<String, Value>>> {
        match self.opt_json(name)? {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(ApiError::bad_request(format!("{name} is not a dict"))),
        }
    }
}

fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
}

fn not_int(name: &str) -> ApiError {
    ApiError::bad_request(format!("{name} is not an integer"))
}

/// Parses a path segment that must be an integer (path parameters are never JSON).
pub fn path_int(name: &str, raw: &str) -> ApiResult<i64> {
    raw.parse().map_err(|_| not_int(name))
}

/// Deepest nesting of lists and objects a JSON parameter may have.
pub const MAX_JSON_DEPTH: usize = 64;

/// Parses a JSON parameter: `x is not valid JSON`, or, nested deeper than
/// `MAX_JSON_DEPTH`, `x is nested too deeply`.
fn parse_json(name: &str, s: &str) -> ApiResult<Value> {
    if json_depth(s) > MAX_JSON_DEPTH {
        return Err(ApiError::bad_request(format!(
            "{name} is nested too deeply (limit: {MAX_JSON_DEPTH} levels)"
        )));
    }
    serde_json::from_str(s).map_err(|_| ApiError::bad_request(format!("{name} is not valid JSON")))
}

/// The deepest nesting of `[` and `{` in a JSON text, strings skipped (one pass; the
/// text need not be valid).
pub fn json_depth(s: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in s.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_nesting_is_bounded() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let p = Params::from_pairs(&[("ok", &deep(MAX_JSON_DEPTH)), ("deep", &deep(65))]);
        assert!(p.opt_json("ok").unwrap().is_some());
        let e = p.opt_json("deep").unwrap_err();
        assert_eq!(
            (e.status, e.msg.as_str()),
            (400, "deep is nested too deeply (limit: 64 levels)")
        );
        // Brackets inside strings are not nesting.
        assert_eq!(json_depth(r#"["[[[\"[[", {"a": "}}}"}]"#), 2);
    }

    #[test]
    fn body_wins_and_unused_are_sorted() {
        let p = Params::new(
            vec![("a".into(), "1".into()), ("z".into(), "q".into())],
            vec![("a".into(), "2".into()), ("b".into(), "x".into())],
        );
        assert_eq!(p.opt_str("a").as_deref(), Some("2"));
        assert_eq!(p.unused(), vec!["b".to_owned(), "z".to_owned()]);
        assert!(!p.has("missing"));
        assert_eq!(p.unused(), vec!["b".to_owned(), "z".to_owned()]);
    }

    #[test]
    fn zulip_error_texts() {
        let p = Params::from_pairs(&[
            ("order", "notjson"),
            ("n", "\"x\""),
            ("b", "1"),
            ("l", "[1,\"a\"]"),
        ]);
        assert_eq!(
            p.opt_int_list("order").map_err(|e| e.msg),
            Err("order is not valid JSON".into())
        );
        assert_eq!(
            p.int("n").map_err(|e| e.msg),
            Err("n is not an integer".into())
        );
        assert_eq!(
            p.opt_bool("b").map_err(|e| e.msg),
            Err("b is not a boolean".into())
        );
        assert_eq!(
            p.opt_int_list("l").map_err(|e| e.msg),
            Err("l[1] is not an integer".into())
        );
        let missing = p.str("content").expect_err("missing");
        assert_eq!(missing.msg, "Missing 'content' argument");
        assert_eq!(missing.code.as_str(), "REQUEST_VARIABLE_MISSING");
        assert_eq!(missing.extra.get("var_name"), Some(&Value::from("content")));
    }

    #[test]
    fn long_lists_are_refused() {
        let ok = serde_json::to_string(&vec![1; MAX_LIST_ITEMS]).expect("json");
        let long = serde_json::to_string(&vec![1; MAX_LIST_ITEMS + 1]).expect("json");
        let p = Params::from_pairs(&[("ok", &ok), ("long", &long)]);
        assert_eq!(
            p.opt_int_list("ok").ok().flatten().map(|l| l.len()),
            Some(MAX_LIST_ITEMS)
        );
        assert_eq!(
            p.opt_int_list("long").map_err(|e| e.msg),
            Err("long is too long (limit: 10000 items)".into())
        );
    }

    #[test]
    fn typed_values() {
        let p = Params::from_pairs(&[("ids", "[1,2]"), ("flag", "true"), ("n", "42")]);
        assert_eq!(p.opt_int_list("ids").ok().flatten(), Some(vec![1, 2]));
        assert_eq!(p.bool_or("flag", false).ok(), Some(true));
        assert_eq!(p.bool_or("other", true).ok(), Some(true));
        assert_eq!(p.int("n").ok(), Some(42));
        assert_eq!(
            path_int("user_id", "abc").map_err(|e| e.msg),
            Err("user_id is not an integer".into())
        );
    }
}
