//! Inputs the fuzz targets (`fuzz/`, RELIABILITY.md) found to break a check, kept under
//! `fuzz/regressions/<target>/` and replayed here with the same check on stable Rust.
use calc_core::Config;
use std::path::PathBuf;

/// The kept inputs of a fuzz target (`fuzz/regressions/<target>/`): each file's path and
/// bytes; at least `at_least` of them.
fn inputs(target: &str, at_least: usize) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = format!(
        "{}/../fuzz/regressions/{target}",
        env!("CARGO_MANIFEST_DIR")
    );
    let found: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("regressions directory")
        .map(|entry| {
            let path = entry.expect("entry").path();
            let bytes = std::fs::read(&path).expect("input");
            (path, bytes)
        })
        .collect();
    assert!(
        found.len() >= at_least,
        "{} regression inputs in {dir}, expected at least {at_least}",
        found.len()
    );
    found
}

/// config_json: export -> import gives the same document. Found: a float in the document
/// (2.4222222222222226e+57) read back one unit in the last place off, because serde_json's
/// default float parser is not correctly rounded; the workspace now enables its
/// `float_roundtrip` feature.
#[test]
fn config_json_export_import_is_identical() {
    for (path, bytes) in inputs("config_json", 1) {
        let text = String::from_utf8(bytes).expect("UTF-8 input");
        let Ok(config) = Config::from_json_str(&text) else {
            continue;
        };
        let exported = config.to_json_pretty();
        let again = Config::from_json_str(&exported).expect("an export re-imports");
        assert_eq!(again.to_json_pretty(), exported, "{}", path.display());
    }
}

/// The float of the first regression, parsed exactly (correctly rounded): the nearest f64
/// to 2.4222222222222226e+57 prints back as the same digits.
#[test]
fn floats_round_trip_through_json() {
    let v: serde_json::Value = serde_json::from_str("2.4222222222222226e+57").unwrap();
    assert_eq!(v.to_string(), "2.4222222222222226e+57");
}

/// estimate: generated documents (the fuzz target's generator) estimate without a panic.
/// Kept as the documents the generator made of each found input, not as the input's bytes:
/// the generator grows (model keys since 2026-11-23) and would read old bytes differently.
/// Found, with overflow checks:
/// * `eager-scores-overflow.json`: eager attention scores at a 2^30-token context
///   (DeepSeek-V2-Lite, HF inference) are 2^65 bytes, and the phase sum overflowed u64 (a
///   small wrapped number that "fits" without overflow checks). Sums of bytes now saturate
///   (`report::saturating_sum`), and such a context is refused at validation
///   (`limits::MAX_ACTIVATION_ELEMS`).
/// * `eager-micro-batch-overflow.json`: micro-batch 1 000 x a 2^30-token sequence under eager
///   attention overflowed the activation arithmetic (`activations.rs` score elements);
///   refused at validation the same way.
/// * `sdpa-sliding-mask-overflow.json`: Gemma-2-9B LoRA at a 2^30-token sequence under SDPA
///   passed that bound, but each sliding-window layer keeps a `seq x seq` mask (2^63 bytes
///   over 21 layers at 2^29 tokens) and the phase's bytes overflowed. The bound now counts
///   the mask row under SDPA with a sliding window.
/// * `lora-rank-overflow.json` (2026-11-24, CI's smoke run): an inference document that
///   keeps a `training.lora` section with a rank of 2^58, which inference does not validate;
///   resolve still worked out the adapter targets and multiplied the rank by a layer's
///   features. Resolve now builds the targets for training only (after validating the
///   rank), and `lora::adapter_params` saturates; each alone passes this input.
#[test]
fn estimate_inputs_never_panic() {
    for (path, bytes) in inputs("estimate", 5) {
        let doc: serde_json::Value = serde_json::from_slice(&bytes).expect("a JSON document");
        let result = Config::from_value(doc).and_then(|c| calc_core::estimate(&c));
        let refused_at = |field: &str| {
            let errors = result.as_ref().expect_err("refused");
            assert!(
                errors
                    .iter()
                    .any(|e| e.field == field && e.message.contains("2^56")),
                "{}: {errors:?}",
                path.display()
            );
        };
        if path.ends_with("eager-scores-overflow.json") {
            refused_at("inference.context_len");
        }
        if path.ends_with("eager-micro-batch-overflow.json")
            || path.ends_with("sdpa-sliding-mask-overflow.json")
        {
            refused_at("training.seq_len");
        }
        if let Ok(e) = result {
            assert!(
                !e.fits || e.total_bytes <= e.gpu_memory_bytes,
                "{}",
                path.display()
            );
        }
    }
}

/// A sum of bytes past 2^64 saturates instead of wrapping to a small number.
#[test]
fn byte_sums_saturate() {
    use calc_core::report::{headroom, saturating_sum};
    assert_eq!(saturating_sum([u64::MAX, 1, 5]), u64::MAX);
    assert_eq!(saturating_sum([1, 2, 3]), 6);
    assert_eq!(headroom(80, u64::MAX), i64::MIN);
    assert_eq!(headroom(80_000_000_000, 1), 79_999_999_999);
}

/// hf_config: a count with 40 decimals ("00000.0000000000000000000000000000000000000001")
/// raised 10 to the 40th in u128 while reading it (past u128: a panic with overflow checks);
/// now "not a whole number".
#[test]
fn hf_config_inputs_never_panic() {
    for (path, bytes) in inputs("hf_config", 1) {
        let text = String::from_utf8(bytes).expect("UTF-8 input");
        let errors = calc_core::hf::parse_hf_config_str(&text).expect_err("refused");
        assert!(
            errors.iter().any(|e| e.field.contains("intermediate_size")),
            "{}: {errors:?}",
            path.display()
        );
    }
}

/// formats_import: another tool's file imported over a base. Found: a Megatron-LM line with
/// `--micro-batch-size 0` and a `--global-batch-size` divided the global batch by
/// micro-batch x data-parallel size = 0 (a panic in every build); now the global batch is
/// refused at its key. The readers' products of parallel sizes saturate since.
#[test]
fn formats_import_inputs_never_panic() {
    let base = Config::from_json_str(
        r#"{"model": {"preset": "llama-3.2-1b"}, "training": {"seq_len": 512}}"#,
    )
    .unwrap();
    for (path, bytes) in inputs("formats_import", 1) {
        let text = String::from_utf8(bytes).expect("UTF-8 input");
        let errors = calc_core::formats::import(&text, &base, None).expect_err("refused");
        assert!(
            errors.iter().any(|e| e.field == "--global-batch-size"),
            "{}: {errors:?}",
            path.display()
        );
    }
}
