//! Snapshots of every harness's rendered hook entries, with a fixed runtime path, so any change
//! to a template or manifest is a reviewable diff.

use std::path::Path;

use ovmem::harness::{self, Placeholders};

#[test]
fn rendered_templates() {
    for h in harness::all() {
        let mut out = String::new();
        if h.manifest.kind == harness::InstallKind::PluginFile {
            // One module for every event.
            let p = Placeholders {
                bin: Path::new("/home/dev/.ovmem/bin/ovmem"),
                harness: h.id(),
                event: "",
                timeout: 0,
                matcher: "",
                ovmem_home: Path::new("/home/dev/.ovmem"),
            };
            let t = &h.manifest.template;
            out.push_str(&format!("# plugin module ({t})\n{}\n", harness::render(t, &p).unwrap().trim_end()));
        }
        for hook in h.manifest.hooks.iter().filter(|_| h.manifest.kind != harness::InstallKind::PluginFile) {
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

/// The JavaScript plugin modules parse (`node --check`), with a runtime path full of quotes,
/// backslashes and a line separator that a JS string literal must escape.
#[test]
fn plugin_modules_are_valid_javascript() {
    let Some(node) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
    else {
        eprintln!("SKIPPED (not a pass): node is not on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for h in harness::all().iter().filter(|h| h.manifest.template.ends_with(".js")) {
        let p = Placeholders {
            bin: Path::new("/home/o'neil/\"x\"\\y\u{2028}/.ovmem/bin/ovmem"),
            harness: h.id(),
            event: "",
            timeout: 0,
            matcher: "",
            ovmem_home: Path::new("/x"),
        };
        let file = dir.path().join(format!("{}.mjs", h.id()));
        std::fs::write(&file, harness::render(&h.manifest.template, &p).unwrap()).unwrap();
        let out = std::process::Command::new(&node).arg("--check").arg(&file).output().unwrap();
        assert!(out.status.success(), "{}: {}", h.id(), String::from_utf8_lossy(&out.stderr));
        // The literal, read as JavaScript, is the exact path.
        let probe = "const s = require('fs').readFileSync(process.argv[1], 'utf8').split('\\n'); \
                     const l = s.find((l) => l.startsWith('const OVMEM_BIN = ')); \
                     process.stdout.write(eval(l.slice(18, -1)))";
        let out = std::process::Command::new(&node).args(["-e", probe]).arg(&file).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), p.bin.to_string_lossy(), "{}", h.id());
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
