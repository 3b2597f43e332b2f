#!/usr/bin/env python3
"""Assembles the real-corpus evaluation folders from documents already on this machine.

Three corpora, none written by this project:

- ``crates``: the ``README.md`` of every crate unpacked in the local cargo registry
  (``$CARGO_HOME/registry/src/*/NAME-VERSION/README.md``), copied as
  ``crates/NAME-VERSION/README.md``. Badges, HTML, code blocks and near-duplicate READMEs
  (``-impl`` / ``-derive`` / ``-macros`` companions, several versions of one crate) included.
  What the registry holds changes with the machine (cargo cleans unused sources; the
  project's dependencies move), so a crate ``eval/crates.jsonl`` expects that the registry
  lacks is fetched from crates.io (``static.crates.io``, its sha256 checked against the sparse
  index ``index.crates.io``) and its ``README.md`` added the same way; one that cannot be
  fetched is named on stderr and left out.
- ``python``: the long description of every installed Python distribution (the body of its
  ``*.dist-info/METADATA``), from the test-tools venv (``.local/venv``) and the system
  ``dist-packages``, written as ``python/NAME-VERSION/README.md`` (Markdown) or
  ``README.txt`` (reStructuredText and plain text).
- ``man``: the English manual pages (``/usr/share/man/man1`` and ``man8`` only, no localized
  subdirectory) shipped by a fixed list of base Debian packages (``MAN_PACKAGES``: coreutils,
  util-linux, findutils, grep, sed, tar, procps, openssh-client, passwd, e2fsprogs, ...; a
  package that is not installed is skipped), found with ``dpkg -L PKG``, rendered to plain
  text (``MANWIDTH=80 man --nh --nj -l FILE | col -bx`` under ``LC_ALL=C.UTF-8``: no
  hyphenation, no justification, no overstrikes or escape codes) and written as
  ``man/NAME.SECTION/PAGE.txt`` (``man/wc.1/PAGE.txt``). Symlinked aliases and ``.so``
  redirect stubs are skipped, so each page appears once under its own file name. Unlike the
  other two, a user asks about these pages in words that differ from the pages' own
  ("count the lines in a file" for ``wc``, "print newline, word, and byte counts").

Deterministic: sources are walked in sorted order, a name seen twice keeps its first copy,
files are copied byte for byte (Python bodies as METADATA holds them, man pages as the
fixed renderer prints them), and only the expected crates the registry lacks are fetched. The question sets
``eval/crates.jsonl``, ``eval/python.jsonl`` and ``eval/man.jsonl`` name their expected
sources by these folder paths.

Usage: eval/build_corpora.py [OUT]   (default: .local/eval-corpora; prints the corpus paths)
"""
import email.parser
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cargo_readmes():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for index in sorted(glob.glob(os.path.join(home, "registry", "src", "*"))):
        for crate in sorted(os.listdir(index)):
            path = os.path.join(index, crate, "README.md")
            if os.path.isfile(path):
                yield crate, path


def index_path(name):
    """The crate's file in the sparse index (``ahash`` -> ``ah/as/ahash``)."""
    name = name.lower()
    if len(name) <= 2:
        return f"{len(name)}/{name}"
    if len(name) == 3:
        return f"3/{name[0]}/{name}"
    return f"{name[:2]}/{name[2:4]}/{name}"


def fetch_readme(folder):
    """The README.md of crate folder ``NAME-VERSION`` from crates.io, checked against the
    index's sha256; None (and a line on stderr) when it cannot be had."""
    m = re.match(r"(.+?)-(\d.*)$", folder)
    if not m:
        return None
    name, version = m.groups()
    try:
        with urllib.request.urlopen(f"https://index.crates.io/{index_path(name)}", timeout=30) as r:
            entries = [json.loads(line) for line in r.read().decode().splitlines() if line]
        cksum = next(e["cksum"] for e in entries if e["vers"] == version)
        url = f"https://static.crates.io/crates/{name}/{name}-{version}.crate"
        with urllib.request.urlopen(url, timeout=60) as r:
            data = r.read()
        if hashlib.sha256(data).hexdigest() != cksum:
            raise ValueError(f"sha256 of {url} differs from the index's")
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            member = tar.extractfile(f"{folder}/README.md")
            return member.read() if member else None
    except (OSError, ValueError, KeyError, StopIteration) as e:
        print(f"{folder}: not fetched ({e})", file=sys.stderr)
        return None


def expected_crates():
    """The crate folders ``eval/crates.jsonl`` expects (``ahash-0.8.12``), in order."""
    folders = []
    with open(os.path.join(ROOT, "eval", "crates.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                for source in json.loads(line).get("expected_sources", []):
                    folder = source.split("/", 1)[0]
                    if folder not in folders:
                        folders.append(folder)
    return folders


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


# Base packages whose man1/man8 pages make the ``man`` corpus (about 390 pages here). Left
# out on purpose: iproute2 (128 near-identical ip-*/tc-*/devlink-* pages) and git-man (153
# git-* pages), either of which would crowd the rest; packages not installed are skipped.
MAN_PACKAGES = [
    "apt", "bsdextrautils", "bsdutils", "bzip2", "coreutils", "curl", "debianutils",
    "diffutils", "dpkg", "e2fsprogs", "file", "findutils", "grep", "gzip", "hostname",
    "less", "login", "lsof", "make", "man-db", "mawk", "mount", "ncurses-bin", "net-tools",
    "openssh-client", "passwd", "patch", "procps", "psmisc", "sed", "strace", "tar", "time",
    "unzip", "util-linux", "wget", "xz-utils", "zip",
]
MAN_FILE = re.compile(r"^/usr/share/man/man[18]/([^/]+?)(\.gz)?$")


def read_man_source(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def is_so_stub(source):
    """A page whose only content is ``.so other/page`` (plus comments) redirects elsewhere."""
    lines = [l for l in source.splitlines() if l.strip() and not re.match(r"^[.']\s*\\\"", l)]
    return bool(lines) and all(l.startswith(".so ") for l in lines)


def man_pages():
    """(NAME.SECTION, path) of every real man1/man8 page of MAN_PACKAGES, sorted."""
    for pkg in sorted(MAN_PACKAGES):
        listed = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        if listed.returncode != 0:
            continue  # not installed
        for path in sorted(listed.stdout.splitlines()):
            m = MAN_FILE.match(path)
            if not m or os.path.islink(path) or not os.path.isfile(path):
                continue
            if is_so_stub(read_man_source(path)):
                continue
            yield m.group(1), path


def render_man(path):
    env = dict(os.environ, LC_ALL="C.UTF-8", LANG="C.UTF-8", MANWIDTH="80")
    for var in ("MANOPT", "MANPAGER", "PAGER", "MANROFFOPT", "GROFF_SGR", "GROFF_NO_SGR"):
        env.pop(var, None)
    man = subprocess.run(["man", "--nh", "--nj", "-l", path], capture_output=True, env=env)
    text = subprocess.run(["col", "-bx"], input=man.stdout, capture_output=True, env=env).stdout
    text = re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", text).decode("utf-8", errors="replace")
    return "\n".join(l.rstrip() for l in text.splitlines()).strip() + "\n"


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".local", "eval-corpora"))
    crates = os.path.join(out, "crates")
    python = os.path.join(out, "python")
    man = os.path.join(out, "man")
    for folder in (crates, python, man):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    seen = set()
    for crate, path in cargo_readmes():
        if crate in seen:
            continue
        seen.add(crate)
        os.makedirs(os.path.join(crates, crate))
        shutil.copyfile(path, os.path.join(crates, crate, "README.md"))
    for folder in expected_crates():
        if folder in seen:
            continue
        readme = fetch_readme(folder)
        if readme is None:
            continue
        seen.add(folder)
        os.makedirs(os.path.join(crates, folder))
        with open(os.path.join(crates, folder, "README.md"), "wb") as f:
            f.write(readme)
    n_crates = len(seen)
    seen = set()
    for name, ext, body in python_descriptions():
        if name in seen:
            continue
        seen.add(name)
        os.makedirs(os.path.join(python, name))
        with open(os.path.join(python, name, f"README.{ext}"), "w", encoding="utf-8") as f:
            f.write(body)
    n_python = len(seen)
    seen = set()
    for name, path in man_pages():
        if name in seen:
            continue
        text = render_man(path)
        if len(text.split()) < 30:
            continue  # a stub that only points at another page
        seen.add(name)
        os.makedirs(os.path.join(man, name))
        with open(os.path.join(man, name, "PAGE.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"{crates}\t{n_crates} crate READMEs", file=sys.stderr)
    print(f"{python}\t{n_python} Python package descriptions", file=sys.stderr)
    print(f"{man}\t{len(seen)} man pages (sections 1 and 8)", file=sys.stderr)
    print(crates)
    print(python)
    print(man)


if __name__ == "__main__":
    main()
