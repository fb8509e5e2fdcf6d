#!/usr/bin/env bash
# Install everything ragmeter needs on a fresh machine into ./.venv (and Debian packages):
# Python dependencies with the CPU build of torch (pinned in constraints.txt) and PostgreSQL's
# driver; and DB-GPT's own client into ./.venv-dbgpt for the compatibility tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages (ragmeter itself is pure Python: nothing is compiled at install): curl runs
# the seed's HTTP examples in the tests; chromium is the browser the web pages' tests drive
# (Playwright cannot download its own here), with a Chinese font for the dashboard's Chinese text;
# PostgreSQL's server, which the tests start in a temporary folder to run the store on it too
missing=()
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# a CJK font, so the dashboard's Chinese text renders (not as boxes) in Chromium's screenshots
[ -n "$(fc-list :lang=zh 2>/dev/null)" ] || missing+=(fonts-wqy-microhei)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  sudo_cmd=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $sudo_cmd apt-get install -y -q "${missing[@]}" \
    || { $sudo_cmd apt-get update -q && $sudo_cmd apt-get install -y -q "${missing[@]}"; }
fi

python_bin="${PYTHON:-$(command -v python3.11 || command -v python3)}"
[ -x .venv/bin/python ] || "$python_bin" -m venv .venv

pip_args=(--disable-pip-version-check --progress-bar off -c constraints.txt)
# the CPU torch wheel lives in pip's local wheel folder on these machines
if [ -d /opt/wheels ]; then pip_args+=(--find-links /opt/wheels); fi
.venv/bin/python -m pip install "${pip_args[@]}" -e ".[dev,bench,docs,postgres,ray]"
# pip compiles what it installs, but an editable install leaves ragmeter's own modules as
# sources: with PYTHONDONTWRITEBYTECODE set (as on these machines) every command would compile
# them again (~0.6 s per `ragmeter eval`). Compile them once; a stale .pyc is never used
# (Python checks the source's mtime), and __pycache__/ is git-ignored.
.venv/bin/python -m compileall -q src >/dev/null

if .venv/bin/python -m pip list 2>/dev/null | grep -qi '^nvidia'; then
  echo "install: CUDA packages were pulled in; torch must come from constraints.txt" >&2
  exit 1
fi
.venv/bin/python -c "import torch, ragmeter; print('ragmeter', ragmeter.__version__, '| torch', torch.__version__)"
bash scripts/setup_dbgpt_client.sh
