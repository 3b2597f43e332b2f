"""How often `CLARIFY`'s rule (src/rag/clarify.rs) asks back: on the labelled question sets in
eval/ (it should not: each question names its subject) and on questions whose subject is
missing, as users write them (it should). Mirrors the Rust rule: the stop words are read from
src/llm/lexical.rs, the limits from src/rag/clarify.rs.

    python3 eval/clarify_signal.py
"""
import glob
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEXICAL = (ROOT / "src/llm/lexical.rs").read_text()
CLARIFY = (ROOT / "src/rag/clarify.rs").read_text()


def quoted(source, start):
    block = source[source.index(start):]
    return set(re.findall(r'"([^"]+)"', block[: block.index("];")]))


STOP = quoted(LEXICAL, "const STOPWORDS")
REFERRING = quoted(CLARIFY, "const REFERRING")
JOINING = quoted(CLARIFY, "const JOINING")
MAX_CONTENT = int(re.search(r"MAX_CONTENT_WORDS: usize = (\d+)", CLARIFY).group(1))

MISSING_SUBJECT = [
    "How do I install it?",
    "What does this do?",
    "Is it thread safe?",
    "Does it support async?",
    "Why is it so slow?",
    "How do I configure it?",
    "Can I use it in production?",
    "What license is it under?",
    "How do I turn it off?",
    "Where are its config files?",
    "How do I update them?",
    "Is this maintained?",
]


def words(text):
    return [w.lower() for w in re.split(r"[^0-9A-Za-z\u00C0-\uFFFF]+", text) if w]


def asks_back(question):
    ws = words(question)
    if not any(w in REFERRING for w in ws) or any(w in JOINING for w in ws):
        return False
    code = any("::" in t or "`" in t or t.startswith("-") or "/" in t for t in question.split())
    content = [w for w in ws if (len(w) > 1 or w.isdigit()) and w not in STOP]
    return not code and len(content) <= MAX_CONTENT


def main():
    labelled = []
    for path in sorted(glob.glob(str(ROOT / "eval/*.jsonl"))):
        for line in open(path):
            line = line.strip()
            if line:
                question = json.loads(line).get("question")
                if question:
                    labelled.append((Path(path).name, question))
    wrong = [(name, q) for name, q in labelled if asks_back(q)]
    caught = [q for q in MISSING_SUBJECT if asks_back(q)]
    print(f"labelled sets: {len(wrong)} of {len(labelled)} questions ask back")
    for name, q in wrong:
        print(f"  {name}: {q}")
    print(f"missing subject: {len(caught)} of {len(MISSING_SUBJECT)} ask back")
    for q in MISSING_SUBJECT:
        if q not in caught:
            print(f"  answered as asked: {q}")


if __name__ == "__main__":
    main()
