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
}
