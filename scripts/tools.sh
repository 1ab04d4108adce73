# Sourced by serve.sh and test.sh: installs the build tools the web app needs, each only
# when the right version is not already there. Works offline from GitHub: Trunk is told
# (Trunk.toml [tools]) to use the local wasm-bindgen and wasm-opt, never to download them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$ROOT/tests/e2e/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true
TRUNK_VERSION=0.21.14
# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock
WB_VERSION=$(grep -A1 '^name = "wasm-bindgen"$' "$ROOT/Cargo.lock" | sed -n 's/^version = "\(.*\)"/\1/p')

step() { printf '\n== %s\n' "$*"; }

ensure_build_tools() {
  if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
    step "rustup target add wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  fi
  if [ "$(trunk --version 2>/dev/null || true)" != "trunk $TRUNK_VERSION" ]; then
    # 0.22 needs a newer rustc; --debug builds in about half the time and Trunk's speed
    # does not matter (it only runs cargo, wasm-bindgen and wasm-opt)
    step "cargo install trunk $TRUNK_VERSION"
    cargo install --locked --debug trunk --version "$TRUNK_VERSION"
  fi
  if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WB_VERSION" ]; then
    # not --locked: its lockfile pins a webpki-roots the registry here does not serve
    step "cargo install wasm-bindgen-cli $WB_VERSION"
    cargo install wasm-bindgen-cli --version "$WB_VERSION"
  fi
  if [ ! -x "$ROOT/tests/e2e/node_modules/.bin/wasm-opt" ] || [ ! -d "$ROOT/tests/e2e/node_modules/playwright-core" ] || [ ! -x "$ROOT/tests/e2e/node_modules/.bin/json2ts" ]; then
    # npm binaryen 132 provides wasm-opt (Debian binaryen 108 produces a broken wasm);
    # json-schema-to-typescript and typescript build and check the package types
    step "npm ci (tests/e2e: binaryen, playwright-core)"
    (cd "$ROOT/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

ensure_chromium() {
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    step "apt-get install chromium"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-liberation >/dev/null
  fi
}
