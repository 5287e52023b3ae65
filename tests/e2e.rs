//! Real harnesses, end to end: Claude Code, Codex, Cline and Gemini CLIs (pinned, installed from npm by
//! `.ci/run` into `$OVMEM_E2E_DIR`, default `~/.cache/ovmem-e2e`) run offline against a stub
//! model on 127.0.0.1, inside a network namespace that has only loopback (`unshare -n`), with a
//! throwaway home, a clean environment, stdin closed and a timeout. Every scenario starts with a
//! real `ovmem install`. Locally without the CLIs (or without root) each test prints why it
//! skips; under CI (`CI=true` or `OVMEM_E2E_REQUIRED=1`) a missing piece fails instead.
#![cfg(unix)]

#[path = "e2e/lab.rs"]
mod lab;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use lab::*;

fn claude(lab: &Lab, bin: &Path, prompt: &str) -> Output {
    let url = format!("http://127.0.0.1:{}", lab.port);
    let out = lab.run(
        &[bin.to_str().unwrap(), "-p", prompt],
        &[
            ("ANTHROPIC_BASE_URL", &url),
            ("ANTHROPIC_API_KEY", "sk-ant-stub"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ],
    );
    assert!(
        out.status.success(),
        "claude -p failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Two Claude Code sessions: the fact told in the first reaches the model in the second,
/// inside `<ovmem-memory>`.
fn claude_two_sessions(lab: &Lab, bin: &Path, expect_mcp: bool) {
    claude(lab, bin, FACT);
    assert_fired(
        lab,
        "claude-code",
        &["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"],
        &["session_id", "hook_event_name", "cwd"],
    );
    assert_fired(lab, "claude-code", &["UserPromptSubmit"], &["prompt"]);
    assert_fired(lab, "claude-code", &["Stop"], &["last_assistant_message"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());
    lab.clear_requests();
    let out = claude(lab, bin, QUESTION);
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("session 2 reached the model");
    let body = body_text(main);
    assert!(body.contains("ovmem-memory") && body.contains("BLUEHERON-7"), "memory not injected in session 2: {body}");
    let tools: Vec<&str> = main["body"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    // The memory tools are registered at user scope (project scope has hooks only).
    assert_eq!(tools.contains(&"mcp__ovmem__memory_search"), expect_mcp, "ovmem's MCP tools in the request: {tools:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("STUB_REPLY"));
}

#[test]
fn claude_code_user_scope_remembers_across_sessions_and_uninstalls_cleanly() {
    let Some(bin) = cli("claude", "node_modules/.bin/claude") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    std::fs::create_dir_all(lab.home.join(".claude")).unwrap();
    std::fs::write(lab.home.join(".claude/settings.json"), "{\n  \"theme\": \"dark\"\n}\n").unwrap();
    let before = lab.snapshot();
    lab.ovmem(&["install", "--harness", "claude-code"]);
    claude_two_sessions(&lab, &bin, true);

    lab.ovmem(&["uninstall", "--harness", "claude-code", "--yes"]);
    assert_eq!(
        std::fs::read(lab.home.join(".claude/settings.json")).unwrap(),
        before[&lab.home.join(".claude/settings.json")]
    );
    lab.clear_fired();
    claude(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

#[test]
fn claude_code_project_scope() {
    let Some(bin) = cli("claude", "node_modules/.bin/claude") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    lab.ovmem(&["install", "--harness", "claude-code", "--scope", "project", "--project", lab.proj.to_str().unwrap()]);
    assert!(lab.proj.join(".claude/settings.json").exists());
    assert!(!lab.home.join(".claude/settings.json").exists());
    claude_two_sessions(&lab, &bin, false);
    lab.ovmem(&[
        "uninstall",
        "--harness",
        "claude-code",
        "--scope",
        "project",
        "--project",
        lab.proj.to_str().unwrap(),
        "--yes",
    ]);
    assert!(!lab.proj.join(".claude").exists(), "ovmem's project files were left behind");
}

const CODEX_CONFIG: &str = r#"# my codex settings (keep this comment)
model = "stub-model"
model_provider = "stub"
check_for_update_on_startup = false

[model_providers.stub]
name = "Stub"   # inline comment
base_url = "http://127.0.0.1:PORT/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
"#;

fn codex(lab: &Lab, bin: &Path, prompt: &str) -> Output {
    let out = lab.run(&[bin.to_str().unwrap(), "exec", "--skip-git-repo-check", prompt], &[("STUB_API_KEY", "stub")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "codex exec failed: {err}");
    assert!(!err.contains("failed to parse hooks config"), "codex rejected ovmem's hooks.json: {err}");
    out
}

#[test]
fn codex_trusted_by_install_remembers_across_sessions() {
    let Some(bin) = cli("codex", "node_modules/.bin/codex") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let codex_home = lab.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = CODEX_CONFIG.replace("PORT", &lab.port.to_string());
    std::fs::write(codex_home.join("config.toml"), &config).unwrap();

    let out = lab.ovmem(&["install", "--harness", "codex"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trusted 5 ovmem hook(s)"), "install did not trust the hooks: {err}");
    // Every timeout is within Codex's caps: nothing is clamped, nothing warned about.
    assert!(!err.contains("clamp") && !err.contains("reported"), "{err}");
    let cfg = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(
        cfg.contains("trusted_hash")
            && cfg.contains("# my codex settings (keep this comment)")
            && cfg.contains("# inline comment")
    );
    let status = Command::new(OVMEM).args(["status", "--json"]).env_clear().envs(lab.base_env()).output().unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let cx = status["harnesses"].as_array().unwrap().iter().find(|h| h["harness"] == "codex").unwrap();
    assert_eq!(cx["scopes"][0]["trust"], "trusted", "{cx}");
    let mcp = cx["scopes"][0]["entries"].as_array().unwrap().iter().find(|e| e["event"] == "mcp server").cloned();
    assert_eq!(mcp.as_ref().map(|e| e["state"].clone()), Some("ok".into()), "{cx}");
    // Codex itself sees ovmem's MCP server, as ovmem wrote it.
    let runtime = lab.home.join(".ovmem/bin/ovmem");
    let list = codex_mcp(&lab, &bin, &["list", "--json"]);
    let servers: serde_json::Value = serde_json::from_str(&list).unwrap();
    let ov = servers.as_array().unwrap().iter().find(|s| s["name"] == "ovmem").expect("ovmem in `codex mcp list`");
    assert_eq!(ov["enabled"], true, "{ov}");
    assert_eq!(ov["transport"]["command"].as_str(), runtime.to_str(), "{ov}");
    assert_eq!(ov["transport"]["args"], serde_json::json!(["mcp"]), "{ov}");
    let get: serde_json::Value = serde_json::from_str(&codex_mcp(&lab, &bin, &["get", "ovmem", "--json"])).unwrap();
    assert_eq!(get["transport"]["command"].as_str(), runtime.to_str(), "{get}");

    // No --dangerously-bypass-hook-trust: the hooks run because install trusted them.
    codex(&lab, &bin, FACT);
    assert_fired(&lab, "codex", &["SessionStart", "UserPromptSubmit", "Stop"], &["session_id", "hook_event_name"]);
    assert!(lab.memories().contains("BLUEHERON-7"));
    lab.clear_requests();
    codex(&lab, &bin, QUESTION);
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("session 2 reached the model");
    assert!(body_text(main).contains("BLUEHERON-7"), "memory not injected: {}", body_text(main));
    // Codex started `ovmem mcp` and offered its memory tools to the model.
    let tools = codex_tools(main);
    for t in ["memory_search", "memory_add", "memory_recent"] {
        assert!(tools.iter().any(|n| n.contains("ovmem") && n.ends_with(t)), "no ovmem {t} in {tools:?}");
    }

    lab.ovmem(&["uninstall", "--harness", "codex", "--yes"]);
    assert_eq!(std::fs::read_to_string(codex_home.join("config.toml")).unwrap(), config, "config.toml not restored");
    assert!(!codex_home.join("hooks.json").exists());
    let list: serde_json::Value = serde_json::from_str(&codex_mcp(&lab, &bin, &["list", "--json"])).unwrap();
    assert!(list.as_array().unwrap().iter().all(|s| s["name"] != "ovmem"), "still listed: {list}");
    lab.clear_fired();
    lab.clear_requests();
    codex(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("the session reached the model");
    assert!(codex_tools(main).iter().all(|n| !n.contains("ovmem")), "ovmem's tools still offered");
}

/// `codex mcp <args>` in the lab's home (offline): its stdout.
fn codex_mcp(lab: &Lab, bin: &Path, args: &[&str]) -> String {
    let out = Command::new("unshare")
        .args(["-n", bin.to_str().unwrap(), "mcp"])
        .args(args)
        .env_clear()
        .envs(lab.base_env())
        .current_dir(&lab.proj)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "codex mcp {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names of the tools a Codex request offers the model (functions and MCP namespaces).
fn codex_tools(req: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
        for t in v.as_array().into_iter().flatten() {
            let name = t["name"].as_str().or(t["function"]["name"].as_str()).unwrap_or_default();
            let full = if prefix.is_empty() { name.to_string() } else { format!("{prefix}{name}") };
            if !name.is_empty() {
                out.push(full.clone());
            }
            for k in ["tools", "functions"] {
                walk(&t[k], &format!("{full}."), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&req["body"]["tools"], "", &mut out);
    out
}

#[test]
fn cline_cli_captures_the_turn_and_another_harness_recalls_it() {
    let Some(cline) = cli("cline", "node_modules/.bin/cline") else { return };
    let Some(claude_bin) = cli("claude", "node_modules/.bin/claude") else { return };
    let mut lab = Lab::new(&[cline.parent().unwrap(), claude_bin.parent().unwrap()]);
    lab.extra_env.push(("CLINE_SESSION_BACKEND_MODE".into(), "local".into()));
    lab.extra_env.push(("CLINE_NO_AUTO_UPDATE".into(), "1".into()));
    let settings = lab.home.join(".cline/data/settings");
    std::fs::create_dir_all(&settings).unwrap();
    let providers = serde_json::json!({"version": 1, "lastUsedProvider": "openai-compatible", "modes": {}, "providers": {
        "openai-compatible": {"settings": {"provider": "openai-compatible", "apiKey": "sk-stub", "model": "stub-model",
            "baseUrl": format!("http://127.0.0.1:{}/v1", lab.port)}, "tokenSource": "manual", "updatedAt": "2026-11-29T00:00:00.000Z"}}});
    std::fs::write(settings.join("providers.json"), providers.to_string()).unwrap();

    lab.ovmem(&["install", "--harness", "cline,claude-code"]);
    assert!(lab.home.join("Documents/Cline/Hooks/TaskStart").exists());
    let out = lab.run(&["bash", "-c", &format!("{} \"$0\"; sleep 2", cline.display()), FACT], &[]);
    assert!(out.status.success(), "cline failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_fired(&lab, "cline", &["TaskStart", "TaskComplete"], &["taskId", "hookName", "workspaceRoots"]);
    assert_fired(&lab, "cline", &["TaskComplete"], &["turn"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "cline's turn was not captured: {}", lab.memories());
    // Cline's own hooks cannot inject (fire-and-forget): memory reaches it as MCP tools.
    let reqs = lab.requests();
    let chat = reqs
        .iter()
        .find(|r| r["path"].as_str().unwrap_or("").ends_with("/chat/completions"))
        .expect("cline reached the model");
    let tools: Vec<&str> = chat["body"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["function"]["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        tools.iter().any(|t| t.ends_with("memory_search")),
        "ovmem's MCP tools did not reach Cline's model: {tools:?}"
    );

    // The same project in Claude Code recalls what was said in Cline.
    lab.clear_requests();
    claude(&lab, &claude_bin, QUESTION);
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains(QUESTION)).expect("claude reached the model");
    assert!(body_text(main).contains("BLUEHERON-7"), "cline's memory not recalled in claude-code");

    lab.ovmem(&["uninstall", "--yes"]);
    assert!(!lab.home.join("Documents").exists(), "Cline hook dirs ovmem created were left behind");
}

fn gemini(lab: &Lab, bin: &Path, prompt: &str) -> Output {
    let url = format!("http://127.0.0.1:{}", lab.port);
    let out = lab.run(
        &[bin.to_str().unwrap(), "-p", prompt],
        &[("GEMINI_API_KEY", "stub"), ("GOOGLE_GEMINI_BASE_URL", &url), ("GEMINI_CLI_TRUST_WORKSPACE", "true")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gemini -p failed: {}\n{err}", String::from_utf8_lossy(&out.stdout));
    assert!(!err.contains("Invalid configuration"), "gemini rejected ovmem's settings: {err}");
    out
}

#[test]
fn gemini_cli_remembers_across_sessions() {
    let Some(bin) = cli("gemini", "node_modules/.bin/gemini") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    std::fs::create_dir_all(lab.home.join(".gemini")).unwrap();
    let settings = "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}\n}\n";
    std::fs::write(lab.home.join(".gemini/settings.json"), settings).unwrap();
    lab.ovmem(&["install", "--harness", "gemini-cli"]);

    gemini(&lab, &bin, FACT);
    assert_fired(
        &lab,
        "gemini-cli",
        &["SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"],
        &["session_id", "hook_event_name", "cwd"],
    );
    assert_fired(&lab, "gemini-cli", &["AfterAgent"], &["prompt_response"]);
    assert!(lab.memories().contains("BLUEHERON-7"), "the turn was not captured: {}", lab.memories());
    lab.clear_requests();
    gemini(&lab, &bin, QUESTION);
    let reqs = lab.requests();
    let main = reqs.iter().find(|r| body_text(r).contains(QUESTION) && body_text(r).contains("ovmem-memory"));
    assert!(main.is_some_and(|r| body_text(r).contains("BLUEHERON-7")), "memory not injected in session 2: {reqs:?}");

    // The URI guard: the model asks to read a memory URI; Gemini runs ovmem's BeforeTool hook, which
    // denies it, and the reason reaches the model in the tool's response.
    lab.clear_requests();
    gemini(&lab, &bin, "Please READ_URI:viking://user/memories/profile.md and summarise it");
    let fired = lab.fired();
    assert!(
        fired.iter().any(|(h, e, m)| h == "gemini-cli" && e == "BeforeTool" && m.starts_with("fired: deny")),
        "the guard did not deny: {fired:#?}"
    );
    let reqs = lab.requests();
    assert!(
        reqs.iter().any(|r| body_text(r).contains("functionResponse") && body_text(r).contains("memory URI")),
        "the deny reason did not reach the model"
    );

    lab.ovmem(&["uninstall", "--harness", "gemini-cli", "--yes"]);
    assert_eq!(std::fs::read_to_string(lab.home.join(".gemini/settings.json")).unwrap(), settings);
    lab.clear_fired();
    gemini(&lab, &bin, QUESTION);
    assert!(lab.fired().is_empty(), "hooks still fire after uninstall: {:?}", lab.fired());
}

/// What Codex's own app-server lists for `cwd`: (command, trust status), offline.
fn codex_listed(lab: &Lab, bin: &Path) -> Vec<(String, String)> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new("unshare")
        .args(["-n", bin.to_str().unwrap(), "app-server"])
        .env_clear()
        .envs(lab.base_env())
        .current_dir(&lab.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |id: u64, method: &str, params: serde_json::Value| -> serde_json::Value {
        let msg = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        loop {
            let v: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap_or_default();
            if v["id"] == id {
                return v["result"].clone();
            }
        }
    };
    call(1, "initialize", serde_json::json!({"clientInfo": {"name": "test", "version": "1"}}));
    let r = call(2, "hooks/list", serde_json::json!({"cwds": [lab.home]}));
    let _ = child.kill();
    let _ = child.wait();
    r["data"][0]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["command"].as_str().unwrap().to_string(), h["trustStatus"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn codex_trust_is_given_only_to_the_exact_hooks_ovmem_wrote() {
    use std::os::unix::fs::PermissionsExt;
    let Some(bin) = cli("codex", "node_modules/.bin/codex") else { return };
    let lab = Lab::new(&[bin.parent().unwrap()]);
    let codex_home = lab.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = CODEX_CONFIG.replace("PORT", &lab.port.to_string());
    let config_path = codex_home.join("config.toml");
    std::fs::write(&config_path, &config).unwrap();
    std::fs::set_permissions(&config_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Hooks of the user's own that are merely named like ovmem's.
    let mine = [
        "./tools/ovmem hook codex PostToolUse",
        "/opt/tools/bin/ovmem hook codex PostToolUse",
        "/usr/local/bin/ovmem hook codex Stop --verbose",
        "ovmem hook codex UserPromptSubmit",
    ];
    let hooks = serde_json::json!({"hooks": {
        "PostToolUse": [{"hooks": [{"type": "command", "command": mine[0]}, {"type": "command", "command": mine[1]}]}],
        "Stop": [{"hooks": [{"type": "command", "command": mine[2]}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": mine[3]}]}],
    }});
    let original = serde_json::to_string_pretty(&hooks).unwrap() + "\n";
    std::fs::write(codex_home.join("hooks.json"), &original).unwrap();

    let out = lab.ovmem(&["install", "--harness", "codex"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trusted 5 ovmem hook(s)"), "{err}");
    let listed = codex_listed(&lab, &bin);
    let runtime = lab.home.join(".ovmem/bin/ovmem");
    for (cmd, trust) in &listed {
        let ours = cmd.starts_with(&format!("{} hook codex ", runtime.display()));
        assert_eq!(trust == "trusted", ours, "{cmd}: {trust}");
    }
    assert_eq!(listed.iter().filter(|(_, t)| t == "trusted").count(), 5, "{listed:?}");
    assert_eq!(listed.len(), 5 + mine.len(), "{listed:?}");
    // The trust edit kept the file's mode.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&config_path), 0o644);

    // A reinstall that changes nothing says so, and trusts nothing new.
    let out = lab.ovmem(&["install", "--harness", "codex"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already trusted") && !err.contains("trusted 5"), "{err}");

    lab.ovmem(&["uninstall", "--harness", "codex", "--yes"]);
    assert_eq!(std::fs::read_to_string(&config_path).unwrap(), config, "config.toml not restored");
    assert_eq!(mode(&config_path), 0o644);
    assert_eq!(std::fs::read_to_string(codex_home.join("hooks.json")).unwrap(), original);
    assert!(codex_listed(&lab, &bin).iter().all(|(_, t)| t != "trusted"));
}

/// ovmem's MCP server and its hook trust records share Codex's `config.toml`, whatever the user's
/// file looks like: install, reinstall and uninstall with the real Codex app-server trusting the
/// hooks, on configs with comments, a server of the user's own, a server of the user's named
/// `ovmem` (left alone, reported), CRLF with a BOM and no final newline.
#[test]
fn codex_mcp_and_trust_records_share_config_toml_byte_exactly() {
    let Some(bin) = cli("codex", "node_modules/.bin/codex") else { return };
    let base = CODEX_CONFIG.replace("PORT", "1");
    let variants: Vec<(&str, String)> = vec![
        ("comments", base.clone()),
        (
            "other-server",
            format!("{base}\n# my own server\n[mcp_servers.other]\ncommand = \"/usr/bin/true\"  # pinned\nargs = []\n"),
        ),
        ("their-ovmem", format!("{base}\n[mcp_servers.ovmem]\ncommand = \"/usr/bin/true\"\nargs = [\"serve\"]\n")),
        ("crlf-bom-no-final-newline", format!("\u{feff}{}", base.trim_end().replace('\n', "\r\n"))),
    ];
    for (name, config) in variants {
        let lab = Lab::new(&[bin.parent().unwrap()]);
        let path = lab.home.join(".codex/config.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &config).unwrap();
        let out = lab.ovmem(&["install", "--harness", "codex"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("trusted 5 ovmem hook(s)"), "{name}: {err}");
        let text = std::fs::read_to_string(&path).unwrap();
        let values: toml::Table = text.trim_start_matches('\u{feff}').parse().unwrap();
        assert_eq!(values["hooks"]["state"].as_table().unwrap().len(), 5, "{name}: {text}");
        let listed: serde_json::Value = serde_json::from_str(&codex_mcp(&lab, &bin, &["list", "--json"])).unwrap();
        let ov = listed.as_array().unwrap().iter().find(|s| s["name"] == "ovmem").cloned().unwrap_or_default();
        if name == "their-ovmem" {
            assert!(err.contains("not ovmem's"), "{name}: the conflict was not reported: {err}");
            assert_eq!(ov["transport"]["command"], "/usr/bin/true", "{name}: their server was replaced");
        } else {
            let runtime = lab.home.join(".ovmem/bin/ovmem");
            assert_eq!(ov["transport"]["command"].as_str(), runtime.to_str(), "{name}: {listed}");
            assert!(text.starts_with(&config), "{name}: the user's bytes moved:\n{text}");
        }
        if name.starts_with("crlf") {
            assert!(!text.replace("\r\n", "").contains('\n'), "{name}: a bare LF in a CRLF file: {text:?}");
        }
        // A reinstall changes nothing and trusts nothing new.
        let out = lab.ovmem(&["install", "--harness", "codex"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("already trusted"), "{name}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{name}: a reinstall changed config.toml");
        lab.ovmem(&["uninstall", "--harness", "codex", "--yes"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), config, "{name}: config.toml not restored");
        // Codex keeps its own state beside; of ovmem's files (hooks, backups) nothing is left.
        for f in ["hooks.json", "config.toml.bak", "config.toml.ovmem.bak"] {
            assert!(!path.with_file_name(f).exists(), "{name}: {f} left behind");
        }
    }
}
