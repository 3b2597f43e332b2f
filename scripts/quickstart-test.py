#!/usr/bin/env python3
"""Runs the README's first set-up command and checks that it answers with citations.

The command is read from README.md (the first command of the first code block under
"## Set-up"), never copied here, so the README cannot drift from what works. It is run from the
repository root in a shell, as a reader would paste it, with no model, knowledge or secret
setting in the environment (the README promises an offline answer on a fresh machine) and runs
checkpointed in a temporary STATE_DIR. The test passes when it exits 0 and its standard output
holds:

- an answer citing a source (`[1]`, any `[N]`) before the sources;
- a `Sources:` line followed by a numbered source (`  [1] ...`);
- the summary line, starting with `completed`.

scripts/test.sh runs it after `cargo test`, which has built the binary `cargo run` runs.

    python3 scripts/quickstart-test.py
    QUICKSTART_BIN=target/debug/bounded-rag python3 scripts/quickstart-test.py

QUICKSTART_BIN replaces the command's leading `cargo run [-q] --` with that binary (to check a
binary already built without cargo). Python 3 standard library only.
"""

import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SECTION = "## Set-up"
# Settings that would take the command away from the offline provider and the bundled sample.
UNSET_PREFIXES = ("LLM_", "KB_", "EMBEDDINGS_", "RERANK_", "WEB_SEARCH_")
UNSET = ("SECRETS_ID", "CHECKPOINT_TABLE", "WORK_QUEUE_URL", "SPECULATION")
CARGO_RUN = re.compile(r"^cargo\s+run(?:\s+-q|\s+--quiet)?\s+--\s+")


def fail(message):
    print(f"quickstart-test: {message}", file=sys.stderr)
    sys.exit(1)


def first_command(readme):
    """The first command of the first code block of the README's set-up section."""
    start = readme.find("\n" + SECTION)
    if start < 0:
        fail(f"README.md has no '{SECTION}' section")
    section = readme[start + 1 :].split("\n## ", 1)[0]
    in_block = False
    for line in section.split("\n"):
        if line.startswith("```"):
            if in_block:
                break
            in_block = True
            continue
        if in_block and line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    fail(f"no command in a code block of README.md's '{SECTION}' section")


def main():
    command = first_command((ROOT / "README.md").read_text(encoding="utf-8"))
    binary = os.environ.get("QUICKSTART_BIN")
    if binary:
        if not CARGO_RUN.match(command):
            fail(f"QUICKSTART_BIN is set but the command does not start with `cargo run --`: {command}")
        command = CARGO_RUN.sub(shlex.quote(binary) + " ", command)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(UNSET_PREFIXES) and name not in UNSET
    }
    with tempfile.TemporaryDirectory(prefix="quickstart-") as state_dir:
        env["STATE_DIR"] = state_dir
        print(f"quickstart-test: $ {command}", file=sys.stderr)
        done = subprocess.run(
            ["sh", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600
        )
    out = done.stdout
    if done.returncode != 0:
        fail(f"exit code {done.returncode}\n--- stdout\n{out}\n--- stderr\n{done.stderr}")
    lines = out.split("\n")
    problems = []
    if "Sources:" not in lines:
        problems.append("no `Sources:` line")
        answer, sources = out, ""
    else:
        at = lines.index("Sources:")
        answer, sources = "\n".join(lines[:at]), "\n".join(lines[at + 1 :])
    if not re.search(r"\[\d+\]", answer):
        problems.append("the answer cites no source (`[1]`)")
    if sources and not re.search(r"^\s+\[1\] \S", sources, flags=re.MULTILINE):
        problems.append("no numbered source (`  [1] ...`) under `Sources:`")
    if not any(line.startswith("completed") for line in lines):
        problems.append("no summary line starting with `completed`")
    if problems:
        fail("; ".join(problems) + f"\n--- stdout\n{out}\n--- stderr\n{done.stderr}")
    summary = next(line for line in lines if line.startswith("completed"))
    print(f"quickstart-test: answered with citations: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
