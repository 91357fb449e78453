#!/usr/bin/env python3
"""Checks that unif's folders include each other only downwards.

Every `#include "room/..."` in the C++ sources of a room (a folder of framework/, or models/,
adversarial/, apps/, include/) must name a room that the table below allows it to stand on. A new
upward include (models/ reaching into framework/train, adversarial/ into the trainer, ...) fails
with the file, the line and the edge, so the layering is kept by a test rather than by review.

Usage: check_layering.py [ROOT]      (ROOT: the repository, default: this script's parent's parent)
Exit 0 when every include is allowed, 1 otherwise (each offence on its own line).
"""
import os
import re
import sys

# room -> the rooms it may include (besides itself). Bottom rooms first.
ALLOWED = {
    "framework/common": set(),
    "framework/text": {"framework/common"},
    "framework/metrics": {"framework/common"},
    # The models know nothing of the trainer: only the common room (the task table, errors).
    "models": {"framework/common"},
    "framework/config": {"framework/common", "framework/metrics", "framework/text"},
    "framework/checkpoint": {"framework/common", "framework/config", "models"},
    "framework/parallel": {"framework/common", "models"},
    "framework/engines": {"framework/common", "framework/parallel", "models"},
    # Adversarial methods see the gradient-engine contract and the models' batch, nothing else.
    "adversarial": {"framework/engines", "models"},
    "framework/data": {"framework/common", "framework/config", "framework/text", "models"},
    # A model as a whole (its directory, tokenizer files, the batched forward): what training and
    # inference both stand on, so that neither includes the other.
    "framework/model": {
        "framework/common", "framework/text", "framework/metrics", "framework/config", "framework/checkpoint",
        "framework/parallel", "framework/data", "models",
    },
    "framework/train": {
        "framework/common", "framework/text", "framework/metrics", "framework/config", "framework/checkpoint",
        "framework/parallel", "framework/engines", "framework/data", "framework/model", "models", "adversarial",
    },
    # Inference does not stand on the trainer: a server links no optimizer, no gradient strategy.
    "framework/inference": {
        "framework/common", "framework/text", "framework/metrics", "framework/config", "framework/checkpoint",
        "framework/parallel", "framework/engines", "framework/data", "framework/model", "models",
    },
}
TOP = set(ALLOWED) | {"apps", "include"}
# The command line and the umbrella header stand on every library room (not on each other).
for top in ("apps", "include"):
    ALLOWED[top] = set(ALLOWED) - {top}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".hpp", ".cpp", ".cu", ".cuh")


def room_of(path):
    parts = path.split("/")
    if parts[0] == "framework" and len(parts) > 2:
        return "framework/" + parts[1]
    return parts[0]


def offences(root):
    out = []
    for top in ("framework", "models", "adversarial", "apps", "include"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                src = room_of(rel)
                if src not in ALLOWED:
                    continue  # framework/ itself, CMake folders
                with open(full, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        dst = room_of(m.group(1))
                        if dst == src or dst not in TOP:
                            continue
                        if dst not in ALLOWED[src]:
                            out.append(f"{rel}:{number}: {src} includes {m.group(1)} ({dst}): not among the rooms "
                                       f"{src} stands on ({', '.join(sorted(ALLOWED[src])) or 'none'})")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = offences(root)
    for line in found:
        print(line)
    if found:
        print(f"check_layering: {len(found)} include(s) against the layering (scripts/check_layering.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
