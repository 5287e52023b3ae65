//! Real harnesses added with issue 12, end to end: opencode, Kilo Code CLI, Pi, Qwen Code, GitHub
//! Copilot CLI, Factory Droid, CodeBuddy Code, Letta Code and Auggie (pinned, installed from npm by
//! tests/e2e/install-clis.sh) run offline against the stub model in a loopback-only namespace
//! (tests/e2e/lab.rs). Each starts from a real `ovmem install` and ends with an uninstall that gives
//! the harness's files back byte for byte, after which no hook fires.

#[path = "e2e/lab.rs"]
mod lab;

use std::path::Path;

use lab::*;

const OPENCODE_ENV: &[(&str, &str)] = &[
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
];

/// An opencode/Kilo config (JSONC, with a comment that must survive) whose model is the stub.
fn opencode_config(lab: &Lab) -> String {
    format!(
        r#"{{
  // my settings (keep this comment)
  "$schema": "https://opencode.ai/config.json",
  "model": "stub/stub-model",
  "autoupdate": false,
  "share": "disabled",
  "provider": {{
    "stub": {{
      "npm": "@ai-sdk/openai-compatible",
      "name": "Stub",
      "options": {{ "baseURL": "{}/v1", "apiKey": "sk-stub" }},
      "models": {{ "stub-model": {{ "name": "Stub Model", "tool_call": true }} }},
    }},
  }},
}}
"#,
        lab.url()
    )
}

/// The system messages of a chat-completions request.
fn system_text(req: &serde_json::Value) -> String {
    req["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn opencode(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let out = lab.run(&[bin.to_str().unwrap(), "run", prompt], OPENCODE_ENV);
    assert!(out.status.success(), "opencode run failed: {}", text(&out));
    out
}

/// opencode at user scope: the plugin module recalls into the system prompt, captures the turn at
/// session.idle and denies a memory URI to `read`; the memory tools are in opencode.json.
#[test]
fn opencode_plugin_remembers_guards_and_uninstalls_cleanly() {
    let Some(bin) = cli("opencode", "node_modules/.bin/opencode") else { return };
    let Some(seed) = cli("opencode-seed", "node_modules/@opencode-ai/plugin/package.json") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let cfg = lab.home.join(".config/opencode");
    // Without its plugin dependency in the config dir, opencode waits 73-78 s for the network.
    lab.copy_tree(seed.parent().unwrap().parent().unwrap().parent().unwrap().parent().unwrap(), &cfg);
    let config = opencode_config(&lab);
    std::fs::write(cfg.join("opencode.json"), &config).unwrap();
    lab.ovmem(&["install", "--harness", "opencode"]);
    let plugin = cfg.join("plugin/ovmem.js");
    assert!(std::fs::read_to_string(&plugin).unwrap().starts_with("// ovmem-plugin opencode\n"));
    let installed = std::fs::read_to_string(cfg.join("opencode.json")).unwrap();
    assert!(installed.contains("// my settings (keep this comment)") && installed.contains("\"ovmem\""), "{installed}");

    let out = opencode(&lab, &bin, FACT);
    assert!(String::from_utf8_lossy(&out.stdout).contains("STUB_REPLY"), "{}", text(&out));
    assert_fired(&lab, "opencode", &["session.created", "chat.message", "session.idle", "dispose"], &["session_id", "cwd"]);
    assert_fired(&lab, "opencode", &["session.idle"], &["last_assistant_message", "prompt"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    // Session 2 recalls it into the system prompt; the memory tools are offered too.
    lab.clear_requests();
    opencode(&lab, &bin, QUESTION);
    let reqs = lab.requests();
    let main = reqs
        .iter()
        .find(|r| body_text(r).contains(QUESTION) && !chat_tools(r).is_empty())
        .expect("session 2 reached the model");
    let system = system_text(main);
    assert!(system.contains("ovmem-memory") && system.contains("BLUEHERON-7"), "memory not in the system prompt: {system}");
    let tools = chat_tools(main);
    assert!(tools.iter().any(|t| t == "ovmem_memory_search"), "ovmem's MCP tools: {tools:?}");

    // The guard: the model asks `read` for a memory URI; the plugin throws ovmem's reason.
    lab.clear_requests();
    let ask = format!("please CALL_TOOL read {{\"filePath\":\"{URI}\"}}");
    let out = opencode(&lab, &bin, &ask);
    assert!(answered(&lab, "opencode", "tool.execute.before", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("STUB_AFTER_TOOL"), "{}", text(&out));
    assert!(lab.requests().iter().any(|r| body_text(r).contains("is a memory URI")), "the reason did not reach the model");

    lab.ovmem(&["uninstall", "--harness", "opencode", "--yes"]);
    assert_eq!(std::fs::read_to_string(cfg.join("opencode.json")).unwrap(), config, "opencode.json not restored");
    assert!(!plugin.exists() && !cfg.join("plugin").exists(), "the plugin (or its directory) was left behind");
    lab.clear_fired();
    opencode(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}
