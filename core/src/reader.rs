//! Reading a JSON object key by key, remembering which keys were read (so that a key no
//! family reads can be named) and collecting errors with their full field path.

use crate::error::FieldError;
use crate::limits;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Reads keys of one JSON object, remembering which keys were looked at and collecting
/// errors with the full path.
pub(crate) struct Reader<'a> {
    pub(crate) map: &'a Map<String, Value>,
    prefix: String,
    used: RefCell<BTreeSet<String>>,
    pub(crate) errors: &'a RefCell<Vec<FieldError>>,
    /// The size keys read with [`Reader::size_or`] that were absent, by path, with the
    /// family's default that was used; shared with child readers.
    pub(crate) defaulted: &'a RefCell<Vec<(String, u64)>>,
}

impl<'a> Reader<'a> {
    pub fn new(
        map: &'a Map<String, Value>,
        prefix: &str,
        errors: &'a RefCell<Vec<FieldError>>,
        defaulted: &'a RefCell<Vec<(String, u64)>>,
    ) -> Self {
        Reader {
            map,
            prefix: prefix.to_string(),
            used: RefCell::new(BTreeSet::new()),
            errors,
            defaulted,
        }
    }
    /// A reader of the object `map` found under `key`, sharing this reader's errors and
    /// defaulted keys, its paths prefixed with `key`'s path.
    pub fn child<'b>(&'b self, map: &'b Map<String, Value>, key: &str) -> Reader<'b> {
        Reader::new(map, &self.path(key), self.errors, self.defaulted)
    }
    pub fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }
    pub fn err(&self, key: &str, v: &Value, msg: &str) {
        self.errors
            .borrow_mut()
            .push(FieldError::new(self.path(key), v, msg));
    }
    /// The value of `key`, `None` if absent or `null`.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.used.borrow_mut().insert(key.to_string());
        self.map.get(key).filter(|v| !v.is_null())
    }
    /// A non-negative integer (JSON number or numeric string such as "7B"), checked against
    /// its row of [`limits::MODEL_KEYS`]: out of range is an error naming the key, and the
    /// value is clamped into the range so that nothing computed before the errors are
    /// returned overflows.
    pub fn count(&self, key: &str) -> Option<u64> {
        let v = self.get(key)?;
        let u = self.count_unchecked(key, v)?;
        let Some(row) = limits::model_key(key) else {
            debug_assert!(
                false,
                "model key `{key}` has no range in limits::MODEL_KEYS"
            );
            return Some(u);
        };
        if !(row.min..=row.max).contains(&u) {
            self.out_of_range(key, u, row.min, row.max);
        }
        Some(u.clamp(row.min, row.max))
    }
    /// Records that `key` (read as `v`) is outside `lo..=hi`, showing the value as written
    /// (1e30, "2T"), not as saturated.
    fn out_of_range(&self, key: &str, v: u64, lo: u64, hi: u64) {
        // a key read twice (MLA head sizes: by the family and for head_dim) is reported once
        let path = self.path(key);
        if self.errors.borrow().iter().any(|e| e.field == path) {
            return;
        }
        let shown = self.map.get(key).map_or(v.to_string(), |x| match x {
            Value::String(s) => s.clone(),
            x => x.to_string(),
        });
        self.errors.borrow_mut().push(FieldError::new(
            path,
            shown,
            format!("must be a whole number from {lo} to {hi}"),
        ));
    }
    fn count_unchecked(&self, key: &str, v: &Value) -> Option<u64> {
        match v {
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Some(u)
                } else if n.as_i64().is_some() {
                    self.err(key, v, "must not be negative");
                    None
                } else {
                    match n.as_f64() {
                        // 4e3 is 4000; a whole number beyond u64 (1e30) saturates, so that
                        // the field's range check reports it as out of range, not as a fraction
                        Some(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 => {
                            Some(if f < 1.8e19 { f as u64 } else { u64::MAX })
                        }
                        _ => {
                            self.err(key, v, "must be a whole number");
                            None
                        }
                    }
                }
            }
            Value::String(s) => match crate::units::parse_count(s) {
                Ok(u) => Some(u),
                Err(m) => {
                    self.err(key, v, &m);
                    None
                }
            },
            _ => {
                self.err(key, v, "must be a whole number");
                None
            }
        }
    }
    /// The first present key of `keys`, as a count.
    pub fn count_any(&self, keys: &[&str]) -> Option<u64> {
        let mut found = None;
        for k in keys {
            if found.is_none() {
                found = self.count(k);
            } else {
                self.used.borrow_mut().insert(k.to_string());
            }
        }
        found
    }
    /// The key of `keys` the object gives (the first present), else the first: where an
    /// error about the value read by [`Reader::count_any`] belongs.
    pub fn present<'k>(&self, keys: &[&'k str]) -> &'k str {
        keys.iter()
            .find(|k| self.map.contains_key(**k))
            .or(keys.first())
            .copied()
            .unwrap_or("")
    }
    pub fn count_or(&self, keys: &[&str], default: u64) -> u64 {
        self.count_any(keys).unwrap_or(default)
    }
    /// As [`Reader::count_or`] for a size of the model: when no key of `keys` is in the
    /// object (an explicit `null` counts as given), the first key's path and `default` are
    /// recorded as defaulted, so that the user can be told which sizes the file did not give.
    pub fn size_or(&self, keys: &[&str], default: u64) -> u64 {
        if !keys.iter().any(|k| self.map.contains_key(*k)) {
            self.defaulted
                .borrow_mut()
                .push((self.path(keys[0]), default));
        }
        self.count_or(keys, default)
    }
    pub fn boolean(&self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                self.err(key, v, "must be true or false");
                default
            }
        }
    }
    pub fn float(&self, key: &str, default: f64) -> f64 {
        match self.get(key) {
            None => default,
            Some(v) => match v.as_f64() {
                Some(f) if f.is_finite() => f,
                _ => {
                    self.err(key, v, "must be a number");
                    default
                }
            },
        }
    }
    pub fn string(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            v => {
                self.err(key, v, "must be a string");
                None
            }
        }
    }
    pub fn object(&self, key: &str) -> Option<&'a Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m),
            v => {
                self.err(key, v, "must be a JSON object");
                None
            }
        }
    }
    pub fn count_list(&self, key: &str) -> Vec<u64> {
        match self.get(key) {
            None => Vec::new(),
            Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_u64()).collect(),
            Some(v) => {
                self.err(key, v, "must be a list of whole numbers");
                Vec::new()
            }
        }
    }
    /// Keys of the object never looked at.
    pub fn unused_keys(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.map
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect()
    }
}

/// Checks a size against its allowed range; records an error and returns `None` if out.
pub(crate) fn bounded(r: &Reader, key: &str, v: u64, lo: u64, hi: u64) -> Option<u64> {
    if v < lo || v > hi {
        r.out_of_range(key, v, lo, hi);
        None
    } else {
        Some(v)
    }
}
