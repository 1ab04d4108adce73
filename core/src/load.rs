//! Loading a config document: JSON text or value -> [`Config`], whatever its schema version.
//!
//! The version dispatch lives here, above both the schema ([`crate::config`], plain data)
//! and the migrations (document transforms): a document without `schema_version` that uses
//! seed-only keys, or with `schema_version: 0`, is migrated to schema 1 ([`crate::seed`],
//! its errors renamed to the seed's key names); a schema 1 document is migrated to schema 2
//! ([`migrate_v1`]); then it is read as schema 2.

use crate::config::{Config, SCHEMA_VERSION};
use crate::error::{FieldError, short};
use crate::seed;
use serde_json::Value;

impl Config {
    /// Parses a config document from JSON text (schema 2; schema 1 and the seed format are
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
        let version = match map.get("schema_version") {
            None if seed::looks_like_seed(map) => 0,
            None => SCHEMA_VERSION as u64,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n <= SCHEMA_VERSION as u64) => {
                n.as_u64().unwrap_or(0)
            }
            Some(x) => {
                return Err(vec![FieldError::new(
                    "schema_version",
                    short(x),
                    format!(
                        "this build reads schema_version 0 (seed format), 1 or {SCHEMA_VERSION}"
                    ),
                )]);
            }
        };
        match version {
            0 => {}
            1 => return typed(&migrate_v1(v)),
            _ => return typed(&v),
        }
        typed(&migrate_v1(seed::migrate(map)?)).map_err(|errs| {
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

/// Migrates a schema 1 document to schema 2 (a pure transform). Schema 1's `fsdp` engine
/// was FSDP1 (`FullyShardedDataParallel` with a `sharding_strategy`): it becomes
/// `fsdp_version: 1`, so that the document means what it meant. Everything else schema 2
/// added has a default that keeps schema 1's meaning. A value that is not an object is
/// returned as it is (the typed read reports it).
pub fn migrate_v1(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        map.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
        if let Some(engine) = map.get_mut("engine").and_then(Value::as_object_mut)
            && engine.get("type").and_then(Value::as_str) == Some("fsdp")
            && !engine.contains_key("fsdp_version")
        {
            engine.insert("fsdp_version".into(), Value::from(1));
        }
    }
    v
}

/// Deserializes a schema-2 document; every field serde rejects is reported, each as a
/// [`FieldError`] with its path and offending value (serde stops at the first, so the
/// rejected key is left out and the document read again, at most 64 times).
fn typed(v: &Value) -> Result<Config, Vec<FieldError>> {
    let mut errors: Vec<FieldError> = Vec::new();
    let mut doc = v.clone();
    for _ in 0..64 {
        match typed_once(&doc) {
            Ok(c) if errors.is_empty() => return Ok(c),
            Ok(_) => break,
            Err(e) => {
                let path = e.field.clone();
                let repeated = errors.iter().any(|x| x.field == path);
                if !repeated {
                    errors.push(e);
                }
                // a key that cannot be left out (or no key at all): nothing more to learn
                if repeated || path.is_empty() || !remove(&mut doc, &path) {
                    break;
                }
            }
        }
    }
    Err(errors)
}

/// Removes the value at a dotted path; `false` if there is none.
pub(crate) fn remove(v: &mut Value, path: &str) -> bool {
    let (parent, key) = match path.rsplit_once('.') {
        Some((p, k)) => (
            p.split('.').try_fold(&mut *v, |cur, seg| cur.get_mut(seg)),
            k,
        ),
        None => (Some(v), path),
    };
    parent
        .and_then(Value::as_object_mut)
        .is_some_and(|m| m.remove(key).is_some())
}

/// One serde read of a schema-2 document: its first error as a [`FieldError`].
fn typed_once(v: &Value) -> Result<Config, FieldError> {
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
        // A bad value inside the tagged `engine` (a negative count) is also reported at
        // the section: read the engine's options alone to find the key.
        if path == "engine"
            && let Some(inner) = v.get("engine").and_then(engine_error_path)
        {
            path = format!("engine.{inner}");
        }
        // serde reports an unknown key at the path of the key itself.
        let value = lookup(v, &path).map(short).unwrap_or_default();
        FieldError::new(path, value, tidy(&msg))
    })
}

/// The path inside `engine` of the first error of its options, read as the options struct
/// of its `type` (serde buffers an internally tagged enum and loses the inner path).
fn engine_error_path(engine: &Value) -> Option<String> {
    use crate::config::{DdpOptions, FsdpOptions, MegatronOptions, ZeroOptions};
    fn first<T: serde::de::DeserializeOwned>(v: &Value) -> Option<String> {
        let e = serde_path_to_error::deserialize::<_, T>(v).err()?;
        Some(e.path().to_string()).filter(|p| p != ".")
    }
    let mut options = engine.as_object()?.clone();
    let kind = options.remove("type")?;
    let options = Value::Object(options);
    match kind.as_str()? {
        "ddp" => first::<DdpOptions>(&options),
        "deepspeed" | "megatron_deepspeed" => first::<ZeroOptions>(&options),
        "fsdp" => first::<FsdpOptions>(&options),
        "megatron" => first::<MegatronOptions>(&options),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Engine, ShardingStrategy};
    use serde_json::json;

    #[test]
    fn schema_1_fsdp_becomes_fsdp1() {
        // schema 1's fsdp engine was FSDP1: the migration says so
        let v1 = json!({"schema_version": 1, "model": {"preset": "gpt2"},
            "engine": {"type": "fsdp", "sharding_strategy": "SHARD_GRAD_OP"}});
        let c = Config::from_value(v1).unwrap();
        assert_eq!(c.schema_version, 2);
        match c.engine {
            Engine::Fsdp(o) => {
                assert_eq!(o.fsdp_version, 1);
                assert_eq!(o.sharding_strategy, Some(ShardingStrategy::ShardGradOp));
            }
            e => panic!("{e:?}"),
        }
        // a schema 2 document's fsdp is FSDP2 unless it says otherwise
        let v2 =
            json!({"schema_version": 2, "model": {"preset": "gpt2"}, "engine": {"type": "fsdp"}});
        match Config::from_value(v2).unwrap().engine {
            Engine::Fsdp(o) => assert_eq!(o.fsdp_version, 2),
            e => panic!("{e:?}"),
        }
        // other engines pass through unchanged
        let ds = json!({"schema_version": 1, "engine": {"type": "deepspeed", "zero_stage": 2}});
        assert_eq!(migrate_v1(ds.clone())["engine"], ds["engine"]);
        assert_eq!(migrate_v1(ds)["schema_version"], 2);
    }

    #[test]
    fn a_newer_schema_is_refused_by_name() {
        let e = Config::from_value(json!({"schema_version": 3})).unwrap_err();
        assert_eq!(e[0].field, "schema_version");
        assert!(
            e[0].message.contains("0 (seed format), 1 or 2"),
            "{}",
            e[0].message
        );
    }
}
