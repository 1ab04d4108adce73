#!/usr/bin/env bash
# The web app's wasm by contributor: `twiggy top` (cargo install twiggy) of the release build
# before wasm-bindgen and wasm-opt (function names kept), then the code summed per crate.
# Then the same per-crate table for the formats worker's wasm (the npm package's, loaded on
# demand by the import and export of other tools' files), with the parsers' share.
# Sizes are of the unoptimized binary: the shares, not the bytes, carry over to dist/.
# Usage: scripts/size-report.sh [N rows, default 25]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-25}"
per_crate() {
  twiggy top -n 1000000 -f csv "$1" | python3 -c '
import csv, re, sys, collections
per = collections.Counter()
for r in csv.DictReader(sys.stdin):
    name, size = r["Name"], int(r["ShallowSize"])
    if name.startswith(("data segment", "\"function names\"", "custom section", "type[", "import ", "export ", "table", "elem")):
        per[re.sub(r"\[.*", "", name)[:48]] += size
        continue
    m = re.match(r"[<&( ]*(?:impl |dyn |mut )*([A-Za-z_][A-Za-z0-9_]*)", name)
    per[m.group(1) if m else "?"] += size
total = sum(per.values())
print("| contributor | KiB | % |\n|---|---|---|")
for k, v in per.most_common(20):
    print(f"| {k} | {v / 1024:.1f} | {100 * v / total:.1f} |")
parsers = sum(v for k, v in per.items() if k in ("serde_saphyr", "granit_parser", "annotate_snippets", "saphyr_parser", "toml", "toml_parser", "toml_writer", "toml_datetime", "winnow", "shell_words"))
print(f"\nthe YAML, TOML and command-line parsers (serde_saphyr with granit_parser and annotate_snippets, toml*, winnow, shell_words): {parsers / 1024:.1f} KiB, {100 * parsers / total:.1f} %")
'
}
cargo build -q --release --target wasm32-unknown-unknown -p web
wasm=target/wasm32-unknown-unknown/release/web.wasm
echo "## twiggy top -n $n ($wasm, $(($(stat -c %s "$wasm") / 1024)) KiB)"
twiggy top -n "$n" "$wasm"
echo
echo "## code per crate (shallow bytes of functions; data and custom sections apart)"
per_crate "$wasm"
echo
cargo build -q --release --target wasm32-unknown-unknown -p gpu-mem-calc-wasm
worker=target/wasm32-unknown-unknown/release/gpu_mem_calc.wasm
echo "## the formats worker, on demand ($worker, $(($(stat -c %s "$worker") / 1024)) KiB): code per crate"
per_crate "$worker"
