//! [`Outcome`] -> the exact stdout each harness accepts for that event. Schemas are strict
//! (Codex rejects unknown keys, Claude ignores a top-level `additionalContext`), so every
//! harness and event gets only the keys it documents; anything else is that harness's no-op.

use serde_json::{json, Value};

use crate::harness::{Adapter, Canonical, DenyStyle, Encoder};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub context: Option<String>,
    pub deny: Option<String>,
}

/// What a hook process gives back to the harness: stdout, stderr and the exit code.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// The harness's no-op for this event.
pub fn noop(adapter: &Adapter, native: &str) -> String {
    if let Some(s) = adapter.noop_by_event.get(native) {
        return s.clone();
    }
    match adapter.encoder {
        Encoder::Cline => json!({"cancel": false, "contextModification": "", "errorMessage": ""}).to_string(),
        Encoder::HookSpecificOutput | Encoder::Cursor | Encoder::Copilot => "{}".to_string(),
        Encoder::Plain => String::new(),
    }
}

/// The stdout for `outcome` (for a deny that the harness reads from the exit code, the no-op: see
/// [`reply`]).
pub fn encode(adapter: &Adapter, native: &str, outcome: &Outcome) -> String {
    let v: Option<String> = match (&outcome.deny, &outcome.context) {
        (Some(reason), _) => deny(adapter, native, reason).map(|v| v.to_string()),
        (None, Some(ctx)) if adapter.inject_events.iter().any(|e| e == native) => inject(adapter, native, ctx),
        _ => None,
    };
    v.unwrap_or_else(|| noop(adapter, native))
}

/// Everything the hook answers: with `deny_style = "exit2-stderr"` a deny is exit code 2 with the
/// reason on stderr and nothing on stdout (only ever on a tool-guard event); all else exits 0.
pub fn reply(adapter: &Adapter, native: &str, outcome: &Outcome) -> Reply {
    if let (Some(reason), DenyStyle::Exit2Stderr) = (&outcome.deny, adapter.deny_style) {
        if adapter.events.get(native) == Some(&Canonical::PreTool) {
            return Reply { stdout: String::new(), stderr: reason.clone(), code: 2 };
        }
    }
    Reply { stdout: encode(adapter, native, outcome), ..Reply::default() }
}

/// A deny, only ever on a tool-guard event: anywhere else it could cancel the user's task.
fn deny(adapter: &Adapter, native: &str, reason: &str) -> Option<Value> {
    if adapter.events.get(native) != Some(&Canonical::PreTool) {
        return None;
    }
    match adapter.deny_style {
        DenyStyle::Decision => return Some(json!({"decision": "deny", "reason": reason})),
        DenyStyle::Exit2Stderr => return None,
        DenyStyle::DecisionBlock => return Some(json!({"decision": "block", "reason": reason})),
        DenyStyle::Encoder => {}
    }
    match adapter.encoder {
        Encoder::HookSpecificOutput => Some(json!({"hookSpecificOutput": {
            "hookEventName": native,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }})),
        Encoder::Cursor => Some(json!({"permission": "deny", "user_message": reason, "agent_message": reason})),
        Encoder::Cline => Some(json!({"cancel": true, "contextModification": "", "errorMessage": reason})),
        Encoder::Copilot => Some(json!({"permissionDecision": "deny", "permissionDecisionReason": reason})),
        Encoder::Plain => None,
    }
}

fn inject(adapter: &Adapter, native: &str, ctx: &str) -> Option<String> {
    let v = match adapter.encoder {
        Encoder::HookSpecificOutput => {
            json!({"hookSpecificOutput": {"hookEventName": native, "additionalContext": ctx}})
        }
        Encoder::Cursor => match native {
            "beforeSubmitPrompt" => json!({"continue": true, "additional_context": ctx}),
            _ => json!({"additional_context": ctx}),
        },
        Encoder::Cline => json!({"cancel": false, "contextModification": ctx, "errorMessage": ""}),
        Encoder::Copilot => json!({"additionalContext": ctx}),
        Encoder::Plain => return Some(ctx.to_string()),
    };
    Some(v.to_string())
}
