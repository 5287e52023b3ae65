//! A harness binary's version, cheaply, for `ovmem status`. In order:
//! 1. a CLI installed from npm (most of them): the `version` of the package whose `bin` is that
//!    file, read from its `package.json` (no process started; Gemini CLI alone takes ~4 s to
//!    answer `--version`);
//! 2. the cache (`crate::cache`), keyed by the binary's path, size and modification time, so an
//!    upgrade is noticed;
//! 3. `<binary> <version_args>`, all binaries at once, each stopped after [`PROBE_BUDGET`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cache::{self, Cache};
use crate::env::Env;

/// How long one `--version` may take before it is given up (and shown as unknown).
pub const PROBE_BUDGET: Duration = Duration::from_millis(2500);

/// The version of the npm package that installed `bin`: `bin` (after symlinks) is the file one of
/// the package's `bin` entries names, in a package under a `node_modules` directory.
pub fn from_npm(bin: &Path) -> Option<String> {
    let real = std::fs::canonicalize(bin).ok()?;
    let mut dir = real.parent()?;
    // Walk up to the package root: `node_modules/<name>` or `node_modules/@scope/<name>`.
    for _ in 0..6 {
        let parent = dir.parent()?;
        let is_root = parent.file_name().is_some_and(|n| n == "node_modules")
            || (parent.file_name().is_some_and(|n| n.to_string_lossy().starts_with('@'))
                && parent.parent().and_then(Path::file_name).is_some_and(|n| n == "node_modules"));
        if is_root {
            return package_version(dir, &real);
        }
        dir = parent;
    }
    None
}

fn package_version(root: &Path, real: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let pkg: serde_json::Value = serde_json::from_str(&text).ok()?;
    let names_bin = |rel: &str| std::fs::canonicalize(root.join(rel)).ok().as_deref() == Some(real);
    let bins: Vec<&str> = match &pkg["bin"] {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Object(m) => m.values().filter_map(|v| v.as_str()).collect(),
        _ => Vec::new(),
    };
    if !bins.iter().any(|b| names_bin(b)) {
        return None;
    }
    pkg["version"].as_str().map(str::trim).filter(|v| !v.is_empty()).map(String::from)
}

/// The versions of `binaries` (each with its version arguments), in order: from npm, the cache, or
/// probes run in parallel within [`PROBE_BUDGET`]. The cache is updated with what was probed.
pub fn versions(env: &Env, cache: &mut Cache, binaries: &[(PathBuf, Vec<String>)]) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = vec![None; binaries.len()];
    let mut to_probe: Vec<(usize, String)> = Vec::new();
    for (i, (bin, args)) in binaries.iter().enumerate() {
        if let Some(v) = from_npm(bin) {
            out[i] = Some(v);
            continue;
        }
        if args.is_empty() {
            continue;
        }
        let Some(file) = cache::file_key(bin) else { continue };
        let key = cache::key("version", &[&file, &args.join(" ")]);
        match cache.get(&key) {
            Some(v) => out[i] = v,
            None => to_probe.push((i, key)),
        }
    }
    let probed: Vec<(usize, String, Option<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = to_probe
            .into_iter()
            .map(|(i, key)| {
                let (bin, args) = &binaries[i];
                s.spawn(move || (i, key, probe(env, bin, args)))
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    for (i, key, v) in probed {
        out[i] = v.clone();
        cache.put(key, v);
    }
    out
}

/// The first line `bin args` prints, or `None` when it fails or takes longer than the budget
/// (it is killed then).
fn probe(env: &Env, bin: &Path, args: &[String]) -> Option<String> {
    let (_, out) =
        crate::child::output_within(Command::new(bin).args(args).env("PATH", env.safe_path()), PROBE_BUDGET, 64 << 10)?;
    out.lines().next().map(|l| l.trim().to_string()).filter(|l| !l.is_empty())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn an_npm_binary_is_versioned_by_the_package_that_names_it() {
        let t = tempfile::tempdir().unwrap();
        let nm = t.path().join("node_modules");
        write(
            &nm.join("@acme/cli/package.json"),
            r#"{"name":"@acme/cli","version":"1.2.3","bin":{"acme":"bin/acme.js"}}"#,
        );
        write(&nm.join("@acme/cli/bin/acme.js"), "#!/usr/bin/env node\n");
        write(&nm.join("plain/package.json"), r#"{"name":"plain","version":"0.9.0","bin":"./run.js"}"#);
        write(&nm.join("plain/run.js"), "");
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::os::unix::fs::symlink("../@acme/cli/bin/acme.js", nm.join(".bin/acme")).unwrap();
        std::os::unix::fs::symlink("../plain/run.js", nm.join(".bin/plain")).unwrap();
        assert_eq!(from_npm(&nm.join(".bin/acme")).as_deref(), Some("1.2.3"));
        assert_eq!(from_npm(&nm.join(".bin/plain")).as_deref(), Some("0.9.0"));
        // A file the package does not name as a bin is not versioned by it.
        write(&nm.join("@acme/cli/lib/other.js"), "");
        assert_eq!(from_npm(&nm.join("@acme/cli/lib/other.js")), None);
        // Outside node_modules: no guess.
        write(&t.path().join("bin/tool"), "");
        assert_eq!(from_npm(&t.path().join("bin/tool")), None);
    }
}
