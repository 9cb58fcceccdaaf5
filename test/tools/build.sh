#!/usr/bin/env bash
# Builds the host-cluster tools of the operator's tests from the Go modules beside this script
# (versions pinned by their go.mod and go.sum) into a cache outside the repository, keyed by
# version, and prints the directory that holds them. Nothing is rebuilt when the cache has it.
#
#   test/tools/build.sh            -> builds when missing, prints e.g. ~/.cache/kcp-ts/tools/kube-v1.34.4
#
# KCP_TS_TOOLS_CACHE overrides the cache (default ~/.cache/kcp-ts/tools). The tests find the
# binaries there, or take existing ones from KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, HELM,
# KSTATUS and ETCD (paths to executables).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KCP_TS_TOOLS_CACHE:-$HOME/.cache/kcp-ts/tools}"
export GOFLAGS=-mod=readonly GOSUMDB=off

version_of() { # module in go.mod -> its required version
  awk -v m="$2" '$1==m {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$here/$1/go.mod"
}

build() { # module-dir key package... ; builds each package's command into $cache/$key
  local dir="$1" key="$2"; shift 2
  local out="$cache/$key"
  if [ -f "$out/.complete" ]; then return; fi
  mkdir -p "$out"
  echo "building $key into $out (a few minutes, once)" >&2
  (cd "$here/$dir" && for pkg in "$@"; do CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/" "$pkg"; done)
  touch "$out/.complete"
}

kube="kube-$(version_of kube k8s.io/kubernetes)"
helm="helm-$(version_of helm helm.sh/helm/v3)-kstatus-$(version_of helm sigs.k8s.io/cli-utils)"
build kube "$kube" ./cmd/kube-apiserver ./cmd/kube-controller-manager
build helm "$helm" helm.sh/helm/v3/cmd/helm ./cmd/kstatus
echo "$cache/$kube"
echo "$cache/$helm"
