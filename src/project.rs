//! Which project a directory belongs to, by one rule for hooks, `ovmem mcp` and `ovmem memory`:
//! where it lives (the canonical path of its git work-tree root, linked worktrees sharing their
//! main repository's root, else the canonical directory itself) and what it is wherever it lives
//! (its normalised git remote `host/owner/repo`, else its root commit). The local bank is named by
//! the second, so a moved or renamed checkout, a second clone and every worktree share it.
//!
//! Git's files are read directly, each a bounded read of a regular file (a project can point its
//! `.git` file anywhere, `/dev/zero` included): no `git` process runs on a hook, except once per
//! repository location to learn the root commit of a repository without a remote, which is then
//! cached in `$OVMEM_HOME/cache/git-roots/`.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::config::BankMode;

/// Git's one-line files (a `.git` file, `commondir`, `HEAD`, a loose ref, a cache entry).
const SMALL: u64 = 64 << 10;
/// A repository's `config` and `packed-refs`: generous, still bounded.
const LARGE: u64 = 16 << 20;
/// How long learning a root commit may take (once per repository location; a repository whose
/// history takes longer keeps its path bank, see [`root_commit`]).
const GIT_BUDGET: Duration = Duration::from_millis(1500);

/// A bounded read of a regular file as text; `None` when it is missing or is not one.
fn read_text(p: &Path, max: u64) -> Option<String> {
    crate::fsx::read_capped(p, max).ok().flatten().map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A project: where it lives on this machine, and what it is called across machines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectIdentity {
    /// Canonical work-tree root (or canonical directory outside git), no trailing slash.
    pub root: PathBuf,
    /// `host/owner/repo` of the `origin` remote (else the first remote), credentials, port and
    /// `.git` removed; `None` outside git or without a network remote.
    pub remote: Option<String>,
    /// The root's directory name.
    pub name: String,
    /// The repository's root commit, looked up only for a repository without a network remote
    /// (and only by [`identity_in`]).
    pub root_commit: Option<String>,
}

impl ProjectIdentity {
    /// The name a team shares: the remote when there is one, else the directory name.
    pub fn team(&self) -> &str {
        self.remote.as_deref().unwrap_or(&self.name)
    }

    /// What names the project's local bank: the remote (lower-cased, as the team bank has it),
    /// else `git-root:<root commit>`, else the root's path (no repository, or one without commits).
    pub fn key(&self) -> String {
        match (&self.remote, &self.root_commit) {
            (Some(r), _) => r.to_lowercase(),
            (None, Some(c)) => format!("git-root:{c}"),
            (None, None) => self.root.display().to_string(),
        }
    }
}

/// A local bank, and the older names of the same project's bank that are carried over into it
/// on first use ([`crate::store::Store::carry_over`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bank {
    pub key: String,
    pub carried: Vec<String>,
}

/// Where root commits are cached, under an `OVMEM_HOME`.
pub fn cache_dir(ovmem_home: &Path) -> PathBuf {
    ovmem_home.join("cache").join("git-roots")
}

/// The project root for a directory (see the module docs). Never fails: a directory that does not
/// exist is resolved as far as it exists and normalised lexically from there.
pub fn root(dir: &Path) -> PathBuf {
    locate(dir).0
}

/// Root and remote of the project a directory belongs to (no root commit: see [`identity_in`]).
pub fn identity(dir: &Path) -> ProjectIdentity {
    let (root, git) = locate(dir);
    let remote = git.as_ref().and_then(|g| read_text(&g.join("config"), LARGE)).and_then(|c| remote_of(&c));
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "/".into());
    ProjectIdentity { root, remote, name, root_commit: None }
}

/// [`identity`] plus, for a repository without a network remote, its root commit (cached under
/// `cache`, see [`root_commit`]).
pub fn identity_in(dir: &Path, cache: &Path) -> ProjectIdentity {
    let (root, git) = locate(dir);
    let remote = git.as_ref().and_then(|g| read_text(&g.join("config"), LARGE)).and_then(|c| remote_of(&c));
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "/".into());
    let root_commit = match (&remote, &git) {
        (None, Some(g)) => root_commit(g, cache),
        _ => None,
    };
    ProjectIdentity { root, remote, name, root_commit }
}

/// The bank a hook, `ovmem mcp` or `ovmem memory` reads and writes, by the configured mode, with
/// the names an older ovmem (or this project before it had a commit or a remote) gave it.
pub fn bank(mode: BankMode, dir: &Path, harness: &str, session: &str, cache: &Path) -> Bank {
    let prefix = match mode {
        BankMode::Project => "project:".to_string(),
        BankMode::Agent => format!("agent:{harness}:"),
        BankMode::Session => return Bank { key: format!("session:{harness}:{session}"), carried: Vec::new() },
        BankMode::User => return Bank { key: "user".into(), carried: Vec::new() },
    };
    let id = identity_in(dir, cache);
    let named = format!("{prefix}{}", id.key());
    // A bank's name is shown, logged and sent to servers: a secret in a directory's name is not.
    let key = format!("{prefix}{}", scrub_segments(&id.key()));
    let mut carried = Vec::new();
    if key != named {
        carried.push(named);
    }
    // Banks were named by the root's path before.
    let path = format!("{prefix}{}", id.root.display());
    if path != key && !carried.contains(&path) {
        carried.push(path);
    }
    // A repository that had no remote when its bank was made: its root-commit bank, when this
    // location ever learnt it (a cache read, never a `git` run).
    if id.remote.is_some() {
        if let Some(c) = locate(dir).1.and_then(|g| cached_root(&g, cache)).flatten() {
            carried.push(format!("{prefix}git-root:{c}"));
        }
    }
    Bank { key, carried }
}

/// The cache entry of a git directory: its root commit, `Some(None)` for "none to be had".
fn cached_root(git: &Path, cache: &Path) -> Option<Option<String>> {
    let text = read_text(&cache.join(crate::fsx::sha256_hex(git.as_os_str().as_encoded_bytes())), SMALL)?;
    let t = text.trim();
    Some(is_sha(t).then(|| t.to_string()))
}

fn is_sha(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The root commit of the repository at `git` (its common directory). HEAD must name a commit
/// (read from git's files: no process for a repository without commits); then `git rev-list
/// --max-parents=0 HEAD` runs once for this location, within [`GIT_BUDGET`], and its answer (or
/// "none", when git found no root or ran out of time) is cached. Without `git` on an absolute
/// `PATH` directory nothing is cached, and the project keeps its path until git is there.
/// Git runs with what a repository controls kept from running programs (see [`run_git`]).
fn root_commit(git: &Path, cache: &Path) -> Option<String> {
    if let Some(found) = cached_root(git, cache) {
        return found;
    }
    if !has_commit(git) {
        return None;
    }
    let bin = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .filter(|d| d.is_absolute())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())?;
    let found = run_git(&bin, git);
    let entry = found.clone().unwrap_or_else(|| "none".into());
    let _ = crate::fsx::create_dirs(cache, None);
    let _ = crate::fsx::write_atomic(
        &cache.join(crate::fsx::sha256_hex(git.as_os_str().as_encoded_bytes())),
        format!("{entry}\n").as_bytes(),
        Some(0o600),
    );
    found
}

/// `git rev-list` in a repository that may be hostile: its `.git/config` (and what it includes)
/// is the repository's, so everything in it that makes git start a program is kept from doing
/// so. No lazy fetch of a "partial clone"'s missing objects (which runs the remote's
/// `uploadpack` or `core.sshCommand`), no transport of any protocol, no file-system monitor, no
/// pager; and none of the caller's environment (`GIT_DIR`, `GIT_CONFIG_*`, an askpass helper).
fn run_git(bin: &Path, git: &Path) -> Option<String> {
    let (status, out) = crate::child::output_within(
        std::process::Command::new(bin)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_LAZY_FETCH", "1")
            .env("GIT_ALLOW_PROTOCOL", "ovmem-none")
            .env("GIT_PROTOCOL_FROM_USER", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .arg("--no-pager")
            .arg("--no-replace-objects")
            .arg("--git-dir")
            .arg(git)
            .args(["-c", "core.fsmonitor=false", "-c", "protocol.allow=never", "-c", "core.sshCommand=false"])
            .args(["rev-list", "--max-parents=0", "HEAD"]),
        GIT_BUDGET,
        SMALL,
    )?;
    if !status.success() {
        return None;
    }
    // Several roots (merged unrelated histories): the smallest, whatever the dates say.
    out.lines().map(str::trim).filter(|l| is_sha(l)).min().map(str::to_string)
}

/// Whether HEAD of the repository at `git` names a commit: detached, or a branch with a loose or
/// packed ref.
fn has_commit(git: &Path) -> bool {
    let Some(head) = read_text(&git.join("HEAD"), SMALL) else { return false };
    let head = head.trim();
    if is_sha(head) {
        return true;
    }
    let Some(r) = head.strip_prefix("ref:").map(str::trim).filter(|r| r.starts_with("refs/") && !r.contains(".."))
    else {
        return false;
    };
    if read_text(&git.join(r), SMALL).is_some_and(|t| is_sha(t.trim())) {
        return true;
    }
    read_text(&git.join("packed-refs"), LARGE)
        .is_some_and(|p| p.lines().any(|l| l.split_once(' ').is_some_and(|(sha, name)| is_sha(sha) && name == r)))
}

/// Maps a bank key written by an older ovmem (raw cwd strings: `project:/some/path/`,
/// `agent:<harness>:/path`) to the key the same project has now. Other keys are returned as
/// they are, so the mapping is safe to apply to every row and is idempotent.
pub fn migrate_bank(old: &str) -> String {
    if let Some(path) = old.strip_prefix("project:") {
        if path.starts_with('/') {
            return format!("project:{}", root(Path::new(path)).display());
        }
    } else if let Some(rest) = old.strip_prefix("agent:") {
        if let Some((harness, path)) = rest.split_once(':') {
            if path.starts_with('/') {
                return format!("agent:{harness}:{}", root(Path::new(path)).display());
            }
        }
    }
    old.to_string()
}

/// The name an older ovmem gave a bank, without what it kept of a remote's credentials or query
/// (`project:github.com/a/b.git?private_token=…`, `project:bob/<password>@host/a/b` from a
/// password holding a `/`) or any other secret it holds; `None` when the name holds none.
/// Applied once to every bank of a store (schema step 18) and merged there.
pub fn safe_bank_name(name: &str) -> Option<String> {
    let (prefix, rest) = if let Some(rest) = name.strip_prefix("project:") {
        ("project:".to_string(), rest)
    } else if let Some((harness, rest)) = name.strip_prefix("agent:").and_then(|r| r.split_once(':')) {
        (format!("agent:{harness}:"), rest)
    } else {
        (String::new(), name)
    };
    let remote = !prefix.is_empty() && !rest.starts_with('/') && !rest.starts_with("git-root:");
    let mut fixed = rest.to_string();
    if remote && rest.contains(['?', '#', '@']) {
        let cut = rest.split(['?', '#']).next().unwrap_or_default();
        fixed = without_git_suffix(cut.rsplit_once('@').map_or(cut, |(_, after)| after)).to_string();
    }
    let fixed = format!("{prefix}{}", scrub_segments(&fixed));
    (fixed != name).then_some(fixed)
}

/// A name with each `/`-separated part scrubbed on its own, so a secret in one directory's name
/// takes no other part with it.
fn scrub_segments(name: &str) -> String {
    name.split('/').map(|part| crate::redact::scrub(part)).collect::<Vec<_>>().join("/")
}

/// The canonical form of `dir`: `realpath` when it exists; else its deepest existing ancestor's
/// realpath joined with the rest, with `.`, `..` and repeated or trailing slashes removed.
pub fn canonical(dir: &Path) -> PathBuf {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")).join(dir)
    };
    if let Ok(c) = std::fs::canonicalize(&abs) {
        return c;
    }
    let lexical = normalise(&abs);
    let mut rest = Vec::new();
    let mut cur = lexical.as_path();
    loop {
        if let Ok(c) = std::fs::canonicalize(cur) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return lexical,
        }
    }
}

/// `.`, `..` and empty components removed without touching the disk.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The project root and the git directory whose `config` names the remotes.
fn locate(dir: &Path) -> (PathBuf, Option<PathBuf>) {
    let start = canonical(dir);
    let mut cur = Some(start.as_path());
    while let Some(d) = cur {
        let dotgit = d.join(".git");
        match std::fs::metadata(&dotgit) {
            Ok(m) if m.is_dir() => return (d.to_path_buf(), Some(dotgit)),
            Ok(m) if m.is_file() => return linked(d, &dotgit),
            _ => {}
        }
        cur = d.parent();
    }
    (start, None)
}

/// A `.git` file: a linked worktree (`gitdir:` holds a `commondir`) shares the main repository's
/// root; a submodule or separate git dir (no `commondir`) is its own root.
fn linked(dir: &Path, dotgit: &Path) -> (PathBuf, Option<PathBuf>) {
    let Some(gitdir) = read_text(dotgit, SMALL)
        .and_then(|t| t.lines().find_map(|l| l.trim().strip_prefix("gitdir:").map(|g| g.trim().to_string())))
        .filter(|g| !g.is_empty())
    else {
        return (dir.to_path_buf(), None);
    };
    let gitdir = canonical(&dir.join(gitdir));
    let Some(common) = read_text(&gitdir.join("commondir"), SMALL)
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .map(|c| canonical(&gitdir.join(c)))
    else {
        return (dir.to_path_buf(), Some(gitdir));
    };
    let config = read_text(&common.join("config"), LARGE).unwrap_or_default();
    let root = match config_value(&config, "core", None, "worktree") {
        Some(wt) => canonical(&common.join(wt)),
        None if common.file_name().is_some_and(|n| n == ".git") => {
            common.parent().map(Path::to_path_buf).unwrap_or_else(|| common.clone())
        }
        // A bare repository's worktrees: the repository itself is what they share.
        None => common.clone(),
    };
    (root, Some(common))
}

/// One `key = value` of a git config file, section and key case-insensitive, subsection exact.
/// The last occurrence wins, as in git.
fn config_value(text: &str, section: &str, sub: Option<&str>, key: &str) -> Option<String> {
    entries(text)
        .filter(|(s, ss, k, _)| s.eq_ignore_ascii_case(section) && ss.as_deref() == sub && k.eq_ignore_ascii_case(key))
        .map(|(_, _, _, v)| v)
        .last()
}

/// `(section, subsection, key, value)` of every entry of a git config file.
fn entries(text: &str) -> impl Iterator<Item = (String, Option<String>, String, String)> + '_ {
    let mut section = String::new();
    let mut sub: Option<String> = None;
    text.lines().filter_map(move |line| {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            return None;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let head = rest.split(']').next().unwrap_or_default().trim();
            match head.split_once(char::is_whitespace) {
                Some((s, q)) => {
                    section = s.to_string();
                    sub = Some(q.trim().trim_matches('"').replace("\\\"", "\"").replace("\\\\", "\\"));
                }
                // The old `[remote.origin]` form.
                None => match head.split_once('.') {
                    Some((s, q)) => {
                        section = s.to_string();
                        sub = Some(q.to_ascii_lowercase());
                    }
                    None => {
                        section = head.to_string();
                        sub = None;
                    }
                },
            }
            return None;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, "true"));
        Some((section.clone(), sub.clone(), k.trim().to_string(), config_string(v)))
    })
}

/// A git config value: quotes removed, escapes resolved, a trailing comment dropped.
fn config_string(v: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = v.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// The normalised `origin` remote (else the first remote with a URL), after `insteadOf` rewrites.
fn remote_of(config: &str) -> Option<String> {
    let all: Vec<_> = entries(config).collect();
    let urls: Vec<(&str, &str)> = all
        .iter()
        .filter(|(s, _, k, _)| s.eq_ignore_ascii_case("remote") && k.eq_ignore_ascii_case("url"))
        .filter_map(|(_, sub, _, v)| Some((sub.as_deref()?, v.as_str())))
        .collect();
    let url = urls.iter().find(|(name, _)| *name == "origin").or_else(|| urls.first())?.1;
    // `[url "<base>"] insteadOf = <prefix>`: the longest matching prefix is replaced.
    let rewritten = all
        .iter()
        .filter(|(s, sub, k, v)| {
            s.eq_ignore_ascii_case("url")
                && sub.is_some()
                && k.eq_ignore_ascii_case("insteadof")
                && url.starts_with(v.as_str())
        })
        .max_by_key(|(_, _, _, v)| v.len())
        .map(|(_, base, _, prefix)| format!("{}{}", base.as_deref().unwrap_or_default(), &url[prefix.len()..]));
    normalise_remote(rewritten.as_deref().unwrap_or(url))
}

/// `host/owner/repo` for a git remote URL: lowercase host, no scheme, user, password, port, query
/// or fragment, no `.git` suffix or trailing slash. `None` for local paths, `file://` URLs and a
/// remote whose name would still hold what looks like a secret (a token as a path segment): a
/// bank's name is shown, logged and sent to servers, so such a project is named by its root
/// commit instead.
pub fn normalise_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host_part, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") || scheme.is_empty() {
            return None;
        }
        authority_and_path(rest)
    } else {
        // scp-like `[user@]host:path`; a colon after a slash is a local path.
        let colon = url.find(':')?;
        if url[..colon].contains('/') || colon == 0 {
            return None;
        }
        (&url[..colon], &url[colon + 1..])
    };
    // A token in the query (`?private_token=…`) or the fragment is no part of the name.
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let host = host_part.rsplit_once('@').map_or(host_part, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6).to_string(),
        None => host.split([':', '?', '#']).next().unwrap_or(host).to_string(),
    };
    let host = host.to_ascii_lowercase();
    let path = path.split('/').filter(|s| !s.is_empty()).collect::<Vec<_>>().join("/");
    let path = without_git_suffix(&path);
    if host.is_empty() {
        return None;
    }
    let name = if path.is_empty() { host } else { format!("{host}/{path}") };
    (crate::redact::scrub(&name) == name).then_some(name)
}

/// A repository path without its `.git` suffixes and trailing slashes (`a/b.git/` → `a/b`).
fn without_git_suffix(mut path: &str) -> &str {
    while let Some(p) = path.strip_suffix(".git").or_else(|| path.strip_suffix('/')) {
        path = p;
    }
    path
}

/// A URL's authority (`[user[:password]@]host[:port]`) and the rest, after `scheme://`. A password
/// may hold a `/` (git sends it as written): when the text before the first `/` is `user:` and
/// something that is no port, and an `@` follows, the authority runs to the last `@` of that
/// stretch's next segment.
fn authority_and_path(rest: &str) -> (&str, &str) {
    let (first, path) = rest.split_once('/').unwrap_or((rest, ""));
    let password_like = !first.contains('@')
        && !first.starts_with('[')
        && first.split_once(':').is_some_and(|(_, p)| !p.is_empty() && !p.bytes().all(|b| b.is_ascii_digit()));
    if password_like {
        // Up to the first `?` or `#`, the last `@` ends the credentials.
        let head = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
        if let Some(at) = head.rfind('@') {
            return rest[at + 1..].split_once('/').map_or((&rest[at + 1..], ""), |(h, p)| (h, p));
        }
    }
    (first, path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Repo {
        _t: tempfile::TempDir,
        base: PathBuf,
    }

    /// A temp dir, canonicalised (on some systems /tmp itself is a symlink).
    fn tmp() -> Repo {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        Repo { _t: t, base }
    }

    fn git_repo(at: &Path, config: &str) {
        std::fs::create_dir_all(at.join(".git/worktrees")).unwrap();
        std::fs::write(at.join(".git/config"), config).unwrap();
    }

    /// A linked worktree as `git worktree add` lays it out.
    fn worktree(main: &Path, wt: &Path, name: &str) {
        let gd = main.join(".git/worktrees").join(name);
        std::fs::create_dir_all(&gd).unwrap();
        std::fs::write(gd.join("commondir"), "../..\n").unwrap();
        std::fs::write(gd.join("gitdir"), format!("{}\n", wt.join(".git").display())).unwrap();
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gd.display())).unwrap();
    }

    #[test]
    fn every_spelling_of_a_project_is_one_root() {
        let r = tmp();
        let p = r.base.join("acme");
        git_repo(&p, "");
        std::fs::create_dir_all(p.join("src/deep")).unwrap();
        symlink(&p, r.base.join("link")).unwrap();
        let expected = p.clone();
        for spelling in [
            p.display().to_string(),
            format!("{}/", p.display()),
            format!("{}//src/deep/", p.display()),
            format!("{}/src/../src/./deep", p.display()),
            format!("{}/link", r.base.display()),
            format!("{}/link/src/deep/", r.base.display()),
            format!("{}/src/not/created/yet", p.display()),
            format!("{}/link/missing/../src", r.base.display()),
        ] {
            assert_eq!(root(Path::new(&spelling)), expected, "{spelling}");
        }
        let cache = r.base.join("cache");
        assert_eq!(
            bank(BankMode::Project, &p.join("src/"), "codex", "s", &cache).key,
            format!("project:{}", p.display())
        );
    }

    #[test]
    fn outside_git_the_canonical_directory_is_the_project() {
        let r = tmp();
        let d = r.base.join("plain/dir");
        std::fs::create_dir_all(&d).unwrap();
        symlink(&d, r.base.join("alias")).unwrap();
        assert_eq!(root(&r.base.join("alias/")), d);
        assert_eq!(root(&r.base.join("plain/dir/../dir/")), d);
        assert_eq!(root(&r.base.join("gone/away/")), r.base.join("gone/away"));
        assert_eq!(root(Path::new("/definitely/not/here/../there/")), PathBuf::from("/definitely/not/there"));
        assert_eq!(root(Path::new("/")), PathBuf::from("/"));
    }

    #[test]
    fn linked_worktrees_share_the_main_root_and_remote() {
        let r = tmp();
        let main = r.base.join("main");
        git_repo(&main, "[remote \"origin\"]\n\turl = git@GitHub.com:Acme/Widgets.git\n");
        let wt = r.base.join("wt-feature");
        worktree(&main, &wt, "wt-feature");
        assert_eq!(root(&wt.join("src")), main);
        let id = identity(&wt.join("src"));
        assert_eq!(id.remote.as_deref(), Some("github.com/Acme/Widgets"));
        assert_eq!(id, identity(&main));
        // A relative `gitdir:` works too.
        let wt2 = main.join("nested-wt");
        worktree(&main, &wt2, "nested");
        std::fs::write(wt2.join(".git"), "gitdir: ../.git/worktrees/nested\n").unwrap();
        assert_eq!(root(&wt2), main);
    }

    #[test]
    fn submodules_and_broken_git_files_are_their_own_root() {
        let r = tmp();
        let sup = r.base.join("super");
        git_repo(&sup, "");
        let modgit = sup.join(".git/modules/lib");
        std::fs::create_dir_all(&modgit).unwrap();
        std::fs::write(modgit.join("config"), "[remote \"origin\"]\n url = https://gitlab.com/acme/lib\n").unwrap();
        let lib = sup.join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join(".git"), "gitdir: ../.git/modules/lib\n").unwrap();
        assert_eq!(root(&lib), lib);
        assert_eq!(identity(&lib).remote.as_deref(), Some("gitlab.com/acme/lib"));
        let odd = r.base.join("odd");
        std::fs::create_dir_all(&odd).unwrap();
        std::fs::write(odd.join(".git"), "garbage").unwrap();
        assert_eq!(
            identity(&odd),
            ProjectIdentity { root: odd.clone(), remote: None, name: "odd".into(), root_commit: None }
        );
    }

    #[test]
    fn bare_repository_worktrees_share_the_repository() {
        let r = tmp();
        let bare = r.base.join("proj.git");
        std::fs::create_dir_all(bare.join("worktrees/a")).unwrap();
        std::fs::write(bare.join("config"), "[core]\n\tbare = true\n").unwrap();
        let a = r.base.join("a");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::write(bare.join("worktrees/a/commondir"), "../..\n").unwrap();
        std::fs::write(a.join(".git"), format!("gitdir: {}\n", bare.join("worktrees/a").display())).unwrap();
        assert_eq!(root(&a), bare);
    }

    #[test]
    fn remotes_normalise_to_host_owner_repo() {
        for (url, want) in [
            ("git@github.com:acme/widgets.git", Some("github.com/acme/widgets")),
            ("git@GITHUB.COM:acme/widgets.git/", Some("github.com/acme/widgets")),
            ("ssh://git@github.com:22/acme/widgets.git", Some("github.com/acme/widgets")),
            ("ssh://github.com/acme/widgets", Some("github.com/acme/widgets")),
            ("https://github.com/acme/widgets.git", Some("github.com/acme/widgets")),
            ("https://user:ghp_secret@GitHub.com/acme/widgets.git", Some("github.com/acme/widgets")),
            (
                "https://oauth2:glpat-xyz@gitlab.example.com:8443/group/sub/proj.git///",
                Some("gitlab.example.com/group/sub/proj"),
            ),
            ("http://[::1]:3000/acme/w.git", Some("::1/acme/w")),
            ("git://git.kernel.org/pub/scm/git/git.git", Some("git.kernel.org/pub/scm/git/git")),
            ("git+ssh://git@bitbucket.org/acme/widgets.git", Some("bitbucket.org/acme/widgets")),
            // Credentials and tokens are never part of the name.
            ("https://h.example/acme/app.git?private_token=glpat-Qe4Rt7Yu1Io3Pa6Sd9Fg", Some("h.example/acme/app")),
            ("https://h.example/acme/app#tok=abc", Some("h.example/acme/app")),
            (
                "https://bob:Xy7/Qw3Er5Ty8Ui2Op4As6Df9Gh1Jk@git.example.com/v1/repos/app",
                Some("git.example.com/v1/repos/app"),
            ),
            ("https://bob:pa/ss/wd@git.example.com:8443/a/b.git", Some("git.example.com/a/b")),
            ("https://git.example.com:8443/a/b@c", Some("git.example.com/a/b@c")),
            ("https://h.example/acme/ghp_R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi", None),
            ("/srv/git/widgets.git", None),
            ("file:///srv/git/widgets.git", None),
            ("./relative/repo", None),
            ("", None),
        ] {
            assert_eq!(normalise_remote(url).as_deref(), want, "{url}");
        }
    }

    #[test]
    fn bank_names_an_older_ovmem_gave_lose_their_secrets() {
        for (old, want) in [
            (
                "project:h.example/acme/app.git?private_token=glpat-xr4mk9pq2st7vw1yz3bn",
                Some("project:h.example/acme/app"),
            ),
            (
                "agent:codex:bob/7vl3wr8nt4by6ch1jf5gd0sa2eu7io9p@git.example.com/v1/repos/app",
                Some("agent:codex:git.example.com/v1/repos/app"),
            ),
            (
                "project:/home/u/proj-ghp_R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi",
                Some("project:/home/u/[REDACTED:github-token]"),
            ),
            ("project:github.com/acme/widgets", None),
            ("project:/home/u/my app", None),
            ("project:git-root:0123456789abcdef0123456789abcdef01234567", None),
            ("user", None),
            ("session:codex:abc", None),
        ] {
            assert_eq!(safe_bank_name(old).as_deref(), want, "{old}");
        }
    }

    #[test]
    fn origin_wins_else_the_first_remote_and_insteadof_applies() {
        let cfg = "[core]\n\trepositoryformatversion = 0\n[remote \"upstream\"]\n\turl = https://github.com/up/w.git\n\
                   [remote \"origin\"]\n\turl = \"git@github.com:me/w.git\" # mine\n";
        assert_eq!(remote_of(cfg).as_deref(), Some("github.com/me/w"));
        let cfg =
            "[remote \"fork\"]\n\turl = https://codeberg.org/me/w\n[remote \"other\"]\n\turl = https://x.org/a/b\n";
        assert_eq!(remote_of(cfg).as_deref(), Some("codeberg.org/me/w"));
        let cfg = "[url \"git@github.com:\"]\n\tinsteadOf = gh:\n[remote \"origin\"]\n\turl = gh:acme/tool\n";
        assert_eq!(remote_of(cfg).as_deref(), Some("github.com/acme/tool"));
        assert_eq!(remote_of("[remote.origin]\nurl = https://h.io/o/r\n").as_deref(), Some("h.io/o/r"));
        assert_eq!(remote_of("[core]\n bare = false\n"), None);
    }

    #[test]
    fn identity_falls_back_to_the_directory_name() {
        let r = tmp();
        let p = r.base.join("Lonely Project");
        git_repo(&p, "[core]\n\tbare = false\n");
        let id = identity(&p.join("."));
        assert_eq!((id.remote.as_deref(), id.team()), (None, "Lonely Project"));
    }

    #[test]
    fn old_bank_keys_map_to_the_new_rule() {
        let r = tmp();
        let p = r.base.join("acme");
        git_repo(&p, "");
        std::fs::create_dir_all(p.join("sub")).unwrap();
        symlink(&p, r.base.join("ln")).unwrap();
        let want = format!("project:{}", p.display());
        assert_eq!(migrate_bank(&format!("project:{}/", p.display())), want);
        assert_eq!(migrate_bank(&format!("project:{}/ln/sub", r.base.display())), want);
        assert_eq!(migrate_bank(&want), want, "idempotent");
        assert_eq!(migrate_bank(&format!("agent:codex:{}/", p.display())), format!("agent:codex:{}", p.display()));
        for same in ["user", "session:codex:abc", "project:relative", "agent:broken", "weird"] {
            assert_eq!(migrate_bank(same), same);
        }
        assert_eq!(migrate_bank("project:/gone/dir/"), "project:/gone/dir");
    }
}
