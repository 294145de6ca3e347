#!/usr/bin/env bash
# Runs every test (unit and integration) once, one file at a time (the integration tests start real
# control planes on a 2-core machine), then prints the plain closing line `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results
rm -f test-results/vitest.json
pnpm exec vitest run --maxWorkers=1 --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
code=$?
node scripts/test-summary.mjs test-results/vitest.json || code=1
# No control-plane process may outlive the test run.
left=$(pgrep -f -- '--conditions=@baton/source .*host\.ts|baton/testenv/bin/(kube-|etcd|kwok)' || true)
if [ -n "$left" ]; then
  echo "processes left running after the tests:" >&2
  ps -o pid,args -p $(echo $left | tr ' ' ',') >&2 || true
  code=1
fi
exit $code
