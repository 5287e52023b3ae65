//! Snapshots of every harness's rendered hook entries, with a fixed runtime path, so any change
//! to a template or manifest is a reviewable diff.

use std::path::Path;

use ovmem::harness::{self, Placeholders};

#[test]
fn rendered_templates() {
    for h in harness::all() {
        let mut out = String::new();
        for hook in &h.manifest.hooks {
            let name = match (&hook.matcher, &h.manifest.template_with_matcher) {
                (Some(_), Some(t)) => t.clone(),
                _ => h.manifest.template.clone(),
            };
            let p = Placeholders {
                bin: Path::new("/home/dev/.ovmem/bin/ovmem"),
                harness: h.id(),
                event: &hook.event,
                timeout: hook.timeout.unwrap_or(30),
                matcher: hook.matcher.as_deref().unwrap_or(""),
                ovmem_home: Path::new("/home/dev/.ovmem"),
            };
            out.push_str(&format!("# {} ({name})\n{}\n", hook.event, harness::render(&name, &p).unwrap().trim_end()));
        }
        if let Some(t) = &h.manifest.mcp_template {
            let p = Placeholders {
                bin: Path::new("/home/dev/.ovmem/bin/ovmem"),
                harness: h.id(),
                event: "mcp",
                timeout: 30,
                matcher: "",
                ovmem_home: Path::new("/home/dev/.ovmem"),
            };
            let rendered = harness::render(t, &p).unwrap();
            serde_json::from_str::<serde_json::Value>(&rendered).unwrap();
            out.push_str(&format!("# MCP server `ovmem` ({t})\n{}\n", rendered.trim_end()));
        }
        insta::assert_snapshot!(format!("template__{}", h.id()), out);
    }
}

#[test]
fn paths_with_spaces_and_quotes_are_quoted_for_the_shell() {
    let p = Placeholders {
        bin: Path::new("/home/o'neil/My Tools/ovmem"),
        harness: "claude-code",
        event: "Stop",
        timeout: 30,
        matcher: "",
        ovmem_home: Path::new("/x"),
    };
    let json = harness::render("claude-code/group.json", &p).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cmd = v["hooks"][0]["command"].as_str().unwrap();
    assert_eq!(cmd, r"'/home/o'\''neil/My Tools/ovmem' hook claude-code Stop");
    let out =
        std::process::Command::new("sh").args(["-c", &format!("set -- {cmd}; printf '%s|' \"$@\"")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "/home/o'neil/My Tools/ovmem|hook|claude-code|Stop|");
    let script = harness::render("cline/hook.sh", &Placeholders { harness: "cline", event: "TaskStart", ..p }).unwrap();
    let out = std::process::Command::new("sh").args(["-n", "-c", &script]).output().unwrap();
    assert!(out.status.success(), "the Cline hook script is not valid sh");
}
