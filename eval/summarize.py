#!/usr/bin/env python3
"""One line per eval report: recall@k, right source cited, and where the expected source was lost.

Usage: eval/summarize.py REPORT.json QUESTIONS.jsonl [--misses]  (REPORT: one report or a list)

"lost after retrieval" counts questions whose expected source was among the first k retrieved
but is not cited by the answer: the grader dropped it or the answer cited another passage.
"""
import json
import sys


def matches(expected, url):
    path = url[len("kb://"):] if url.startswith("kb://") else url
    return url == expected or path == expected or path.split("#")[0] == expected


def main():
    loaded = json.load(open(sys.argv[1]))
    # `eval --compare --json` gives one report per retrieval.
    for report in loaded if isinstance(loaded, list) else [loaded]:
        summarize(report)


def summarize(report):
    k = report["k"]
    lost, missed = [], []
    for case in report["cases"]:
        q = case["question"]
        top = case["retrieved"][:k]
        if case["cites_expected"]:
            continue
        if case["recall"]:
            lost.append(q)
        else:
            missed.append(q)
    n = report["questions"]
    print(f"{sys.argv[2]}: {n} questions · recall@{k} {report['recall_at_k']:.3f} · "
          f"cited {report['cited_share']:.3f} · retrieval {report['retrieval']} · grading "
          f"{'on' if report['grading'] else 'off'} · lost after retrieval {len(lost)} · "
          f"not retrieved {len(missed)}")
    if "--misses" in sys.argv:
        for q in lost:
            print("  lost:", q)
        for q in missed:
            print("  miss:", q)


if __name__ == "__main__":
    main()
