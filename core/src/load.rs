//! Loading a config document: JSON text or value -> [`Config`], whatever its schema version.
//!
//! The version dispatch lives here, above both the schema ([`crate::config`], plain data)
//! and the seed format's migration ([`crate::seed`], a document transform): a document
//! without `schema_version` that uses seed-only keys, or with `schema_version: 0`, is
//! migrated and then read as schema 1, its errors renamed to the seed's key names.

use crate::config::{Config, SCHEMA_VERSION};
use crate::error::{FieldError, short};
use crate::seed;
use serde_json::Value;

impl Config {
    /// Parses a config document from JSON text (schema 1, or the seed format, which is
    /// migrated). Errors: invalid JSON (field `""`), type errors and unknown keys, each
    /// naming the field path and the value.
    pub fn from_json_str(text: &str) -> Result<Config, Vec<FieldError>> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| vec![FieldError::new("", "", format!("invalid JSON: {e}"))])?;
        Config::from_value(v)
    }

    /// Parses a config document already read as JSON; see [`Config::from_json_str`].
    pub fn from_value(v: Value) -> Result<Config, Vec<FieldError>> {
        let Value::Object(map) = &v else {
            return Err(vec![FieldError::new(
                "",
                short(&v),
                "a config must be a JSON object",
            )]);
        };
        let seed_format = match map.get("schema_version") {
            None => seed::looks_like_seed(map),
            Some(Value::Number(n)) if n.as_u64() == Some(SCHEMA_VERSION as u64) => false,
            Some(Value::Number(n)) if n.as_u64() == Some(0) => true,
            Some(x) => {
                return Err(vec![FieldError::new(
                    "schema_version",
                    short(x),
                    format!("this build reads schema_version 0 (seed format) or {SCHEMA_VERSION}"),
                )]);
            }
        };
        if !seed_format {
            return typed(&v);
        }
        typed(&seed::migrate(map)?).map_err(|errs| {
            errs.into_iter()
                .map(|mut e| {
                    if let Some(old) = seed::seed_path(&e.field) {
                        e.field = old.to_string();
                    }
                    e
                })
                .collect()
        })
    }
}

/// Deserializes a schema-1 document, turning the first serde error into a [`FieldError`]
/// with the field path and the offending value.
fn typed(v: &Value) -> Result<Config, Vec<FieldError>> {
    serde_path_to_error::deserialize::<_, Config>(v).map_err(|e| {
        let path = e.path().to_string();
        let mut path = if path == "." { String::new() } else { path };
        let msg = e.inner().to_string();
        // Internally tagged sections (`engine`) are buffered, so serde reports their unknown
        // keys at the section: point at the key itself.
        if let Some(key) = msg
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        {
            let ends_with_key = path == key || path.ends_with(&format!(".{key}"));
            if !ends_with_key && lookup(v, &format!("{path}.{key}")).is_some() {
                path = format!("{path}.{key}");
            }
        }
        // serde reports an unknown key at the path of the key itself.
        let value = lookup(v, &path).map(short).unwrap_or_default();
        vec![FieldError::new(path, value, tidy(&msg))]
    })
}

/// Finds the value at a dotted path (`training.seq_len`).
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    let mut cur = v;
    for seg in path.split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur)
}

/// Makes serde's messages read as "what is allowed".
fn tidy(msg: &str) -> String {
    let m = msg
        .replace("unknown variant", "unknown value")
        .replace("unknown field", "unknown key");
    match m.split_once(" at line ") {
        Some((a, _)) => a.to_string(),
        None => m,
    }
}
