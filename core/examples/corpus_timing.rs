//! Times the estimate of every committed fuzz corpus input that reaches one (RELIABILITY.md:
//! "0 estimates slower than 1 ms"): the `estimate` target's generated documents, the
//! `config_json` target's texts and the `hf_config` target's `config.json` files, each
//! turned into a config as its target does. Each estimate runs `REPEATS` times and its
//! fastest run counts (the others include the machine's noise). Prints per target the
//! inputs estimated, the median, the 99th percentile and the slowest with its file, and
//! exits 1 if any estimate is slower than 1 ms.
//!
//! `cargo run --release -p calc-core --example corpus_timing [fuzz/corpus]`

#[path = "../../fuzz/src/docgen.rs"]
#[allow(dead_code)]
mod docgen;

use calc_core::Config;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const REPEATS: usize = 5;
const LIMIT: Duration = Duration::from_millis(1);

/// The config an input of `target` estimates, as that fuzz target builds it.
fn config_of(target: &str, bytes: &[u8]) -> Option<Config> {
    match target {
        "estimate" => {
            let mut u = arbitrary::Unstructured::new(bytes);
            let doc = <docgen::ArbitraryDoc as arbitrary::Arbitrary>::arbitrary(&mut u).ok()?;
            Config::from_value(doc.0).ok()
        }
        "config_json" => Config::from_json_str(std::str::from_utf8(bytes).ok()?).ok(),
        "hf_config" => {
            let text = std::str::from_utf8(bytes).ok()?;
            calc_core::parse_hf_config_str(text).ok()?;
            let hf: serde_json::Value = serde_json::from_str(text).ok()?;
            Config::from_value(docgen::hf_config_document(hf)).ok()
        }
        _ => None,
    }
}

fn fastest(config: &Config) -> Duration {
    (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            let r = calc_core::estimate(config);
            let d = t.elapsed();
            std::hint::black_box(r.is_ok());
            d
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus"));
    let mut slow = 0;
    for target in ["estimate", "config_json", "hf_config"] {
        let Ok(dir) = std::fs::read_dir(root.join(target)) else {
            eprintln!("no corpus at {}", root.join(target).display());
            std::process::exit(2);
        };
        let mut inputs = 0;
        let mut times: Vec<(Duration, PathBuf)> = Vec::new();
        for entry in dir.flatten() {
            inputs += 1;
            let Ok(bytes) = std::fs::read(entry.path()) else {
                continue;
            };
            if let Some(config) = config_of(target, &bytes) {
                times.push((fastest(&config), entry.path()));
            }
        }
        times.sort();
        let at = |q: f64| {
            times
                .get(((times.len() as f64 - 1.0) * q) as usize)
                .map_or(0.0, |t| t.0.as_secs_f64() * 1e6)
        };
        let over = times.iter().filter(|t| t.0 > LIMIT).count();
        slow += over;
        println!(
            "{target}: {inputs} inputs, {} estimated; median {:.1} us, p99 {:.1} us, slowest {:.1} us ({}); {over} over 1 ms",
            times.len(),
            at(0.5),
            at(0.99),
            at(1.0),
            times
                .last()
                .map_or(String::new(), |t| t.1.display().to_string())
        );
    }
    if slow > 0 {
        std::process::exit(1);
    }
}
