#!/usr/bin/env bash
# Builds the host-cluster tools of the operator's tests from the Go modules beside this script
# (versions pinned by their go.mod and go.sum) into a cache outside the repository, keyed by
# version, and prints the directory that holds them. Nothing is rebuilt when the cache has it.
#
#   test/tools/build.sh            -> builds when missing, prints the three cache directories
#   test/tools/build.sh --print    -> prints them only (what the tests use to find the binaries)
#
# The third holds protoref (kube/cmd/protoref), the JSON <-> Kubernetes protobuf reference of the
# codec tests, built from the kube module on its own key so adding it rebuilds nothing else.
#
# KCP_TS_TOOLS_CACHE overrides the cache (default ~/.cache/kcp-ts/tools). The tests find the
# binaries there, or take existing ones from KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, HELM,
# KSTATUS, ETCD and PROTOREF (paths to executables).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KCP_TS_TOOLS_CACHE:-$HOME/.cache/kcp-ts/tools}"
export GOFLAGS=-mod=readonly GOSUMDB=off

version_of() { # module in go.mod -> its required version
  awk -v m="$2" '$1==m {print $2; exit} $1=="require" && $2==m {print $3; exit}' "$here/$1/go.mod"
}

build() { # module-dir key ldflags package... ; builds each package's command into $cache/$key
  local dir="$1" key="$2" ldflags="$3"; shift 3
  local out="$cache/$key"
  if [ -f "$out/.complete" ] || [ "$print_only" = 1 ]; then return; fi
  mkdir -p "$out"
  echo "building $key into $out (a few minutes, once)" >&2
  (cd "$here/$dir" && for pkg in "$@"; do CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $ldflags" -o "$out/" "$pkg"; done)
  touch "$out/.complete"
}

print_only=0
[ "${1:-}" = "--print" ] && print_only=1
# Bump when the way the tools are built changes (the cache key changes with it).
recipe=r3
kube_version="$(version_of kube k8s.io/kubernetes)"
kube="kube-$kube_version-$recipe"
protoref="protoref-$kube_version-$recipe"
helm="helm-$(version_of helm helm.sh/helm/v3)-kstatus-$(version_of helm sigs.k8s.io/cli-utils)-$recipe"
# The version kube-apiserver reports (/version): what helm's kubeVersion and clients check.
minor="${kube_version#v1.}"; minor="${minor%%.*}"
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags="$kube_ldflags -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
build kube "$kube" "$kube_ldflags" ./cmd/kube-apiserver ./cmd/kube-controller-manager
build helm "$helm" "" helm.sh/helm/v3/cmd/helm ./cmd/kstatus
build kube "$protoref" "" ./cmd/protoref
echo "$cache/$kube"
echo "$cache/$helm"
echo "$cache/$protoref"
