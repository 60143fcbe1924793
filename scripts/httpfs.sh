#!/usr/bin/env bash
# DuckDB's httpfs extension (S3 reads and writes for the embedded engine),
# which duckdb-go's static library does not carry and which DuckDB would
# otherwise download from the internet at run time. The PyPI package
# duckdb-extension-httpfs ships the signed build for DuckDB 1.5.5, the
# version duckdb-go v2.10505.0 embeds; it is unpacked into DuckDB's
# extension directory layout under .cache/duckdb/extensions.
#
#   bash scripts/httpfs.sh install   fetch and unpack once; print the extension directory
#
# Environment: DUCKDB_VERSION (default 1.5.5), DUCKDB_PLATFORM (default linux_amd64).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${DUCKDB_VERSION:-1.5.5}
platform=${DUCKDB_PLATFORM:-linux_amd64}
cache=$PWD/.cache/duckdb
dir=$cache/extensions
ext=$dir/v$version/$platform/httpfs.duckdb_extension

die() { echo "httpfs.sh: $*" >&2; exit 1; }

install() {
  if [ -s "$ext" ]; then
    echo "$dir"
    return 0
  fi
  echo "httpfs.sh: installing DuckDB's httpfs extension v$version ($platform) from PyPI into $dir" >&2
  mkdir -p "$cache/dl" "$(dirname "$ext")"
  python3 -m pip download --quiet --no-deps --only-binary :all: -d "$cache/dl" "duckdb-extension-httpfs==$version" >&2 ||
    die "pip download duckdb-extension-httpfs==$version failed"
  wheel=$(ls "$cache"/dl/duckdb_extension_httpfs-"$version"-*.whl | head -n 1)
  [ -n "$wheel" ] || die "no wheel for duckdb-extension-httpfs $version"
  python3 - "$wheel" "$version" "$ext" <<'PY' || die "unpack $wheel failed"
import shutil, sys, zipfile
wheel, version, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(f"duckdb_extension_httpfs/extensions/v{version}/httpfs.duckdb_extension") as src, open(out + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  mv "$ext.part" "$ext"
  rm -rf "$cache/dl"
  echo "$dir"
}

case "${1:-}" in
  install) install ;;
  *) die "usage: bash scripts/httpfs.sh install" ;;
esac
