//! What every fuzz target checks (`fuzz/fuzz_targets/`, run with `cargo +nightly fuzz run
//! <target>`; RELIABILITY.md has the figures): no panic (libFuzzer reports one as a crash),
//! no NaN or infinity anywhere in an output, the numeric estimate equal to the report, and
//! the slowest estimate seen (printed whenever a new slowest one is found).

use calc_core::{Config, FieldError};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

mod docgen;
pub use docgen::{ArbitraryDoc, hf_config_document, set_path};

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
