#!/usr/bin/env bash
# Runs every test: formatting and lints, the Rust tests (core, CLI, web, wasm API), a fuzz
# smoke run of every cargo-fuzz target (nightly), a release build of the site with Trunk,
# the npm package with its Node tests, and the browser tests in headless Chromium against
# dist/ and examples/embed.html.
# Installs what the tests need when missing (Chromium from Debian, Trunk, wasm-bindgen-cli,
# npm packages, the pinned nightly toolchain and cargo-fuzz).
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$ROOT"
start=$(date +%s)
# One build per run: incremental caches and full debug info only cost disk and link time
# here (a fresh clone's target/ was 6.5 GB with them); backtraces keep file:line. The
# test profile inherits the dev profile's debug setting.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
# A failed step says how much disk and memory were left (a CI run once failed in Trunk's
# wasm-bindgen step with its message cut off).
trap 'rc=$?; [ $rc = 0 ] || { echo "== failed (exit $rc); disk and memory left:" >&2; df -h "$ROOT" /tmp >&2 || true; free -m >&2 || true; du -sh "$ROOT/target" >&2 || true; }' EXIT
ensure_chromium
ensure_build_tools

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
cargo test --workspace --locked
step "fuzz smoke run: every fuzz target for 15 s on its corpus (scripts/fuzz-smoke.sh)"
"$ROOT/scripts/fuzz-smoke.sh"
step "trunk build --release"
rm -rf dist
# without backtraces: with RUST_BACKTRACE=1 a failed tool call is followed by Trunk's
# 70-frame backtrace per pipeline, which pushed the tool's own message out of CI's tail
RUST_BACKTRACE=0 trunk build --release
step "npm package of the JavaScript API (scripts/build-pkg.sh)"
"$ROOT/scripts/build-pkg.sh"
step "package tests (Node)"
node --test tests/pkg/
step "browser tests (headless Chromium): the app and the embedding example"
(cd tests/e2e && node --test)
step "browser tests under a sub-path (GitHub Pages project site)"
(cd tests/e2e && BASE_PATH=/gpu-mem-calc/ node --test --test-name-pattern="loads|offline|state")
step "all tests passed in $(( $(date +%s) - start )) s"
