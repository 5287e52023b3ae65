#!/usr/bin/env python3
"""A stub model server for ovmem's real-harness tests, on 127.0.0.1 only.

Speaks just enough of Anthropic Messages (SSE), OpenAI Responses (SSE), OpenAI
chat-completions (SSE) and Gemini generateContent (JSON and SSE) for Claude Code, Codex,
Cline and Gemini CLI. Every request (path, headers, body)
is appended as one JSON line to REQLOG. The reply echoes the last user text:
"STUB_REPLY: <text>", so what the user said reaches the harness's Stop hook.

usage: stub_model.py PORT REQLOG
"""
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
REQLOG = sys.argv[2]
LOCK = threading.Lock()


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text"))
    return ""


def last_user_text(body):
    if "contents" in body:  # Gemini: the user's text, without the hook context it prepends
        for item in reversed(body["contents"]):
            if item.get("role") == "user":
                for part in item.get("parts", []):
                    t = re.sub(r"<hook_context>.*?</hook_context>", "", part.get("text", ""), flags=re.S).strip()
                    if t and not t.startswith("<"):
                        return t
        return ""
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return items
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            t = text_of(item.get("content"))
            # Skip harness-injected context blocks; echo what the user typed.
            if t.strip() and not t.lstrip().startswith("<"):
                return t
    return ""


def reply_for(body):
    t = " ".join(last_user_text(body).split())
    return "STUB_REPLY: " + t[:400] if t else "STUB_REPLY_OK"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _log(self, body):
        rec = {"t": time.time(), "method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        with LOCK, open(REQLOG, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def _send(self, status, ctype, payload):
        data = payload.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._log(None)
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, "application/json", json.dumps({"object": "list", "data": [{"id": "stub-model", "object": "model", "owned_by": "stub"}]}))
        else:
            self._send(404, "application/json", "{}")

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        self._log(body)
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            return self._send(200, "application/json", '{"input_tokens": 10}')
        reply = reply_for(body)
        if path.endswith("/messages"):
            return self._send(200, "text/event-stream", anthropic_sse(body, reply))
        if path.endswith("/responses"):
            return self._send(200, "text/event-stream", responses_sse(reply))
        if path.endswith("/chat/completions"):
            return self._send(200, "text/event-stream", chat_sse(reply))
        if path.endswith(":streamGenerateContent"):
            return self._send(200, "text/event-stream", "data: " + json.dumps(gemini_turn(body, reply)) + "\n\n")
        if path.endswith(":generateContent"):
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            text = json.dumps(fill(schema)) if schema else reply
            return self._send(200, "application/json", json.dumps(gemini_reply(text)))
        self._send(404, "application/json", "{}")


def sse(event, data):
    return (f"event: {event}\n" if event else "") + "data: " + json.dumps(data) + "\n\n"


def anthropic_sse(body, reply):
    model = body.get("model", "stub-model")
    return "".join([
        sse("message_start", {"type": "message_start", "message": {"id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply}}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        sse("message_stop", {"type": "message_stop"}),
    ])


def responses_sse(reply):
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    item = {"type": "message", "role": "assistant", "id": "msg_stub", "status": "completed", "content": [{"type": "output_text", "text": reply, "annotations": []}]}
    return "".join([
        sse("response.created", {"type": "response.created", "response": {"id": "resp_stub", "status": "in_progress", "output": []}}),
        sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse("response.completed", {"type": "response.completed", "response": {"id": "resp_stub", "status": "completed", "output": [item], "usage": usage}}),
    ])


def chat_sse(reply):
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()), "model": "stub-model"}
    chunks = [
        dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": reply}, "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
    ]
    return "".join("data: " + json.dumps(c) + "\n\n" for c in chunks) + "data: [DONE]\n\n"


def gemini_turn(body, reply):
    """Gemini's next turn: after a tool ran, report its result; on `READ_URI:<uri>` in the user's
    text, ask to read that file (to exercise tool hooks); else the echo reply."""
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    for part in last.get("parts", []):
        if "functionResponse" in part:
            return gemini_reply("STUB_AFTER_TOOL: " + json.dumps(part["functionResponse"])[:600])
    text = last_user_text(body)
    if "READ_URI:" in text:
        uri = text.split("READ_URI:", 1)[1].split()[0]
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"file_path": uri}}}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
    return gemini_reply(reply)


def gemini_reply(text):
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}


def fill(schema):
    """A value that fits a JSON schema (Gemini's model router asks for one and retries otherwise)."""
    if not isinstance(schema, dict):
        return "stub"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [fill(schema.get("items"))] if schema.get("minItems") else []
    return {"string": "stub", "integer": 10, "number": 1, "boolean": False}.get(kind, "stub")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
