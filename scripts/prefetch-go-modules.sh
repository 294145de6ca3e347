#!/usr/bin/env bash
# Downloads the Go modules of the pinned builds (scripts/setup.sh runs it in the background while apt and pnpm run),
# in the order `baton testenv build` builds them, then Flux's (built on first use by its tests). The Go module cache's
# locks make a build that needs a module being downloaded here wait for it. A failure is left for the build to report
# with its own context (which module, the proxy, the rerun command).
set -uo pipefail
cd "$(dirname "$0")/../packages/testenv/go"
kube=()
node=()
# The kubelet is built for the default Kubernetes version only: its folders say which control plane setup builds.
for d in kube-node/v*/; do
  kube+=("kube/$(basename "$d")")
  node+=("${d%/}")
done
for d in "${kube[@]}" etcd kwok "${node[@]}" node-extras pulumi pulumi-kubernetes flux-source-controller \
  flux-kustomize-controller; do
  (cd "$d" && GOFLAGS=-mod=readonly GOTOOLCHAIN=local go mod download) || true
done
