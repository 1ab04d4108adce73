//! Embeds the presets (model configs, GPUs, example configs) at build time so that the
//! core works offline and in the browser with no file access.
use std::{env, fs, path::Path};

fn main() {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("..")
        .join("presets");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::new();
    let list = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("presets folder {}: {e}", dir.display()))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        v.sort();
        v
    };
    for (name, dir) in [
        ("MODEL_FILES", root.join("models").join("hf")),
        ("EXAMPLE_FILES", root.join("examples")),
    ] {
        println!("cargo:rerun-if-changed={}", dir.display());
        out += &format!("pub(crate) static {name}: &[(&str, &str)] = &[\n");
        for f in list(&dir) {
            let p = dir.join(&f).canonicalize().unwrap();
            out += &format!(
                "    ({f:?}, include_str!({:?})),\n",
                p.display().to_string()
            );
        }
        out += "];\n";
    }
    for (name, file) in [
        ("MODEL_INDEX", root.join("models").join("index.json")),
        ("GPUS", root.join("gpus.json")),
    ] {
        let p = file.canonicalize().unwrap();
        out += &format!(
            "pub(crate) static {name}: &str = include_str!({:?});\n",
            p.display().to_string()
        );
    }
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("presets_gen.rs"),
        out,
    )
    .unwrap();
    reference();
}

/// Embeds the reference suite (tests/reference/): the probe records without the fields the
/// core does not read (first step, timings), and the published cases.
fn reference() {
    let dir = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("..")
        .join("tests")
        .join("reference");
    let out_dir = Path::new(&env::var("OUT_DIR").unwrap()).to_path_buf();
    let records = dir.join("probe_records.jsonl");
    let published = dir.join("published_cases.json");
    println!("cargo:rerun-if-changed={}", records.display());
    println!("cargo:rerun-if-changed={}", published.display());
    let mut compact = String::new();
    for line in fs::read_to_string(&records).unwrap_or_default().lines() {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let Some(o) = v.as_object_mut() {
            o.remove("seconds");
        }
        // the first iteration: only its per-phase totals are compared
        if let Some(m) = v.get_mut("measured").and_then(|m| m.as_object_mut())
            && let Some(f) = m.get("first_step").and_then(|f| f.as_object())
        {
            let totals: serde_json::Map<String, serde_json::Value> = f
                .iter()
                .map(|(k, p)| (k.clone(), serde_json::json!({"total": p["total"]})))
                .collect();
            m.insert("first_step".into(), totals.into());
        }
        compact += &v.to_string();
        compact.push('\n');
    }
    fs::write(out_dir.join("probe_records.jsonl"), compact).unwrap();
    // distributed records: what the comparison reads (the config, the split, the most
    // loaded rank's peak and per-phase totals)
    let dist = dir.join("dist_records.jsonl");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut compact_dist = String::new();
    for line in fs::read_to_string(&dist).unwrap_or_default().lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let m = &v["measured"];
        let phases: serde_json::Map<String, serde_json::Value> = m["phases"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, p)| (k.clone(), serde_json::json!({"total": p["total"]})))
                    .collect()
            })
            .unwrap_or_default();
        let out = serde_json::json!({
            "id": v["id"], "source": v["source"], "config": v["config"], "split": v["split"],
            "versions": v["versions"],
            "measured": {"metric": m["metric"], "peak_allocated_bytes": m["peak_allocated_bytes"],
                         "peak_phase": m["peak_phase"], "phases": phases},
        });
        compact_dist += &out.to_string();
        compact_dist.push('\n');
    }
    fs::write(out_dir.join("dist_records.jsonl"), compact_dist).unwrap();
    let cases = fs::read_to_string(&published).unwrap_or_else(|_| "[]".into());
    fs::write(out_dir.join("published_cases.json"), cases).unwrap();
    fs::write(
        out_dir.join("reference_gen.rs"),
        "pub(crate) static PROBE_RECORDS: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/probe_records.jsonl\"));\n\
         pub(crate) static PUBLISHED_CASES: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/published_cases.json\"));\n\
         pub(crate) static DIST_RECORDS: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/dist_records.jsonl\"));\n",
    )
    .unwrap();
}
