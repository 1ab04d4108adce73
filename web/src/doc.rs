//! The config document being edited: a JSON value addressed by dotted paths. The form's
//! fields, their options, defaults, bounds and where they apply are `calc_core::fields`;
//! validation and estimates are `calc_core`'s. Nothing here knows a fact of the schema.

use serde_json::{Map, Value};

/// The value at a dotted path (`training.seq_len`).
pub fn get<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |cur, seg| cur.get(seg))
}

/// Sets (or with `None` removes) the value at a dotted path, creating objects on the way.
pub fn set(doc: &mut Value, path: &str, value: Option<Value>) {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = doc;
    for seg in &segs[..segs.len() - 1] {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .expect("object")
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    let obj = cur.as_object_mut().expect("object");
    let last = segs[segs.len() - 1].to_string();
    match value {
        Some(v) => {
            obj.insert(last, v);
        }
        None => {
            obj.remove(&last);
        }
    }
}

/// The text an input shows for a JSON value.
pub fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        // 16.0 reads as 16 (an f64 field's whole value)
        Some(Value::Number(n)) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Some(v) => v.to_string(),
    }
}

/// What the user typed, as the JSON value to store: a number when it reads as one, else the
/// text itself (so that `calc_core` reports it against the field); `None` for an empty
/// optional field (its default applies).
pub fn value_of(text: &str, optional: bool) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return if optional {
            None
        } else {
            Some(Value::String(String::new()))
        };
    }
    match serde_json::from_str::<serde_json::Number>(t) {
        Ok(n) => Some(Value::Number(n)),
        Err(_) => Some(Value::String(t.to_string())),
    }
}

/// What the user typed in the LoRA targets field, as JSON.
pub fn targets_value(text: &str) -> Value {
    let t = text.trim();
    if t == "all-linear" || t.is_empty() {
        return Value::String(t.to_string());
    }
    Value::Array(
        t.split(',')
            .map(|x| x.trim())
            .filter(|x| !x.is_empty())
            .map(|x| Value::String(x.to_string()))
            .collect(),
    )
}

/// The targets field's text for a JSON value.
pub fn targets_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let mut d = json!({});
        set(&mut d, "training.seq_len", Some(json!(4096)));
        assert_eq!(get(&d, "training.seq_len"), Some(&json!(4096)));
        set(&mut d, "training.seq_len", None);
        assert_eq!(d, json!({"training": {}}));
        assert_eq!(value_of("12", false), Some(json!(12)));
        assert_eq!(value_of("abc", false), Some(json!("abc")));
        assert_eq!(value_of("", true), None);
        assert_eq!(value_of(" ", false), Some(json!("")));
        assert_eq!(text_of(Some(&json!(16.0))), "16");
        assert_eq!(text_of(Some(&json!(0.1))), "0.1");
        assert_eq!(text_of(Some(&json!(4096))), "4096");
    }
}
