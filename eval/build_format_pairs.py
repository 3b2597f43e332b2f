#!/usr/bin/env python3
"""Builds format pairs from the real corpora of eval/build_corpora.py: the same documents in
plain text and converted by a real tool, with the question sets rewritten to name the converted
files, so `bounded-rag eval --mode quality` compares the two (eval/run_formats.sh).

Pairs (each a folder with two corpora and two question sets):

- ``rst``  (python only): ``txt/`` the corpus as it is; ``rst/`` the same files with every
  ``README.txt`` (reStructuredText or plain text, as PyPI holds it) saved as ``README.rst``.
- ``docx``: ``md/`` the corpus as it is; ``docx/`` every ``README.md`` converted by pandoc
  (GitHub Markdown to Word; images dropped by a filter on pandoc's JSON, so nothing is fetched).
- ``pdf``: ``txt/`` every ``README.md`` as pandoc's plain text; ``pdf/`` the same Markdown
  typeset by groff (pandoc's ms output, ``groff -ms -Tpdf``). Other files are kept as they are.

A document the tool cannot convert is left out of both sides of its pair. Needs pandoc and
groff (Debian: ``apt-get install -y --no-install-recommends pandoc groff``).

Usage: eval/build_format_pairs.py [CORPORA] [OUT]
(defaults: .local/eval-corpora and .local/eval-formats; prints one line per corpus built)
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DROP_IMAGES = os.path.join(ROOT, "tests", "fixtures", "formats", "src", "drop-images.lua")


def run(args, data=None):
    return subprocess.run(args, input=data, capture_output=True, check=True, timeout=120).stdout


def to_json(md_path):
    """Markdown as pandoc's JSON, images dropped."""
    return run(["pandoc", "--from=gfm", "--to=json", f"--lua-filter={DROP_IMAGES}", md_path])


def docx(md_path, out):
    run(["pandoc", "--from=json", "--to=docx", f"--output={out}"], to_json(md_path))


def plain(md_path, out):
    text = run(["pandoc", "--from=json", "--to=plain", "--wrap=none"], to_json(md_path))
    open(out, "wb").write(text)


def pdf(md_path, out):
    ms = run(["pandoc", "--from=json", "--to=ms", "--standalone", "--variable=fontfamily:T"], to_json(md_path))
    open(out, "wb").write(run(["groff", "-ms", "-k", "-Kutf8", "-t", "-e", "-Tpdf"], ms))


def files(corpus):
    for folder, _, names in sorted(os.walk(corpus)):
        for name in sorted(names):
            path = os.path.join(folder, name)
            yield path, os.path.relpath(path, corpus)


def write_questions(src, dst, renames):
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            case = json.loads(line)
            case["expected_sources"] = [renames.get(s, s) for s in case.get("expected_sources", [])]
            out.write(json.dumps(case) + "\n")


def build_pair(corpus, questions, out, kind):
    """Two corpora under out/<kind>/ and their question sets; returns (side, folder) pairs."""
    plain_side, other_side = {"rst": ("txt", "rst"), "docx": ("md", "docx"), "pdf": ("txt", "pdf")}[kind]
    base = os.path.join(out, kind)
    shutil.rmtree(base, ignore_errors=True)
    a, b = os.path.join(base, plain_side), os.path.join(base, other_side)
    renames_a, renames_b, jobs = {}, {}, []
    for path, rel in files(corpus):
        ra, rb = rel, rel
        if kind == "rst" and rel.endswith("README.txt"):
            rb = rel[: -len("txt")] + "rst"
        elif kind in ("docx", "pdf") and rel.endswith("README.md"):
            ra = rel if kind == "docx" else rel[: -len("md")] + "txt"
            rb = rel[: -len("md")] + kind
        for side, r in ((a, ra), (b, rb)):
            os.makedirs(os.path.dirname(os.path.join(side, r)), exist_ok=True)
        jobs.append((path, rel, ra, rb))
        renames_a[rel], renames_b[rel] = ra, rb

    def convert(job):
        path, rel, ra, rb = job
        try:
            if kind == "pdf" and ra != rel:
                plain(path, os.path.join(a, ra))
            else:
                shutil.copyfile(path, os.path.join(a, ra))
            if kind == "docx" and rb != rel:
                docx(path, os.path.join(b, rb))
            elif kind == "pdf" and rb != rel:
                pdf(path, os.path.join(b, rb))
            else:
                shutil.copyfile(path, os.path.join(b, rb))
            return None
        except (subprocess.SubprocessError, OSError) as e:
            for side, r in ((a, ra), (b, rb)):
                if os.path.exists(os.path.join(side, r)):
                    os.remove(os.path.join(side, r))
            return f"{rel}: {e}"

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        failed = [f for f in pool.map(convert, jobs) if f]
    name = os.path.splitext(os.path.basename(questions))[0]
    write_questions(questions, os.path.join(base, f"{name}.{plain_side}.jsonl"), renames_a)
    write_questions(questions, os.path.join(base, f"{name}.{other_side}.jsonl"), renames_b)
    for f in failed:
        print(f"  left out: {f}", file=sys.stderr)
    return [(plain_side, a), (other_side, b)], len(failed)


def main():
    corpora = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".local", "eval-corpora")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, ".local", "eval-formats")
    for tool in ("pandoc", "groff"):
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (apt-get install -y --no-install-recommends pandoc groff)")
    only = os.environ.get("PAIRS", "rst docx pdf").split()
    for set_name in os.environ.get("SETS", "python").split():
        corpus = os.path.join(corpora, set_name)
        questions = os.path.join(ROOT, "eval", f"{set_name}.jsonl")
        for kind in only:
            if kind == "rst" and set_name != "python":
                continue
            sides, failed = build_pair(corpus, questions, os.path.join(out, set_name), kind)
            print(f"{set_name} {kind}: {' vs '.join(s for s, _ in sides)} ({failed} left out)")


if __name__ == "__main__":
    main()
