//! Field errors: the one error type that crosses the API boundary for bad input.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// A short rendering of a JSON value for error messages (at most 60 characters).
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

/// A rejected input field.
///
/// * `field`: the path of the field in the config document, dot-separated
///   (`training.micro_batch_size`, `model.num_attention_heads`). Document-level
///   errors (invalid JSON) use the empty path.
/// * `value`: the offending value as the user wrote it (JSON text), or empty when
///   the field is missing.
/// * `message`: what is allowed, e.g. `must be a whole number from 1 to 65536`.
///
/// Every error path of `calc-core` that comes from user input ends in one or more
/// `FieldError`s; nothing panics on input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FieldError {
    pub field: String,
    pub value: String,
    pub message: String,
}

impl FieldError {
    /// A field error for `field` holding `value` (rendered with `Display`).
    pub fn new(
        field: impl Into<String>,
        value: impl fmt::Display,
        message: impl Into<String>,
    ) -> Self {
        FieldError {
            field: field.into(),
            value: value.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "config"
        } else {
            self.field.as_str()
        };
        if self.value.is_empty() {
            write!(f, "{field}: {}", self.message)
        } else {
            write!(f, "{field} = {}: {}", self.value, self.message)
        }
    }
}

impl std::error::Error for FieldError {}

/// Collects field errors while validating a document.
#[derive(Debug, Default)]
pub(crate) struct Errors(pub Vec<FieldError>);

impl Errors {
    pub fn add(
        &mut self,
        field: impl Into<String>,
        value: impl fmt::Display,
        message: impl Into<String>,
    ) {
        self.0.push(FieldError::new(field, value, message));
    }
    /// Checks `lo <= v <= hi` for an integer field.
    pub fn range(&mut self, field: &str, v: u64, lo: u64, hi: u64) -> bool {
        if v < lo || v > hi {
            self.add(
                field,
                v,
                format!("must be a whole number from {lo} to {hi}"),
            );
            false
        } else {
            true
        }
    }
    /// Checks that a float is finite and `lo <= v <= hi`.
    pub fn frange(&mut self, field: &str, v: f64, lo: f64, hi: f64) -> bool {
        if !v.is_finite() || v < lo || v > hi {
            self.add(field, v, format!("must be a number from {lo} to {hi}"));
            false
        } else {
            true
        }
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
