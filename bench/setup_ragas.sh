#!/usr/bin/env bash
# The peer for bench/judge_vs_ragas.py: ragas 0.4.3 in its own environment (.venv-ragas),
# because it pins openai 1.x while ragmeter uses the current openai client.
set -euo pipefail
cd "$(dirname "$0")/.."
python3.11 -m venv .venv-ragas
.venv-ragas/bin/pip install --quiet --upgrade pip
.venv-ragas/bin/pip install --quiet -c constraints.txt --find-links /opt/wheels "ragas==0.4.3" "langchain-openai" "langchain-community<0.4"
if .venv-ragas/bin/pip list 2>/dev/null | grep -qi nvidia; then
  echo "error: a CUDA package was pulled into .venv-ragas" >&2
  exit 1
fi
echo "ragas environment ready: .venv-ragas"
