#!/usr/bin/env bash
# The Helm chart checked offline: `helm lint` and `helm template` of deploy/helm/chatetl with its
# default values (an evaluation) and with values-production.yaml, each manifest validated by
# `kubeconform -strict` against the vendored schemas of the Kubernetes version below.
#
#   deploy/helm/check.sh [OUT_DIR]      (OUT_DIR: where the rendered manifests are kept)
#
# helm and kubeconform are built from the Go module proxy at pinned versions into
# .cache/helm-check/ (git-ignored) on the first run; later runs reuse them. Nothing is
# downloaded at check time: no chart repository, no schema.
set -euo pipefail
cd "$(dirname "$0")/../.."

HELM_VERSION=v3.21.4
KUBECONFORM_VERSION=v0.8.0
KUBERNETES_VERSION=1.34.4
CHART=deploy/helm/chatetl
SCHEMAS="deploy/helm/schemas/v${KUBERNETES_VERSION}-standalone-strict"
TOOLS=.cache/helm-check
OUT=${1:-$TOOLS/rendered}

GO_MINIMUM=1.26  # what helm and kubeconform at these versions need

tool() {  # tool NAME MODULE/CMD VERSION: the binary, built once per version
    local bin="$TOOLS/$1-$3"
    if [ ! -x "$bin" ]; then
        if ! command -v go >/dev/null 2>&1; then
            echo "check.sh: Go $GO_MINIMUM or newer is needed to build $1, and go is not installed" >&2
            exit 3
        fi
        local have
        have=$(go env GOVERSION | sed 's/^go//')
        if [ "$(printf '%s\n%s\n' "$GO_MINIMUM" "$have" | sort -V | head -n1)" != "$GO_MINIMUM" ]; then
            echo "check.sh: Go $GO_MINIMUM or newer is needed to build $1, this is go$have" >&2
            exit 3
        fi
        echo "building $1 $3 (once)" >&2
        mkdir -p "$TOOLS/gobin-$1"
        GOBIN="$PWD/$TOOLS/gobin-$1" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "$2@$3"
        mv "$TOOLS/gobin-$1/$1" "$bin" && rmdir "$TOOLS/gobin-$1"
    fi
    echo "$bin"
}

helm=$(tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION")
kubeconform=$(tool kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION")
mkdir -p "$OUT"

for values in default production; do
    args=(--kube-version "$KUBERNETES_VERSION")
    [ "$values" = production ] && args+=(-f "$CHART/values-production.yaml")
    echo "== $values values"
    "$helm" lint --strict "${args[@]}" "$CHART"
    "$helm" template chatetl "$CHART" --namespace chatetl "${args[@]}" > "$OUT/$values.yaml"
    "$kubeconform" -strict -summary -kubernetes-version "$KUBERNETES_VERSION" \
        -schema-location "$SCHEMAS/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$OUT/$values.yaml"
done
