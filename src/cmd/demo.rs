//! `ovmem demo`: two sessions of one harness, simulated through the real hook path (this very
//! binary, spawned as the harness would) against a throwaway store and project, so a newcomer
//! sees what is captured and what is injected.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Map, Value};

use crate::harness::{self, Adapter, Canonical};
use crate::output::Printer;

#[derive(Args)]
pub struct DemoArgs {
    /// The harness whose payloads to simulate
    #[arg(long, default_value = "claude-code")]
    pub harness: String,
}

/// Sets a dotted path (numeric parts index arrays) in a JSON object.
pub fn set(root: &mut Value, path: &str, v: Value) {
    let parts: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let next_is_index = parts.get(i + 1).is_some_and(|p| p.parse::<usize>().is_ok());
        let fresh = || if next_is_index { Value::Array(Vec::new()) } else { Value::Object(Map::new()) };
        cur = match part.parse::<usize>() {
            Ok(idx) => {
                let arr = cur.as_array_mut().expect("index into an array");
                while arr.len() <= idx {
                    arr.push(Value::Null);
                }
                if last {
                    arr[idx] = v;
                    return;
                }
                if arr[idx].is_null() {
                    arr[idx] = fresh();
                }
                &mut arr[idx]
            }
            Err(_) => {
                let obj = cur.as_object_mut().expect("key into an object");
                if last {
                    obj.insert(part.to_string(), v);
                    return;
                }
                obj.entry(part.to_string()).or_insert_with(fresh)
            }
        };
    }
}

/// A payload in the harness's own field names, built from its adapter's first aliases.
pub fn payload(
    a: &Adapter,
    session: &str,
    cwd: &Path,
    prompt: Option<&str>,
    reply: Option<&str>,
    scratch: &Path,
) -> Value {
    let mut v = Value::Object(Map::new());
    let mut put = |aliases: &[String], val: Option<&str>| {
        if let (Some(path), Some(val)) = (aliases.iter().find(|p| *p != "."), val) {
            set(&mut v, path, Value::String(val.to_string()));
        }
    };
    put(&a.fields.session, Some(session));
    put(&a.fields.cwd, Some(&cwd.to_string_lossy()));
    put(&a.fields.prompt, prompt);
    put(&a.fields.reply, reply);
    // A harness that sends no reply, only its transcript: the turn goes into a transcript file.
    if let Some(reply) = reply.filter(|_| !a.fields.reply.iter().any(|p| p != ".")) {
        let path = scratch.join(format!("transcript-{session}.jsonl"));
        let line = |role: &str, text: &str| {
            serde_json::json!({"role": role, "message": {"content": [{"type": "text", "text": text}]}}).to_string()
        };
        let text = format!("{}\n{}\n", line("user", prompt.unwrap_or("")), line("assistant", reply));
        if std::fs::write(&path, text).is_ok() {
            put(&a.fields.transcript, Some(&path.to_string_lossy()));
        }
    }
    v
}

/// The first event of the manifest (in its order) that maps to `kind`.
fn native<'a>(h: &'a harness::Harness, a: &Adapter, kind: Canonical) -> Option<&'a str> {
    h.manifest.hooks.iter().map(|hk| hk.event.as_str()).find(|e| a.events.get(*e) == Some(&kind))
}

fn hook(exe: &Path, home: &Path, cwd: &Path, harness: &str, event: &str, payload: &Value) -> Result<String> {
    let mut child = Command::new(exe)
        .args(["hook", harness, event])
        .env("OVMEM_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("could not run the hook")?;
    {
        let _pipe = crate::interrupt::PipeGuard::new();
        // A hook that exits without reading its input is the hook's answer, not an error here.
        let _ = child.stdin.take().expect("piped").write_all(payload.to_string().as_bytes());
    }
    let out = child.wait_with_output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn run(args: DemoArgs) -> Result<i32> {
    let Some(h) = harness::find(&args.harness) else {
        let e = harness::UnknownHarness::one(&args.harness);
        return Err(super::Refusal(e.to_string()).into());
    };
    let a = h.adapter()?;
    let p = Printer::new();
    let exe = std::env::current_exe()?;
    let tmp = tempdir()?;
    let home = tmp.join("ovmem-home");
    let project = tmp.join("acme-api");
    std::fs::create_dir_all(project.join(".git"))?;
    let (start, prompt, stop) =
        (native(h, &a, Canonical::SessionStart), native(h, &a, Canonical::Prompt), native(h, &a, Canonical::Stop));
    let id = h.id();
    let fact = "Remember for later: the staging database listens on port 5433, and integration tests must use it.";
    let question = "Which port should the integration tests use for the staging database?";

    println!(
        "{}",
        p.bold(&format!("ovmem demo: two {} sessions in one project, through the real hook path", h.manifest.name))
    );
    println!("{}", p.dim(&format!("(throwaway store in `{}`)", home.display())));
    println!("\n{} the user says: {fact:?}", p.bold("session 1"));
    if let Some(e) = start {
        hook(&exe, &home, &project, id, e, &payload(&a, "demo-session-1", &project, None, None, &tmp))?;
    }
    if let Some(e) = prompt {
        hook(&exe, &home, &project, id, e, &payload(&a, "demo-session-1", &project, Some(fact), None, &tmp))?;
    }
    let reply = "Noted: staging database on port 5433 for integration tests.";
    let stop_prompt = if prompt.is_none() { Some(fact) } else { None };
    if let Some(e) = stop {
        hook(&exe, &home, &project, id, e, &payload(&a, "demo-session-1", &project, stop_prompt, Some(reply), &tmp))?;
    }
    let store = crate::store::Store::open(&home.join("memory.db"), std::time::Duration::from_secs(2))?;
    let captured = store.list(None, None)?;
    println!("  {} hook captured {} memory:", stop.unwrap_or("stop"), captured.len());
    for m in &captured {
        for l in m.content().lines() {
            println!("    {}", p.dim(l));
        }
    }
    println!("\n{} the user asks: {question:?}", p.bold("session 2"));
    let injecting = [prompt, start].into_iter().flatten().find(|e| a.inject_events.iter().any(|x| x == e));
    let Some(ev) = injecting else {
        println!(
            "  {}'s start and prompt hooks cannot inject context: memory reaches it through the MCP tools (`ovmem mcp`)",
            h.manifest.name
        );
        let _ = std::fs::remove_dir_all(&tmp);
        return Ok(0);
    };
    let out =
        hook(&exe, &home, &project, id, ev, &payload(&a, "demo-session-2", &project, Some(question), None, &tmp))?;
    println!("  {ev} hook printed (what {} receives):", h.manifest.name);
    let pretty =
        serde_json::from_str::<Value>(&out).ok().and_then(|v| serde_json::to_string_pretty(&v).ok()).unwrap_or(out);
    for l in pretty.lines() {
        println!("    {l}");
    }
    let other = tmp.join("other-project");
    std::fs::create_dir_all(other.join(".git"))?;
    let elsewhere =
        hook(&exe, &home, &other, id, ev, &payload(&a, "demo-session-3", &other, Some(question), None, &tmp))?;
    println!("\n{} the same question in another project gets: {}", p.bold("isolation:"), elsewhere);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(0)
}

fn tempdir() -> Result<std::path::PathBuf> {
    let base = std::env::temp_dir().join(format!("ovmem-demo-{}-{}", std::process::id(), crate::store::now()));
    std::fs::create_dir_all(&base)?;
    Ok(base)
}
