//! Golden snapshot: the numbers of every preset x engine x mode x a few layouts.
//!
//! `tests/golden/estimates.jsonl` holds one line per case: the case name and either the
//! estimate's numbers (every phase's non-zero components, the overheads, the stages, CPU and
//! NVMe memory, the serving capacity, the warnings) or the field errors the config gets.
//! The explain text (`details`) is left out: it is checked by `terms.rs`. A change that
//! moves a number fails here; a deliberate change (a named fix) regenerates the file with
//! `GOLDEN_UPDATE=1 cargo test -p calc-core --test golden` and names every moved case in
//! its commit.

mod common;
use common::grid::cases;

use calc_core::{Config, estimate};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// The numbers of an estimate, compactly: what the golden file compares.
fn numbers(e: &calc_core::Estimate) -> Value {
    let nonzero = |m: &indexmap::IndexMap<String, u64>| -> Value {
        Value::Object(
            m.iter()
                .filter(|(_, v)| **v > 0)
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect::<Map<_, _>>(),
        )
    };
    let mut out = json!({
        "peak": e.peak_allocated_bytes,
        "peak_phase": e.peak_phase,
        "total": e.total_bytes,
        "fits": e.fits,
        "most_loaded": e.most_loaded,
        "params_on_gpu": e.params_on_gpu,
        "trainable": e.trainable_params,
        "phases": e.phases.iter().map(|p| json!([p.phase, p.allocated_bytes, nonzero(&p.components)])).collect::<Vec<_>>(),
        "overheads": nonzero(&e.overheads),
        "stages": e.stages.iter().map(|s| json!([s.stage, s.layers, s.params_on_gpu, s.peak_allocated_bytes, s.peak_phase])).collect::<Vec<_>>(),
    });
    if e.cpu_memory_bytes > 0 {
        out["cpu"] = json!(e.cpu_memory_bytes);
    }
    if e.nvme_bytes > 0 {
        out["nvme"] = json!(e.nvme_bytes);
    }
    if let Some(s) = &e.serving {
        out["serving"] = json!([
            s.budget_bytes,
            s.weights_bytes,
            s.peak_activation_bytes,
            s.non_torch_bytes,
            s.kv_cache_bytes,
            s.kv_bytes_per_token,
            s.kv_cache_tokens,
            s.max_model_len,
            s.fits,
            s.message
        ]);
    }
    if !e.warnings.is_empty() {
        out["warnings"] = json!(e.warnings);
    }
    out
}

fn result_of(doc: &Value) -> Value {
    match Config::from_value(doc.clone()).and_then(|c| estimate(&c)) {
        Ok(e) => numbers(&e),
        Err(errs) => {
            json!({"errors": errs.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>()})
        }
    }
}

fn golden_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/estimates.jsonl")
}

#[test]
fn every_number_matches_the_golden_file() {
    let mut text = String::new();
    for (name, doc) in cases() {
        let line = json!({"case": name, "result": result_of(&doc)});
        writeln!(text, "{line}").unwrap();
    }
    let path = golden_path();
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (GOLDEN_UPDATE=1 writes it)", path.display()));
    let (got_lines, want_lines): (Vec<&str>, Vec<&str>) =
        (text.lines().collect(), want.lines().collect());
    let mut diffs = Vec::new();
    for (g, w) in got_lines.iter().zip(&want_lines) {
        if g != w {
            diffs.push(format!("want {w}\n got {g}"));
        }
    }
    assert_eq!(
        got_lines.len(),
        want_lines.len(),
        "case count changed; first differences:\n{}",
        diffs.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(
        diffs.is_empty(),
        "{} of {} cases differ from {}; first:\n{}",
        diffs.len(),
        got_lines.len(),
        path.display(),
        diffs.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Every preset and hand-built family config parsed: the architecture and its parameter
/// inventory (module names, shapes, tensor-parallel splits), against
/// `tests/golden/models.jsonl`.
#[test]
fn every_parsed_model_matches_the_golden_file() {
    let mut text = String::new();
    let mut configs: Vec<(String, Value)> = calc_core::presets::model_presets()
        .iter()
        .map(|p| {
            let t = calc_core::presets::model_preset_text(&p.id).unwrap();
            (p.file.clone(), serde_json::from_str(t).unwrap())
        })
        .collect();
    configs.extend(common::grid::family_configs());
    for (file, config) in configs {
        let a = calc_core::parse_hf_config(&config).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let line = json!({"file": file, "arch": a, "inventory": a.inventory(), "counts": a.param_counts()});
        writeln!(text, "{line}").unwrap();
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/models.jsonl");
    if std::env::var_os("GOLDEN_UPDATE").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (GOLDEN_UPDATE=1 writes it)", path.display()));
    for (g, w) in text.lines().zip(want.lines()) {
        assert_eq!(g, w);
    }
    assert_eq!(text.lines().count(), want.lines().count());
}
