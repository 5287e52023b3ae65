//! Every lookup of the environment, the home directory and `$PATH` goes through [`Env`], so
//! tests drive ovmem against throwaway homes and nothing reads the real `$HOME` by accident.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

#[derive(Debug, Clone)]
pub struct Env {
    vars: HashMap<String, String>,
    pub home: PathBuf,
    cwd: PathBuf,
}

impl Env {
    /// The process environment. `HOME` must be set: ovmem never guesses a home directory.
    pub fn from_process() -> Result<Self> {
        let mut vars: HashMap<String, String> = HashMap::new();
        for (k, v) in std::env::vars_os() {
            let Ok(k) = k.into_string() else { continue };
            match v.into_string() {
                Ok(v) => {
                    vars.insert(k, v);
                }
                // Where ovmem keeps everything: one it cannot read must not send the memories and
                // the runtime to `~/.ovmem` without a word.
                Err(v) if k == "HOME" || k == "OVMEM_HOME" => {
                    bail!("{k} is not valid UTF-8 ({}); set it to a path ovmem can read", v.to_string_lossy())
                }
                Err(_) => {}
            }
        }
        Self::from_vars(vars)
    }

    pub fn from_vars(vars: HashMap<String, String>) -> Result<Self> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let home = match vars.get("HOME").filter(|h| !h.is_empty()) {
            Some(h) => absolute(&cwd, Path::new(h)),
            None => bail!("HOME is not set; ovmem needs it to find the agents' config files"),
        };
        Ok(Self { vars, home, cwd })
    }

    /// A variable, with set-but-empty treated as unset (as atuin and the harnesses do).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// `$OVMEM_HOME`, default `~/.ovmem`; a relative value is taken from the current directory
    /// (see [`Env::notes`]), so no relative path ever reaches a hook command.
    pub fn ovmem_home(&self) -> PathBuf {
        match self.var("OVMEM_HOME") {
            Some(h) => absolute(&self.cwd, Path::new(h)),
            None => self.home.join(".ovmem"),
        }
    }

    /// Whether hooks are written for a Windows host: where ovmem runs on Windows, or when
    /// `OVMEM_TEST_WINDOWS_HOST` is set (how the Windows forms are installed and removed in
    /// tests on Unix; nothing else reads it).
    pub fn windows_host(&self) -> bool {
        cfg!(windows) || self.var("OVMEM_TEST_WINDOWS_HOST").is_some()
    }

    /// The staged runtime every hook command runs.
    pub fn runtime_bin(&self) -> PathBuf {
        self.ovmem_home().join("bin").join("ovmem")
    }

    /// What ovmem made of the environment that the user should know: relative paths it resolved.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for name in ["HOME", "OVMEM_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "TRAE_HOME", "TRAECLI_HOME", "CLINE_DIR"]
        {
            if let Some(v) = self.var(name).filter(|v| !Path::new(v).is_absolute()) {
                out.push(format!(
                    "{name} is the relative path `{v}`; ovmem uses `{}` (from the current directory)",
                    absolute(&self.cwd, Path::new(v)).display()
                ));
            }
        }
        out
    }

    /// `$PATH` without its empty and relative elements (an empty element means the current
    /// directory, where a repository could plant a `./codex`). Passed to every program ovmem starts.
    pub fn safe_path(&self) -> String {
        let path = self.var("PATH").unwrap_or("");
        let kept: Vec<PathBuf> = std::env::split_paths(&OsString::from(path)).filter(|d| d.is_absolute()).collect();
        std::env::join_paths(kept).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// Finds an executable on `$PATH`, in absolute directories only.
    /// (The `which` crate: executable bits on Unix, `PATHEXT` on Windows.)
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        let path = self.safe_path();
        if path.is_empty() {
            return None;
        }
        which::which_in(name, Some(path), &self.cwd).ok().filter(|p| p.is_file())
    }

    /// Expands a manifest path in one pass: `~`, `${VAR}`, `${VAR:-default}` (defaults nest), and
    /// `{{PROJECT}}` for the project root. Substituted values are never expanded again, and the
    /// result is absolute.
    pub fn expand(&self, pattern: &str, project: Option<&Path>) -> Result<PathBuf> {
        let s = self.expand_str(pattern, project, true)?;
        Ok(absolute(&self.cwd, Path::new(&s)))
    }

    fn expand_str(&self, s: &str, project: Option<&Path>, at_start: bool) -> Result<String> {
        let mut out = String::new();
        let mut rest = s;
        if at_start || s.starts_with('~') {
            if rest == "~" {
                return Ok(self.home.to_string_lossy().into_owned());
            }
            if let Some(r) = rest.strip_prefix("~/") {
                out.push_str(&self.home.to_string_lossy());
                out.push('/');
                rest = r;
            }
        }
        loop {
            let dollar = rest.find("${");
            let proj = rest.find("{{PROJECT}}");
            let next = match (dollar, proj) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => break,
            };
            out.push_str(&rest[..next]);
            if proj == Some(next) {
                let Some(p) = project else { bail!("`{s}` needs a project directory") };
                out.push_str(&p.to_string_lossy());
                rest = &rest[next + "{{PROJECT}}".len()..];
                continue;
            }
            let after = &rest[next + 2..];
            let end = matching_brace(after).ok_or_else(|| anyhow::anyhow!("unclosed `${{` in `{s}`"))?;
            let inner = &after[..end];
            let (name, default) = match inner.find(":-") {
                Some(j) => (&inner[..j], Some(&inner[j + 2..])),
                None => (inner, None),
            };
            match (self.var(name), default) {
                (Some(v), _) => out.push_str(v),
                (None, Some(d)) => out.push_str(&self.expand_str(d, project, true)?),
                (None, None) => bail!("`{s}` needs ${name}, which is not set"),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// `p` made absolute against `cwd` (lexically; symlinks are resolved where files are written).
fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        let mut out = cwd.to_path_buf();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        out
    }
}

/// Index of the `}` closing a `${` whose body starts at `s[0]`, counting nested `${`.
fn matching_brace(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                depth += 1;
                i += 1;
            }
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        let mut m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        m.entry("HOME".into()).or_insert("/h".into());
        Env::from_vars(m).unwrap()
    }

    #[test]
    fn nested_defaults_follow_trae_cli_rules() {
        let p = "${TRAECLI_HOME:-${TRAE_HOME:-~/.trae}/cli}/hooks.json";
        assert_eq!(env(&[]).expand(p, None).unwrap(), PathBuf::from("/h/.trae/cli/hooks.json"));
        assert_eq!(env(&[("TRAE_HOME", "/t")]).expand(p, None).unwrap(), PathBuf::from("/t/cli/hooks.json"));
        assert_eq!(
            env(&[("TRAE_HOME", "/t"), ("TRAECLI_HOME", "/c")]).expand(p, None).unwrap(),
            PathBuf::from("/c/hooks.json")
        );
    }

    #[test]
    fn empty_variable_counts_as_unset() {
        let p = "${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json";
        assert_eq!(
            env(&[("CLAUDE_CONFIG_DIR", "")]).expand(p, None).unwrap(),
            PathBuf::from("/h/.claude/settings.json")
        );
    }

    #[test]
    fn substituted_values_are_not_expanded_again_and_paths_are_absolute() {
        let e = env(&[("CODEX_HOME", "${HOME}/{{PROJECT}}")]);
        assert_eq!(
            e.expand("${CODEX_HOME:-~/.codex}/hooks.json", Some(Path::new("/p"))).unwrap(),
            PathBuf::from("/${HOME}/{{PROJECT}}/hooks.json").strip_prefix("/").map(|p| e.cwd.join(p)).unwrap()
        );
        assert_eq!(
            e.expand("{{PROJECT}}/.codex", Some(Path::new("/a/${HOME}/~"))).unwrap(),
            PathBuf::from("/a/${HOME}/~/.codex")
        );
        let e = env(&[("OVMEM_HOME", "rel/home")]);
        assert_eq!(e.ovmem_home(), e.cwd.join("rel/home"));
        assert!(e.notes().iter().any(|n| n.contains("OVMEM_HOME")));
    }

    #[test]
    fn relative_path_elements_are_never_searched() {
        let e = env(&[("PATH", ":.:bin:/usr/bin")]);
        assert_eq!(e.safe_path(), "/usr/bin");
    }

    #[test]
    fn project_placeholder_requires_a_project() {
        assert!(env(&[]).expand("{{PROJECT}}/.claude/settings.json", None).is_err());
        assert_eq!(
            env(&[]).expand("{{PROJECT}}/.codex/hooks.json", Some(Path::new("/p"))).unwrap(),
            PathBuf::from("/p/.codex/hooks.json")
        );
    }
}
