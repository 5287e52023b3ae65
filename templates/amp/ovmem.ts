// ovmem-plugin {{HARNESS}}
// Long-term memory for Amp, managed by ovmem: `ovmem uninstall --harness {{HARNESS}}` removes this file.
// Amp runs no shell hooks, so this plugin runs `ovmem hook {{HARNESS}} <event>` with a JSON payload on stdin and
// applies the answer: recalled memory is appended, hidden, to the user's message at agent.start, the finished turn
// is captured at agent.end (read from the thread), and a tool call ovmem denies is rejected. Any failure is a no-op.
import { spawn } from "node:child_process";

const OVMEM_BIN = {{OVMEM_BIN_JS}};
const HARNESS = "{{HARNESS}}";

// Runs one hook; resolves to ovmem's JSON answer, or {} on any error or after `ms` milliseconds.
function hook(event: string, payload: Record<string, unknown>, ms: number): Promise<any> {
  return new Promise((resolve) => {
    let out = "";
    let settled = false;
    const done = (v: any) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    try {
      const child = spawn(OVMEM_BIN, ["hook", HARNESS, event], { stdio: ["pipe", "pipe", "ignore"], windowsHide: true });
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

const contextOf = (r: any): string => r?.hookSpecificOutput?.additionalContext || "";
const textOf = (m: any): string =>
  (m?.content || []).filter((b: any) => b?.type === "text").map((b: any) => b.text).join("\n");

export default function (amp: any) {
  const starts = new Map<string, string>();
  const said = new Map<string, string>();
  const cwd = (): string => {
    const root = amp?.system?.workspaceRoot;
    return root ? decodeURIComponent(String(root).replace(/^file:\/\//, "")) : process.cwd();
  };
  const base = (id: string) => ({ session_id: id, cwd: cwd() });

  amp.on("session.start", async (event: any) => {
    const id = event?.thread?.id;
    if (id) starts.set(id, contextOf(await hook("session.start", { ...base(id), source: "startup" }, 30000)));
  });
  amp.on("agent.start", async (event: any) => {
    const id = event?.thread?.id || "";
    said.set(id, String(event?.message ?? ""));
    const recalled = contextOf(await hook("agent.start", { ...base(id), prompt: said.get(id) }, 30000));
    const content = [starts.get(id), recalled].filter(Boolean).join("\n\n");
    starts.delete(id);
    return content ? { message: { content, display: false } } : {};
  });
  amp.on("tool.call", async (event: any) => {
    const id = event?.thread?.id || "";
    const r = await hook("tool.call", { ...base(id), tool_name: event?.tool, tool_input: event?.input ?? {} }, 5000);
    const h = r?.hookSpecificOutput;
    if (h?.permissionDecision === "deny") {
      return { action: "reject-and-continue", message: h.permissionDecisionReason || "denied by ovmem" };
    }
    return { action: "allow" };
  });
  amp.on("agent.end", async (event: any) => {
    const id = event?.thread?.id || "";
    let reply = "";
    try {
      const page = await amp.threads.get(id).messages({ full: true, from: "start", offset: 0, limit: 200 });
      const last = [...(page || [])].reverse().find((m: any) => m?.role === "assistant");
      reply = textOf(last);
    } catch {}
    await hook("agent.end", { ...base(id), prompt: said.get(id) || "", last_assistant_message: reply, status: event?.status }, 30000);
  });
}
