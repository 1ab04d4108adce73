//! What every fuzz target checks (`fuzz/fuzz_targets/`, run with `cargo +nightly fuzz run
//! <target>`; RELIABILITY.md has the figures): no panic (libFuzzer reports one as a crash),
//! no NaN or infinity anywhere in an output, the numeric estimate equal to the report, and
//! the slowest estimate seen (printed whenever a new slowest one is found).

use arbitrary::{Arbitrary, Unstructured};
use calc_core::fields::{Choices, Kind};
use calc_core::{Config, FieldError};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Panics if any float in `v`'s serialized form is NaN or infinite (serde_json would write
/// them as `null`; `serde-value` keeps them).
pub fn assert_finite<T: Serialize>(v: &T) {
    fn walk(v: &serde_value::Value, path: &mut Vec<String>) {
        use serde_value::Value as V;
        match v {
            V::F32(f) => assert!(f.is_finite(), "non-finite {f} at {}", path.join(".")),
            V::F64(f) => assert!(f.is_finite(), "non-finite {f} at {}", path.join(".")),
            V::Option(Some(x)) | V::Newtype(x) => walk(x, path),
            V::Seq(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    path.push(i.to_string());
                    walk(x, path);
                    path.pop();
                }
            }
            V::Map(m) => {
                for (k, x) in m {
                    path.push(format!("{k:?}"));
                    walk(x, path);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let v = serde_value::to_value(v).expect("every output serializes");
    walk(&v, &mut Vec::new());
}

/// Every error names a field and says something (a document's root is `""`).
pub fn assert_errors_readable(errors: &[FieldError]) {
    assert!(!errors.is_empty(), "an error result without errors");
    for e in errors {
        assert!(!e.message.is_empty(), "an error without a message: {e:?}");
    }
}

static SLOWEST_NS: AtomicU64 = AtomicU64::new(0);

/// Estimates `config` (full report and numeric path) and checks the outputs.
pub fn check_config(config: &Config) {
    let start = Instant::now();
    let result = calc_core::estimate(config);
    let ns = start.elapsed().as_nanos() as u64;
    if ns > SLOWEST_NS.fetch_max(ns, Ordering::Relaxed) {
        eprintln!("slowest estimate so far: {:.1} us", ns as f64 / 1e3);
        // kept to be timed outside the fuzzer (its instrumentation slows everything)
        if let Ok(path) = std::env::var("FUZZ_SLOWEST") {
            let _ = std::fs::write(path, config.to_json_pretty());
        }
    }
    match result {
        Ok(e) => {
            assert_finite(&e);
            let r = calc_core::resolve::resolve(config).expect("estimate succeeded");
            let p = calc_core::estimate_peak(&r);
            assert_eq!(
                (
                    p.peak_allocated_bytes,
                    p.total_bytes,
                    p.fits,
                    p.headroom_bytes
                ),
                (
                    e.peak_allocated_bytes,
                    e.total_bytes,
                    e.fits,
                    e.headroom_bytes
                ),
                "numeric path disagrees with the report"
            );
        }
        Err(errors) => assert_errors_readable(&errors),
    }
}

/// Parses and checks a config document given as JSON text.
pub fn check_config_text(text: &str) {
    match Config::from_json_str(text) {
        Ok(c) => {
            check_config(&c);
            // export -> import gives the same document
            let exported = c.to_json_pretty();
            let again = Config::from_json_str(&exported).expect("export re-imports");
            assert_eq!(again.to_json_pretty(), exported);
        }
        Err(errors) => assert_errors_readable(&errors),
    }
}

fn set_path(doc: &mut Map<String, Value>, path: &str, v: Value) {
    let mut parts = path.split('.').peekable();
    let mut cur = doc;
    while let Some(p) = parts.next() {
        if parts.peek().is_none() {
            cur.insert(p.to_string(), v);
            return;
        }
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        cur = next.as_object_mut().expect("just made an object");
    }
}

/// A number for a field: mostly small and typical, sometimes at or past its bounds, sometimes
/// hostile (huge, negative, fractional, a string with a suffix).
fn number(u: &mut Unstructured, field: &calc_core::fields::Field) -> arbitrary::Result<Value> {
    let (min, max) = field.bounds.map_or((0.0, 1e6), |b| (b.min, b.max));
    Ok(match u.int_in_range(0..=15u8)? {
        0 => json!(min),
        1 => json!(max),
        2 => json!(max * 2.0 + 1.0),
        3 => json!(-1),
        4 => json!(u.arbitrary::<f64>()?),
        5 => json!(u.arbitrary::<u64>()?),
        6 => json!(format!("{}k", u.int_in_range(1..=512u32)?)),
        7 => json!(1e30),
        _ => {
            // typical: a small power of two (counts) or a fraction in the range (numbers)
            if matches!(field.kind, Kind::Number) {
                let t: f64 = u.int_in_range(0..=100u32)? as f64 / 100.0;
                json!(min + (max.min(1e6) - min) * t)
            } else {
                let k = u.int_in_range(0..=17u32)?;
                json!((1u64 << k).clamp(min.max(1.0) as u64, max.max(1.0) as u64))
            }
        }
    })
}

/// A config document built from the form's field table ([`calc_core::fields`]): a model
/// preset, a GPU preset, a mode, and a random subset of the fields with values chosen
/// from their options and bounds, so that most documents are valid and the estimator,
/// not only the parser, is exercised.
#[derive(Debug)]
pub struct ArbitraryDoc(pub Value);

impl<'a> Arbitrary<'a> for ArbitraryDoc {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut doc = Map::new();
        let models = calc_core::presets::model_preset_ids();
        let gpus = calc_core::presets::gpu_preset_ids();
        set_path(&mut doc, "model.preset", json!(u.choose(&models)?));
        set_path(&mut doc, "hardware.gpu", json!(u.choose(&gpus)?));
        let num_gpus = 1u64 << u.int_in_range(0..=10u32)?;
        set_path(&mut doc, "hardware.num_gpus", json!(num_gpus));
        if u.ratio(1, 3)? {
            set_path(&mut doc, "mode", json!("inference"));
        }
        for field in calc_core::fields::fields() {
            if !u.ratio(1, 4)? {
                continue;
            }
            let v = match field.kind {
                Kind::Choice(c) => {
                    let list = c.list();
                    if list.is_empty() {
                        continue;
                    }
                    let pick = u.choose(&list)?.value.clone();
                    if matches!(c, Choices::Engine) {
                        set_path(&mut doc, "engine.type", pick);
                        continue;
                    }
                    pick
                }
                Kind::Check => json!(u.arbitrary::<bool>()?),
                Kind::Count | Kind::Number => number(u, field)?,
                Kind::Targets => json!("all-linear"),
            };
            set_path(&mut doc, field.path, v);
        }
        Ok(ArbitraryDoc(Value::Object(doc)))
    }
}
