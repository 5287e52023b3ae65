#!/usr/bin/env python3
"""A stub model server for ovmem's real-harness tests, on 127.0.0.1 only.

Speaks just enough of Anthropic Messages (SSE), OpenAI Responses (SSE), OpenAI
chat-completions (SSE, or JSON when `"stream": false`), Gemini generateContent (JSON and SSE) and
Augment's backend API (for Auggie, by its User-Agent) for the harness CLIs the e2e tests run. Every
request (path, headers, body) is appended as one JSON line to REQLOG. The reply echoes the last user
text: "STUB_REPLY: <text>", so what the user said reaches the harness's Stop hook.

Tool calls: a user text containing `CALL_TOOL <name> <json-args>` makes the first answer a call of
that tool (when the request offers a tool of that name); once its result is back, the answer is
"STUB_AFTER_TOOL: <result>". Gemini: `READ_URI:<uri>` asks read_file for that URI.

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
            # CodeBuddy wraps what the user typed in <user_query> among its context blocks.
            q = re.search(r"<user_query>(.*?)</user_query>", t, flags=re.S)
            if q:
                return q.group(1)
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
        if "augment" in self.headers.get("User-Agent", ""):  # Auggie's own backend API
            return augment_route(self, path, body)
        if path.endswith("/count_tokens"):
            return self._send(200, "application/json", '{"input_tokens": 10}')
        reply = reply_for(body)
        call = tool_call_for(body)
        after = after_tool(body)
        if after is not None:
            reply = "STUB_AFTER_TOOL: " + after[:600]
        if path.endswith("/messages"):
            if call and after is None:
                return self._send(200, "text/event-stream", anthropic_tool_sse(body, *call))
            return self._send(200, "text/event-stream", anthropic_sse(body, reply))
        if path.endswith("/responses"):
            if call and after is None:
                return self._send(200, "text/event-stream", responses_tool_sse(*call))
            return self._send(200, "text/event-stream", responses_sse(reply))
        if path.endswith("/chat/completions"):
            if call and after is None:
                return self._send(200, "text/event-stream", chat_tool_sse(*call))
            if body.get("stream") is False:
                return self._send(200, "application/json", json.dumps(chat_json(reply)))
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


# --- tool calls for every wire format -------------------------------------------------------------
# A user text containing `CALL_TOOL <name> <json-args>` makes the first answer a call of that tool
# (only when the request offers a tool of that name); once a tool result is the last message,
# the answer is "STUB_AFTER_TOOL: <result>".

def all_user_text(body):
    out = []
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return items
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            out.append(text_of(item.get("content")))
    return "\n".join(out)


def tool_names(body):
    names = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        names.append(t.get("name") or (t.get("function") or {}).get("name"))
    return names


def tool_call_for(body):
    m = re.search(r"CALL_TOOL (\S+) (\{.*?\})(?:\s*$|\s*\n|\s*\"|</user_query>)", all_user_text(body), flags=re.S | re.M)
    if not m or m.group(1) not in tool_names(body):
        return None
    args = m.group(2)
    try:
        json.loads(args)
    except ValueError:  # the harness JSON-quoted the user's text (opencode run does)
        try:
            args = json.loads('"' + args + '"')
            json.loads(args)
        except ValueError:
            return None
    return m.group(1), args


def after_tool(body):
    """The latest tool result, when one came after the last user text asking for a tool (harnesses
    may append context messages after the tool result, e.g. Qwen's UserPromptSubmit on continuations)."""
    items = body.get("messages") or body.get("input") or []
    if not isinstance(items, list) or not items:
        return None
    call_idx, res_idx, res = -1, -1, None
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            continue
        if it.get("role") == "tool":  # chat/completions
            c = it.get("content")
            res_idx, res = i, c if isinstance(c, str) else json.dumps(c)
        elif it.get("type") == "function_call_output":  # responses
            res_idx, res = i, str(it.get("output"))
        elif it.get("role") == "user":
            content = it.get("content")
            if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
                for p in content:  # anthropic
                    if isinstance(p, dict) and p.get("type") == "tool_result":
                        res_idx, res = i, json.dumps(p.get("content"))
            elif "CALL_TOOL " in text_of(content):
                call_idx = i
    return res if res_idx > call_idx and res is not None else None


def chat_tool_sse(name, args):
    base = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": int(time.time()), "model": "stub-model"}
    chunks = [
        dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_stub1", "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": None}]),
        dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
    ]
    return "".join("data: " + json.dumps(c) + "\n\n" for c in chunks) + "data: [DONE]\n\n"


def chat_json(reply):
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()), "model": "stub-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def anthropic_tool_sse(body, name, args):
    model = body.get("model", "stub-model")
    return "".join([
        sse("message_start", {"type": "message_start", "message": {"id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_stub1", "name": name, "input": {}}}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": args}}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 5}}),
        sse("message_stop", {"type": "message_stop"}),
    ])


def responses_tool_sse(name, args):
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    item = {"type": "function_call", "id": "fc_stub1", "call_id": "call_stub1", "name": name, "arguments": args, "status": "completed"}
    return "".join([
        sse("response.created", {"type": "response.created", "response": {"id": "resp_stub", "status": "in_progress", "output": []}}),
        sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        sse("response.completed", {"type": "response.completed", "response": {"id": "resp_stub", "status": "completed", "output": [item], "usage": usage}}),
    ])


def augment_text(body):
    """The user's text in an Augment /chat-stream request (`message`, or text nodes)."""
    t = body.get("message") or ""
    for n in body.get("nodes") or []:
        if isinstance(n, dict) and n.get("text_node"):
            t += (n["text_node"].get("content") or "")
    return t


def augment_route(h, path, body):
    """Enough of Augment's backend for `auggie --print`: models, an NDJSON chat stream, {} for the rest."""
    if path == "/get-models":
        return h._send(200, "application/json", json.dumps({"default_model": "stub-model", "models": [
            {"name": "stub-model", "suggested_prefix_char_count": 100, "suggested_suffix_char_count": 100}], "feature_flags": {"enable_hooks": True}}))
    if path == "/chat-stream":
        hist = body.get("chat_history") or []
        nodes = body.get("nodes") or []
        tool_results = [n for n in nodes if isinstance(n, dict) and n.get("tool_result_node")]
        text = " ".join(augment_text(body).split())
        m = re.search(r"CALL_TOOL (\S+) (\{.*?\})(?:\s*$)", text)
        lines = []
        if tool_results:
            lines.append({"text": "STUB_AFTER_TOOL: " + json.dumps(tool_results[0]["tool_result_node"].get("content"))[:600]})
            lines.append({"text": "", "stop_reason": 1})
        elif m:
            lines.append({"text": "", "nodes": [{"id": 1, "type": 5, "content": "", "tool_use": {"tool_use_id": "toolu_stub1",
                          "tool_name": m.group(1), "input_json": m.group(2)}}]})
            lines.append({"text": "", "stop_reason": 3})
        else:
            lines.append({"text": "STUB_REPLY: " + text[:400] if text else "STUB_REPLY_OK"})
            lines.append({"text": "", "stop_reason": 1})
        return h._send(200, "application/json", "".join(json.dumps(l) + "\n" for l in lines))
    if path == "/agents/list-remote-tools":
        return h._send(200, "application/json", json.dumps({"tools": []}))
    return h._send(200, "application/json", "{}")


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
