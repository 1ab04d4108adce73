#!/usr/bin/env bash
# Builds the npm package of the JavaScript API into pkg/: the wasm (release, wasm-opt -Oz),
# wasm-bindgen glue for browsers/bundlers (pkg/web, ES module) and Node (pkg/node,
# CommonJS), TypeScript definitions generated from the Rust types (pkg/types.d.ts, via the
# JSON Schema in pkg/schema.json), package.json with the crate's version, and the README.
# Prints the sizes.
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$ROOT"
ensure_build_tools

step "cargo build gpu-mem-calc-wasm (release, wasm32)"
cargo build -p gpu-mem-calc-wasm --release --target wasm32-unknown-unknown --locked
WASM=target/wasm32-unknown-unknown/release/gpu_mem_calc.wasm
rm -rf pkg && mkdir -p pkg
for target in web nodejs; do
  out=pkg/${target/nodejs/node}
  step "wasm-bindgen --target $target"
  wasm-bindgen --target "$target" --out-dir "$out" --out-name gpu_mem_calc "$WASM"
  wasm-opt -Oz "$out/gpu_mem_calc_bg.wasm" -o "$out/gpu_mem_calc_bg.wasm"
done
# Node reads pkg/node as CommonJS inside a "type": "module" package
echo '{"type": "commonjs"}' > pkg/node/package.json

step "types.d.ts from the Rust types"
cargo run -q -p gpu-mem-calc-wasm --features schema --bin api-schema --locked > pkg/schema.json
json2ts -i pkg/schema.json -o pkg/types.d.ts --no-additionalProperties --unreachableDefinitions \
  --bannerComment "/* TypeScript types of the gpu-mem-calc API, generated from the Rust types (wasm/src/bin/api_schema.rs). Sizes are bytes unless a field says otherwise. */"

VERSION=$(cargo metadata --no-deps --format-version 1 --locked |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).packages.find(p=>p.name==="gpu-mem-calc-wasm").version))')
SCHEMA=$(sed -n 's/^pub const SCHEMA_VERSION: u32 = \([0-9]*\);/\1/p' core/src/config.rs)
cat > pkg/package.json <<JSON
{
  "name": "gpu-mem-calc",
  "version": "$VERSION",
  "description": "GPU memory calculator for training, fine-tuning and serving LLMs: the WebAssembly core with a typed JavaScript API (browser and Node)",
  "license": "MIT OR Apache-2.0",
  "type": "module",
  "main": "./node/gpu_mem_calc.js",
  "module": "./web/gpu_mem_calc.js",
  "types": "./web/gpu_mem_calc.d.ts",
  "exports": {
    ".": {
      "node": { "types": "./node/gpu_mem_calc.d.ts", "default": "./node/gpu_mem_calc.js" },
      "default": { "types": "./web/gpu_mem_calc.d.ts", "default": "./web/gpu_mem_calc.js" }
    },
    "./types": { "types": "./types.d.ts" },
    "./schema.json": "./schema.json"
  },
  "files": ["web/", "node/", "types.d.ts", "schema.json", "README.md"],
  "gpuMemCalc": { "schemaVersion": $SCHEMA }
}
JSON
cp wasm/README.md pkg/README.md

step "type-check the definitions"
tsc --noEmit --strict --skipLibCheck false pkg/types.d.ts pkg/web/gpu_mem_calc.d.ts pkg/node/gpu_mem_calc.d.ts

step "package size"
for f in pkg/web/gpu_mem_calc_bg.wasm pkg/web/gpu_mem_calc.js pkg/node/gpu_mem_calc.js pkg/types.d.ts; do
  printf '%-34s %8d B raw %8d B gzip\n' "$f" "$(wc -c < "$f")" "$(gzip -9c "$f" | wc -c)"
done
