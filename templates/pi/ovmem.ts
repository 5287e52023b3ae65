// ovmem-plugin {{HARNESS}}
// Long-term memory for Pi, managed by ovmem: `ovmem uninstall --harness {{HARNESS}}` removes this file.
// Pi runs no shell hooks, so this extension runs `ovmem hook {{HARNESS}} <event>` with a JSON payload on stdin and
// applies the answer: recalled memory is added to the turn's system prompt, the finished turn is captured at
// agent_end, and a tool call ovmem denies is blocked. Any failure is a no-op.
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

const contextOf = (r: any): string => r?.hookSpecificOutput?.additionalContext || "";
const textOf = (m: any): string =>
  typeof m?.content === "string"
    ? m.content
    : (m?.content || []).filter((p: any) => p?.type === "text").map((p: any) => p.text).join("\n");

export default function (pi: any) {
  let start = "";
  let said = "";
  const base = (ctx: any) => ({
    session_id: ctx?.sessionManager?.getSessionId?.() || "",
    cwd: ctx?.cwd || process.cwd(),
    transcript_path: ctx?.sessionManager?.getSessionFile?.() || "",
  });

  pi.on("session_start", async (event: any, ctx: any) => {
    start = contextOf(await hook("session_start", { ...base(ctx), source: event?.reason || "startup" }, 30000));
  });
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    said = event?.prompt || "";
    const recalled = contextOf(await hook("before_agent_start", { ...base(ctx), prompt: said }, 30000));
    const extra = [start, recalled].filter(Boolean).join("\n\n");
    if (extra) return { systemPrompt: `${event?.systemPrompt ?? ""}\n\n${extra}` };
  });
  pi.on("agent_end", async (event: any, ctx: any) => {
    const last = [...(event?.messages || [])].reverse().find((m: any) => m?.role === "assistant");
    await hook("agent_end", { ...base(ctx), prompt: said, last_assistant_message: textOf(last) }, 30000);
  });
  pi.on("tool_call", async (event: any, ctx: any) => {
    const r = await hook("tool_call", { ...base(ctx), tool_name: event?.toolName, tool_input: event?.input ?? {} }, 5000);
    const h = r?.hookSpecificOutput;
    if (h?.permissionDecision === "deny") return { block: true, reason: h.permissionDecisionReason || "denied by ovmem" };
  });
  pi.on("session_shutdown", async (event: any, ctx: any) => {
    await hook("session_shutdown", { ...base(ctx), reason: event?.reason || "quit" }, 5000);
  });
}
