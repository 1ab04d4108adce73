#!/usr/bin/env bash
# Runs every test: formatting and lints, the Rust tests (core, CLI, web), a release build
# of the site with Trunk, and the browser tests in headless Chromium against dist/.
# Installs what the tests need when missing (Chromium from Debian, Trunk, wasm-bindgen-cli,
# npm packages).
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$ROOT"
start=$(date +%s)
ensure_chromium
ensure_build_tools

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
cargo test --workspace --locked
step "trunk build --release"
rm -rf dist
trunk build --release
step "browser tests (headless Chromium)"
(cd tests/e2e && node --test)
step "browser tests under a sub-path (GitHub Pages project site)"
(cd tests/e2e && BASE_PATH=/gpu-mem-calc/ node --test --test-name-pattern="loads|offline|state")
step "all tests passed in $(( $(date +%s) - start )) s"
