#!/usr/bin/env bash
# Delete the workshop's kind cluster and its kubeconfig.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${KIND_CLUSTER_NAME:-minisched}
kubeconfig=${MINISCHED_KIND_KUBECONFIG:-$PWD/.kind/kubeconfig}
kind delete cluster --name "$name"
rm -f "$kubeconfig"
echo "kind cluster '$name' deleted"
