#!/usr/bin/env bash
# Validates the deploy files offline (no network, no Docker, no cluster):
#   - docker-compose.yml against the Compose Specification schema vendored in check-jsonschema;
#   - the Kubernetes manifests under deploy/ against the OpenAPI schemas bundled in
#     kubernetes-validate, in strict mode (an unknown field is an error), for the oldest
#     Kubernetes version the manifests support and the newest one the validator knows.
# Exits non-zero on any problem, including a resource whose kind has no schema.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's venv first (`make install` puts both validators there), then PATH.
PATH="$PWD/.venv/bin:$PATH"

MIN_K8S=1.31.0 # PodDisruptionBudget.spec.unhealthyPodEvictionPolicy is GA from 1.31
MAX_K8S=1.37.0

status=0

echo "compose: check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml"
check-jsonschema --builtin-schema vendor.compose-spec docker-compose.yml || status=1

# Every manifest but kustomization.yaml (kustomize's own config, not an API object).
mapfile -t manifests < <(find deploy -type f \( -name '*.yaml' -o -name '*.yml' \) \
  ! -name kustomization.yaml | LC_ALL=C sort)
if [ "${#manifests[@]}" -eq 0 ]; then
  echo "kubernetes: no manifests found under deploy/" >&2
  exit 1
fi
for version in "$MIN_K8S" "$MAX_K8S"; do
  echo "kubernetes $version: kubernetes-validate --strict ${manifests[*]}"
  # --quiet prints only warnings and failures; a warning (e.g. no schema for a kind) fails too.
  if ! out=$(kubernetes-validate --kubernetes-version "$version" --strict --quiet \
    "${manifests[@]}" 2>&1); then
    status=1
  fi
  if [ -n "$out" ]; then
    echo "$out" >&2
    status=1
  fi
done

if [ "$status" -eq 0 ]; then
  echo "deploy files are valid"
else
  echo "deploy validation failed" >&2
fi
exit "$status"
