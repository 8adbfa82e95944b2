#!/usr/bin/env bash
# One entry point for a fresh machine with Python 3.11 and the package registries:
#   ./run.sh demo    set up .venv with what the demo needs (xlaprof[demo]), then run the demo
#                    workload on the CPU XLA device
#   ./run.sh test    set up .venv with every extra (xlaprof[all]: the test tools too) and headless
#                    Chromium, then run the whole test suite (arguments go to pytest; with none,
#                    in the two phases of run_suite)
#   ./run.sh setup   only set up .venv, with every extra
# The virtual environment is reused when it is already right: a stamp per set of extras holds a
# hash of pyproject.toml, setup.py, run.sh and the C sources it builds, and a .venv set up for the
# tests serves the demo too, so the torch/torch_xla install happens once.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3.11}
VENV=.venv

log() { printf '[run.sh] %s\n' "$*" >&2; }

want_stamp() { cat pyproject.toml setup.py run.sh collectors/*.c xlaprof/xspace/*.c | sha256sum | cut -d' ' -f1; }
stamp_file() { echo "$VENV/.xlaprof-setup-$1"; }
stamp_current() { [[ -f "$(stamp_file "$1")" && "$(cat "$(stamp_file "$1")")" == "$(want_stamp)" ]]; }

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

# torch + torch_xla unpacked (about 7 GB) and pip's temporary files; overridable, e.g. with a warm
# pip cache elsewhere
NEED_FREE_GB=${XLAPROF_SETUP_NEED_FREE_GB:-10}

free_gb() { df -Pk "$1" | awk 'NR == 2 { print int($4 / 1048576) }'; }

# Whether torch and torch_xla are installed at the versions pyproject.toml pins (the worker extra):
# then an install adds only xlaprof and small packages, and needs no check of the disk.
has_pinned_torch() {
  local pins
  pins=$(grep -o '"torch\(_xla\)\?==[^"]*"' pyproject.toml | tr -d '"')
  [[ -n $pins ]] && "$VENV/bin/python" -c 'import sys, importlib.metadata as m
sys.exit(any(m.version(n) != v for n, v in (p.split("==") for p in sys.argv[1:])))' $pins 2>/dev/null
}

check_disk() {  # a full disk fails pip midway with a long trace: say it up front, in one line
  local dir
  for dir in . "${TMPDIR:-/tmp}"; do
    if (( $(free_gb "$dir") < NEED_FREE_GB )); then
      log "the install needs about $NEED_FREE_GB GB free; $(cd "$dir" && pwd) has $(free_gb "$dir") GB: free some space and run again"
      exit 2
    fi
  done
}

setup_venv() {  # $1: the extras to install, demo or all (all includes demo)
  local extras=$1
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
  if stamp_current all || stamp_current "$extras"; then
    log "$VENV is up to date"
    return
  fi
  has_pinned_torch || check_disk
  log "installing xlaprof[$extras] into $VENV (first time: torch + torch_xla, a few GB, a few minutes)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip 1>&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -e ".[$extras]" 1>&2
  "$VENV/bin/python" -c 'import collectors._stack_watch' 2>/dev/null ||
    log "the stack sampler's C loop did not build (pip's output above says why): captures will have no Python stacks"
  "$VENV/bin/python" -c 'import xlaprof.xspace._wire' 2>/dev/null ||
    log "the C capture decoder did not build (pip's output above says why): captures are decoded with numpy, slower"
  want_stamp > "$(stamp_file "$extras")"
}

# The whole suite in two phases: first every test but those marked exclusive (they measure a cost or a
# load: A/B arms, pinned cores, a busy core), XLAPROF_TEST_WORKERS at a time (pytest-xdist, one test
# file per worker: a module's captures are made once); then the exclusive ones, with the machine to
# themselves. Both phases run; the exit code is the first phase's failure, else the second's.
run_suite() {
  local shared=0 alone=0
  "$VENV/bin/python" -m pytest -n "${XLAPROF_TEST_WORKERS:-2}" --dist loadfile -m "not exclusive" || shared=$?
  "$VENV/bin/python" -m pytest -m exclusive || alone=$?
  if (( shared )); then return "$shared"; fi
  return "$alone"
}

setup_browser() {
  if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then return; fi
  log "installing Debian's chromium and chromium-driver for the browser tests"
  apt_install chromium chromium-driver
}

case "${1:-}" in
  setup) setup_venv all ;;
  demo) setup_venv demo; shift; exec "$VENV/bin/xlaprof" demo "$@" ;;
  test)
    setup_venv all; setup_browser; shift
    # Bytecode caches written (__pycache__, gitignored) where the environment turned them off: pytest
    # rewrites every test module's asserts at each collection otherwise, 5 s of a core each time.
    unset PYTHONDONTWRITEBYTECODE
    if (( $# )); then exec "$VENV/bin/python" -m pytest "$@"; fi
    run_suite ;;
  *) echo "usage: ./run.sh demo|test|setup [args...]" >&2; exit 2 ;;
esac
