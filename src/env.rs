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
}

impl Env {
    /// The process environment. `HOME` must be set: ovmem never guesses a home directory.
    pub fn from_process() -> Result<Self> {
        let vars: HashMap<String, String> =
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
        Self::from_vars(vars)
    }

    pub fn from_vars(vars: HashMap<String, String>) -> Result<Self> {
        let home = match vars.get("HOME").filter(|h| !h.is_empty()) {
            Some(h) => PathBuf::from(h),
            None => bail!("HOME is not set; ovmem needs it to find the agents' config files"),
        };
        Ok(Self { vars, home })
    }

    /// A variable, with set-but-empty treated as unset (as atuin and the harnesses do).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// `$OVMEM_HOME`, default `~/.ovmem`.
    pub fn ovmem_home(&self) -> PathBuf {
        self.var("OVMEM_HOME").map(PathBuf::from).unwrap_or_else(|| self.home.join(".ovmem"))
    }

    /// The staged runtime every hook command runs.
    pub fn runtime_bin(&self) -> PathBuf {
        self.ovmem_home().join("bin").join("ovmem")
    }

    /// Finds an executable on `$PATH`.
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.var("PATH")?;
        std::env::split_paths(&OsString::from(path))
            .map(|d| d.join(name))
            .find(|p| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false))
    }

    /// Expands a manifest path: `~`, `${VAR}`, `${VAR:-default}` (defaults nest), and
    /// `{{PROJECT}}` for the project root.
    pub fn expand(&self, pattern: &str, project: Option<&Path>) -> Result<PathBuf> {
        let mut s = pattern.to_string();
        if s.contains("{{PROJECT}}") {
            let Some(p) = project else { bail!("`{pattern}` needs a project directory") };
            s = s.replace("{{PROJECT}}", &p.to_string_lossy());
        }
        let expanded = self.expand_vars(&s)?;
        Ok(PathBuf::from(self.expand_tilde(&expanded)))
    }

    fn expand_tilde(&self, s: &str) -> String {
        if s == "~" {
            self.home.to_string_lossy().into_owned()
        } else if let Some(rest) = s.strip_prefix("~/") {
            self.home.join(rest).to_string_lossy().into_owned()
        } else {
            s.to_string()
        }
    }

    fn expand_vars(&self, s: &str) -> Result<String> {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            let end = matching_brace(after).ok_or_else(|| anyhow::anyhow!("unclosed `${{` in `{s}`"))?;
            let inner = &after[..end];
            let (name, default) = match inner.find(":-") {
                Some(j) => (&inner[..j], Some(&inner[j + 2..])),
                None => (inner, None),
            };
            match (self.var(name), default) {
                (Some(v), _) => out.push_str(v),
                (None, Some(d)) => out.push_str(&self.expand_tilde(&self.expand_vars(d)?)),
                (None, None) => bail!("`{s}` needs ${name}, which is not set"),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
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
    fn project_placeholder_requires_a_project() {
        assert!(env(&[]).expand("{{PROJECT}}/.claude/settings.json", None).is_err());
        assert_eq!(
            env(&[]).expand("{{PROJECT}}/.codex/hooks.json", Some(Path::new("/p"))).unwrap(),
            PathBuf::from("/p/.codex/hooks.json")
        );
    }
}
