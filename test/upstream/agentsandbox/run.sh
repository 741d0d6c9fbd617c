#!/usr/bin/env bash
# Runs overfill_race_test.go inside agent-sandbox's own extensions/controllers package, at each
# version in VERSIONS (default: the two the lab's main suites use): the real
# SandboxWarmPoolReconciler and that package's own fixtures, nothing of upstream copied into this
# repository. Go refuses to lay a file over the module cache (go test -overlay), so each version's
# module is copied to a throwaway directory, the test is added there, and the module's own go.mod
# builds it: its dependency graph mixes with nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for v in ${VERSIONS:-v0.5.5 v1.0.1}; do
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  dir=$(go mod download -json "sigs.k8s.io/agent-sandbox@$v" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "could not download sigs.k8s.io/agent-sandbox@$v" >&2; exit 1; }
  cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
  cp "$here/overfill_race_test.go" "$work/src/extensions/controllers/zz_brakebench_overfill_test.go"
  echo "==> agent-sandbox $v"
  (cd "$work/src" && go test -count=1 -tags brakebench_upstream -run '^TestBrakebench' -v ./extensions/controllers)
  chmod -R u+w "$work"; rm -rf "$work"
  trap - EXIT
done
