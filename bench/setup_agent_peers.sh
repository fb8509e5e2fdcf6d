#!/usr/bin/env bash
# The peers for tests/integration/test_agent_parity.py and bench/agents.py: ragas 0.4.3 and
# deepeval in their own environment (.venv-agents), apart from ragmeter's (both pin their own
# openai/langchain stacks; ragas 0.4.3 imports a module langchain-community dropped in 0.4).
# Prints the seconds it took.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
target="${AGENT_PEERS_VENV:-.venv-agents}"
# The marker file is written last, so a half-made environment is never taken as ready.
rm -rf "$target"
"${PYTHON:-$(command -v python3.11 || command -v python3)}" -m venv "$target"
"$target/bin/pip" install --quiet --upgrade pip
"$target/bin/pip" install --quiet -c constraints.txt --find-links /opt/wheels \
  "ragas==0.4.3" "deepeval==4.3.1" "langchain-community<0.4"
if "$target/bin/pip" list 2>/dev/null | grep -qi nvidia; then
  echo "error: a CUDA package was pulled into $target" >&2
  exit 1
fi
touch "$target/.ready"
echo "agent peers ready: $target in $(( $(date +%s) - started )) s"
