"""Drives the real ovmem binary the way harnesses do: throwaway homes, each harness's own hook
payloads for capture, `memory import` for bulk loads, and the Claude Code prompt hook for recall."""

import datetime
import json
import os
import shutil
import subprocess
import time

HARNESSES = ("claude-code", "codex", "cursor", "gemini-cli", "cline")
ITEM_PREFIX = "- ["


def iso(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def capture_events(harness, session, cwd, prompt, reply, ts):
    """The two hook calls a harness makes for one turn: [(event, stdin object), ...].

    Field names follow adapters/<harness>.toml; gemini-cli also carries the event time."""
    if harness in ("claude-code", "codex"):
        return [
            ("UserPromptSubmit", {"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": prompt}),
            ("Stop", {"session_id": session, "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": False,
                      "last_assistant_message": reply}),
        ]
    if harness == "cursor":
        base = {"conversation_id": session, "generation_id": f"{session}-{ts}", "workspace_roots": [cwd]}
        return [
            ("beforeSubmitPrompt", dict(base, hook_event_name="beforeSubmitPrompt", prompt=prompt)),
            ("stop", dict(base, hook_event_name="stop", status="completed", text=reply)),
        ]
    if harness == "gemini-cli":
        base = {"session_id": session, "cwd": cwd, "timestamp": iso(ts)}
        return [
            ("BeforeAgent", dict(base, hook_event_name="BeforeAgent", prompt=prompt)),
            ("AfterAgent", dict(base, hook_event_name="AfterAgent", prompt=prompt, prompt_response=reply)),
        ]
    if harness == "cline":
        # Cline in VS Code (4.x): the reply is the completion's `taskComplete.taskMetadata.result`.
        base = {"clineVersion": "4.1.13", "taskId": session, "workspaceRoots": [cwd], "timestamp": str(ts * 1000)}
        return [
            ("UserPromptSubmit", dict(base, hookName="UserPromptSubmit", userPromptSubmit={"prompt": prompt, "attachments": []})),
            ("TaskComplete", dict(base, hookName="TaskComplete", taskComplete={"taskMetadata": {"result": reply}})),
        ]
    raise ValueError(f"unknown harness {harness}")


def parse_items(context):
    """Injected items of an `<ovmem-memory>` block: each starts on a line beginning `- [`;
    the lines after it (until the next item or the closing tag) belong to it."""
    items, cur = [], None
    for line in context.splitlines():
        if line.startswith(ITEM_PREFIX):
            if cur is not None:
                items.append("\n".join(cur))
            cur = [line]
        elif line.strip().startswith("</ovmem-memory"):
            break
        elif cur is not None:
            cur.append(line)
    if cur is not None:
        items.append("\n".join(cur))
    return items


TOPIC_LINE = "(in a session about: "


def memory_text(item):
    """An item's text without its session-topic label (`(in a session about: …)`): the label
    quotes the session's first prompt, and mapped to turns it would count that turn as shown
    (and as shown again when the turn itself comes later) when only its first words were."""
    out, in_topic = [], False
    for line in item.splitlines():
        s = line.strip()
        if s.startswith(TOPIC_LINE):
            in_topic = True  # the label runs over lines when the first prompt did
        elif in_topic and s.startswith(("User: ", "Assistant: ", "- [")):
            in_topic = False
        if not in_topic:
            out.append(line)
    return "\n".join(out)


# Hooks of a replayed history run at their turn's own date, as they would have when the turn
# happened: Claude Code, Codex and Cursor send no time, so ovmem takes the clock's. libfaketime
# (`apt install faketime`) moves the clock of each capture process; without it every such turn
# would be stamped with the moment the benchmark ran.
FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1"]
FAKETIME = next((p for p in FAKETIME_LIBS if os.path.exists(p)), None)


def clock_at(ts):
    """The environment that runs a process with its wall clock stopped at `ts` (None: no libfaketime):
    stopped, not started there, so that a run stamps every turn alike."""
    if FAKETIME is None:
        return None
    when = datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    # Only the wall clock moves: deadlines run on the monotonic clock, as they do for real.
    return {"LD_PRELOAD": FAKETIME, "FAKETIME": when, "TZ": "UTC", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


class Ovmem:
    """One throwaway HOME + OVMEM_HOME; every call is a whole ovmem process."""

    def __init__(self, binary, root):
        self.binary = binary
        self.root = root
        self.home = os.path.join(root, "home")
        self.ovmem_home = os.path.join(root, "ovmem")
        os.makedirs(self.home, exist_ok=True)  # OVMEM_HOME is left for ovmem to create, as on a new machine
        self.env = {"HOME": self.home, "OVMEM_HOME": self.ovmem_home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        self.hook_calls = 0

    def run(self, args, stdin=b"", extra_env=None, check=True):
        env = dict(self.env, **(extra_env or {}))
        t = time.perf_counter()
        p = subprocess.run([self.binary, *args], input=stdin, env=env, cwd=self.home,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = (time.perf_counter() - t) * 1000.0
        if check and p.returncode != 0:
            raise RuntimeError(f"ovmem {' '.join(args)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}")
        return p, dt

    def hook(self, harness, event, payload, extra_env=None):
        self.hook_calls += 1
        p, dt = self.run(["hook", harness, event], json.dumps(payload).encode(), extra_env)
        out = p.stdout.decode()
        try:
            json.loads(out) if out.strip() else None
        except ValueError as e:
            raise RuntimeError(f"hook {harness} {event} printed output that is not JSON: {out[:200]!r}") from e
        return out, dt

    def capture_turn(self, harness, session, cwd, prompt, reply, ts):
        """A turn as the harness reports it; a reply with no prompt before it gets only the stop."""
        events = capture_events(harness, session, cwd, prompt, reply, ts)
        for event, payload in events[0 if prompt else 1:]:
            self.hook(harness, event, payload, clock_at(ts))

    def recall(self, question, cwd, k, session, extra_env=None):
        """Asks through Claude Code's UserPromptSubmit with OVMEM_RECALL_LIMIT=k (in `session`,
        never followed by a Stop). Returns (additionalContext, items, milliseconds)."""
        payload = {"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": question}
        out, dt = self.hook("claude-code", "UserPromptSubmit", payload, dict({"OVMEM_RECALL_LIMIT": str(k)}, **(extra_env or {})))
        obj = json.loads(out) if out.strip() else {}
        ctx = (obj.get("hookSpecificOutput") or {}).get("additionalContext") or ""
        return ctx, parse_items(ctx), dt

    def import_supports_project(self):
        if not hasattr(self, "_has_project"):
            p, _ = self.run(["memory", "import", "--help"], check=False)
            self._has_project = "--project" in p.stdout.decode()
        return self._has_project

    def import_file(self, path, project_dir):
        """`ovmem memory import FILE --project DIR` when the binary has `--project`, else plain
        import (the lines then carry `bank`). Returns (milliseconds, stderr text)."""
        args = ["memory", "import", path]
        if self.import_supports_project():
            args += ["--project", project_dir]
        p, dt = self.run(args)
        return dt, p.stderr.decode(errors="replace").strip()

    def disk_bytes(self):
        sizes = {}
        for suffix in ("", "-wal", "-shm"):
            f = os.path.join(self.ovmem_home, "memory.db" + suffix)
            sizes["memory.db" + suffix] = os.path.getsize(f) if os.path.exists(f) else 0
        return sizes

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


def import_line(content, created_at, harness, session, project_dir, with_bank):
    line = {"content": content, "created_at": int(created_at), "harness": harness, "session": session}
    if with_bank:
        line["bank"] = "project:" + project_dir
    return json.dumps(line)


def make_project_dir(path):
    """A project directory the way a harness sees one: a directory with `.git` at its root."""
    os.makedirs(os.path.join(path, ".git"), exist_ok=True)
    return os.path.realpath(path)


def time_true(runs):
    """Whole-process times of /bin/true, the floor every hook ratio is measured against."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["/bin/true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000.0)
    return times
