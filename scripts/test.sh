#!/usr/bin/env bash
# The whole test suite, as CI runs it. Installs what the tests need (today:
# only Go modules, which go test fetches for this platform alone; the DuckDB
# engine is embedded through cgo, so gcc must be on the machine) and fails
# loudly rather than skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

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

echo "== fuzz, briefly (one fuzzer per run, as go test requires; seeds in each package's testdata/fuzz)"
# Budgets are execution counts, not durations: a duration -fuzztime can fail
# with a bare "context deadline exceeded" on a loaded machine (a race in Go's
# fuzz coordinator, golang/go#75804, unfixed in go1.26). Each is ~5-10 s here.
for target in "FuzzDecode ./internal/pointer 300000x" "FuzzConfig ./internal/config 60000x" "FuzzJobArgs ./internal/cli 150000x"; do
  set -- $target
  go test -run '^$' -fuzz "^$1\$" -fuzztime "$3" "$2"
done

echo "== the README's fixture publish, into a scratch warehouse"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
go run ./cmd/engagement publish --config config/fixture.conf --warehouse "$scratch" \
  --job-id "fixture-$(date -u +%Y%m%dT%H%M%SZ)" --dates 2026-03-02,2026-03-03 2>/dev/null
go run ./cmd/engagement status --warehouse "$scratch"
