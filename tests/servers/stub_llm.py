#!/usr/bin/env python3
"""ovmem's stub model for the real memory-server tests: an OpenAI-compatible server on 127.0.0.1.

Hindsight and OpenViking need an LLM and an embedder; in CI there is neither, so this answers
their calls deterministically (stdlib only, no downloads):

  GET  /v1/models, /health
  POST /v1/embeddings        hashed bag of words and bigrams: same text, same vector; texts that
                             share rare words point the same way. `dimensions` and
                             `encoding_format: base64` are honoured.
  POST /v1/chat/completions  answers by the kind of prompt:
    - OpenViking's memory extraction ("restricted Python memory SDK"): a program of
      `sdk.create_preferences(...)` calls, one memory per commit (STUB_OV_SPLIT=1: one per user
      message), then `sdk.commit()`;
    - OpenViking's patch merge ("memory patch merge agent"): every proposed patch re-created, so
      overlapping commits of one user lose nothing;
    - a `json_schema` response format, a forced tool call, or a `json_object` request whose schema
      is printed in the prompt (Hindsight's fact extraction and consolidation): an instance of the
      schema whose free-text fields carry the text being retained;
    - anything else: "OK".

usage: stub_llm.py [--port N] [--port-file FILE] [--log FILE]
  --port 0 (the default) binds a free port; --port-file receives the port once it listens.
  --log appends every request as one JSON line (to see what the servers ask).
"""
import argparse
import base64
import hashlib
import json
import math
import os
import re
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_DIM = int(os.environ.get("STUB_DIM", "1024"))
SPLIT = os.environ.get("STUB_OV_SPLIT") == "1"
TRIPLE = '"' * 3

# ---------------------------------------------------------------------------------------------
# Embeddings

WORDS = re.compile(r"[a-z0-9_]+")
STOPWORDS = frozenset(
    """a about an and are as at be been but by can do does did for from had has have how i if in
    into is it its me my no not of on or our so than that the their them then there these they this
    to too us was we were what when where which who whom why will with would you your user users
    assistant""".split()
)


def stem(word):
    """A crude suffix stripper: `deploys`, `deployed`, `deploying` meet at `deploy`."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def features(text):
    words = [stem(w) for w in WORDS.findall(str(text).lower()) if w not in STOPWORDS]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def embed(text, dim):
    vec = [0.0] * dim
    for feat in features(text):
        digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dim
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:  # no content words: one fixed direction rather than a zero vector
        vec[0], norm = 1.0, 1.0
    return [x / norm for x in vec]


def embeddings(req):
    inputs = req.get("input", "")
    if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
        inputs = [inputs]
    dim = int(req.get("dimensions") or DEFAULT_DIM)
    data = []
    for i, text in enumerate(inputs):
        vec = embed(text, dim)
        if req.get("encoding_format") == "base64":
            vec = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
        data.append({"object": "embedding", "index": i, "embedding": vec})
    return {
        "object": "list",
        "data": data,
        "model": req.get("model", "stub-embed"),
        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
    }


# ---------------------------------------------------------------------------------------------
# Chat


def text_of(message):
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def system_text(messages):
    return "\n".join(text_of(m) for m in messages if m.get("role") == "system")


def user_texts(messages):
    return [text_of(m) for m in messages if m.get("role") == "user"]


def py_str(value):
    """A triple-quoted Python string literal holding `value`."""
    value = str(value).replace("\\", "\\\\").replace(TRIPLE, "'''")
    if value.endswith('"'):
        value += " "
    return TRIPLE + value + TRIPLE


# OpenViking's conversation lines look like `[3][user][alice]: text`; continuation lines follow.
OV_LINE = re.compile(r"^\[(\d+)\]\[(\w+)\]\[[^\]]*\]: ?(.*)$")


def ov_user_messages(messages):
    said = []
    for text in user_texts(messages):
        current = None
        for line in text.splitlines():
            m = OV_LINE.match(line)
            if m:
                current = [m.group(3)] if m.group(2) == "user" else None
                if current is not None:
                    said.append(current)
            elif not line.strip():
                current = None  # a blank line ends the message; instructions follow the conversation
            elif current is not None:
                current.append(line)
    return [" ".join(" ".join(parts).split()) for parts in said if "".join(parts).strip()]


def ov_topic(text):
    words = WORDS.findall(text.lower())[:3] or ["note"]
    return "_".join(words) + "_" + hashlib.blake2b(text.encode(), digest_size=3).hexdigest()


def ov_extraction(messages):
    said = ov_user_messages(messages)
    if not said:
        return "sdk.commit()"
    groups = [[s] for s in said] if SPLIT else [said]
    calls = [
        "sdk.create_preferences(user={}, topic={}, content={})".format(
            py_str("default"), py_str(ov_topic(group[0])), py_str("\n".join("- " + s for s in group))
        )
        for group in groups
    ]
    return "\n".join(calls + ["sdk.commit()"])


SDK_SIGNATURE = re.compile(r"sdk\.create_(\w+)\(\*,\s*([^)]*)\)")
PATCH_HEADER = re.compile(r"(?m)^Patch \d+\s*$")
PATCH_FIELD = re.compile(r"^\s{2}(\w+):\s*$")


def ov_merge(messages):
    """Re-create every patch proposal: each block lists fields as diff hunks."""
    params = {}
    for m in SDK_SIGNATURE.finditer(system_text(messages)):
        params[m.group(1)] = [p.split(":")[0].strip() for p in m.group(2).split(",") if p.strip()]
    body = "\n".join(user_texts(messages))
    calls = []
    for block in PATCH_HEADER.split(body)[1:]:
        fields, name = {}, None
        for line in block.splitlines():
            header = PATCH_FIELD.match(line)
            if header:
                name = header.group(1)
                fields[name] = []
            elif name and line.startswith("    ") and not line.startswith("    @@"):
                kept = line[4:]
                if kept[:1] in ("+", " "):
                    fields[name].append(kept[1:])
        values = {k: "\n".join(v) for k, v in fields.items()}
        kind = values.get("memory_type", "").strip()
        if kind not in params:
            continue
        args = ", ".join(f"{k}={py_str(values[k])}" for k in params[kind] if k in values)
        calls.append(f"sdk.create_{kind}({args})")
    return "\n".join(calls + ["sdk.commit()"])


def retained_text(messages):
    """The text a Hindsight retain prompt is about: what follows its last `Content:` line."""
    for text in reversed([text_of(m) for m in messages]):
        m = re.search(r"\nContent:\n(.*?)(?:\n\n###|\Z)", text, re.S)
        if m:
            return re.sub(r"\s*\(mentioned_at=[^)]*\)\s*$", "", m.group(1)).strip()
    users = user_texts(messages)
    return (users[-1] if users else "").strip()


def schema_in_prompt(messages):
    """The largest JSON schema printed in the prompt (Hindsight's json_object requests)."""
    decoder = json.JSONDecoder()
    best, best_len = None, 0
    for message in messages:
        text = text_of(message)
        for m in re.finditer(r"\{", text):
            try:
                value, end = decoder.raw_decode(text, m.start())
            except ValueError:
                continue
            if isinstance(value, dict) and ("properties" in value or "$defs" in value) and end - m.start() > best_len:
                best, best_len = value, end - m.start()
    return best


class Instance:
    """Builds a value that validates against a JSON schema; free text comes from `text`."""

    PLACEHOLDER_FIELDS = {"when", "where", "who", "why"}

    def __init__(self, root, text):
        self.root = root
        self.text = text[:2000] or "N/A"

    def resolve(self, schema):
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 32:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = (self.root.get("$defs") or self.root.get("definitions") or {}).get(name, {})
            seen += 1
        return schema if isinstance(schema, dict) else {}

    def value(self, schema, name=""):
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [self.resolve(o) for o in schema[key]]
                concrete = [o for o in options if o.get("type") != "null"]
                return self.value(concrete[0] if concrete else options[0], name)
        if "allOf" in schema and schema["allOf"]:
            return self.value(schema["allOf"][0], name)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "string"
        if kind == "object":
            out = {}
            required = set(schema.get("required", []))
            for prop, sub in (schema.get("properties") or {}).items():
                if prop in required:
                    out[prop] = self.value(sub, prop)
                elif "default" in sub or "default" in self.resolve(sub):
                    out[prop] = sub.get("default", self.resolve(sub).get("default"))
                # other optional properties are left out, which every schema allows
            return out
        if kind == "array":
            count = max(1, int(schema.get("minItems", 1)))
            return [self.value(schema.get("items", {}), name) for _ in range(count)]
        if kind == "string":
            if name in self.PLACEHOLDER_FIELDS:
                return "N/A"
            return self.text
        if kind == "integer":
            return int(schema.get("minimum", 0))
        if kind == "number":
            return float(schema.get("minimum", 0))
        if kind == "boolean":
            return False
        return None


def chat(req):
    messages = req.get("messages") or []
    system = system_text(messages)
    if "memory patch merge agent" in system:
        return completion(req, ov_merge(messages))
    if "restricted Python memory SDK" in system:
        return completion(req, ov_extraction(messages))
    text = retained_text(messages)
    fmt = req.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        return completion(req, json.dumps(Instance(schema, text).value(schema)))
    tools = req.get("tools") or []
    choice = req.get("tool_choice")
    if tools and choice not in (None, "auto", "none"):
        function = tools[0].get("function", {})
        if isinstance(choice, dict):
            wanted = (choice.get("function") or {}).get("name")
            function = next((t["function"] for t in tools if t.get("function", {}).get("name") == wanted), function)
        params = function.get("parameters") or {}
        call = {
            "id": "call_stub",
            "type": "function",
            "function": {"name": function.get("name", "tool"), "arguments": json.dumps(Instance(params, text).value(params))},
        }
        return completion(req, None, [call])
    if fmt.get("type") == "json_object":
        schema = schema_in_prompt(messages)
        if schema is not None:
            return completion(req, json.dumps(Instance(schema, text).value(schema)))
        return completion(req, json.dumps({"answer": text}))
    return completion(req, "OK")


def completion(req, content, tool_calls=None):
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "stub-llm"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


# ---------------------------------------------------------------------------------------------
# HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = None
    log_lock = threading.Lock()

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, body):
        if self.log_path:
            line = json.dumps({"t": time.time(), "method": self.command, "path": self.path, "body": body})
            with self.log_lock, open(self.log_path, "a") as f:
                f.write(line + "\n")

    def do_GET(self):
        self.record(None)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/models"):
            return self.reply(200, {"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "ovmem"}]})
        if path in ("", "/health"):
            return self.reply(200, {"status": "ok"})
        self.reply(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.reply(400, {"error": {"message": "the body is not JSON"}})
        self.record(req)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/embeddings"):
            return self.reply(200, embeddings(req))
        if path.endswith("/chat/completions"):
            return self.reply(200, chat(req))
        self.reply(404, {"error": {"message": f"no route {self.path}"}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    args = ap.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(server.server_address[1]))
        os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
