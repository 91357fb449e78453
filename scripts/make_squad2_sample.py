#!/usr/bin/env python3
"""Builds the bundled SQuAD 2.0 style samples data/xquad_en_v2 and data/cmrc2018_zh_v2 from
data/xquad_en and data/cmrc2018_zh: every question as it is (answerable), and the same question
asked on another paragraph that does not hold its answer (unanswerable, "answers": []).

  python3 scripts/make_squad2_sample.py          (from the repository root; Python stdlib only)

Writes, for each source folder and each of its files train.jsonl and dev.jsonl, the file of the
same name under the new folder, {"id", "context", "question", "answers"} per line:
  - each source line unchanged (same bytes), immediately followed by
  - its unanswerable twin: id + "_na", the same question, "answers": [], and as context the
    distinct paragraph n // 2 places after the question's own in the file's order of distinct
    paragraphs (n of them, wrapping around; far away, so another article), moving on one place
    at a time past any paragraph that is the question's own or that contains one of its answer
    texts (case-sensitive substring).
Deterministic: re-running gives the same bytes.
"""
import json
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PAIRS = [("xquad_en", "xquad_en_v2"), ("cmrc2018_zh", "cmrc2018_zh_v2")]
FILES = ["train.jsonl", "dev.jsonl"]


def read_lines(path):
    """(raw line without its "\\n", parsed record) for each non-empty line."""
    with open(path, encoding="utf-8", newline="") as f:
        return [(line.rstrip("\n"), json.loads(line)) for line in f if line.strip()]


def dumps(row):
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def paragraphs_of(rows):
    """The distinct paragraphs in order of first appearance (grouped by article, as the file is)."""
    out, seen = [], set()
    for r in rows:
        if r["context"] not in seen:
            seen.add(r["context"])
            out.append(r["context"])
    return out


def other_paragraph(r, paragraphs, index):
    """The paragraph len(paragraphs) // 2 places after r's own, skipping its own and any that holds
    one of its answer texts; None if every other paragraph holds one."""
    n = len(paragraphs)
    start = index[r["context"]]
    texts = [a["text"] for a in r["answers"] if a["text"]]
    for step in range(n // 2, n // 2 + n):
        p = paragraphs[(start + step) % n]
        if p == r["context"] or any(t in p for t in texts):
            continue
        return p
    return None


def build(src_path, out_path):
    lines = read_lines(src_path)
    rows = [r for _, r in lines]
    paragraphs = paragraphs_of(rows)
    index = {p: i for i, p in enumerate(paragraphs)}
    out, unanswerable, skipped = [], 0, 0
    for raw, r in lines:
        out.append(raw)
        p = other_paragraph(r, paragraphs, index)
        if p is None:
            raise SystemExit(f"{src_path}: no paragraph without an answer of {r['id']}")
        twin = {"id": r["id"] + "_na", "context": p, "question": r["question"], "answers": []}
        out.append(dumps(twin))
        unanswerable += 1
        if p != paragraphs[(index[r["context"]] + len(paragraphs) // 2) % len(paragraphs)]:
            skipped += 1
    with open(out_path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(line + "\n" for line in out))
    return len(lines), unanswerable, skipped, len(paragraphs)


def main():
    for src, dst in PAIRS:
        os.makedirs(os.path.join(ROOT, "data", dst), exist_ok=True)
        for name in FILES:
            out_path = os.path.join(ROOT, "data", dst, name)
            answerable, unanswerable, skipped, n = build(os.path.join(ROOT, "data", src, name), out_path)
            print(f"{out_path}: {answerable} answerable + {unanswerable} unanswerable lines, "
                  f"{n} distinct paragraphs, {skipped} twins moved past a paragraph holding the answer, "
                  f"{os.path.getsize(out_path)} bytes")


if __name__ == "__main__":
    main()
