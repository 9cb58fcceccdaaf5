#!/usr/bin/env bash
# Builds the test tools from the Go modules beside this script (versions pinned by their go.mod
# and go.sum) into a cache outside the repository, keyed by version, and prints the directories
# that hold them. Nothing is rebuilt when the cache has it.
#   kube/  kube-apiserver, kube-controller-manager (the operator tests' host cluster)
#   helm/  helm, kstatus
#   e2e/   Kubernetes' e2e.test (test/e2e, for `npm run conformance:upstream`), and typedclients
#          (client-go's typed clients against a workspace, test/e2e/typedclients.test.ts) with
#          h2informer (50 informers of one client-go clientset, test/e2e/http2.test.ts) in a
#          directory of their own keyed by the hash of their sources
#   kcp/   kcp's own server (cmd/kcp, the release the side-by-side benchmark compares with:
#          `npm run bench -- kcp-compare`); only with `--kcp` or `--print`, as it takes about
#          30 minutes on 2 cores
#
#   test/tools/build.sh            -> builds when missing, prints the five cache directories
#   test/tools/build.sh --print    -> prints them only (what the tests use to find the binaries),
#                                     and kcp's directory as a sixth line
#   test/tools/build.sh --kcp      -> builds kcp only, prints its directory
#
# The third holds protoref (kube/cmd/protoref), the JSON <-> Kubernetes protobuf reference of the
# codec tests, built from the kube module on its own key so adding it rebuilds nothing else. The
# fourth holds e2e.test, the fifth typedclients (each directory's name starts with its key).
#
# KCP_TS_TOOLS_CACHE overrides the cache (default ~/.cache/kcp-ts/tools). The tests find the
# binaries there, or take existing ones from KUBE_APISERVER, KUBE_CONTROLLER_MANAGER, HELM,
# KSTATUS, ETCD, PROTOREF, E2E_TEST and TYPEDCLIENTS (paths to executables). Extra go flags (e.g.
# `-p=1` to build on one core) go in GOFLAGS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${KCP_TS_TOOLS_CACHE:-$HOME/.cache/kcp-ts/tools}"
export GOFLAGS="-mod=readonly ${GOFLAGS:-}" GOSUMDB=off

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

build_e2e() { # key ldflags ; Kubernetes' e2e.test (a test binary: go test -c)
  local key="$1" ldflags="$2" out="$cache/$1"
  if [ -f "$out/.complete" ] || [ "$print_only" = 1 ]; then return; fi
  mkdir -p "$out"
  echo "building $key into $out (e2e.test: the longest of the tools, once)" >&2
  (cd "$here/e2e" && CGO_ENABLED=0 go test -c -vet=off -trimpath -ldflags="-s -w $ldflags" -o "$out/e2e.test" k8s.io/kubernetes/test/e2e)
  touch "$out/.complete"
}

source_hash() { # module-dir path... ; a short hash of the sources of a command of this repository
  (cd "$here/$1" && shift && find "$@" -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
}

print_only=0
[ "${1:-}" = "--print" ] && print_only=1

# kcp: its go.mod replaces its staging modules by directories of kcp's repository, which the
# module download of github.com/kcp-dev/kcp does not hold (nested modules are cut out). kcp/go.mod
# takes them at the versions kcp publishes them as for the release (the same sources), except
# virtual-workspace-framework, which the module proxy does not serve: it is taken from the
# release tag of kcp's git repository (KCP_GIT, default GitHub) and checked against the git tree
# hash below, then built next to a copy of kcp/go.mod and go.sum (-mod=readonly: every other
# module is checked against go.sum). ldflags as kcp's Makefile sets them for a release.
kcp_recipe=r1
kcp_version="$(version_of kcp github.com/kcp-dev/kcp)"
kcp="kcp-$kcp_version-$kcp_recipe"
# git rev-parse v0.32.3^{}:staging/src/github.com/kcp-dev/virtual-workspace-framework
kcp_vwf_tree=5a1c63ef2963e336d8878a8c9f5bb66a8cb353b2
kcp_commit=08be0a1c8de2 # the tag's commit, as kcp's Makefile shows it (git rev-parse --short)
build_kcp() {
  local out="$cache/$kcp"
  if [ -f "$out/.complete" ] || [ "$print_only" = 1 ]; then return; fi
  local src="$out/src" git_dir
  rm -rf "$src"; mkdir -p "$src"
  echo "building $kcp into $out (about 30 minutes on 2 cores, once)" >&2
  git_dir="$(mktemp -d)"
  git init -q --bare "$git_dir"
  git -C "$git_dir" fetch -q --depth 1 "${KCP_GIT:-https://github.com/kcp-dev/kcp.git}" "refs/tags/$kcp_version:refs/tags/$kcp_version"
  local vwf="$kcp_version^{commit}:staging/src/github.com/kcp-dev/virtual-workspace-framework"
  if [ "$(git -C "$git_dir" rev-parse "$vwf")" != "$kcp_vwf_tree" ]; then
    echo "kcp $kcp_version: virtual-workspace-framework is not the tree $kcp_vwf_tree" >&2; rm -rf "$git_dir"; exit 1
  fi
  git -C "$git_dir" archive "$kcp_version^{commit}" staging/src/github.com/kcp-dev/virtual-workspace-framework | tar -x --strip-components=4 -C "$src"
  rm -rf "$git_dir"
  cp "$here/kcp/go.mod" "$here/kcp/go.sum" "$src/"
  # The Kubernetes version kcp reports (/version): kcp's k8s.io/kubernetes requirement.
  local kube_version minor ldflags=""
  kube_version="$(version_of kcp k8s.io/kubernetes)"
  minor="${kube_version#v1.}"; minor="${minor%%.*}"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags="$ldflags -X $pkg.gitCommit=$kcp_commit -X $pkg.gitTreeState=clean -X $pkg.gitVersion=$kube_version+kcp-$kcp_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  done
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/kcp" github.com/kcp-dev/kcp/cmd/kcp)
  touch "$out/.complete"
}
if [ "${1:-}" = "--kcp" ]; then build_kcp; echo "$cache/$kcp"; exit 0; fi
# Bump when the way the tools are built changes (the cache key changes with it).
recipe=r3
kube_version="$(version_of kube k8s.io/kubernetes)"
kube="kube-$kube_version-$recipe"
# protoref is this repository's own code too: its key follows its sources.
protoref="protoref-$kube_version-$(source_hash kube cmd/protoref)"
# helm's recipe: r4 links it as helm's own release build does (its Makefile), see helm_ldflags.
helm_recipe=r4
helm_version="$(version_of helm helm.sh/helm/v3)"
helm="helm-$helm_version-kstatus-$(version_of helm sigs.k8s.io/cli-utils)-$helm_recipe"
# Its own recipe number: changing how e2e.test is built must not rebuild kube-apiserver.
e2e_recipe=r1
e2e="e2e-$(version_of e2e k8s.io/kubernetes)-$e2e_recipe"
# typedclients is this repository's own code: keyed by the hash of its sources and modules.
typedclients="typedclients-$(source_hash e2e go.mod go.sum cmd/typedclients cmd/h2informer)"
# The version kube-apiserver reports (/version): what helm's kubeVersion and clients check.
minor="${kube_version#v1.}"; minor="${minor%%.*}"
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags="$kube_ldflags -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
build kube "$kube" "$kube_ldflags" ./cmd/kube-apiserver ./cmd/kube-controller-manager
# helm's Makefile sets its version and the Kubernetes version `helm template` and `helm lint`
# assume without a cluster (.Capabilities.KubeVersion: that of the client-go it was built with);
# a plain `go build` leaves helm's fallback, v1.20.0, which a chart's kubeVersion then refuses.
client_go_minor="$(version_of helm k8s.io/client-go)"; client_go_minor="${client_go_minor#v0.}"; client_go_minor="${client_go_minor%%.*}"
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=$helm_version"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  helm_ldflags="$helm_ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go_minor"
done
build helm "$helm" "$helm_ldflags" helm.sh/helm/v3/cmd/helm ./cmd/kstatus
build kube "$protoref" "" ./cmd/protoref
# e2e.test reports the same version as the kube-apiserver it comes with.
build_e2e "$e2e" "$kube_ldflags"
build e2e "$typedclients" "" ./cmd/typedclients ./cmd/h2informer
echo "$cache/$kube"
echo "$cache/$helm"
echo "$cache/$protoref"
echo "$cache/$e2e"
echo "$cache/$typedclients"
if [ "$print_only" = 1 ]; then echo "$cache/$kcp"; fi
