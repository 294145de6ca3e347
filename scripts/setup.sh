#!/usr/bin/env bash
# One-time (idempotent) setup on a fresh machine that has Node.js 20, npm and Go: pnpm, node modules,
# the Debian packages the tests use, and the pinned binaries built from Go modules (cached by version).
set -euo pipefail
cd "$(dirname "$0")/.."

PNPM_VERSION=10.34.9
say() { printf '[setup] %s\n' "$*" >&2; }

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  say "installing pnpm $PNPM_VERSION with npm"
  npm install -g "pnpm@$PNPM_VERSION" >&2
fi

if ! command -v go >/dev/null 2>&1; then
  if [ -x /usr/local/go/bin/go ]; then export PATH="/usr/local/go/bin:$PATH"; else
    say "Go is required to build the local control plane: install Go 1.26 and run this again"; exit 1
  fi
fi

# Download the Go modules of the builds below in the background while apt and pnpm run: downloads are network and
# disk, not CPU (measured cold: kube's 576 MB in 18 s, etcd 8 s, pulumi-kubernetes 19 s; about a minute saved in
# all, 6 s in the background when warm). Its own process group, stopped whenever this script ends.
prefetch_start=$(date +%s)
setsid bash scripts/prefetch-go-modules.sh >/dev/null 2>&1 &
prefetch_pid=$!
trap 'kill -- -"$prefetch_pid" 2>/dev/null || true' EXIT

# Debian packages: git (git http-backend serves the test Git repositories), chromium (the audit report test),
# docker-registry (the local registry the test bed pulls images from), and the real node's runtime (below).
missing=()
command -v git >/dev/null 2>&1 || missing+=(git)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
# The real node of a test bed: containerd runs its Pods with runc on a CNI bridge; kube-proxy writes iptables rules
# (inside the bed's own network namespace only) and reads conntrack.
[ -x /usr/bin/containerd ] || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v tmux >/dev/null 2>&1 || missing+=(tmux) # a real terminal for the test of what baton up shows
# SoftHSM: the PKCS#11 token the audit signer's tests generate and sign with (its key never leaves the token).
[ -e /usr/lib/softhsm/libsofthsm2.so ] || missing+=(softhsm2)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    say "please install these Debian packages (as root): ${missing[*]}"; exit 1
  fi
fi

# A bed with a real node holds 18 inotify instances (measured: its control plane 10, kubelet 6, containerd and
# kube-proxy 1 each): the kernel's default of 128 per user runs out at the eighth bed ("too many open files" from
# kube-proxy), and the fleet test runs eight beside another file's beds.
# Raised as kind's docs advise for several clusters on one host; never lowered.
if [ "$(id -u)" = 0 ] && [ "$(sysctl -n fs.inotify.max_user_instances)" -lt 1024 ]; then
  say "raising fs.inotify.max_user_instances to 1024 (real nodes of several test beds at once)"
  sysctl -q -w fs.inotify.max_user_instances=1024
fi

say "installing node modules"
# pkcs11js (a dev dependency: the PKCS#11 signer's tests) compiles with node-gyp, which would download Node's headers
# from nodejs.org; Debian's nodejs ships them, so point node-gyp there when it has no cache of its own.
if [ -f /usr/include/node/node.h ] && [ -z "${npm_config_nodedir:-}" ] && [ ! -d "$HOME/.cache/node-gyp" ]; then
  export npm_config_nodedir=/usr
fi
pnpm install --frozen-lockfile --reporter=append-only >&2

# The test bed runs the controller image by its digest: build it (downloads and layers cached by version under
# ~/.cache/baton/image; a warm build only bundles the controller again). It needs none of the Go builds, so it runs
# beside them.
say "building the baton-controller image (pnpm image:build), beside the Go builds"
image_start=$(date +%s)
node --conditions=@baton/source --import tsx packages/controller/image/build.ts >&2 &
image_pid=$!

say "building (or reusing) the pinned binaries from Go modules, Flux's and Argo CD's included (their tests run in .ci/run)"
builds_start=$(date +%s)
builds_rc=0
node --conditions=@baton/source --import tsx packages/cli/src/main.ts testenv build --flux --argocd >&2 || builds_rc=$?
say "Go builds took $(( $(date +%s) - builds_start )) s"
image_rc=0
wait "$image_pid" || image_rc=$?
say "the image build took $(( $(date +%s) - image_start )) s (beside the Go builds)"
if [ "$builds_rc" != 0 ] || [ "$image_rc" != 0 ]; then
  say "setup failed: the Go builds exited $builds_rc and the image build $image_rc (their messages are above)"; exit 1
fi

# The module downloads started first are done by now (every build needed them); never leave them running.
wait "$prefetch_pid" || true
say "Go module downloads (in the background from the start) took $(( $(date +%s) - prefetch_start )) s"
