#!/usr/bin/env python3
"""Checks the relative links of README.md and of the book (docs/src/**/*.md).

mdBook builds a book whose links point nowhere without a word, and GitHub shows a README whose
links do the same. This script fails instead. For every Markdown link or image whose target is
a relative path (`[text](path)`, `![alt](path)`, `[id]: path`; http(s), mailto and any other
`scheme:` are left alone), outside fenced code blocks and code spans, it checks that:

- the target file or folder exists, relative to the file that links to it;
- a `#fragment` given for a `.md` target (or alone, for the same file) names a heading of that
  file, by the slug GitHub and mdBook give it (lower-cased; letters, digits, `-` and `_` kept,
  white space turned into `-`, everything else dropped; a repeated slug gets `-1`, `-2`, ...;
  an explicit `{#id}` wins).

It also checks mdBook's `{{#include PATH}}` and `{{#include PATH:ANCHOR}}` directives: the file
exists and holds `ANCHOR: NAME` and `ANCHOR_END: NAME`.

Each broken link is printed as `FILE:LINE: TARGET: REASON`; the exit code is 1 when there is
one, else 0. Python 3 standard library only.

    python3 scripts/check-links.py              # README.md and docs/src/**/*.md of this repo
    python3 scripts/check-links.py --root DIR   # the same files under DIR
    python3 scripts/check-links.py --self-test  # checks the checker on a tree of its own
"""

import argparse
import pathlib
import re
import sys
import tempfile
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include)\s+([^}\s]+)\s*\}\}")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*$")
EXPLICIT_ID = re.compile(r"\s*\{#([^}\s]+)[^}]*\}\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def documents(root):
    """README.md and every Markdown file of the book's sources, in a stable order."""
    found = []
    readme = root / "README.md"
    if readme.is_file():
        found.append(readme)
    found.extend(sorted((root / "docs" / "src").rglob("*.md")))
    return found


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            continue
        yield number, line


def slug(heading):
    """The anchor GitHub and mdBook give a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    out = []
    for ch in text.lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(path, cache={}):
    """The fragments a Markdown file answers to: one per heading, repeats numbered."""
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            match = HEADING.match(line)
            if not match:
                continue
            text = re.sub(r"\s+#+\s*$", "", match.group(2))
            explicit = EXPLICIT_ID.search(text)
            if explicit:
                found.add(explicit.group(1))
                continue
            base = slug(text)
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def links(text):
    """(line number, target) of every link and image outside code."""
    for number, line in prose_lines(text):
        line = CODE_SPAN.sub(lambda m: "code", line)
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
            continue
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)


def includes(text):
    """(line number, argument) of every mdBook include directive, code blocks included."""
    for number, line in enumerate(text.split("\n"), start=1):
        for match in INCLUDE.finditer(line):
            yield number, match.group(1)


def check_link(source, target):
    """Why `target`, linked from `source`, is broken; None when it resolves."""
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if SCHEME.match(target):
        return None
    path_part, _, fragment = target.partition("#")
    path_part = urllib.parse.unquote(path_part)
    fragment = urllib.parse.unquote(fragment)
    if path_part.startswith("/"):
        return "an absolute path resolves neither on GitHub nor in the book: make it relative"
    resolved = (source.parent / path_part).resolve() if path_part else source
    if not resolved.exists():
        return f"no such file ({resolved})"
    if fragment and resolved.is_file() and resolved.suffix == ".md":
        if fragment not in anchors(resolved):
            return f"no heading with the anchor #{fragment} in {resolved.name}"
    return None


def check_include(source, argument):
    """Why an `{{#include PATH[:ANCHOR]}}` of `source` is broken; None when it resolves."""
    path_part, _, anchor = argument.partition(":")
    resolved = (source.parent / path_part).resolve()
    if not resolved.is_file():
        return f"no such file ({resolved})"
    if anchor and not anchor[0].isdigit():
        text = resolved.read_text(encoding="utf-8")
        if f"ANCHOR: {anchor}" not in text or f"ANCHOR_END: {anchor}" not in text:
            return f"no ANCHOR: {anchor} ... ANCHOR_END: {anchor} in {resolved.name}"
    return None


def broken_links(root, counted=None):
    """Every broken link under `root`, as (file, line, target, reason); `counted` (a list) gets
    one entry per link checked."""
    broken = []
    counted = [] if counted is None else counted
    for document in documents(root):
        text = document.read_text(encoding="utf-8")
        shown = document.relative_to(root)
        for number, target in links(text):
            counted.append(target)
            reason = check_link(document, target)
            if reason:
                broken.append((shown, number, target, reason))
        for number, argument in includes(text):
            counted.append(argument)
            reason = check_include(document, argument)
            if reason:
                broken.append((shown, number, "{{#include " + argument + "}}", reason))
    return broken


def report(root):
    counted = []
    broken = broken_links(root, counted)
    for shown, number, target, reason in broken:
        print(f"{shown}:{number}: {target}: {reason}", file=sys.stderr)
    checked = len(documents(root))
    if broken:
        print(f"check-links: {len(broken)} broken link(s) in {checked} files", file=sys.stderr)
        return 1
    print(f"check-links: {len(counted)} links and includes in {checked} files, none broken")
    return 0


def self_test():
    """One tree with good links and broken ones: exactly the broken ones are reported."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "docs" / "src").mkdir(parents=True)
        (root / "template.yaml").write_text("x: 1\n")
        (root / "README.md").write_text(
            "# Title\n\n<!-- ANCHOR: part -->\nshared\n<!-- ANCHOR_END: part -->\n\n"
            "[good](docs/src/guide.md) [good anchor](docs/src/guide.md#the-thing-kb-sync)\n"
            "[second same heading](docs/src/guide.md#notes-1) [web](https://example.com/x.md)\n"
            "[broken](docs/src/missing.md)\n"
            "`[in code](nowhere.md)`\n"
            "```sh\n[in a fence](nowhere.md)\n```\n"
        )
        (root / "docs" / "src" / "guide.md").write_text(
            "# Guide\n\n## The thing: `kb sync`\n\n## Notes\n\n## Notes\n\n"
            "[repo file](../../template.yaml) [self](#guide) ![image](missing.png)\n"
            "[bad anchor](#no-such-heading)\n\n"
            "{{#include ../../README.md:part}}\n{{#include ../../README.md:other}}\n"
        )
        found = {(str(shown), number, target) for shown, number, target, _ in broken_links(root)}
        expected = {
            ("README.md", 9, "docs/src/missing.md"),
            (str(pathlib.Path("docs/src/guide.md")), 9, "missing.png"),
            (str(pathlib.Path("docs/src/guide.md")), 10, "#no-such-heading"),
            (str(pathlib.Path("docs/src/guide.md")), 13, "{{#include ../../README.md:other}}"),
        }
        assert found == expected, f"found {sorted(found)}, expected {sorted(expected)}"
    assert slug("The local server: `bounded-rag serve`") == "the-local-server-bounded-rag-serve"
    assert slug("Compared with Bedrock Knowledge Bases' sync") == "compared-with-bedrock-knowledge-bases-sync"
    print("check-links: self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="repository root")
    parser.add_argument("--self-test", action="store_true", help="check the checker")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    return report(args.root.resolve())


if __name__ == "__main__":
    sys.exit(main())
