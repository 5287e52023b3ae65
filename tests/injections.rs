//! Inject what is new: within one session a memory already injected is not injected again while
//! it is still in the agent's context; after the harness compacts or clears that context it may
//! be again. Driven through Claude Code's real hook events against a throwaway home.

mod common;

use common::claude::{context, Project};
use serde_json::json;

fn taught() -> Project {
    let p = Project::new();
    p.turn(
        "teach",
        "How do deploys work here? Jenkins on ci.internal:8080 builds the release branch",
        "Deploys go through Jenkins on ci.internal:8080; the deploy job promotes the release branch to production.",
    );
    p
}

#[test]
fn three_prompts_on_one_topic_inject_the_block_once_until_a_compaction() {
    let p = taught();
    let first = p.ask("work", "Which host runs the Jenkins deploy job?");
    assert!(first.contains("ci.internal:8080"), "{first}");
    let second = p.ask("work", "Remind me about the Jenkins deploy job host");
    let third = p.ask("work", "Is the Jenkins deploy job still on that host?");
    assert!(!second.contains("ci.internal:8080") && !third.contains("ci.internal:8080"), "{second}\n---\n{third}");
    // Another session has not seen it.
    assert!(p.ask("other", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
    // Claude Code compacted the conversation: what was injected is gone from the context.
    let started = context(&p.hook("SessionStart", "work", json!({"source": "compact"})));
    let after = p.ask("work", "Which host runs the Jenkins deploy job again?");
    let shown = [&started, &after].iter().filter(|c| c.contains("ci.internal:8080")).count();
    assert_eq!(shown, 1, "injected again, once, after the compaction: {started}\n---\n{after}");
    // A resumed session still holds what it was given.
    p.hook("SessionStart", "other", json!({"source": "resume"}));
    assert!(!p.ask("other", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
}

#[test]
fn a_cleared_context_may_be_given_the_memory_again() {
    let p = taught();
    assert!(p.ask("s", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
    assert!(!p.ask("s", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
    // After `/clear` the session start gives it again, and the next prompt does not repeat it.
    let cleared = context(&p.hook("SessionStart", "s", json!({"source": "clear"})));
    let next = p.ask("s", "Which host runs the Jenkins deploy job?");
    assert!(cleared.contains("ci.internal:8080") && !next.contains("ci.internal:8080"), "{cleared}\n---\n{next}");
}

#[test]
fn each_injection_is_recorded_with_ids_and_size_never_text() {
    let p = taught();
    let ctx = p.ask("work", "Which host runs the Jenkins deploy job?");
    assert!(!ctx.is_empty());
    p.hook("SessionStart", "work", json!({"source": "compact"}));
    let db = rusqlite::Connection::open(p.home.join(".ovmem/memory.db")).unwrap();
    let rows: Vec<(String, Option<String>, String, i64)> = db
        .prepare("SELECT event, session, memory_ids, chars FROM injections ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let ids: i64 = db.query_row("SELECT id FROM memories", [], |r| r.get(0)).unwrap();
    assert_eq!(rows[0], ("prompt".into(), Some("work".into()), format!("[{ids}]"), ctx.chars().count() as i64));
    assert_eq!(rows[1].0, "reset:compact");
    let all: String = rows.iter().map(|r| format!("{r:?}")).collect();
    assert!(!all.contains("Jenkins"), "{all}");
}

#[test]
fn a_pre_compact_hook_marks_the_context_as_new() {
    let p = taught();
    assert!(p.ask("s", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
    assert!(!p.ask("s", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
    assert_eq!(p.hook("PreCompact", "s", json!({"trigger": "auto"})), json!({}));
    assert!(p.ask("s", "Which host runs the Jenkins deploy job?").contains("ci.internal:8080"));
}

#[test]
fn gemini_cli_s_pre_compress_marks_the_context_as_new() {
    let p = taught();
    let gemini = |event: &str, fields: serde_json::Value| {
        let mut stdin = json!({"session_id": "g", "cwd": p.dir, "hook_event_name": event});
        stdin.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
        let r = common::run_in(&p.home, &p.dir, &["hook", "gemini-cli", event], stdin.to_string().as_bytes(), &[]);
        assert_eq!(r.code, 0);
        context(&serde_json::from_str(&r.out).unwrap())
    };
    let ask = || gemini("BeforeAgent", json!({"prompt": "Which host runs the Jenkins deploy job?"}));
    assert!(ask().contains("ci.internal:8080"));
    assert!(!ask().contains("ci.internal:8080"));
    gemini("PreCompress", json!({"trigger": "auto"}));
    assert!(ask().contains("ci.internal:8080"));
}
