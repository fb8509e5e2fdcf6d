#!/usr/bin/env bash
# DB-GPT's own Python client (dbgpt-client 0.8.2) in ./.venv-dbgpt, apart from .venv because it
# pins older fastapi and SQLAlchemy. The tests use it to show DB-GPT code runs unchanged
# against ragmeter's server.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-$(command -v python3.11 || command -v python3)}"
[ -x .venv-dbgpt/bin/python ] || "$python_bin" -m venv .venv-dbgpt
.venv-dbgpt/bin/python -m pip install --disable-pip-version-check --progress-bar off -q \
  -r scripts/dbgpt-client-requirements.txt
.venv-dbgpt/bin/python -c "import dbgpt_client.evaluation; print('dbgpt-client ready')"
