#!/usr/bin/env bash
# Apache Airflow, for the test that runs examples/airflow/engagement_daily.py
# with `airflow dags test`: a virtual environment under .cache/airflow holding
# apache-airflow from PyPI at the exact versions of
# examples/airflow/requirements.txt (no constraints file needed).
#
#   bash scripts/airflow.sh install   create the venv once; print the path of its `airflow`
set -euo pipefail
cd "$(dirname "$0")/.."

# .cache may be a symlink: the venv is made at its real path.
venv=$(realpath -m .cache)/airflow/venv
requirements=examples/airflow/requirements.txt

die() { echo "airflow.sh: $*" >&2; exit 1; }
. scripts/lib/venv.sh

case "${1:-}" in
install)
  venv_install
  echo "$venv/bin/airflow"
  ;;
*) die "usage: bash scripts/airflow.sh install" ;;
esac
