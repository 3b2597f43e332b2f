#!/usr/bin/env python3
"""Assembles the real-corpus evaluation folders from documents already on this machine.

Two corpora, neither written by this project:

- ``crates``: the ``README.md`` of every crate unpacked in the local cargo registry
  (``$CARGO_HOME/registry/src/*/NAME-VERSION/README.md``), copied as
  ``crates/NAME-VERSION/README.md``. Badges, HTML, code blocks and near-duplicate READMEs
  (``-impl`` / ``-derive`` / ``-macros`` companions, several versions of one crate) included.
- ``python``: the long description of every installed Python distribution (the body of its
  ``*.dist-info/METADATA``), from the test-tools venv (``.local/venv``) and the system
  ``dist-packages``, written as ``python/NAME-VERSION/README.md`` (Markdown) or
  ``README.txt`` (reStructuredText and plain text).

Deterministic: sources are walked in sorted order, a name seen twice keeps its first copy,
files are copied byte for byte (Python bodies as METADATA holds them), and nothing is
fetched. The question sets ``eval/crates.jsonl`` and ``eval/python.jsonl`` name their
expected sources by these folder paths.

Usage: eval/build_corpora.py [OUT]   (default: .local/eval-corpora; prints the corpus paths)
"""
import email.parser
import glob
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cargo_readmes():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for index in sorted(glob.glob(os.path.join(home, "registry", "src", "*"))):
        for crate in sorted(os.listdir(index)):
            path = os.path.join(index, crate, "README.md")
            if os.path.isfile(path):
                yield crate, path


def site_packages():
    dirs = sorted(glob.glob(os.path.join(ROOT, ".local", "venv", "lib", "python3*", "site-packages")))
    dirs.append("/usr/lib/python3/dist-packages")
    return [d for d in dirs if os.path.isdir(d)]


def python_descriptions():
    for folder in site_packages():
        for info in sorted(glob.glob(os.path.join(folder, "*.dist-info"))):
            meta = os.path.join(info, "METADATA")
            if not os.path.isfile(meta):
                continue
            with open(meta, encoding="utf-8", errors="replace") as f:
                msg = email.parser.Parser().parse(f)
            body = msg.get_payload()
            if not isinstance(body, str) or not body.strip():
                body = msg.get("Description") or ""
            if len(body.split()) < 30:
                continue  # a line or two says nothing a question could find
            name = (msg.get("Name") or "").strip().lower().replace("_", "-")
            version = (msg.get("Version") or "").strip()
            kind = (msg.get("Description-Content-Type") or "").lower()
            ext = "md" if "markdown" in kind else "txt"
            yield f"{name}-{version}", ext, body


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".local", "eval-corpora"))
    crates = os.path.join(out, "crates")
    python = os.path.join(out, "python")
    for folder in (crates, python):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    seen = set()
    for crate, path in cargo_readmes():
        if crate in seen:
            continue
        seen.add(crate)
        os.makedirs(os.path.join(crates, crate))
        shutil.copyfile(path, os.path.join(crates, crate, "README.md"))
    n_crates = len(seen)
    seen = set()
    for name, ext, body in python_descriptions():
        if name in seen:
            continue
        seen.add(name)
        os.makedirs(os.path.join(python, name))
        with open(os.path.join(python, name, f"README.{ext}"), "w", encoding="utf-8") as f:
            f.write(body)
    print(f"{crates}\t{n_crates} crate READMEs", file=sys.stderr)
    print(f"{python}\t{len(seen)} Python package descriptions", file=sys.stderr)
    print(crates)
    print(python)


if __name__ == "__main__":
    main()
