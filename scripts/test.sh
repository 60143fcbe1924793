#!/usr/bin/env bash
# The whole test suite, as CI runs it. Installs what the tests need (today:
# the Go modules; the DuckDB engine is embedded through cgo, so gcc must be on
# the machine) and fails loudly rather than skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go modules"
go mod download

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 20m ./...
