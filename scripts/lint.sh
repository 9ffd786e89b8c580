#!/usr/bin/env bash
# Static checks, run from the project venv (bash scripts/setup.sh installs ruff and mypy
# with the test extra): `ruff check .` over the whole tree, then `mypy` over the files
# pyproject.toml's [tool.mypy] lists. Both always run; the exit status is non-zero when
# either reports a finding.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
for tool in ruff mypy; do
  if [ ! -x "$VENV/bin/$tool" ]; then
    echo "lint: $VENV/bin/$tool not found; run bash scripts/setup.sh first" >&2
    exit 2
  fi
done
status=0
echo "== ruff check ."
"$VENV/bin/ruff" check . || status=1
echo "== mypy (files from pyproject.toml)"
"$VENV/bin/mypy" || status=1
exit $status
