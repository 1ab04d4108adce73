#!/usr/bin/env bash
# Fuzz smoke run (RELIABILITY.md): every cargo-fuzz target of fuzz/ for FUZZ_SECONDS (default
# 15) on a copy of its committed corpus. Built optimized with overflow checks and debug
# assertions (-O -a) and without a sanitizer (-s none: calc-core forbids unsafe code), the
# build the long runs use. A crash, a panic, an overflow or a failed check fails the run and
# leaves the input under target/fuzz-smoke/<target>/.
# Installs the pinned nightly toolchain and cargo-fuzz when missing.
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$ROOT/fuzz"
NIGHTLY=nightly-2026-05-19
CARGO_FUZZ_VERSION=0.13.2
SECONDS_PER_TARGET=${FUZZ_SECONDS:-15}
if ! rustup toolchain list | grep -q "^$NIGHTLY"; then
  step "rustup toolchain install $NIGHTLY"
  rustup toolchain install "$NIGHTLY" --profile minimal
fi
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  step "cargo install cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
FLAGS=(-O -a -s none --target-dir "$ROOT/target/fuzz")
step "cargo fuzz build ${FLAGS[*]}"
cargo "+$NIGHTLY" fuzz build "${FLAGS[@]}"
for t in $(cargo "+$NIGHTLY" fuzz list); do
  out="$ROOT/target/fuzz-smoke/$t"
  rm -rf "$out" && mkdir -p "$out/corpus" && cp -r "corpus/$t/." "$out/corpus/"
  step "fuzz $t for ${SECONDS_PER_TARGET} s ($(ls "$out/corpus" | wc -l) corpus inputs)"
  cargo "+$NIGHTLY" fuzz run "${FLAGS[@]}" "$t" "$out/corpus" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$out/" -print_final_stats=1 2>&1 | grep -a -E "Done|stat::number_of_executed_units|panicked|ERROR|SUMMARY" || true
  # any one kind of artifact fails the run (ls of the three globs failed unless all three
  # kinds were there, so a crash alone passed)
  if compgen -G "$out/crash-*" >/dev/null || compgen -G "$out/timeout-*" >/dev/null \
    || compgen -G "$out/oom-*" >/dev/null; then
    echo "fuzz target $t failed; input kept in $out" >&2
    exit 1
  fi
done
