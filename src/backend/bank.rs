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

/// The bank a team shares for one project: `ovmem-<slug>-<hash>` of its normalised git remote
/// (`host/owner/repo`). Two clones of one repository (any path, any machine) get the same bank;
/// the hash of the whole remote keeps two projects whose slugs collide apart.
pub fn team_bank(remote: &str) -> String {
    let identity = remote.trim().trim_end_matches('/').to_lowercase();
    format!("ovmem-{}-{}", slug(&identity), short_hash(&identity))
}

/// The server bank of a project without a git remote: nothing identifies it across machines, so
/// it is private to this machine (`ovmem-local-<dir name>-<hash>`, the hash of this ovmem home's
/// random machine id and the project's local bank key). Two people's unrelated `app` directories
/// never meet in one bank; a team shares such a project only through a bank the user names.
pub fn private_bank(name: &str, local_key: &str, machine: &str) -> String {
    format!("ovmem-local-{}-{}", slug(name), short_hash(&format!("{machine}\n{local_key}")))
}

/// This ovmem home's machine id (`state/machine-id`, 128 random bits, made on first use).
pub fn machine_id(ovmem_home: &Path) -> String {
    use std::io::{Read, Write};
    let path = ovmem_home.join("state").join("machine-id");
    let read = || {
        crate::fsx::read_capped(&path, 256)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    if let Some(id) = read() {
        return id;
    }
    let mut raw = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut raw)).is_err() {
        // No randomness to be had: still private to this home, by its path.
        return short_hash(&ovmem_home.display().to_string());
    }
    let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let _ = crate::fsx::create_dirs(path.parent().expect("a parent"), None);
    // Two hooks at once: the first file written wins, the other reads it.
    match crate::fsx::create_new(&path, 0o600) {
        Ok(mut f) => {
            let _ = f.write_all(format!("{id}\n").as_bytes());
            id
        }
        Err(_) => read().unwrap_or(id),
    }
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
        let a = team_bank("github.com/acme/widgets");
        assert!(a.starts_with("ovmem-github.com-acme-widgets-"), "{a}");
        assert_eq!(a, team_bank("GitHub.com/Acme/Widgets/"));
        assert!(valid(&a));
    }

    #[test]
    fn different_projects_never_collide_even_with_equal_slugs() {
        let a = team_bank("github.com/acme/my-app");
        let b = team_bank("github.com/acme/my_app");
        let c = team_bank("gitlab.com/acme/my-app");
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn without_a_remote_a_bank_is_private_to_this_machine() {
        let t = tempfile::tempdir().unwrap();
        let (ann, bob) = (machine_id(&t.path().join("ann")), machine_id(&t.path().join("bob")));
        assert_ne!(ann, bob);
        assert_eq!(ann, machine_id(&t.path().join("ann")), "made once, then kept");
        let a = private_bank("app", "project:/home/dev/app", &ann);
        assert!(a.starts_with("ovmem-local-app-") && valid(&a), "{a}");
        assert_ne!(a, private_bank("app", "project:/home/dev/app", &bob), "two people's `app` never share");
        assert_ne!(a, private_bank("app", "project:/home/dev/other/app", &ann));
        assert_ne!(a, team_bank("app"));
        assert!(valid(&private_bank("", "", "")));
    }

    #[test]
    fn odd_identities_still_give_valid_ids() {
        let long = "git.example.com/".to_string() + &"group/".repeat(60) + "repo";
        for remote in [long.as_str(), "ü/ö/ä", "___", "host/owner/repo\n", "//", "a\u{0}b"] {
            let id = team_bank(remote);
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
