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

/// The harness's no-op for this event.
pub fn noop(adapter: &Adapter, native: &str) -> String {
    if let Some(s) = adapter.noop_by_event.get(native) {
        return s.clone();
    }
    match adapter.encoder {
        Encoder::Cline => json!({"cancel": false, "contextModification": "", "errorMessage": ""}).to_string(),
        Encoder::HookSpecificOutput | Encoder::Cursor => "{}".to_string(),
        Encoder::Plain => String::new(),
    }
}

/// What a hook prints and exits with. Only a deny in the exit-2 style exits non-zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// Printed as is (followed by a line break unless empty: an empty no-op prints nothing).
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Reply {
    pub fn out(stdout: String) -> Self {
        Self { stdout, ..Self::default() }
    }
}

/// The harness's no-op as a [`Reply`].
pub fn noop_reply(adapter: &Adapter, native: &str) -> Reply {
    Reply::out(noop(adapter, native))
}

pub fn reply(adapter: &Adapter, native: &str, outcome: &Outcome) -> Reply {
    if let Some(reason) = &outcome.deny {
        if adapter.events.get(native) == Some(&Canonical::PreTool) && exit2(adapter) {
            return Reply { stdout: String::new(), stderr: reason.clone(), code: 2 };
        }
    }
    Reply::out(encode(adapter, native, outcome))
}

/// Whether this adapter denies by exit code 2 (the plain encoder's only way to deny).
fn exit2(adapter: &Adapter) -> bool {
    adapter.deny_style == DenyStyle::Exit2
        || (adapter.encoder == Encoder::Plain && adapter.deny_style == DenyStyle::Encoder)
}

/// Stdout for `outcome` (an exit-2 deny prints nothing; see [`reply`]).
pub fn encode(adapter: &Adapter, native: &str, outcome: &Outcome) -> String {
    let v: Option<Value> = match (&outcome.deny, &outcome.context) {
        (Some(_), _) if exit2(adapter) => {
            return if adapter.events.get(native) == Some(&Canonical::PreTool) {
                String::new()
            } else {
                noop(adapter, native)
            }
        }
        (Some(reason), _) => deny(adapter, native, reason),
        (None, Some(ctx)) if adapter.inject_events.iter().any(|e| e == native) => {
            if adapter.encoder == Encoder::Plain {
                return ctx.clone();
            }
            inject(adapter, native, ctx)
        }
        _ => None,
    };
    v.map_or_else(|| noop(adapter, native), |v| v.to_string())
}

/// A deny, only ever on a tool-guard event: anywhere else it could cancel the user's task.
fn deny(adapter: &Adapter, native: &str, reason: &str) -> Option<Value> {
    if adapter.events.get(native) != Some(&Canonical::PreTool) {
        return None;
    }
    match adapter.deny_style {
        DenyStyle::Decision => return Some(json!({"decision": "deny", "reason": reason})),
        DenyStyle::DecisionBlock => return Some(json!({"decision": "block", "reason": reason})),
        DenyStyle::Exit2 | DenyStyle::Encoder => {}
    }
    match adapter.encoder {
        Encoder::HookSpecificOutput => Some(json!({"hookSpecificOutput": {
            "hookEventName": native,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }})),
        Encoder::Cursor => Some(json!({"permission": "deny", "user_message": reason, "agent_message": reason})),
        Encoder::Cline => Some(json!({"cancel": true, "contextModification": "", "errorMessage": reason})),
        Encoder::Plain => None,
    }
}

fn inject(adapter: &Adapter, native: &str, ctx: &str) -> Option<Value> {
    match adapter.encoder {
        Encoder::HookSpecificOutput => {
            Some(json!({"hookSpecificOutput": {"hookEventName": native, "additionalContext": ctx}}))
        }
        Encoder::Cursor => match native {
            "beforeSubmitPrompt" => Some(json!({"continue": true, "additional_context": ctx})),
            _ => Some(json!({"additional_context": ctx})),
        },
        Encoder::Cline => Some(json!({"cancel": false, "contextModification": ctx, "errorMessage": ""})),
        Encoder::Plain => None,
    }
}
