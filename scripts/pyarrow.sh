#!/usr/bin/env bash
# pyarrow and pandas from PyPI, for the test that runs the reader snippet of
# docs/readers.md (examples/python/read_date.py): a virtual environment under
# .cache/pyarrow at the exact versions of examples/python/requirements.txt.
#
#   bash scripts/pyarrow.sh install   create the venv once; print the path of its `python`
set -euo pipefail
cd "$(dirname "$0")/.."
name=pyarrow requirements=examples/python/requirements.txt tool=python
. scripts/lib/venv.sh
venv_main "$@"
