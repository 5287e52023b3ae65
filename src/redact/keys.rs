//! Key material that has no `-----BEGIN … PRIVATE KEY-----` header for the PEM rule to find: a
//! private key's DER or OpenSSH body pasted on its own (told from a certificate or a public key
//! by its first bytes), the private lines and MAC of a PuTTY `.ppk`, a wallet's seed phrase after
//! its label, and password hashes in crypt formats (`$6$…`, bcrypt, argon2, yescrypt), which
//! can be cracked offline. The checks of their rules in `rules.rs`.

use regex::bytes::Captures;

use super::rules::Verdict;
use super::values::*;
use super::{gi, span};

/// The body of a DER `SEQUENCE` (its header skipped), if `d` starts with one.
fn sequence_body(d: &[u8]) -> Option<&[u8]> {
    if d.first() != Some(&0x30) {
        return None;
    }
    let header = match *d.get(1)? {
        n if n < 0x80 => 2,
        0x81 => 3,
        0x82 => 4,
        0x83 => 5,
        _ => return None,
    };
    d.get(header..)
}

/// Whether DER bytes start a private key: PKCS#1 RSA and DSA keys and PKCS#8 (version 0, then
/// an integer or the algorithm), SEC1 EC keys and PKCS#8 v2 (version 1, then the key or the
/// algorithm), PKCS#12 (version 3), encrypted PKCS#8 (a PKCS#5 or PKCS#12 encryption scheme
/// first). A certificate, a CSR, a public key (SPKI or PKCS#1) or a signature starts otherwise.
fn is_private_der(d: &[u8]) -> bool {
    const PKCS5: &[u8] = &[0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05];
    const PKCS12_PBE: &[u8] = &[0x06, 0x0a, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01];
    let Some(body) = sequence_body(d) else { return false };
    match body {
        [0x02, 0x01, 0x00, 0x02 | 0x30, ..] | [0x02, 0x01, 0x01, 0x04 | 0x30, ..] | [0x02, 0x01, 0x03, 0x30, ..] => {
            true
        }
        [0x30, ..] => sequence_body(body).is_some_and(|alg| alg.starts_with(PKCS5) || alg.starts_with(PKCS12_PBE)),
        _ => false,
    }
}

/// Whether a base64 run starts a private key's body: DER (above) or OpenSSH's own format.
pub(super) fn is_private_key_body(v: &str) -> bool {
    let head = &v[..v.len().min(44)];
    let head = &head[..head.len() - head.len() % 4];
    base64_decode(head).is_some_and(|d| d.starts_with(b"openssh-key-v1\0") || is_private_der(&d))
}

/// Where a base64 body that starts at `start` and fills its line up to `end` ends: PEM wraps
/// at 64 columns, `base64` at 76, so a whole line continues on the next (indented alike), and a
/// shorter line is the last.
fn wrapped_end(text: &str, start: usize, end: usize) -> usize {
    let b = text.as_bytes();
    let is_b64 = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
    let mut width = end - start;
    let mut end = end;
    while width >= 40 {
        let nl = match b.get(end) {
            Some(b'\n') => 1,
            Some(b'\r') if b.get(end + 1) == Some(&b'\n') => 2,
            _ => break,
        };
        let indent = b[end + nl..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
        let from = end + nl + indent;
        let run = b[from..].iter().take_while(|c| is_b64(c)).count();
        // The run is its line (with a closing quote or comma), or a text cut short (`…`) ends it.
        let rest = &text[from + run..];
        let rest = rest.trim_start_matches(['"', '\'', ',']).trim_start_matches([' ', '\t']);
        let line_ends = rest.is_empty() || rest.starts_with(['\n', '\r', '…']);
        if run == 0 || run > width || !line_ends {
            break;
        }
        end = from + run;
        if run < width {
            break;
        }
        width = run;
    }
    end
}

/// Whether the line holding `at` (from its indentation on) follows a line that is a base64 run
/// of 40 characters or more (quotes and commas around it aside).
fn continues_block(text: &str, at: usize) -> bool {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    if line_start == 0 || !text[line_start..at].bytes().all(|c| matches!(c, b' ' | b'\t' | b'"' | b'\'')) {
        return false;
    }
    let above = &text[..line_start - 1];
    let prev = &above[above.rfind('\n').map_or(0, |i| i + 1)..];
    let prev = prev.trim().trim_matches(['"', '\'', ',']);
    prev.len() >= 40 && prev.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
}

/// A private key's body with no header (`MIIEow…`, `MIIEvQ…`, `MHcC…`, `b3BlbnNzaC1rZXktdjE…`):
/// the run and the lines it wraps onto.
pub(super) fn bare_key_body(t: &str, c: &Captures) -> Verdict {
    let m = c.get(1).expect("group 1");
    // A line that continues a base64 block is not where a key starts (the block's first line is,
    // and its range covers this one); asking it would walk the rest of the block once per line.
    if continues_block(t, m.start()) || !is_private_key_body(span(t, m)) {
        return Verdict::Keep;
    }
    Verdict::RedactRange(m.start(), wrapped_end(t, m.start(), m.end()), "private-key")
}

/// A PuTTY key's private lines (group 1, up to the line before `Private-MAC:`) or its MAC
/// (group 2).
pub(super) fn putty_private(t: &str, c: &Captures) -> Verdict {
    let m = c.get(1).or(c.get(2)).expect("a group");
    let end = m.start() + span(t, m).trim_end().len();
    Verdict::RedactRange(m.start(), end, "private-key")
}

/// A seed phrase after its label: 12, 15, 18, 21 or 24 lower-case words of 3 to 8 letters (the
/// BIP39 word lengths) and nothing more on the line, so a sentence after `seed phrase:` stays.
pub(super) fn seed_phrase(t: &str, c: &Captures) -> Verdict {
    let m = c.get(1).expect("group 1");
    let words: Vec<&str> = span(t, m).split_ascii_whitespace().collect();
    let rest = t[m.end()..].trim_start_matches([' ', '\t']);
    let ends = rest.is_empty() || rest.starts_with(['\n', '\r', '"', '\'', '`', '.', ',', ';', ')', ']', '}']);
    let distinct = words.iter().collect::<std::collections::BTreeSet<_>>().len();
    if matches!(words.len(), 12 | 15 | 18 | 21 | 24) && ends && distinct * 2 > words.len() {
        Verdict::Redact
    } else {
        Verdict::Keep
    }
}

/// A password hash in a crypt format: the last `$` field (the hash) must not be a placeholder
/// (`$2b$12$xxxx…`, `$6$salt$....`).
pub(super) fn password_hash(t: &str, c: &Captures) -> Verdict {
    let v = gi(t, c, 1);
    let hash = v.rsplit('$').next().unwrap_or_default();
    if is_placeholder(hash) || entropy(hash) < 3.0 {
        return Verdict::Keep;
    }
    Verdict::Redact
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_key_bodies_are_told_from_certificates_and_public_keys() {
        for body in [
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", // PKCS#1 RSA
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", // PKCS#8
            "MHcCAQEEIBk3nMwF1nKf2m9Yw4aRz8Q6jP0tLx5cVb7eH2gN1uAoAoGCCqGSM49",  // SEC1 EC
            "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF", // Ed25519 PKCS#8
            "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQIkTqW3v9Hn2ECAggA", // encrypted PKCS#8
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz", // OpenSSH
        ] {
            assert!(is_private_key_body(body), "{body}");
        }
        for body in [
            "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ", // certificate
            "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo", // SPKI public key
            "MIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw", // PKCS#1 public key
            "MIICijCCAXICAQAwRTELMAkGA1UEBhMCQVUxEzARBgNVBAgMClNvbWUtU3RhdGUx", // CSR
            "TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcmsgYW5kIHRoZSBzdW4gc2hpbmVzIGFs", // base64 of prose
        ] {
            assert!(!is_private_key_body(body), "{body}");
        }
    }

    #[test]
    fn a_wrapped_body_runs_to_its_short_last_line() {
        let line = "A".repeat(64);
        let text = format!("{line}\n  {line}\n  QUJD\nnext words");
        let end = wrapped_end(&text, 0, 64);
        assert_eq!(&text[end..], "\nnext words");
        // A word that starts a sentence on the next line is no part of it.
        let text = format!("{line}\n{line}\nThanks for checking");
        assert_eq!(wrapped_end(&text, 0, 64), 64 + 1 + 64);
        // Cut short mid-line.
        let text = format!("{line}\n{}… [900 more characters not stored]", &line[..30]);
        assert_eq!(&text[wrapped_end(&text, 0, 64)..], "… [900 more characters not stored]");
        // A line after a short one is something else.
        let text = format!("{}\n{line}", "A".repeat(48));
        assert_eq!(wrapped_end(&text, 0, 48), 48);
        let text = format!("{}\nQUJD\n{line}", "A".repeat(48));
        assert_eq!(wrapped_end(&text, 0, 48), 48 + 1 + 4);
    }
}
