#!/usr/bin/env bash
# Create the workshop's kind cluster and write its kubeconfig to .kind/kubeconfig.
# Needs Docker (running) and kind: https://kind.sigs.k8s.io/docs/user/quick-start/
set -euo pipefail
cd "$(dirname "$0")/.."
name=${KIND_CLUSTER_NAME:-minisched}
kubeconfig=${MINISCHED_KIND_KUBECONFIG:-$PWD/.kind/kubeconfig}

command -v kind >/dev/null 2>&1 || { echo "kind is not installed (see the link above)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "Docker is not running: kind needs it" >&2; exit 1; }

mkdir -p "$(dirname "$kubeconfig")"
if kind get clusters 2>/dev/null | grep -qx "$name"; then
    echo "kind cluster '$name' exists already"
    kind get kubeconfig --name "$name" >"$kubeconfig"
else
    kind create cluster --name "$name" --config hack/kind-config.yaml \
        --kubeconfig "$kubeconfig" --wait 120s
fi
echo
echo "Next:  nox -s step1 -- --kubeconfig $kubeconfig"
echo "Or the scheduler alone:  nox -s scheduler -- 1 --kubeconfig $kubeconfig"
