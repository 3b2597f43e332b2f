#!/usr/bin/env bash
# Regenerates the document-format fixtures in tests/fixtures/formats/ with real tools, so the
# tests need none of them: groff (PDF), pdflatex (a pdfTeX PDF), qpdf (an encrypted PDF) and
# pandoc (Word). The sources are in tests/fixtures/formats/src/. Debian:
#   apt-get install -y --no-install-recommends groff qpdf pandoc texlive-latex-base
# The damaged files (truncated, corrupt, random bytes) are cut from the real ones with fixed
# seeds, so the output is the same on every run with the same tool versions.
set -euo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
OUT="$ROOT/tests/fixtures/formats"
SRC="$OUT/src"
for tool in groff qpdf pandoc pdflatex python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool (see the header of $0)" >&2; exit 1; }
done
mkdir -p "$OUT/good" "$OUT/bad"
# Reproducible PDFs: fixed creation dates and ids where the tools allow.
export SOURCE_DATE_EPOCH=1700000000 FORCE_SOURCE_DATE=1

# PDF typeset by groff (ms macros): three pages, a running header with the page number.
groff -ms -Tpdf "$SRC/field-guide.ms" >"$OUT/good/field-guide.pdf"
# PDF typeset by pdfTeX: four pages, one fact per page.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$SRC/orchard-log.tex" "$tmp/"
(cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error orchard-log.tex >/dev/null)
cp "$tmp/orchard-log.pdf" "$OUT/good/orchard-log.pdf"
# Word, by pandoc from Markdown: images dropped by a filter, so nothing is ever fetched.
# The filter runs on pandoc's JSON first: the docx writer would fetch images before a filter
# in the same run could drop them.
pandoc --from=markdown --to=json --lua-filter="$SRC/drop-images.lua" "$SRC/handbook.md" |
    pandoc --from=json --to=docx --output="$OUT/good/handbook.docx"
# reStructuredText and CSV are kept as written (see src/README).
cp "$SRC/release-notes.rst" "$SRC/varieties.csv" "$OUT/good/"

# Files that cannot be read.
# A PDF with no text layer (only drawn lines): a scan without OCR reads the same.
groff -Tpdf "$SRC/drawing.ms" >"$OUT/bad/scan.pdf"
qpdf --encrypt user-secret owner-secret 256 -- "$OUT/good/field-guide.pdf" "$OUT/bad/encrypted.pdf"
python3 - "$OUT" <<'EOF'
import random, sys
out = sys.argv[1]
good = open(f"{out}/good/field-guide.pdf", "rb").read()
# Truncated: the first 60% of a real PDF (no %%EOF).
open(f"{out}/bad/truncated.pdf", "wb").write(good[: len(good) * 6 // 10])
# Corrupt: a real PDF's header and %%EOF around seeded random bytes.
rng = random.Random(19)
body = bytes(rng.randrange(256) for _ in range(4096))
open(f"{out}/bad/corrupt.pdf", "wb").write(good[:15] + body + b"\n%%EOF\n")
# Random bytes named .docx.
open(f"{out}/bad/random.docx", "wb").write(bytes(rng.randrange(256) for _ in range(2048)))
EOF
: >"$OUT/bad/empty.pdf"
cp "$SRC/ragged.csv" "$OUT/bad/ragged.csv"
ls -l "$OUT/good" "$OUT/bad"
