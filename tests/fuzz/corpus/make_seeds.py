#!/usr/bin/env python3
"""Writes the small binary seeds of the fuzz corpus (the text seeds are plain files beside it):
valid safetensors and torch.save files, a safetensors header alone and a data.pkl alone (the
forms tests/fuzz/targets.cpp wraps into a file). Byte-identical on re-run:
python3 tests/fuzz/corpus/make_seeds.py
"""
import json
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def put(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


# --- safetensors: two tensors and metadata, as the reference writer lays them out ---
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in sorted(tensors.items()):
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    return text, data


text, data = safetensors({
    "bert.embeddings.word_embeddings.weight": ("F32", [2, 3], struct.pack("<6f", *range(6))),
    "classifier.bias": ("BF16", [2], b"\x80\x3f\x00\x40"),
    "mask": ("BOOL", [3], b"\x01\x00\x01"),
    "empty": ("I64", [0, 4], b""),
}, {"format": "pt"})
put("safetensors", "small.safetensors", struct.pack("<Q", len(text)) + text.encode() + data)
put("safetensors", "header_only.txt", text.rstrip().encode() + data)  # the "{" form: header, then data


# --- torch.save: protocol-2 pickle of an OrderedDict of tensors over storages ---
def s(t):
    b = t.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def i4(v):
    return b"J" + struct.pack("<i", v)


def tensor(key, storage_type, numel, offset, size, stride):
    pid = b"(" + s("storage") + b"ctorch\n" + storage_type + b"\n" + s(key) + s("cpu") + i4(numel) + b"tQ"
    t = lambda xs: b"(" + b"".join(i4(x) for x in xs) + b"t"
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + i4(offset) + t(size) + t(stride) + b"\x89"
            + b"ccollections\nOrderedDict\n)R" + b"tR")


pkl = (b"\x80\x02ccollections\nOrderedDict\n)R(" + s("w") + tensor("0", b"FloatStorage", 1, 0, [1], [1])
       + s("v") + tensor("1", b"FloatStorage", 4, 1, [3], [1])
       + s("m") + tensor("2", b"DoubleStorage", 8, 0, [2, 2], [1, 2])
       + s("e") + tensor("3", b"LongStorage", 32, 4, [0], [1]) + b"u.")
put("torch_bin", "data_pkl_only.pkl", pkl)  # the 0x80 form: zipped with storages 0..3 of 4, 16, 64, 256 bytes

storages = [bytes(range(4)), bytes(range(16)), bytes(range(64)), bytes(range(256))]
out = os.path.join(HERE, "torch_bin", "small.bin")
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
    for name, payload in [("archive/data.pkl", pkl), ("archive/byteorder", b"little"), ("archive/version", b"3\n")] + \
            [("archive/data/%d" % k, storages[k]) for k in range(4)]:
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        z.writestr(info, payload)
