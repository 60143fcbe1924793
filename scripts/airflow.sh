#!/usr/bin/env bash
# Apache Airflow, for the test that runs examples/airflow/engagement_daily.py
# with `airflow dags test`: a virtual environment under .cache/airflow holding
# apache-airflow from PyPI at the exact versions of
# examples/airflow/requirements.txt (no constraints file needed).
#
#   bash scripts/airflow.sh install   create the venv once; print the path of its `airflow`
set -euo pipefail
cd "$(dirname "$0")/.."
name=airflow requirements=examples/airflow/requirements.txt tool=airflow
. scripts/lib/venv.sh
venv_main "$@"
