#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11 and the package registries:
#   ./run.sh demo    set up .venv, then run the demo workload on the CPU XLA device
#   ./run.sh test    set up .venv (and headless Chromium), then run the whole test suite
#   ./run.sh setup   only set up .venv
# The virtual environment is reused when it is already right (a stamp of pyproject.toml,
# setup.py, run.sh and the C sources it builds),
# so the 7 GB torch/torch_xla install happens once.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3.11}
VENV=.venv
STAMP="$VENV/.xlaprof-setup"

log() { printf '[run.sh] %s\n' "$*" >&2; }

want_stamp() { cat pyproject.toml setup.py run.sh collectors/*.c xlaprof/xspace/*.c | sha256sum | cut -d' ' -f1; }

apt_install() {
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@"
}

setup_compiler() {  # for the stack sampler's C loop and the capture decoder (setup.py)
  if command -v cc >/dev/null; then return; fi
  log "installing Debian's gcc for the stack sampler's C loop"
  apt_install gcc
}

setup_venv() {
  setup_compiler
  if [[ -x "$VENV/bin/python" ]] && ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    log "$VENV is not Python 3.11: recreating it"
    rm -rf "$VENV"
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    command -v "$PYTHON" >/dev/null || { log "need $PYTHON on PATH (or set PYTHON=...)"; exit 2; }
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$(want_stamp)" ]]; then
    log "$VENV is up to date"
    return
  fi
  log "installing xlaprof with all extras into $VENV (first time: torch + torch_xla, about 7 GB, a few minutes)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip 1>&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -e ".[all]" 1>&2
  "$VENV/bin/python" -c 'import collectors._stack_watch' 2>/dev/null ||
    log "the stack sampler's C loop did not build (pip's output above says why): captures will have no Python stacks"
  "$VENV/bin/python" -c 'import xlaprof.xspace._wire' 2>/dev/null ||
    log "the C capture decoder did not build (pip's output above says why): captures are decoded with numpy, slower"
  want_stamp > "$STAMP"
}

setup_browser() {
  if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then return; fi
  log "installing Debian's chromium and chromium-driver for the browser tests"
  apt_install chromium chromium-driver
}

case "${1:-}" in
  setup) setup_venv ;;
  demo) setup_venv; shift; exec "$VENV/bin/xlaprof" demo "$@" ;;
  test) setup_venv; setup_browser; shift; exec "$VENV/bin/python" -m pytest "$@" ;;
  *) echo "usage: ./run.sh demo|test|setup [args...]" >&2; exit 2 ;;
esac
