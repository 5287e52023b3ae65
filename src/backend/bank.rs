//! Hindsight bank ids: the team bank derived from a project's identity, and a mapping of any other
//! bank key onto the ids Hindsight accepts.
//!
//! Hindsight 1.1.0 refuses a new bank id that is empty, longer than 192 bytes of UTF-8, holds a
//! control character, or starts with `_` (reserved); and since the id travels in the URL path, a
//! `/` never reaches the bank routes (HTTP 404). ovmem's ids use only `[a-z0-9._:-]`, stay under
//! 100 bytes, and start with a letter, so they are valid on any Hindsight that takes ids in paths.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Longest readable part of a derived id.
const SLUG_MAX: usize = 64;

/// The bank a team shares for one project: `ovmem-<slug>-<hash>`, where the identity is the
/// normalised git remote (`host/owner/repo`), or, without a remote, the project directory's name.
/// Two clones of one repository (any path, any machine) get the same bank; the hash of the whole
/// identity keeps two projects whose slugs collide apart.
pub fn team_bank(remote: &str, root: &Path) -> String {
    let remote = remote.trim().trim_end_matches('/');
    let identity = if remote.is_empty() {
        let dir = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "root".into());
        format!("dir:{dir}")
    } else {
        remote.to_lowercase()
    };
    let readable = identity.strip_prefix("dir:").unwrap_or(&identity);
    format!("ovmem-{}-{}", slug(readable), short_hash(&identity))
}

/// `raw` if it is already a tidy bank id, else a valid one derived from it (slug plus hash), so
/// the local store's bank keys (`user`, `agent:codex:/path`, ...) can name Hindsight banks.
pub fn bank_id(raw: &str) -> String {
    let tidy = !raw.is_empty()
        && raw.len() <= 100
        && raw.as_bytes()[0].is_ascii_alphanumeric()
        && raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if tidy {
        raw.to_string()
    } else {
        format!("ovmem-{}-{}", slug(raw), short_hash(raw))
    }
}

/// Lower-case letters, digits and dots, runs of anything else as one `-`, at most [`SLUG_MAX`].
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= SLUG_MAX {
            break;
        }
    }
    let out = out.trim_matches(['-', '.']);
    if out.is_empty() {
        "project".to_string()
    } else {
        out.to_string()
    }
}

fn short_hash(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().take(5).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(id: &str) -> bool {
        !id.is_empty()
            && id.len() <= 192
            && !id.starts_with('_')
            && !id.contains('/')
            && !id.chars().any(char::is_control)
    }

    #[test]
    fn clones_share_a_bank_wherever_they_are() {
        let a = team_bank("github.com/acme/widgets", Path::new("/home/ann/src/widgets"));
        let b = team_bank("github.com/acme/widgets", Path::new("/Users/bob/work/widgets-fork"));
        assert_eq!(a, b);
        assert!(a.starts_with("ovmem-github.com-acme-widgets-"), "{a}");
        assert_eq!(a, team_bank("GitHub.com/Acme/Widgets/", Path::new("/x")));
        assert!(valid(&a));
    }

    #[test]
    fn different_projects_never_collide_even_with_equal_slugs() {
        let a = team_bank("github.com/acme/my-app", Path::new("/a"));
        let b = team_bank("github.com/acme/my_app", Path::new("/a"));
        let c = team_bank("gitlab.com/acme/my-app", Path::new("/a"));
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn without_a_remote_the_directory_name_decides() {
        let a = team_bank("", Path::new("/home/ann/notes"));
        assert_eq!(a, team_bank("  ", Path::new("/srv/other/notes")));
        assert!(a.starts_with("ovmem-notes-"), "{a}");
        assert_ne!(a, team_bank("notes", Path::new("/x")), "a remote named like a directory is another identity");
        assert!(valid(&team_bank("", Path::new("/"))));
    }

    #[test]
    fn odd_identities_still_give_valid_ids() {
        let long = "git.example.com/".to_string() + &"group/".repeat(60) + "repo";
        for remote in [long.as_str(), "ü/ö/ä", "___", "host/owner/repo\n", "//", "a\u{0}b"] {
            let id = team_bank(remote, Path::new("/p"));
            assert!(valid(&id) && id.len() <= 100 && id.is_ascii(), "{remote:?} -> {id}");
        }
    }

    #[test]
    fn bank_ids_from_local_keys() {
        assert_eq!(bank_id("user"), "user");
        assert_eq!(bank_id("cline::widgets"), "cline::widgets");
        for raw in ["project:/home/ann/widgets", "_reserved", "", "agent:codex:/a b/c", &"x".repeat(300)] {
            let id = bank_id(raw);
            assert!(valid(&id) && id.len() <= 100, "{raw:?} -> {id}");
        }
        assert_ne!(bank_id("project:/a/x"), bank_id("project:/b/x"));
    }
}
