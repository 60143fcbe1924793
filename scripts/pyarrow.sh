#!/usr/bin/env bash
# pyarrow and pandas from PyPI, for the test that runs the reader snippet of
# docs/readers.md (examples/python/read_date.py): a virtual environment under
# .cache/pyarrow at the exact versions of examples/python/requirements.txt.
#
#   bash scripts/pyarrow.sh install   create the venv once; print the path of its `python`
set -euo pipefail
cd "$(dirname "$0")/.."

# .cache may be a symlink: the venv is made at its real path.
venv=$(realpath -m .cache)/pyarrow/venv
requirements=examples/python/requirements.txt

die() { echo "pyarrow.sh: $*" >&2; exit 1; }
. scripts/lib/venv.sh

case "${1:-}" in
install)
  venv_install
  echo "$venv/bin/python"
  ;;
*) die "usage: bash scripts/pyarrow.sh install" ;;
esac
