#!/usr/bin/env bash
# Streams one text-prompt generation from the s2c agent service with grpcurl.
#
#   generate.sh [-a ADDR] [-s STACK] [-n VARIANTS] PROMPT
#
# ADDR defaults to $S2C_AGENT_ADDR, then 127.0.0.1:50051. grpcurl discovers the API
# through the agent's server reflection, so no .proto files are needed. Each stream
# message (`{"events": [...]}`: the events committed since the previous one) is printed
# as grpcurl's JSON as it arrives. Set GRPCURL to use a grpcurl binary that
# is not on PATH (e.g. GRPCURL=.venv/bin/grpcurl).
#
# A locked-down suite: S2C_GRPC_TOKEN is sent as `authorization: Bearer …` (reflection
# needs it too), and S2C_GRPC_TLS_CA (a PEM CA bundle) switches from plaintext to TLS.
#
# Exit status: 0 when the generation completed, 1 when it did not (failed, cancelled),
# 2 on bad usage or when the call failed (agent unreachable, request rejected).
set -euo pipefail

usage() {
  echo "usage: $0 [-a ADDR] [-s STACK] [-n VARIANTS] PROMPT" >&2
  exit 2
}

addr="${S2C_AGENT_ADDR:-127.0.0.1:50051}"
stack="html_tailwind"
variants=0
while getopts ":a:s:n:h" opt; do
  case "$opt" in
    a) addr="$OPTARG" ;;
    s) stack="$OPTARG" ;;
    n) variants="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -eq 1 && -n "${1//[[:space:]]/}" ]] || usage
prompt="$1"

case "$stack" in
  html_tailwind | html_css | react_tailwind | bootstrap | vue_tailwind | ionic_tailwind) ;;
  *)
    echo "$0: unknown stack '$stack'" >&2
    usage
    ;;
esac
[[ "$variants" =~ ^[0-9]+$ ]] || {
  echo "$0: VARIANTS must be a whole number" >&2
  usage
}

grpcurl="${GRPCURL:-grpcurl}"
command -v "$grpcurl" >/dev/null || {
  echo "$0: grpcurl not found (install it, or set GRPCURL)" >&2
  exit 2
}

# A JSON string literal for arbitrary text (no jq needed).
json_string() {
  local s="$1"
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  s="${s//$'\n'/\\n}"
  s="${s//$'\r'/\\r}"
  s="${s//$'\t'/\\t}"
  s="${s//$'\f'/\\f}"
  s="${s//$'\b'/\\b}"
  printf '"%s"' "$s"
}

request=$(
  cat <<EOF
{
  "generation_type": "GENERATION_TYPE_CREATE",
  "input_mode": "INPUT_MODE_TEXT",
  "stack": "STACK_${stack^^}",
  "variant_count": ${variants},
  "prompt": {"text": $(json_string "$prompt")}
}
EOF
)

transport=(-plaintext)
if [[ -n "${S2C_GRPC_TLS_CA:-}" ]]; then
  transport=(-cacert "$S2C_GRPC_TLS_CA")
  if [[ -n "${S2C_GRPC_TLS_SERVER_NAME:-}" ]]; then
    transport+=(-servername "$S2C_GRPC_TLS_SERVER_NAME")
  fi
fi
auth=()
if [[ -n "${S2C_GRPC_TOKEN:-}" ]]; then
  # grpcurl expands the variable itself, so the token never shows in the process list.
  # shellcheck disable=SC2016
  auth=(-expand-headers -H 'authorization: Bearer ${S2C_GRPC_TOKEN}')
fi

events=$(mktemp)
trap 'rm -f "$events"' EXIT

# Messages print live; a copy is kept to check how the generation ended.
set +e
printf '%s\n' "$request" |
  "$grpcurl" "${transport[@]}" ${auth[@]+"${auth[@]}"} -max-msg-sz 67108864 -d @ "$addr" \
    s2c.agent.v1.AgentService/GenerateCode |
  tee "$events"
statuses=("${PIPESTATUS[@]}")
set -e
if [[ "${statuses[1]}" -ne 0 ]]; then
  # grpcurl has printed the reason (unreachable agent, rejected request, …).
  echo "$0: grpcurl failed (exit status ${statuses[1]}) talking to $addr" >&2
  exit 2
fi
if [[ "${statuses[2]}" -ne 0 ]]; then
  exit "${statuses[2]}"
fi

# The last message ends with generation_complete, whose status says how the generation
# ended (no other event has a RunStatus).
last_event=$(awk '/^\{/ { event = "" } { event = event $0 "\n" } END { printf "%s", event }' "$events")
if grep -q '"generationComplete"' <<<"$last_event" &&
  grep -q '"status": "RUN_STATUS_COMPLETED"' <<<"$last_event"; then
  exit 0
fi
echo "$0: the generation did not complete" >&2
exit 1
