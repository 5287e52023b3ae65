// ovmem-plugin {{HARNESS}}
// Long-term memory for this agent, managed by ovmem: `ovmem uninstall --harness {{HARNESS}}` removes this file.
// opencode (and Kilo Code, its fork) run no shell hooks, so this module runs `ovmem hook {{HARNESS}} <event>`
// with a JSON payload on stdin and applies the answer: recalled memory goes into the system prompt, the finished
// turn is captured when the session goes idle, and a tool call ovmem denies is stopped. Any failure is a no-op.
import { spawn } from "node:child_process";

const OVMEM_BIN = {{OVMEM_BIN_JS}};
const HARNESS = "{{HARNESS}}";

// Runs one hook; resolves to ovmem's JSON answer, or {} on any error or after `ms` milliseconds.
function hook(event, payload, ms) {
  return new Promise((resolve) => {
    let out = "";
    let settled = false;
    const done = (v) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    try {
      const child = spawn(OVMEM_BIN, ["hook", HARNESS, event], { stdio: ["pipe", "pipe", "ignore"] });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        done({});
      }, ms);
      child.stdout.on("data", (d) => (out += d));
      child.on("error", () => {
        clearTimeout(timer);
        done({});
      });
      child.on("close", () => {
        clearTimeout(timer);
        try {
          done(out.trim() ? JSON.parse(out) : {});
        } catch {
          done({});
        }
      });
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }));
    } catch {
      done({});
    }
  });
}

const contextOf = (r) => r?.hookSpecificOutput?.additionalContext || "";
const textOf = (parts) =>
  (parts || [])
    .filter((p) => p?.type === "text" && !p.synthetic && !p.ignored)
    .map((p) => p.text)
    .join("\n");

export const Ovmem = async ({ client, directory }) => {
  // sessionID -> { start, prompt, said }: the memory to put in the system prompt, and the last prompt.
  const sessions = new Map();
  const session = (id) => {
    if (!sessions.has(id)) sessions.set(id, { start: "", prompt: "", said: "" });
    return sessions.get(id);
  };
  const base = (id) => ({ session_id: id, cwd: directory });

  return {
    event: async ({ event }) => {
      const props = event?.properties || {};
      const id = props.sessionID || props.info?.id;
      if (!id) return;
      if (event.type === "session.created" && !props.info?.parentID) {
        session(id).start = contextOf(await hook("session.created", { ...base(id), source: "startup" }, 30000));
      } else if (event.type === "session.idle" && sessions.has(id)) {
        let prompt = session(id).said;
        let reply = "";
        try {
          const res = await client.session.messages({ path: { id } });
          const messages = res?.data || [];
          const last = (role) => [...messages].reverse().find((m) => m?.info?.role === role);
          reply = textOf(last("assistant")?.parts);
          prompt = textOf(last("user")?.parts) || prompt;
        } catch {}
        await hook("session.idle", { ...base(id), prompt, last_assistant_message: reply }, 30000);
      }
    },
    "chat.message": async (input, output) => {
      const s = session(input.sessionID);
      s.said = textOf(output?.parts);
      s.prompt = contextOf(await hook("chat.message", { ...base(input.sessionID), prompt: s.said }, 30000));
    },
    "experimental.chat.system.transform": async (input, output) => {
      const s = input?.sessionID && sessions.get(input.sessionID);
      if (!s || !Array.isArray(output?.system)) return;
      for (const text of [s.start, s.prompt]) if (text) output.system.push(text);
    },
    "tool.execute.before": async (input, output) => {
      const r = await hook(
        "tool.execute.before",
        { ...base(input.sessionID), tool_name: input.tool, tool_input: output?.args ?? {} },
        5000,
      );
      const h = r?.hookSpecificOutput;
      if (h?.permissionDecision === "deny") throw new Error(h.permissionDecisionReason || "denied by ovmem");
    },
    dispose: async () => {
      for (const id of sessions.keys()) await hook("dispose", { ...base(id), reason: "exit" }, 5000);
      sessions.clear();
    },
  };
};
