#!/bin/sh
# The GPU check (docs/gpu.md): scripts/gpu-check.sh [--out DIR] [--cpu] [--help]; the check is scripts/gpu_check.py.
# This finds the Python to run it with: $PYTHON, else the checkout's .venv, else python3 (a GPU machine staged with
# ../shared/gpu/stage.sh: `source .device/setup.sh` first, which puts the installed zoo on PYTHONPATH and PATH).
here=$(dirname "$0")
PY=${PYTHON:-$here/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
exec "$PY" "$here/gpu_check.py" "$@"
