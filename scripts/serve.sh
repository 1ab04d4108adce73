#!/usr/bin/env bash
# Builds the web app and serves it at http://127.0.0.1:8080 (installs Trunk,
# wasm-bindgen-cli and wasm-opt first if they are missing). Extra arguments go to
# `trunk serve`, e.g. --port 9000.
set -euo pipefail
source "$(dirname "$0")/tools.sh"
cd "$ROOT"
ensure_build_tools
step "trunk serve --release (http://127.0.0.1:8080)"
exec trunk serve --release "$@"
