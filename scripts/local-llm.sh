#!/usr/bin/env bash
# The project's way to serve the local model (Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M) behind an
# OpenAI-compatible API on 127.0.0.1, for the real-model tests, the LLM benchmark and by hand.
#
#   scripts/local-llm.sh install   # the model (through the shared script) and a server that runs here
#   scripts/local-llm.sh start     # serve on 127.0.0.1:$LOCAL_LLM_PORT; wait until it answers
#   scripts/local-llm.sh stop      # stop what 'start' started
#   scripts/local-llm.sh status
#   scripts/local-llm.sh url       # the base URL (http://127.0.0.1:PORT/v1)
#
# Then: csro run ... --base-url "$(scripts/local-llm.sh url)" --model qwen2.5-coder-1.5b-instruct
#
# Why not just ../shared/llm/local-llm.sh: its prebuilt llama-server wheel dies with "Illegal
# instruction" while loading the model on CPUs without AVX-512 (seen on an AMD EPYC with
# AVX2/FMA/F16C: invalid opcode in libggml-cpu.so). `start` tries the shared script first and uses it
# if it serves; otherwise it serves the same GGUF (the shared script's `install` fetches and verifies
# it) with llama-cpp-python's server, compiled from its sdist for any AVX2 CPU (not -march=native, so a
# wheel cached in ~/.cache/pip is safe to reuse on another machine of the kind). The first build takes
# minutes (measured in bench/README.md, section 7); pip caches the wheel, later installs take
# seconds.
#
# Threads: 1 by default (the shared script uses 2). On a 2-core machine also busy with other work (tests,
# evaluations) llama.cpp's threads wait for each other by spinning, and 2 threads generated 0.6-0.8
# tokens/s where 1 thread generated 8-9 (measured back to back, load average ~9).
#
# Knobs: LOCAL_LLM_PORT (8080), LOCAL_LLM_THREADS (1), LOCAL_LLM_CTX (8192): as the shared script;
#        CSRO_LLM_BACKEND: auto (default: shared, else llama-cpp-python), shared or llama-cpp-python;
#        CSRO_LLM_DIR (~/.cache/csro-local-llm): the llama-cpp-python venv, PID file, log;
#        CSRO_LLM_SHARED (../shared/llm/local-llm.sh next to the repository);
#        CSRO_LLM_BUILD_TIMEOUT (seconds, 2400): give up compiling after this long.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${CSRO_LLM_SHARED:-$ROOT/../shared/llm/local-llm.sh}
DIR=${CSRO_LLM_DIR:-$HOME/.cache/csro-local-llm}
PORT=${LOCAL_LLM_PORT:-8080}
THREADS=${LOCAL_LLM_THREADS:-1}
CTX=${LOCAL_LLM_CTX:-8192}
BACKEND=${CSRO_LLM_BACKEND:-auto}
BUILD_TIMEOUT=${CSRO_LLM_BUILD_TIMEOUT:-2400}
GGUF=${LOCAL_LLM_DIR:-$HOME/.cache/local-llm}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
ALIAS=qwen2.5-coder-1.5b-instruct
VENV=$DIR/venv
LLAMA_CPP_PYTHON="llama-cpp-python[server]==0.3.36"
# A portable x86-64 build: AVX2/FMA/F16C, no -march=native; no multimodal library, no GPU backends.
BUILD_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DLLAVA_BUILD=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF"
PIDFILE=$DIR/server.$PORT.pid
USED=$DIR/server.$PORT.backend
LOG=$DIR/server.$PORT.log
export LOCAL_LLM_PORT=$PORT LOCAL_LLM_THREADS=$THREADS LOCAL_LLM_CTX=$CTX

say() { echo "local-llm: $*" >&2; }
url() { echo "http://127.0.0.1:$PORT/v1"; }
running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
answers() { curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; }

install_model() {
  [ -x "$SHARED" ] || { say "no shared script at $SHARED (set CSRO_LLM_SHARED)"; return 1; }
  "$SHARED" install
}

install_server() {
  mkdir -p "$DIR"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  if "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then return 0; fi
  say "installing $LLAMA_CPP_PYTHON (compiled from source the first time; pip caches the wheel)"
  local begun=$SECONDS
  CMAKE_ARGS="$BUILD_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    timeout "$BUILD_TIMEOUT" "$VENV/bin/pip" install -q --no-binary llama-cpp-python "$LLAMA_CPP_PYTHON" \
    >"$DIR/install.log" 2>&1 || { say "install failed or took over ${BUILD_TIMEOUT}s; see $DIR/install.log"; tail -5 "$DIR/install.log" >&2; return 1; }
  say "llama-cpp-python ready in $((SECONDS - begun)) s"
}

install() { install_model && { [ "$BACKEND" = shared ] || install_server; }; }

start_shared() {
  [ -x "$SHARED" ] || { say "no shared script at $SHARED"; return 1; }
  if "$SHARED" start >&2; then echo shared > "$USED"; return 0; fi
  "$SHARED" stop >/dev/null 2>&1 || true
  say "the shared llama-server did not start (see its log above)"
  return 1
}

start_llama_cpp_python() {
  [ -f "$GGUF" ] || install_model || return 1
  install_server || return 1
  nohup "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$ALIAS" \
    --host 127.0.0.1 --port "$PORT" --n_threads "$THREADS" --n_ctx "$CTX" \
    --interrupt_requests false >"$LOG" 2>&1 &
  echo $! > "$PIDFILE"
  echo llama-cpp-python > "$USED"
  for _ in $(seq 1 180); do
    if answers; then say "ready (llama-cpp-python): $(url) model=$ALIAS pid=$(cat "$PIDFILE") log=$LOG"; return 0; fi
    running || { say "server died; last lines of $LOG:"; tail -20 "$LOG" >&2; rm -f "$PIDFILE"; return 1; }
    sleep 1
  done
  say "no answer in 180 s; see $LOG"; stop >/dev/null; return 1
}

start() {
  mkdir -p "$DIR"
  if running || { [ "$(cat "$USED" 2>/dev/null)" = shared ] && answers; }; then
    say "already running: $(url) ($(cat "$USED"))"; return 0; fi
  case "$BACKEND" in
    shared) start_shared ;;
    llama-cpp-python) start_llama_cpp_python ;;
    auto) start_shared || { say "falling back to llama-cpp-python"; start_llama_cpp_python; } ;;
    *) say "CSRO_LLM_BACKEND must be auto, shared or llama-cpp-python, not '$BACKEND'"; return 2 ;;
  esac
}

stop() {
  if [ "$(cat "$USED" 2>/dev/null)" = shared ]; then "$SHARED" stop >/dev/null || true; fi
  if running; then
    local pid; pid=$(cat "$PIDFILE"); kill "$pid"
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$PIDFILE" "$USED"; echo "stopped"
}

status() {
  if running || { [ "$(cat "$USED" 2>/dev/null)" = shared ] && answers; }; then
    echo "running: $(url) ($(cat "$USED"))"; else echo "not running"; fi
}

usage() { echo "usage: $0 install|start|stop|status|url"; }

# "${1:-}": under set -u a bare $1 with no argument is an "unbound variable" error, not a usage.
case "${1:-}" in
  install|start|stop|status|url) "$1" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
