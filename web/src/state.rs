//! The config document outside the page: the shareable link (URL fragment), documents
//! imported from a file or pasted, and the saved one. Every document from outside passes
//! [`accept`]: it must be a JSON object that `calc_core` parses (migrating older schema
//! versions) and validates; anything else is rejected with a message and changes nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use calc_core::{Config, FieldError};
use serde_json::Value;

/// Fragment prefix of a shared configuration: `#c=<encoding version>.<data>`. Version 1 is
/// the config document as compact JSON, base64url without padding.
pub const FRAGMENT_KEY: &str = "#c=";
/// The link encoding this app writes.
pub const LINK_VERSION: u32 = 1;
/// Largest document accepted from a link or an import, bytes of JSON.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// Separator of the plan panel's inputs in a link: `#c=1.<config>&p=<inputs>`, the
/// inputs as compact JSON in base64url (`&` is not in the base64url alphabet). A link
/// without it leaves the panel's inputs as they are.
pub const PLAN_KEY: &str = "&p=";

/// The fragment for `doc` (`#c=1.eyJ...`), with the plan panel's inputs when given.
pub fn encode_fragment(doc: &Value, plan: Option<&Value>) -> String {
    let json = serde_json::to_vec(doc).unwrap_or_default();
    let mut s = format!(
        "{FRAGMENT_KEY}{LINK_VERSION}.{}",
        URL_SAFE_NO_PAD.encode(json)
    );
    if let Some(p) = plan {
        s.push_str(PLAN_KEY);
        s.push_str(&URL_SAFE_NO_PAD.encode(serde_json::to_vec(p).unwrap_or_default()));
    }
    s
}

/// The plan panel's inputs of a link (a JSON object), `None` when the link has none or
/// they are not readable (the panel then keeps its own).
pub fn decode_plan_inputs(hash: &str) -> Option<Value> {
    let (_, data) = hash.strip_prefix(FRAGMENT_KEY)?.split_once(PLAN_KEY)?;
    if data.len() > MAX_DOCUMENT_BYTES {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(data.trim_end_matches('=')).ok()?;
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(Value::is_object)
}

/// The document of a link's fragment: `None` when the fragment holds no configuration,
/// else the accepted document or why it was rejected.
pub fn decode_fragment(hash: &str) -> Option<Result<Value, String>> {
    let rest = hash.strip_prefix(FRAGMENT_KEY)?;
    // the plan panel's inputs follow the configuration (`decode_plan_inputs`)
    let rest = rest.split_once(PLAN_KEY).map_or(rest, |(config, _)| config);
    Some((|| {
        let (version, data) = rest
            .split_once('.')
            .ok_or("the link's configuration is cut off or not from this app")?;
        if version != LINK_VERSION.to_string() {
            return Err(format!(
                "the link uses encoding version {version:?}; this app reads version {LINK_VERSION}"
            ));
        }
        if data.len() > MAX_DOCUMENT_BYTES * 4 / 3 + 4 {
            return Err("the link's configuration is too large".into());
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(data.trim_end_matches('='))
            .map_err(|_| "the link is corrupt (not base64url)".to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| "the link is corrupt (not UTF-8)")?;
        accept_text(&text)
    })())
}

fn describe(errors: &[FieldError]) -> String {
    let mut parts: Vec<String> = errors.iter().take(3).map(|e| e.to_string()).collect();
    if errors.len() > 3 {
        parts.push(format!("and {} more", errors.len() - 3));
    }
    parts.join("; ")
}

/// Accepts JSON text from outside (see [`accept`]).
pub fn accept_text(text: &str) -> Result<Value, String> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "the configuration is {} bytes; at most {MAX_DOCUMENT_BYTES} are accepted",
            text.len()
        ));
    }
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    accept(v)
}

/// Whether a document is of the current schema version.
fn is_current(v: &Value) -> bool {
    v.get("schema_version").and_then(Value::as_u64) == Some(u64::from(calc_core::SCHEMA_VERSION))
}

/// Accepts a document from outside: a JSON object that parses as a config (the seed
/// format and older schema versions are migrated to the current one) and validates. Returns
/// the document to load: the input itself when it is already current, else the migrated
/// config. Errors: the reason, naming the fields.
pub fn accept(v: Value) -> Result<Value, String> {
    if !v.is_object() {
        return Err("expected a JSON object (a gpu-mem-calc config)".into());
    }
    let current = is_current(&v);
    let config = Config::from_value(v.clone()).map_err(|e| describe(&e))?;
    calc_core::estimate(&config).map_err(|e| describe(&e))?;
    if current {
        Ok(v)
    } else {
        serde_json::to_value(&config).map_err(|e| e.to_string())
    }
}

/// The saved document, migrated when it is from an older schema version. A saved document
/// that no longer parses is kept as it is (it is the user's work, shown with its errors).
pub fn migrate_saved(v: Value) -> Value {
    let current = is_current(&v);
    if current {
        return v;
    }
    match Config::from_value(v.clone()) {
        Ok(c) => serde_json::to_value(&c).unwrap_or(v),
        Err(_) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn link_round_trip() {
        let doc = json!({"schema_version": 2, "model": {"preset": "llama-3.1-8b"},
                         "training": {"micro_batch_size": 2}});
        let frag = encode_fragment(&doc, None);
        assert!(frag.starts_with("#c=1."));
        assert!(!frag[5..].contains(['+', '/', '=']), "{frag}");
        assert_eq!(decode_fragment(&frag), Some(Ok(doc.clone())));
        assert_eq!(decode_plan_inputs(&frag), None);
        assert_eq!(decode_fragment("#section"), None);
        assert_eq!(decode_fragment(""), None);
        // the plan panel's inputs ride after the configuration, which reads the same
        let plan = json!({"gpus": "64", "engines": ["fsdp"]});
        let both = encode_fragment(&doc, Some(&plan));
        assert!(
            both.starts_with(&frag) && both[frag.len()..].starts_with("&p="),
            "{both}"
        );
        assert_eq!(decode_fragment(&both), Some(Ok(doc)));
        assert_eq!(decode_plan_inputs(&both), Some(plan));
        // unreadable inputs are ignored, never fatal for the configuration
        assert_eq!(decode_plan_inputs(&format!("{frag}&p=%%%")), None);
        assert_eq!(decode_plan_inputs(&format!("{frag}&p=WzFd")), None); // [1]
        assert!(decode_fragment(&format!("{frag}&p=%%%")).unwrap().is_ok());
    }

    #[test]
    fn hostile_links_are_rejected() {
        let enc = |s: &str| format!("#c=1.{}", URL_SAFE_NO_PAD.encode(s));
        let err = |h: &str| decode_fragment(h).unwrap().unwrap_err();
        assert!(err("#c=1.%%%").contains("corrupt"));
        assert!(err("#c=9.e30").contains("version"));
        assert!(err(&enc("{not json")).contains("invalid JSON"));
        assert!(err(&enc("[1, 2]")).contains("JSON object"));
        assert!(
            err(&enc(
                r#"{"model": {"preset": "llama-3.1-8b"}, "training": {"micro_batch_size": "many"}}"#
            ))
            .contains("micro_batch_size")
        );
        assert!(
            err(&enc(
                r#"{"model": {"preset": "llama-3.1-8b"}, "training": {"micro_batch_size": 1e300}}"#
            ))
            .contains("micro_batch_size")
        );
        assert!(
            err(&enc(
                r#"{"model": {"preset": "<script>alert(1)</script>"}}"#
            ))
            .contains("preset")
        );
        assert!(err(&enc(r#"{"model": {"preset": "gpt2"}, "evil": 1}"#)).contains("evil"));
    }

    #[test]
    fn seed_documents_are_migrated() {
        // the seed format (no schema_version) becomes a current-schema document
        let seed = json!({"model": {"name": "llama2-7b", "num_parameters": "7B", "num_layers": 32,
            "hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000},
            "training": {"batch_size": 4, "dtype": "bf16"},
            "engine": {"type": "deepspeed", "zero_stage": 3},
            "hardware": {"num_gpus": 8, "gpu_memory_gb": 80}});
        let v = accept(seed.clone()).unwrap();
        assert_eq!(v["schema_version"], calc_core::SCHEMA_VERSION);
        assert_eq!(v["training"]["micro_batch_size"], 4);
        assert_eq!(
            migrate_saved(seed)["schema_version"],
            calc_core::SCHEMA_VERSION
        );
        // a schema 1 FSDP document means FSDP1 after the migration
        let v1 = json!({"schema_version": 1, "model": {"preset": "gpt2"},
            "engine": {"type": "fsdp"}, "hardware": {"num_gpus": 2}});
        let m = migrate_saved(v1);
        assert_eq!(m["schema_version"], 2);
        assert_eq!(m["engine"]["fsdp_version"], 1);
        // a broken saved document is kept as it is
        let broken = json!({"schema_version": 1, "training": {"micro_batch_size": -1}});
        assert_eq!(migrate_saved(broken.clone()), broken);
    }
}
