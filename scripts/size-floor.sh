#!/usr/bin/env bash
# The smallest first load the design allows (issue 16 item 7): three throw-away wasm apps
# built like dist/ (the workspace's release profile, then wasm-bindgen and wasm-opt -Oz),
# gzip -9 of the optimized wasm:
#   core-only  calc_core::estimate of a JSON config, the report back as JSON (no UI);
#   leptos     a Leptos CSR page with one number field bound to a signal (no core);
#   both       that page estimating Llama-3.1-8B at the typed micro-batch, report as text.
# `both` is the floor of any page that renders an estimate on first load with this
# toolset: every other field, the charts, panels and messages come on top of it.
# Needs wasm-bindgen (= Cargo.lock) and tests/e2e's wasm-opt (npm binaryen), as Trunk does.
# Usage: scripts/size-floor.sh   (about 2.5 minutes on 2 cores; not part of CI)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
wasm_opt="$repo/tests/e2e/node_modules/.bin/wasm-opt"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cp "$repo/Cargo.lock" .
# the workspace's own release profile, so the apps are built as dist/ is
{
  printf '[workspace]\nresolver = "3"\nmembers = ["core-only", "leptos", "both"]\n'
  sed -n '/^\[profile.release\]/,/^$/p' "$repo/Cargo.toml"
} > Cargo.toml
bindgen_version=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' "$repo/Cargo.toml")
crate() { # name, dependencies, lib.rs
  mkdir -p "$1/src"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2024"\n[lib]\ncrate-type = ["cdylib"]\n[dependencies]\nwasm-bindgen = "=%s"\n%s\n' \
    "$1" "$bindgen_version" "$2" > "$1/Cargo.toml"
  printf '%s\n' "$3" > "$1/src/lib.rs"
}
core="calc-core = { path = \"$repo/core\", default-features = false }
serde_json = { version = \"1\", features = [\"float_roundtrip\"] }"
leptos='leptos = { version = "0.8", features = ["csr"] }'
estimate='fn estimate(json: &str) -> String {
    let c: calc_core::Config = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => return e.to_string(),
    };
    match calc_core::estimate(&c) {
        Ok(e) => serde_json::to_string(&e).unwrap_or_default(),
        Err(e) => format!("{e:?}"),
    }
}'
# a page with one number field, showing show(v) of its number v
page='#[wasm_bindgen(start)]
pub fn main() {
    mount_to_body(|| {
        let (v, set_v) = signal(1u64);
        view! {
            <input type="number" prop:value=move || v.get().to_string()
                on:input=move |ev| if let Ok(x) = event_target_value(&ev).parse() { set_v.set(x) } />
            <pre>{move || show(v.get())}</pre>
        }
    })
}'
crate core-only "$core" "use wasm_bindgen::prelude::*;
#[wasm_bindgen]
pub $estimate"
crate leptos "$leptos" "use leptos::prelude::*;
use wasm_bindgen::prelude::*;
fn show(v: u64) -> String {
    format!(\"{v} x 2 = {}\", v * 2)
}
$page"
crate both "$core
$leptos" "use leptos::prelude::*;
use wasm_bindgen::prelude::*;
$estimate
fn show(v: u64) -> String {
    estimate(&format!(r#\"{{\"model\":{{\"preset\":\"llama-3.1-8b\"}},\"training\":{{\"micro_batch_size\":{v}}},\"hardware\":{{\"num_gpus\":8,\"gpu\":\"h100-80gb\"}}}}\"#))
}
$page"
CARGO_TARGET_DIR="$dir/target" cargo build -q --release --target wasm32-unknown-unknown
echo "| app | wasm KiB | gzip -9 KiB |"
echo "|---|---|---|"
for c in core-only leptos both; do
  f="${c//-/_}"
  wasm-bindgen --target web --out-dir "out/$c" "target/wasm32-unknown-unknown/release/$f.wasm"
  "$wasm_opt" -Oz "out/$c/${f}_bg.wasm" -o "out/$c/opt.wasm"
  raw=$(stat -c %s "out/$c/opt.wasm")
  gz=$(gzip -9c "out/$c/opt.wasm" | wc -c)
  awk -v c="$c" -v r="$raw" -v g="$gz" 'BEGIN { printf "| %s | %.1f | %.1f |\n", c, r / 1024, g / 1024 }'
done
