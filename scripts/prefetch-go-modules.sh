#!/usr/bin/env bash
# Downloads the Go modules of the pinned builds (scripts/setup.sh runs it in the background while apt and pnpm run),
# in the order `baton testenv build --flux --argocd` builds them. The Go module cache's
# locks make a build that needs a module being downloaded here wait for it. A failure is left for the build to report
# with its own context (which module, the proxy, the rerun command).
set -uo pipefail
cd "$(dirname "$0")/../packages/testenv/go"
# Only the default Kubernetes version: setup builds that one (`pnpm test:compat` fetches the others when it builds them).
kube_version=$(sed -n "s/^  kubernetes: '\(v[0-9.]*\)',$/\1/p" ../src/control-plane-binaries.ts)
for d in "kube/$kube_version" etcd kwok "kube-node/$kube_version" node-extras pulumi pulumi-kubernetes flux; do
  (cd "$d" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local go mod download) || true
done
# Argo CD's module declares go 1.27.0: its build (and so its download) runs under the toolchain named in its build.
toolchain=$(sed -n "s/^export const ARGOCD_GO_TOOLCHAIN = '\(go[0-9.]*\)';$/\1/p" ../src/argocd/argocd-build.ts)
(cd argocd && GOFLAGS=-mod=readonly GOTOOLCHAIN="$toolchain" go mod download) || true
