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

# Measured on a fresh machine: the venv with torch, torch_xla and their CUDA libraries (7.9 GB), and
# the wheels pip downloads for them (4.6 GB), held until the install ends. Overridable.
VENV_GB=${XLAPROF_SETUP_VENV_GB:-9}
DOWNLOADS_GB=${XLAPROF_SETUP_DOWNLOADS_GB:-5}
# Where the venv goes when this disk is too full: the temporary folder's disk, else memory (a tmpfs)
# if it can hold it and still leave MEMORY_LEFT_GB for the work. The downloads go to the temporary
# folder, else beside the venv.
SHM=${XLAPROF_SETUP_SHM:-/dev/shm}
MEMORY_LEFT_GB=${XLAPROF_SETUP_MEMORY_LEFT_GB:-8}
DOWNLOADS=""  # where pip's downloads go, when place_venv_for_torch chose it

free_gb() { df -Pk "$1" | awk 'NR == 2 { print int($4 / 1048576) }'; }
mount_of() { df -Pk "$1" | awk 'NR == 2 { print $6 }'; }

room_gb() {  # what folder $1 can take; on a filesystem in memory, leaving MEMORY_LEFT_GB for the work
  local free available
  [[ -d $1 ]] || { echo 0; return; }
  free=$(free_gb "$1")
  case $(stat -f -c %T "$1") in
    tmpfs|ramfs)
      available=$(awk -v left="$MEMORY_LEFT_GB" '/^MemAvailable:/ { print int($2 / 1048576) - left }' /proc/meminfo)
      if (( available < free )); then free=$available; fi ;;
  esac
  echo $(( free > 0 ? free : 0 ))
}

# Whether torch and torch_xla are installed at the versions pyproject.toml pins (the worker extra):
# then an install adds only xlaprof and small packages, and needs no room for them.
has_pinned_torch() {
  local pins
  pins=$(grep -o '"torch\(_xla\)\?==[^"]*"' pyproject.toml | tr -d '"')
  [[ -n $pins ]] && "$VENV/bin/python" -c 'import sys, importlib.metadata as m
sys.exit(any(m.version(n) != v for n, v in (p.split("==") for p in sys.argv[1:])))' $pins 2>/dev/null
}

remove_venv() {  # .venv, and its files elsewhere when it is a link that new_venv made
  if [[ -L $VENV && $(readlink "$VENV") == */xlaprof-venv-* ]]; then rm -rf "$(readlink "$VENV")"; fi
  rm -rf "$VENV"
}

new_venv() {  # $1: where its files go; $2, when that is not here: why
  command -v "$PYTHON" >/dev/null || { log "need $PYTHON on PATH (or set PYTHON=...)"; exit 2; }
  log "creating $VENV${2:+ as a link to $1 ($2)}"
  "$PYTHON" -m venv "$1"
  if [[ $1 != "$VENV" ]]; then ln -s "$1" "$VENV"; fi
}

fits() {  # whether the venv fits in folder $1 and pip's downloads in folder $2
  [[ -d $1 && -d $2 ]] || return 1
  if [[ $(mount_of "$1") == "$(mount_of "$2")" ]]; then
    (( $(room_gb "$1") >= VENV_GB + DOWNLOADS_GB ))
  else
    (( $(room_gb "$1") >= VENV_GB && $(room_gb "$2") >= DOWNLOADS_GB ))
  fi
}

# torch and torch_xla to install: .venv must be where they fit, with pip's downloads (a full disk fails
# pip midway with a long trace: say it up front, in one line). A .venv without them is cheap to move.
place_venv_for_torch() {
  local tmp=${TMPDIR:-/tmp} home rooms=""
  if [[ -d $VENV ]]; then
    for DOWNLOADS in "$tmp" "$VENV/"; do if fits "$VENV/" "$DOWNLOADS"; then return; fi; done
  fi
  for home in . "$tmp" "$SHM"; do
    for DOWNLOADS in "$tmp" "$home"; do
      fits "$home" "$DOWNLOADS" || continue
      remove_venv
      if [[ $home == . ]]; then
        new_venv "$VENV"
      else
        new_venv "$(cd "$home" && pwd -P)/xlaprof-venv-$(pwd -P | sha256sum | cut -c1-12)" \
          "$(pwd) has too little room; set up again if that folder is cleared, as memory is at a reboot"
      fi
      if [[ $DOWNLOADS == "$home" && $home != "$tmp" ]]; then DOWNLOADS="$VENV/"; fi
      return
    done
    rooms+="${rooms:+, }$(cd "$home" 2>/dev/null && pwd || echo "$home") $(room_gb "$home") GB"
  done
  log "the install needs about $VENV_GB GB free for the venv and $DOWNLOADS_GB for pip's downloads; $rooms: free some space and run again"
  exit 2
}

setup_venv() {  # $1: the extras to install, demo or all (all includes demo)
  local extras=$1 pip_tmp
  setup_compiler
  if [[ -L $VENV && ! -e $VENV ]]; then rm "$VENV"; fi  # its files were cleared (memory, at a reboot)
  if [[ -x "$VENV/bin/python" ]] && ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    log "$VENV is not Python 3.11: recreating it"
    remove_venv
  fi
  if [[ -x "$VENV/bin/python" ]] && { stamp_current all || stamp_current "$extras"; }; then
    log "$VENV is up to date"
    return
  fi
  has_pinned_torch || place_venv_for_torch
  [[ -x "$VENV/bin/python" ]] || new_venv "$VENV"
  log "installing xlaprof[$extras] into $VENV (first time: torch + torch_xla, a few GB, a few minutes)"
  pip_tmp=${TMPDIR:-/tmp}
  if [[ $DOWNLOADS == "$VENV/" ]]; then pip_tmp=$(mkdir -p "$VENV/.pip-tmp" && cd "$VENV/.pip-tmp" && pwd -P); fi
  TMPDIR=$pip_tmp "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip 1>&2
  TMPDIR=$pip_tmp "$VENV/bin/python" -m pip install --disable-pip-version-check -e ".[$extras]" 1>&2
  if [[ $DOWNLOADS == "$VENV/" ]]; then rm -rf "$pip_tmp"; fi
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
