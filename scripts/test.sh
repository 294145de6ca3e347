#!/usr/bin/env bash
# Runs every test (unit and integration) once, three files at a time (most of an integration file is waiting on
# controllers and polls: on 2 cores, three at a time took 2,372 s and 2,374 s of vitest time in two green runs, two at
# a time 2,545-2,553 s; areas that saturate the machine by themselves run alone at the end, see vitest.config.ts),
# then prints the ten slowest files and the plain closing line `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results
# Every process the tests start inherits this marker, so leftovers can be found exactly.
export BATON_TEST_RUN_ID="test-$$-$(date +%s)"
started_at=$(date +%s)
rm -f test-results/vitest.json
pnpm exec vitest run --maxWorkers=3 --reporter=default --reporter=json --outputFile.json=test-results/vitest.json "$@"
code=$?
node scripts/test-summary.mjs test-results/vitest.json || code=1
# No process started by the tests (hosts, controllers, kube-*, etcd, kwok, git, pulumi) may outlive them, and no
# real node may leave a namespace, veth, mount, cgroup or host iptables rule behind.
sleep 1
env -u BATON_TEST_RUN_ID node scripts/leftovers.mjs "$BATON_TEST_RUN_ID" $$ "$started_at" || code=1
exit $code
