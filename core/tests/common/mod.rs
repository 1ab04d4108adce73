//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod grid;

use calc_core::{Config, Estimate, FieldError, PhaseEstimate};
use serde_json::Value;

/// A config document that must parse.
pub fn cfg(v: Value) -> Config {
    Config::from_value(v).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The estimate of a config document that must be valid.
pub fn est(v: Value) -> Estimate {
    calc_core::estimate(&cfg(v)).unwrap_or_else(|e| panic!("{e:?}"))
}

/// A phase of an estimate, by name.
pub fn phase<'a>(e: &'a Estimate, name: &str) -> &'a PhaseEstimate {
    e.phases
        .iter()
        .find(|p| p.phase == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// Bytes of `component` at `phase`.
pub fn c(e: &Estimate, phase_name: &str, component: &str) -> u64 {
    phase(e, phase_name).components[component]
}

/// The field errors of a document (parse or validation).
pub fn errors_of(v: Value) -> Vec<FieldError> {
    match Config::from_value(v) {
        Ok(c) => calc_core::validate(&c).err().unwrap_or_default(),
        Err(e) => e,
    }
}

/// The fields of a document's errors ([`errors_of`]), in order.
pub fn error_fields(v: Value) -> Vec<String> {
    errors_of(v).into_iter().map(|e| e.field).collect()
}

/// Sets `value` at a dotted path of `doc`, creating objects on the way.
pub fn set_at(doc: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = doc;
    for s in &segs[..segs.len() - 1] {
        cur = cur
            .as_object_mut()
            .expect("an object on the path")
            .entry(s.to_string())
            .or_insert(Value::Object(Default::default()));
    }
    cur[segs[segs.len() - 1]] = value;
}
