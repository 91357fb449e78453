#!/usr/bin/env python3
"""Writes the crafted inputs (one class of bad file each) into this corpus, one folder per parser.

Each file reproduced a crash, a memory blow-up, a slow load or an "error: internal" before its
fix; the unit and CLI tests read them from here (tests/unit/test_checkpoint_crafted.cpp,
tests/unit/test_data_crafted.cpp, tests/regression/test_cli_errors.sh).
Re-run to regenerate byte-identical files: python3 tests/fuzz/corpus/make_crafted.py
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DEEP = 200_000  # nesting that overflows an 8 MB stack in nlohmann's recursive copy / dump()


def put(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


def deep(depth=DEEP):
    return "[" * depth + "]" * depth


# --- zip writing with control over the recorded sizes (zipfile would record the true ones) ---
def zip_archive(entries):
    """entries: list of dicts name, data, and optionally deflate (bool), claim (recorded size),
    zip64 (record sizes in a zip64 extra field)."""
    out, central = b"", b""
    for e in entries:
        name, data = e["name"].encode(), e["data"]
        method = 8 if e.get("deflate") else 0
        stored = data
        if method == 8:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            stored = c.compress(data) + c.flush()
        size = e.get("claim", len(data))
        crc = zlib.crc32(data)
        if e.get("zip64"):
            extra = struct.pack("<HHQQ", 1, 16, size, len(stored))
            small_size = small_comp = 0xFFFFFFFF
            version = 45
        else:
            extra, small_size, small_comp, version = b"", size, len(stored), 20
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, version, 0, method, 0, 0x21, crc, small_comp, small_size,
                           len(name), len(extra)) + name + extra + stored
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, 0, method, 0, 0x21, crc,
                               small_comp, small_size, len(name), len(extra), 0, 0, 0, 0, offset) + name + extra
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(out), 0)
    return out


# --- pickles (protocol 2, the opcodes torch.save uses) ---
def s(text):  # BINUNICODE
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def i4(v):  # BININT
    return b"J" + struct.pack("<i", v)


def ordered_dict():
    return b"ccollections\nOrderedDict\n)R"


def rebuild_args(key, numel, size):
    """The argument tuple of _rebuild_tensor_v2 for a contiguous float tensor over storage `key`."""
    pid = b"(" + s("storage") + b"ctorch\nFloatStorage\n" + s(key) + s("cpu") + i4(numel) + b"tQ"
    return (b"(" + pid + i4(0) + b"(" + i4(size) + b"t(" + i4(1) + b"t\x89" + ordered_dict() + b"t")


# item 5: a safetensors header whose "shape" nests 200k deep (2 MB in the report).
header = '{"w":{"dtype":"F32","shape":%s,"data_offsets":[0,0]}}' % deep()
header += " " * ((8 - len(header) % 8) % 8)
put("safetensors", "deep_shape.safetensors", struct.pack("<Q", len(header)) + header.encode())

# item 5: config.json values that nest deep: one read (and printed in the error), one only copied.
put("hf_config", "deep_hidden_size.json", '{"hidden_size": %s}\n' % deep())
put("hf_config", "deep_model_type.json", '{"model_type": %s}\n' % deep())

# item 6: a JSONL data line with an unused field nested 200k deep (400 KB).
put("jsonl_data", "deep_unused_field.jsonl", '{"text": "x", "label": "a", "extra": %s}\n' % deep())

# item 10: invalid UTF-8 in a data line, TSV and JSONL.
put("tsv_data", "invalid_utf8.tsv", b"text\tlabel\nfine\ta\nbad \xff byte\tb\n")
put("tsv_data", "invalid_utf8_text_only.tsv", b"text\nfine\nbad \xff byte\n")  # predict input
put("jsonl_data", "invalid_utf8.jsonl", b'{"text": "fine", "label": "a"}\n{"text": "bad \xff byte", "label": "b"}\n')

# item 11: answer_start = 2^63-1 (overflowed the bounds check).
put("span_data", "answer_start_overflow.jsonl",
    '{"id": "1", "question": "q?", "context": "abc", "answers": [{"text": "b", "answer_start": 9223372036854775807}]}\n')

# item 7: data.pkl stored in 4 bytes, recorded as 3.3 GB (the reader zero-filled that much); and
# a zip64 record of 2^63 - 8 bytes ("error: internal").
tiny_pickle = b"\x80\x02}."
put("torch_bin", "claimed_size_3gb.bin",
    zip_archive([{"name": "archive/data.pkl", "data": tiny_pickle, "claim": 3_300_000_000}]))
put("torch_bin", "zip64_claimed_size.bin",
    zip_archive([{"name": "archive/data.pkl", "data": tiny_pickle, "claim": 2**63 - 8, "zip64": True}]))

# item 8: one memoised _rebuild_tensor_v2 call over a 1 MB storage (deflated to about 1 KB),
# REDUCEd again for each of 3000 keys: a copy per REDUCE took 3 GB.
NUMEL, KEYS = 1 << 18, 3000
p = b"\x80\x02" + ordered_dict() + b"(" + s("k0")
p += b"ctorch._utils\n_rebuild_tensor_v2\nq\x01" + rebuild_args("0", NUMEL, NUMEL) + b"q\x02R"
for k in range(1, KEYS):
    p += s("k%d" % k) + b"h\x01h\x02R"
p += b"u."
put("torch_bin", "memo_reduce_copies.bin", zip_archive([
    {"name": "archive/data.pkl", "data": p},
    {"name": "archive/data/0", "data": bytes(4 * NUMEL), "deflate": True},
]))

# item 9: a dict of 80k keys set by one SETITEMS (each key scanned the whole dict: 21 s).
p = b"\x80\x02" + ordered_dict() + b"(" + s("k0")
p += b"ctorch._utils\n_rebuild_tensor_v2\n" + rebuild_args("0", 1, 1) + b"Rq\x01"
for k in range(1, 80_000):
    p += s("k%d" % k) + b"h\x01"
p += b"u."
put("torch_bin", "many_keys.bin", zip_archive([
    {"name": "archive/data.pkl", "data": p},
    {"name": "archive/data/0", "data": struct.pack("<f", 1.5)},
]))
