//! The connection settings of the memory integrations `ovmem migrate` replaces, read into the
//! equivalent backend [`Choice`], so a user's existing memory is still there after migrating:
//!
//! - hindsight-cline: `settings.json` beside its hook files, overridden by `~/.hindsight/cline.json`
//!   (camelCase keys `hindsightApiUrl`, `hindsightApiToken`, `bankId`, `bankIdPrefix`,
//!   `dynamicBankId`, `dynamicBankGranularity`, `agentName`, `apiPort`);
//! - Hindsight coding-agents: `$HINDSIGHT_CONFIG` or `~/.hindsight/coding-agent.json`
//!   (`serverMode` cloud | self-hosted | daemon, `apiUrl`, `apiToken`, `apiPort`, `bankId`,
//!   `dynamicBankId`), and the older per-agent `~/.hindsight/claude-code.json` / `codex.json`
//!   (`hindsightApiUrl`, `hindsightApiToken`, `bankId`);
//! - OpenViking's plugins: `$OPENVIKING_CLI_CONFIG_FILE` or `~/.openviking/ovcli.conf` (`url`,
//!   `api_key`, `account`/`account_id`, `user`/`user_id`), else the client part of `ov.conf`.
//!
//! Where the old tool derived a bank per project (a template ovmem cannot express), the choice has
//! no bank (ovmem's team bank applies) and a note says which banks hold the old memories.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use super::{Choice, Secret};
use crate::env::Env;

/// Hindsight Cloud, the coding-agents' default server.
pub const HINDSIGHT_CLOUD: &str = "https://api.hindsight.vectorize.io";
const HINDSIGHT_DAEMON_PORT: u64 = 9077;
const OPENVIKING_DEFAULT: &str = "http://127.0.0.1:1933";

/// A legacy integration's server settings.
#[derive(Debug, Clone)]
pub struct Found {
    /// The files read, most important first.
    pub sources: Vec<PathBuf>,
    pub choice: Choice,
    /// What the user should know (a bank ovmem could not carry over, a default that was assumed).
    pub notes: Vec<String>,
}

fn read_json(path: &Path) -> Result<Option<Map<String, Value>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("could not read `{}`", path.display())),
    };
    // No serde error text: it can quote the file, and these files hold tokens.
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "`{}` is not valid JSON (line {}); its settings were not carried over",
            path.display(),
            e.line()
        )
    })?;
    match value {
        Value::Object(m) => Ok(Some(m)),
        _ => anyhow::bail!("`{}` is not a JSON object; its settings were not carried over", path.display()),
    }
}

fn text(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

fn flag(m: &Map<String, Value>, key: &str) -> Option<bool> {
    m.get(key).and_then(Value::as_bool)
}

fn port(m: &Map<String, Value>) -> u64 {
    m.get("apiPort").and_then(|p| p.as_u64().or_else(|| p.as_str()?.parse().ok())).unwrap_or(HINDSIGHT_DAEMON_PORT)
}

/// hindsight-cline, from the `settings.json` beside its hook files (in `.clinerules/hooks/` or
/// the global Cline hooks folder), with `~/.hindsight/cline.json` on top as hindsight-cline does.
pub fn hindsight_cline(settings_json: &Path, env: &Env) -> Result<Option<Found>> {
    let user_file = env.home.join(".hindsight").join("cline.json");
    let mut merged = Map::new();
    let mut sources = Vec::new();
    for path in [settings_json, user_file.as_path()] {
        if let Some(m) = read_json(path)? {
            for (k, v) in m {
                if !v.is_null() {
                    merged.insert(k, v);
                }
            }
            sources.insert(0, path.to_path_buf());
        }
    }
    if sources.is_empty() {
        return Ok(None);
    }
    let mut notes = Vec::new();
    let url = match text(&merged, "hindsightApiUrl") {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => {
            let p = port(&merged);
            notes.push(format!("hindsight-cline had no server URL and used a Hindsight server on localhost:{p}"));
            format!("http://localhost:{p}")
        }
    };
    let prefix = text(&merged, "bankIdPrefix");
    let with_prefix = |b: String| match &prefix {
        Some(p) => format!("{p}-{b}"),
        None => b,
    };
    let bank = if flag(&merged, "dynamicBankId") == Some(true) {
        let fields: Vec<String> = merged
            .get("dynamicBankGranularity")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .filter(|v: &Vec<String>| !v.is_empty())
            .unwrap_or_else(|| vec!["agent".into(), "project".into()]);
        let agent = text(&merged, "agentName").unwrap_or_else(|| "cline".into());
        let shape = fields
            .iter()
            .map(|f| match f.as_str() {
                "agent" => agent.clone(),
                other => format!("<{other}>"),
            })
            .collect::<Vec<_>>()
            .join("::");
        notes.push(format!(
            "hindsight-cline kept a bank per {} (`{}`); ovmem uses one team bank per repository instead, so set `bank` under [backend] to keep recalling one of those",
            fields.join(" and "),
            with_prefix(shape)
        ));
        None
    } else {
        Some(with_prefix(text(&merged, "bankId").unwrap_or_else(|| "cline".into())))
    };
    Ok(Some(Found {
        sources,
        choice: Choice::Hindsight { url, token: text(&merged, "hindsightApiToken").map(Secret::new), bank },
        notes,
    }))
}

/// Hindsight's coding-agents package: `$HINDSIGHT_CONFIG` or `~/.hindsight/coding-agent.json`.
pub fn hindsight_coding_agents(env: &Env) -> Result<Option<Found>> {
    let path =
        env.var("HINDSIGHT_CONFIG").map(PathBuf::from).unwrap_or_else(|| env.home.join(".hindsight/coding-agent.json"));
    let Some(m) = read_json(&path)? else { return Ok(None) };
    let mut notes = Vec::new();
    let url = match text(&m, "serverMode").as_deref() {
        Some("daemon") => {
            let p = port(&m);
            notes.push(format!(
                "the coding-agents daemon listens on 127.0.0.1:{p}; it must be running for ovmem to reach it"
            ));
            format!("http://127.0.0.1:{p}")
        }
        Some("cloud") => text(&m, "apiUrl").unwrap_or_else(|| HINDSIGHT_CLOUD.into()),
        _ => match text(&m, "apiUrl") {
            Some(u) => u,
            None => {
                notes.push(format!("no apiUrl: the coding-agents default, Hindsight Cloud ({HINDSIGHT_CLOUD})"));
                HINDSIGHT_CLOUD.into()
            }
        },
    };
    let bank = match (text(&m, "bankId"), flag(&m, "dynamicBankId")) {
        (Some(b), d) if d != Some(true) => Some(b),
        _ => {
            notes.push(
                "coding-agents kept one bank per repository (`coding-agent::<repository folder>`); ovmem's team bank is named from the git remote, so set `bank` under [backend] to keep recalling one of those".into(),
            );
            None
        }
    };
    Ok(Some(Found {
        sources: vec![path],
        choice: Choice::Hindsight {
            url: url.trim_end_matches('/').to_string(),
            token: text(&m, "apiToken").map(Secret::new),
            bank,
        },
        notes,
    }))
}

/// The older per-agent Hindsight plugins: `~/.hindsight/<agent>.json` (`claude-code`, `codex`).
pub fn hindsight_agent_plugin(env: &Env, agent: &str) -> Result<Option<Found>> {
    let path = env.home.join(".hindsight").join(format!("{agent}.json"));
    let Some(m) = read_json(&path)? else { return Ok(None) };
    let mut notes = Vec::new();
    let url = match text(&m, "hindsightApiUrl") {
        Some(u) => u,
        None => {
            let p = port(&m);
            notes.push(format!("the {agent} plugin had no server URL and used its local daemon on 127.0.0.1:{p}"));
            format!("http://127.0.0.1:{p}")
        }
    };
    let default_bank = agent.replace('-', "_");
    Ok(Some(Found {
        sources: vec![path],
        choice: Choice::Hindsight {
            url: url.trim_end_matches('/').to_string(),
            token: text(&m, "hindsightApiToken").map(Secret::new),
            bank: Some(text(&m, "bankId").unwrap_or(default_bank)),
        },
        notes,
    }))
}

/// OpenViking's plugins: ovcli.conf, else the client side of ov.conf.
pub fn openviking(env: &Env) -> Result<Option<Found>> {
    let ov_home = env.var("OPENVIKING_HOME").map(PathBuf::from).unwrap_or_else(|| env.home.join(".openviking"));
    let cli = env.var("OPENVIKING_CLI_CONFIG_FILE").map(PathBuf::from).unwrap_or_else(|| ov_home.join("ovcli.conf"));
    let server_conf = env.var("OPENVIKING_CONFIG_FILE").map(PathBuf::from).unwrap_or_else(|| ov_home.join("ov.conf"));
    if let Some(m) = read_json(&cli)? {
        return Ok(Some(from_ovcli(cli, &m)));
    }
    let Some(m) = read_json(&server_conf)? else { return Ok(None) };
    let ovcli_shaped =
        !m.contains_key("server") && ["url", "api_key", "account", "user"].iter().any(|k| m.contains_key(*k));
    if ovcli_shaped {
        return Ok(Some(from_ovcli(server_conf, &m)));
    }
    let server = m.get("server").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut notes = Vec::new();
    let url = text(&server, "url").unwrap_or_else(|| {
        let host = text(&server, "host").filter(|h| h != "0.0.0.0").unwrap_or_else(|| "127.0.0.1".into());
        let port = server.get("port").and_then(Value::as_u64).unwrap_or(1933);
        format!("http://{host}:{port}")
    });
    let key = m.get("codex").and_then(|c| c.get("apiKey")).and_then(Value::as_str).filter(|k| !k.trim().is_empty());
    if key.is_none() && text(&server, "root_api_key").is_some() {
        notes.push(
            "ov.conf has only the server's root key, which cannot read memories; give a user key with --api-key".into(),
        );
    }
    Ok(Some(Found {
        sources: vec![server_conf],
        choice: Choice::Openviking {
            url: url.trim_end_matches('/').to_string(),
            api_key: key.map(|k| Secret::new(k.trim())),
            user: None,
            account: None,
        },
        notes,
    }))
}

fn from_ovcli(path: PathBuf, m: &Map<String, Value>) -> Found {
    let mut notes = Vec::new();
    let url = text(m, "url").unwrap_or_else(|| {
        notes.push(format!("no url in ovcli.conf: OpenViking's default, {OPENVIKING_DEFAULT}"));
        OPENVIKING_DEFAULT.into()
    });
    Found {
        sources: vec![path],
        choice: Choice::Openviking {
            url: url.trim_end_matches('/').to_string(),
            api_key: text(m, "api_key").map(Secret::new),
            user: text(m, "user").or_else(|| text(m, "user_id")),
            account: text(m, "account").or_else(|| text(m, "account_id")),
        },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(home: &Path, vars: &[(&str, &str)]) -> Env {
        let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        map.insert("HOME".into(), home.to_string_lossy().into_owned());
        Env::from_vars(map).unwrap()
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn hindsight(found: &Found) -> (&str, Option<&str>, Option<&str>) {
        match &found.choice {
            Choice::Hindsight { url, token, bank } => (url, token.as_ref().map(Secret::expose), bank.as_deref()),
            other => panic!("not Hindsight: {other:?}"),
        }
    }

    /// The settings.json hindsight-cline ships (its defaults), as installed beside the hooks.
    const CLINE_DEFAULTS: &str = r#"{
  "version": "0.1.0",
  "hindsightApiUrl": "",
  "hindsightApiToken": null,
  "bankId": "cline",
  "bankMission": "You are a Cline AI coding assistant.",
  "autoRecall": true,
  "recallBudget": "mid",
  "recallMaxTokens": 1024,
  "retainContext": "cline",
  "retainTags": ["{task_id}"],
  "apiPort": 9077,
  "bankIdPrefix": "",
  "dynamicBankId": false,
  "dynamicBankGranularity": ["agent", "project"],
  "agentName": "cline",
  "debug": false
}"#;

    #[test]
    fn cline_defaults_mean_the_local_server_and_the_cline_bank() {
        let t = tempfile::tempdir().unwrap();
        let settings = t.path().join("proj/.clinerules/hooks/settings.json");
        write(&settings, CLINE_DEFAULTS);
        let found = hindsight_cline(&settings, &env(t.path(), &[])).unwrap().unwrap();
        assert_eq!(hindsight(&found), ("http://localhost:9077", None, Some("cline")));
        assert_eq!(found.sources, vec![settings]);
        assert!(found.notes[0].contains("localhost:9077"));
    }

    #[test]
    fn cline_user_config_overrides_the_hook_settings() {
        let t = tempfile::tempdir().unwrap();
        let settings = t.path().join("Documents/Cline/Hooks/settings.json");
        write(&settings, CLINE_DEFAULTS);
        let user = t.path().join(".hindsight/cline.json");
        write(
            &user,
            r#"{"hindsightApiUrl": "https://mem.example.com/", "hindsightApiToken": "hs_tok_1", "bankId": "team", "bankIdPrefix": "acme"}"#,
        );
        let found = hindsight_cline(&settings, &env(t.path(), &[])).unwrap().unwrap();
        assert_eq!(hindsight(&found), ("https://mem.example.com", Some("hs_tok_1"), Some("acme-team")));
        assert_eq!(found.sources, vec![user, settings]);
        assert!(found.notes.is_empty());
        assert!(!format!("{found:?}").contains("hs_tok_1"), "the token stays out of Debug");
    }

    #[test]
    fn cline_dynamic_banks_cannot_be_carried_and_say_so() {
        let t = tempfile::tempdir().unwrap();
        let settings = t.path().join("h/settings.json");
        write(
            &settings,
            r#"{"hindsightApiUrl": "http://h:8888", "dynamicBankId": true, "dynamicBankGranularity": ["agent", "project"]}"#,
        );
        let found = hindsight_cline(&settings, &env(t.path(), &[])).unwrap().unwrap();
        assert_eq!(hindsight(&found), ("http://h:8888", None, None));
        assert!(found.notes[0].contains("`cline::<project>`"), "{:?}", found.notes);
    }

    #[test]
    fn unreadable_files_are_errors_that_do_not_quote_them() {
        let t = tempfile::tempdir().unwrap();
        let settings = t.path().join("h/settings.json");
        write(&settings, "{\"hindsightApiToken\": \"hs_secret_2\",\n oops");
        let err = format!("{:#}", hindsight_cline(&settings, &env(t.path(), &[])).unwrap_err());
        assert!(err.contains("not valid JSON (line 2)") && !err.contains("hs_secret_2"), "{err}");
        assert!(hindsight_cline(&t.path().join("none.json"), &env(t.path(), &[])).unwrap().is_none());
    }

    #[test]
    fn coding_agents_modes() {
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join(".hindsight/coding-agent.json");
        let e = env(t.path(), &[]);
        write(&cfg, r#"{"serverMode": "self-hosted", "apiUrl": "http://mem.lan:8888", "apiToken": "tok"}"#);
        let found = hindsight_coding_agents(&e).unwrap().unwrap();
        assert_eq!(hindsight(&found), ("http://mem.lan:8888", Some("tok"), None));
        assert!(found.notes.iter().any(|n| n.contains("coding-agent::")), "{:?}", found.notes);
        write(&cfg, r#"{"serverMode": "cloud", "apiToken": "tok", "bankId": "mine"}"#);
        assert_eq!(
            hindsight(&hindsight_coding_agents(&e).unwrap().unwrap()),
            (HINDSIGHT_CLOUD, Some("tok"), Some("mine"))
        );
        write(&cfg, r#"{"serverMode": "daemon", "apiPort": 9188, "bankId": "x", "dynamicBankId": true}"#);
        assert_eq!(hindsight(&hindsight_coding_agents(&e).unwrap().unwrap()), ("http://127.0.0.1:9188", None, None));
        let other = t.path().join("elsewhere.json");
        write(&other, r#"{"apiUrl": "http://o:1"}"#);
        let found =
            hindsight_coding_agents(&env(t.path(), &[("HINDSIGHT_CONFIG", other.to_str().unwrap())])).unwrap().unwrap();
        assert_eq!(found.sources, vec![other]);
    }

    #[test]
    fn older_agent_plugins() {
        let t = tempfile::tempdir().unwrap();
        let e = env(t.path(), &[]);
        write(
            &t.path().join(".hindsight/claude-code.json"),
            r#"{"hindsightApiUrl": "http://h:1", "hindsightApiToken": "t"}"#,
        );
        assert_eq!(
            hindsight(&hindsight_agent_plugin(&e, "claude-code").unwrap().unwrap()),
            ("http://h:1", Some("t"), Some("claude_code"))
        );
        write(&t.path().join(".hindsight/codex.json"), r#"{"bankId": "codex", "apiPort": 9100}"#);
        assert_eq!(
            hindsight(&hindsight_agent_plugin(&e, "codex").unwrap().unwrap()),
            ("http://127.0.0.1:9100", None, Some("codex"))
        );
    }

    #[test]
    fn openviking_ovcli_and_ov_conf() {
        let t = tempfile::tempdir().unwrap();
        let e = env(t.path(), &[]);
        assert!(openviking(&e).unwrap().is_none());
        let conf = t.path().join(".openviking/ov.conf");
        write(&conf, r#"{"server": {"host": "0.0.0.0", "port": 1999, "root_api_key": "root"}, "storage": {}}"#);
        let found = openviking(&e).unwrap().unwrap();
        match &found.choice {
            Choice::Openviking { url, api_key, .. } => {
                assert_eq!((url.as_str(), api_key.is_none()), ("http://127.0.0.1:1999", true))
            }
            other => panic!("{other:?}"),
        }
        assert!(found.notes[0].contains("root key"), "{:?}", found.notes);
        let cli = t.path().join(".openviking/ovcli.conf");
        write(
            &cli,
            r#"{"url": "https://ov.example.com/", "api_key": "YWNtZQ.b3Zt.abc", "account_id": "acme", "user": "ann"}"#,
        );
        let found = openviking(&e).unwrap().unwrap();
        match &found.choice {
            Choice::Openviking { url, api_key, user, account } => {
                assert_eq!(url, "https://ov.example.com");
                assert_eq!(api_key.as_ref().unwrap().expose(), "YWNtZQ.b3Zt.abc");
                assert_eq!((user.as_deref(), account.as_deref()), (Some("ann"), Some("acme")));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(found.sources, vec![cli]);
        // OPENVIKING_CONFIG_FILE pointing at an ovcli-shaped file counts as ovcli.conf.
        let odd = t.path().join("client.json");
        write(&odd, r#"{"url": "http://o:2", "api_key": "k"}"#);
        let e2 =
            env(t.path(), &[("OPENVIKING_CONFIG_FILE", odd.to_str().unwrap()), ("OPENVIKING_HOME", "/nonexistent")]);
        assert!(
            matches!(openviking(&e2).unwrap().unwrap().choice, Choice::Openviking { ref url, .. } if url == "http://o:2")
        );
    }
}
