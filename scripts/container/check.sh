#!/usr/bin/env bash
# `make container-check`: the images built and run by the container engine on this machine.
#
#   1. builds both images (Dockerfile targets `server` and the default) and prints their
#      sizes and build times;
#   2. starts the compose suite (Compose v2 `docker compose`, or v1 `docker-compose`) with one
#      tool worker, under its own project name, and waits until every service is healthy;
#   3. runs a demo generation through the gateway: it must end with close 1000, every variant
#      complete, and `screenshot_preview` succeeding inside a tools container;
#   4. adds a second tool worker to the running suite and runs generations until that worker
#      has executed tool calls (the agent resolves the workers again when a connection
#      reaches S2C_TOOLS_MAX_CONNECTION_AGE_S);
#   5. sends the agent SIGTERM during a generation: the generation must still finish
#      (close 1000, every variant complete), and the agent must come back healthy.
# Then it takes the suite down (KEEP=1 leaves it running). Exit 0 only when all hold.
#
# Needs: a running engine (dockerd) and its CLI, and Compose. Settings (environment):
#   DOCKER         the CLI (default: docker)
#   PYTHON_IMAGE   the base image (default python:3.11-slim-bookworm). When it cannot be
#                  pulled, local/python:3.11-bookworm is used, made first by
#                  scripts/container/base-image.sh (root + debootstrap) if missing.
#   BUILD_NETWORK  the network of the build's RUN steps (default host)
#   PROJECT        the compose project name (default s2c-check)
set -euo pipefail
cd "$(dirname "$0")/../.."

DOCKER=${DOCKER:-docker}
PROJECT=${PROJECT:-s2c-check}
BUILD_NETWORK=${BUILD_NETWORK:-host}
PYTHON_IMAGE=${PYTHON_IMAGE:-python:3.11-slim-bookworm}
LOCAL_BASE=local/python:3.11-bookworm
FULL_IMAGE=s2c-grpc:local # the names docker-compose.yml gives them
SERVER_IMAGE=s2c-grpc-server:local
SCALE_WAIT_S=${SCALE_WAIT_S:-180} # at most: three connection ages, then some

step() { printf '\n== %s\n' "$*"; }
fail() { printf '\ncontainer-check FAILED: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1000000 }'; }

# --- the engine, Compose and the base image -------------------------------------------------
command -v "$DOCKER" >/dev/null || fail "no '$DOCKER' CLI: install an engine (Debian: apt-get install docker.io) or set DOCKER"
"$DOCKER" info >/dev/null 2>&1 || fail "'$DOCKER info' fails: is the engine (dockerd) running, and may this user use it?"
if "$DOCKER" compose version >/dev/null 2>&1; then
  COMPOSE=("$DOCKER" compose)
elif command -v docker-compose >/dev/null; then
  COMPOSE=(docker-compose)
else
  fail "no Compose: install the compose plugin (v2) or docker-compose (v1, Debian's package)"
fi
COMPOSE+=(-p "$PROJECT" -f docker-compose.yml)
echo "engine: $("$DOCKER" version --format '{{.Server.Version}}'); compose: $("${COMPOSE[@]}" version --short 2>/dev/null || echo '?')"

if ! "$DOCKER" image inspect "$PYTHON_IMAGE" >/dev/null 2>&1 \
  && ! timeout 60 "$DOCKER" pull -q "$PYTHON_IMAGE" >/dev/null 2>&1; then
  echo "base image $PYTHON_IMAGE cannot be pulled: using $LOCAL_BASE"
  PYTHON_IMAGE=$LOCAL_BASE
  if ! "$DOCKER" image inspect "$PYTHON_IMAGE" >/dev/null 2>&1; then
    DOCKER=$DOCKER scripts/container/base-image.sh "$PYTHON_IMAGE" \
      || fail "no base image: make one with scripts/container/base-image.sh (root, debootstrap)"
  fi
fi

# BuildKit when the CLI has it (Engine 20.10's built-in one, or buildx); else the legacy
# builder, which this Dockerfile is written for as well.
if "$DOCKER" buildx version >/dev/null 2>&1 \
  || [ "$("$DOCKER" version --format '{{.Client.Version}}' | cut -d. -f1)" -lt 23 ]; then
  export DOCKER_BUILDKIT=1
else
  export DOCKER_BUILDKIT=0
fi

# --- 1. build ----------------------------------------------------------------------------------
build() { # target tag
  local started target=()
  started=$(now)
  [ -n "$1" ] && target=(--target "$1")
  "$DOCKER" build --network "$BUILD_NETWORK" --build-arg "PYTHON_IMAGE=$PYTHON_IMAGE" \
    "${target[@]}" -t "$2" . >"$LOGS/build-${1:-full}.log" 2>&1 \
    || { tail -30 "$LOGS/build-${1:-full}.log" >&2; fail "building $2"; }
  echo "built $2 in $(since "$started") s ($(mib "$("$DOCKER" image inspect --format '{{.Size}}' "$2")"))"
}
LOGS=$(mktemp -d)
echo "logs: $LOGS"
step "1. build (DOCKER_BUILDKIT=$DOCKER_BUILDKIT, base $PYTHON_IMAGE)"
build "" "$FULL_IMAGE"
build server "$SERVER_IMAGE"

# --- 2. the suite ------------------------------------------------------------------------------
GATEWAY_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export S2C_GATEWAY_PORT=$GATEWAY_PORT
# Nothing from the caller's shell: the demo model runs, at its default pace.
for key in OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY REPLICATE_API_TOKEN S2C_MODELS \
  S2C_LOCAL_MODELS S2C_DATABASE_URL S2C_DEMO_PACE_MS S2C_TOOLS_MAX_CONNECTION_AGE_S; do
  unset "$key"
done
down() {
  "${COMPOSE[@]}" logs --no-color >"$LOGS/suite.log" 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then
    echo "KEEP=1: the suite stays up (${COMPOSE[*]} down -v)"
  else
    "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  fi
}
trap down EXIT

container() { "${COMPOSE[@]}" ps -q "$1" | head -n 1; }
health() { "$DOCKER" inspect --format '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$1"; }
wait_healthy() { # service [container id]
  local id deadline=$((SECONDS + 180))
  while :; do
    id=${2:-$(container "$1")}
    [ -n "$id" ] && [ "$(health "$id")" = healthy ] && return 0
    [ $SECONDS -lt $deadline ] || fail "$1 not healthy after 180 s (logs: $LOGS/suite.log)"
    sleep 2
  done
}
step "2. the suite: one tool worker, the agent, the gateway (project $PROJECT)"
started=$(now)
"${COMPOSE[@]}" up -d --no-build --scale tools=1 >"$LOGS/up.log" 2>&1 \
  || { cat "$LOGS/up.log" >&2; fail "compose up"; }
for service in tools agent gateway; do wait_healthy "$service"; done
echo "all healthy after $(since "$started") s"

GATEWAY=$(container gateway)
demo() { # output file [image]; a generation from inside the gateway's container
  "$DOCKER" exec -i "$GATEWAY" python - ws://127.0.0.1:7001/generate-code "${@:2}" \
    <scripts/container/demo_client.py >"$1" 2>&1
}
# Prints a verdict on a demo_client summary; fails unless close 1000, no error, every
# variant complete (and, with `screenshot`, every screenshot_preview ok and at least one;
# with `fidelity`, every variant scored against the screenshot, none unavailable).
judge() { # summary-file [screenshot] [fidelity]
  python3 - "$@" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
if not lines:
    sys.exit("no summary: " + open(sys.argv[1]).read()[-2000:])
s = json.loads(lines[-1])
variants = s["variants"]
ends = {i: (v["end"] or ["none"])[0] for i, v in variants.items()}
shots = [ok for v in variants.values() for name, ok in v["tools"] if name == "screenshot_preview"]
print(f"close {s['close']}, {len(variants)} variants, endings {sorted(ends.values())}, "
      f"screenshot_preview results {shots}")
for i, v in sorted(variants.items()):
    status = (v["status"] or [""])[-1]
    status = status if len(status) <= 60 else status[:59] + "…"
    print(f"  variant {i}: tools {' '.join(f'{n}:{ok}' for n, ok in v['tools'])}; status {status!r}")
problems = []
if s["close"] != 1000:
    problems.append(f"close {s['close']}")
if s["errors"]:
    problems.append(f"error frames {s['errors']}")
if not variants or set(ends.values()) != {"variantComplete"}:
    problems.append(f"variants did not all complete: {ends}")
if "screenshot" in sys.argv[2:] and (not shots or not all(shots)):
    problems.append("screenshot_preview did not succeed in the tools container")
if "fidelity" in sys.argv[2:]:
    for i, v in sorted(variants.items()):
        scores = v.get("fidelity", [])
        shown = [{k: (round(x, 2) if isinstance(x, float) else x) for k, x in f.items()
                  if k in ("blockMatch", "text", "position", "color", "visual",
                           "unavailableReason") and x not in ("", None)} for f in scores]
        print(f"  variant {i} fidelity: {shown}")
        if not scores or any(f.get("unavailableReason") for f in scores):
            problems.append(f"variant {i} was not scored against the screenshot: {scores}")
if problems:
    sys.exit("; ".join(problems))
PY
}
tool_calls() { # container: tool executions it has counted (its /metrics)
  "$DOCKER" exec "$1" python -c '
import re, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:9102/metrics", timeout=5).read().decode()
print(int(sum(float(v) for v in re.findall(r"^s2c_tool_execution_seconds_count\{[^}]*\} (\S+)", text, re.M))))'
}

# --- 3. a demo generation, screenshots included ----------------------------------------------
step "3. a demo generation through the gateway"
TOOLS1=$(container tools)
"$DOCKER" exec "$TOOLS1" s2c-healthcheck --service s2c.tools.v1.Browser \
  || fail "the tools container's browser does not launch (health s2c.tools.v1.Browser)"
echo "tools health s2c.tools.v1.Browser: SERVING"
demo "$LOGS/demo.out" || true
judge "$LOGS/demo.out" screenshot || fail "the demo generation (output: $LOGS/demo.out)"

# --- 3b. an image create: each option scored against the screenshot (Tesseract, browser) ---
step "3b. an image create, each option scored for fidelity in the tools container"
demo "$LOGS/image.out" image || true
judge "$LOGS/image.out" screenshot fidelity \
  || fail "the image create was not scored (output: $LOGS/image.out)"

# --- 4. a worker added to the running suite gets calls -----------------------------------------
step "4. a second tool worker, started after the agent"
"${COMPOSE[@]}" up -d --no-build --no-recreate --scale tools=2 tools >>"$LOGS/up.log" 2>&1 \
  || { cat "$LOGS/up.log" >&2; fail "scaling tools to 2"; }
for id in $("${COMPOSE[@]}" ps -q tools); do [ "$id" = "$TOOLS1" ] || TOOLS2=$id; done
[ -n "${TOOLS2:-}" ] || fail "no second tools container"
wait_healthy tools "$TOOLS2"
started=$(now)
generations=0
while [ "$(tool_calls "$TOOLS2")" -eq 0 ]; do
  [ "$(awk -v s="$(since "$started")" -v m="$SCALE_WAIT_S" 'BEGIN { print (s > m) }')" = 0 ] \
    || fail "the new worker got no tool call in ${SCALE_WAIT_S} s ($generations generations)"
  demo "$LOGS/scale.out" || true
  judge "$LOGS/scale.out" >/dev/null || fail "a generation while scaling (output: $LOGS/scale.out)"
  generations=$((generations + 1))
done
echo "the new worker ran its first tool calls $(since "$started") s after it was healthy" \
  "($generations generations); calls so far: old $(tool_calls "$TOOLS1"), new $(tool_calls "$TOOLS2")"

# --- 5. SIGTERM drains the agent ---------------------------------------------------------------
step "5. the agent stopped (SIGTERM) during a generation"
AGENT=$(container agent)
demo "$LOGS/drain.out" &
client=$!
deadline=$((SECONDS + 120))
until grep -q first-code "$LOGS/drain.out" 2>/dev/null; do
  kill -0 "$client" 2>/dev/null || fail "the generation ended before its first code (output: $LOGS/drain.out)"
  [ $SECONDS -lt $deadline ] || fail "no code from the generation in 120 s"
  sleep 0.2
done
# `docker stop` sends SIGTERM (through tini) and waits as compose's stop_grace_period does;
# a SIGKILL at its end would show as exit code 137.
started=$(now)
"$DOCKER" stop --time 40 "$AGENT" >/dev/null &
stopper=$!
echo "SIGTERM sent at the first code"
wait "$client" || true
judge "$LOGS/drain.out" || fail "the generation did not finish through the agent's shutdown"
wait "$stopper"
code=$("$DOCKER" inspect --format '{{.State.ExitCode}}' "$AGENT")
[ "$code" = 0 ] || fail "the agent exited with $code, not 0, after SIGTERM"
"$DOCKER" logs "$AGENT" >"$LOGS/agent.log" 2>&1
grep -q "shutting down" "$LOGS/agent.log" || fail "the agent logged no shutdown"
echo "the agent drained the generation and exited 0, $(since "$started") s after SIGTERM"
"${COMPOSE[@]}" start agent >>"$LOGS/up.log" 2>&1 || fail "starting the agent again"
wait_healthy agent
demo "$LOGS/after.out" || true
judge "$LOGS/after.out" >/dev/null || fail "a generation after the agent's restart (output: $LOGS/after.out)"
echo "started again: healthy, and the gateway's next generation completes"

step "container-check passed"
