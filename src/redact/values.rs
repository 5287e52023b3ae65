//! What a matched value looks like: a placeholder, a reference to a secret kept elsewhere, a
//! path, a word of design prose, or a credential (random, composite, high in entropy); and
//! base64 decoded, for secrets hidden inside it.

pub(super) fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}
pub(super) fn has_upper(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
}
pub(super) fn has_lower(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_lowercase())
}

/// Not a secret: empty, masked (`***`, `xxxx`), a type or a null-ish word, or `<your-token>`.
pub(super) fn is_placeholder(v: &str) -> bool {
    let v = v.trim();
    if v.len() < 3 {
        return true;
    }
    let first = v.chars().next().unwrap_or(' ');
    if v.chars().all(|c| c == first) || v.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '-' | '_' | '•')) {
        return true;
    }
    if (v.starts_with('<') && v.ends_with('>')) || (v.starts_with('[') && v.ends_with(']')) {
        return true;
    }
    matches!(
        v.to_ascii_lowercase().as_str(),
        "null"
            | "none"
            | "nil"
            | "true"
            | "false"
            | "undefined"
            | "string"
            | "str"
            | "number"
            | "int"
            | "bool"
            | "boolean"
            | "bytes"
            | "any"
            | "optional"
            | "required"
            | "redacted"
            | "secret"
            | "password"
            | "token"
            | "hidden"
            | "masked"
            | "empty"
            | "unset"
            | "inherit"
            | "env"
    )
}

/// A reference to a secret kept elsewhere, not the secret: `$VAR`, `${VAR}`, `{{ secret }}`,
/// `%(x)s`, `os.environ`, `process.env.X`, `config.password`. The whole value must be one: a
/// value that only starts like one (`$uperS3cret!`, `{{Zx9k`) is a secret.
pub(super) fn is_reference(v: &str) -> bool {
    let v = v.trim();
    let ident = |s: &str| {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let closed =
        |open: &str, close: &str| v.len() > open.len() + close.len() && v.starts_with(open) && v.ends_with(close);
    if let Some(r) = v.strip_prefix('$') {
        if ident(r) || r.starts_with("{{") && r.ends_with("}}") || r.starts_with('(') && r.ends_with(')') {
            return true;
        }
        // `${VAR}`, `${VAR:-default}`, `${VAR?}`, `${!VAR}`
        return r.strip_prefix('{').and_then(|x| x.strip_suffix('}')).is_some_and(|inner| {
            let name = inner.trim_start_matches('!');
            let end = name.find([':', '-', '?', '=', '+']).unwrap_or(name.len());
            ident(&name[..end]) && !inner.contains('}')
        });
    }
    if closed("{{", "}}") || closed("<%", "%>") || closed("%{", "}") || closed("#{", "}") || closed("${{", "}}") {
        return true;
    }
    // `%(name)s`
    if let Some(r) = v.strip_prefix("%(") {
        if let Some(i) = r.find(')') {
            if ident(&r[..i]) && r[i + 1..].len() <= 1 {
                return true;
            }
        }
        return false;
    }
    if ["!ref", "!secret", "secretref", "!vault", "!env"].iter().any(|p| v.starts_with(p)) {
        return true;
    }
    // A dotted path of identifiers: `config.password`, `settings.db.password`, `process.env.X`.
    // `os.environ[` / `settings.get(`: a lookup cut at its bracket.
    let v = v.trim_end_matches(['[', '(']);
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() < 2 || !parts.iter().all(|p| ident(p)) {
        return false;
    }
    const OWNERS: &[&str] = &[
        "process",
        "os",
        "env",
        "config",
        "cfg",
        "conf",
        "settings",
        "secrets",
        "secret",
        "vars",
        "var",
        "params",
        "props",
        "options",
        "opts",
        "args",
        "self",
        "this",
        "app",
        "ctx",
        "context",
        "request",
        "req",
        "values",
        "inputs",
        "input",
        "data",
        "credentials",
        "creds",
        "user",
        "db",
        "database",
        "vault",
        "environ",
        "system",
        "properties",
        "spring",
        "module",
        "window",
        "import",
        "constants",
        "local",
        "locals",
        "global",
        "ansible",
        "parameters",
        "variables",
        "keys",
        "auth",
        "security",
        "state",
        "store",
    ];
    let first = parts[0].to_ascii_lowercase();
    let uniform = |p: &str| !(has_upper(p) && has_lower(p) && has_digit(p));
    let secret_word = |p: &str| {
        let l = p.to_ascii_lowercase();
        ["pass", "pwd", "secret", "token", "key", "cred", "auth"].iter().any(|w| l.contains(w))
    };
    parts.iter().all(|p| uniform(p))
        && (OWNERS.contains(&first.as_str())
            || parts.iter().any(|p| p.contains('_') || secret_word(p) || has_upper(&p[1..]) && has_lower(p)))
}

/// A design word, not a secret: "the token is HMAC-SHA256 signed", "the secret is
/// AES-256-GCM encrypted", "the key is 256-bit".
pub(super) fn is_design_term(v: &str) -> bool {
    const TERMS: &[&str] = &[
        "hmac",
        "sha",
        "sha1",
        "sha2",
        "sha3",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "md5",
        "aes",
        "rsa",
        "dsa",
        "ecdsa",
        "ecdh",
        "ed25519",
        "x25519",
        "eddsa",
        "argon2",
        "argon2id",
        "argon2i",
        "argon2d",
        "bcrypt",
        "scrypt",
        "pbkdf2",
        "hkdf",
        "gcm",
        "cbc",
        "ctr",
        "ccm",
        "siv",
        "oaep",
        "pss",
        "pkcs1",
        "pkcs8",
        "hs256",
        "hs384",
        "hs512",
        "rs256",
        "rs384",
        "rs512",
        "es256",
        "es384",
        "es512",
        "ps256",
        "ps384",
        "ps512",
        "jwt",
        "jwe",
        "jws",
        "jwk",
        "base64",
        "base64url",
        "hex",
        "uuid",
        "uuidv4",
        "chacha20",
        "poly1305",
        "xchacha20",
        "kms",
        "hsm",
        "tls",
        "mtls",
        "otp",
        "totp",
        "hotp",
        "hashed",
        "hash",
        "signed",
        "encrypted",
        "encoded",
        "salted",
        "bit",
        "bits",
        "byte",
        "bytes",
        "char",
        "chars",
        "characters",
        "long",
        "based",
        "only",
        "protected",
        "random",
        "opaque",
        "httponly",
        "secure",
        "samesite",
        "bearer",
        "oauth",
        "oauth2",
        "oidc",
        "saml",
        "sso",
        "mfa",
        "pkce",
        "nonce",
        "ttl",
        "p",
        "secp",
        "curve",
        "ed",
        "x",
        "k",
        "r",
        "v",
        "rotated",
        "scoped",
        "short",
        "lived",
        "encrypt",
    ];
    v.split(['-', '_', '/']).all(|seg| {
        let s = seg.to_ascii_lowercase();
        // `AES256`, `RSA4096`, `P256`, `256bit`, `32bytes`: a term with its size.
        let letters = s.trim_end_matches(|c: char| c.is_ascii_digit());
        let after_number = s.trim_start_matches(|c: char| c.is_ascii_digit());
        !s.is_empty()
            && (TERMS.contains(&s.as_str())
                || TERMS.contains(&letters)
                || letters.is_empty()
                || (after_number.len() < s.len() && TERMS.contains(&after_number)))
    })
}

pub(super) fn is_path(v: &str) -> bool {
    // A generated key may start with `/` too (AWS secret keys do): a path's pieces are not
    // random mixes of both cases and digits, but for the names temp-file makers generate.
    let random_piece = |p: &&str| p.len() >= 8 && has_upper(p) && has_lower(p) && has_digit(p) && !is_temp_name(p);
    (v.starts_with('/') || v.starts_with("./") || v.starts_with("../") || v.starts_with("~/"))
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "/._-~".contains(c))
        && !v.split('/').any(|p| random_piece(&p))
}

/// A file or directory name a temp-file maker generated: tempfile's `.tmpAbC123`, mktemp's
/// `tmp.Xk3PqR9wZ2`, or a name of words with a short random tail after `.`, `-` or `_`
/// (`mktemp -d /tmp/ci-home.XXXX`, tempfile's `ovmem-doctor-AbC12x`), each maybe with a suffix
/// (`.tmpAbC123.json`). Such a name in a path is
/// where a program put its files, and a log that hides it cannot be followed. The random part is
/// 3 to 12 letters and digits (tempfile makes 6, mktemp as many as the template's X's, 10 by
/// default): no generated credential is that short, and a base64 key (AWS's starts with `/` at
/// times) has no `.` or `-` to carry the words before it.
pub(super) fn is_temp_name(name: &str) -> bool {
    // A suffix asked for (`.json`, `.log`) is not part of the name's random part.
    let extension =
        |e: &str| (1..=5).contains(&e.len()) && e.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if let Some((stem, ext)) = name.rsplit_once('.') {
        if extension(ext) && stem.len() > 4 && is_temp_name(stem) {
            return true;
        }
    }
    let random = |t: &str| (3..=12).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric());
    if let Some(t) = name.strip_prefix(".tmp").or_else(|| name.strip_prefix("tmp.")) {
        return random(t);
    }
    match name.rfind(['.', '-', '_']) {
        Some(i) => {
            let words = name[..i].trim_start_matches('.');
            let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            random(&name[i + 1..]) && !words.is_empty() && words.split(['.', '-', '_']).all(word)
        }
        None => false,
    }
}

/// Looks like a password or token rather than a word: digits or symbols, or mixed case.
pub(super) fn credential_like(v: &str) -> bool {
    let v = v.trim();
    if v.len() < 4 || is_placeholder(v) {
        return false;
    }
    let symbols = v.chars().any(|c| !c.is_alphanumeric());
    has_digit(v) || symbols || (has_upper(v) && has_lower(v) && v.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// A password said without a label's `:` or `=` (`password Xy7#kq9!mZ`, `login admin / Xy7#…`):
/// where nothing marks it as a value, it must look like one made to be hard to guess: a letter
/// and two of digits, mixed case and symbols, no spaces, and no path, URL, e-mail address,
/// version or `rule:arg` word (`min:8`).
pub(super) fn password_like(v: &str) -> bool {
    if v.len() < 6 || v.chars().any(char::is_whitespace) || is_placeholder(v) || is_reference(v) {
        return false;
    }
    if is_path(v) || v.contains("://") || v.contains("REDACTED:") {
        return false;
    }
    let email = v.split_once('@').is_some_and(|(u, d)| {
        !u.is_empty() && d.contains('.') && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"@._+-".contains(&b))
    });
    let rule = v.contains(':')
        && v.split(':').all(|p| p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_,.".contains(&b)));
    let version = v
        .trim_start_matches(['v', 'V'])
        .split(['.', '-'])
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if email || rule || version || !v.bytes().any(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    let symbol = v.bytes().any(|b| b"!@#$%^&*+=?~;,<>|".contains(&b));
    let mixed = has_upper(v) && has_lower(v);
    [has_digit(v), mixed, symbol].iter().filter(|x| **x).count() >= 2
}

/// Random-looking: at least `min` characters from a token alphabet, more than one character
/// class, and not a plain word, hex digest, UUID, number, version or path.
pub(super) fn looks_random(v: &str, min: usize) -> bool {
    let n = v.chars().count();
    if n < min || v.chars().any(char::is_whitespace) || is_path(v) || v.contains("://") || v.starts_with("//") {
        return false;
    }
    let classes = [has_lower(v), has_upper(v), has_digit(v), v.contains(['+', '/', '=', '_', '-', '.', '~'])]
        .iter()
        .filter(|b| **b)
        .count();
    classes >= 2 && !is_hex(v) && !is_uuid(v) && !is_composite(v) && entropy(v) >= 2.8
}

/// Made of words, numbers and hex digests joined by separators (`v1-cargo-Linux-3f9c…`,
/// `uploads/2024/05/IMG_3921.jpg`, `createdAtTimestamp`): a cache key, an object key or an
/// identifier, not a generated credential (whose pieces are not words).
pub(super) fn is_composite(v: &str) -> bool {
    let mut any = false;
    for seg in v.split(|c: char| "-_./:@+=~".contains(c)).filter(|s| !s.is_empty()) {
        any = true;
        let whole_ext = seg.len() <= 4 && seg.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !(is_hex(seg) || whole_ext || is_wordy(seg)) {
            return false;
        }
    }
    any
}

/// A run of words in camel case and numbers (`createdAtTimestamp`, `IMG`, `v1`, `x86`): each
/// word holds a vowel or is a short acronym.
pub(super) fn is_wordy(seg: &str) -> bool {
    let b = seg.as_bytes();
    // Words and numbers alternate once or twice (`v1`, `utf8`, `ipv4only`), not on and on
    // (`abc123def456ghi`).
    if b.windows(2).filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit()).count() > 2 {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i - start > 12 {
                return false;
            }
            continue;
        }
        if !b[i].is_ascii_alphabetic() {
            return false;
        }
        // An upper-case run (an acronym, or one capital starting a word), then lower case.
        let mut upper = 0;
        while i < b.len() && b[i].is_ascii_uppercase() {
            i += 1;
            upper += 1;
        }
        if upper > 1 && i < b.len() && b[i].is_ascii_lowercase() {
            i -= 1; // `IMGFile`: the last capital starts the next word
            upper -= 1;
        }
        let lower_start = i;
        if upper <= 1 {
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
        }
        let word = &seg[start..i];
        let lower = i - lower_start;
        let vowel = word.bytes().any(|c| b"aeiouyAEIOUY".contains(&c));
        // One letter is a word only at the start (`v1`, `x86`, `aBigValue`).
        let ok =
            if upper > 1 { upper <= 5 || vowel } else { (word.len() == 1 && start == 0) || (word.len() > 1 && vowel) };
        if !ok || (lower == 0 && upper == 0) {
            return false;
        }
    }
    true
}

/// Base64 of text (prose, a certificate, a test fixture: printable, with spaces or lines) or of
/// a file with a known header (an image, an archive): no credential. What such a text hides is
/// found by decoding it (`Redactor::encoded`), not by its randomness.
pub(super) fn is_benign_base64(v: &str) -> bool {
    const MAGIC: &[&[u8]] = &[
        b"\x89PNG",
        b"GIF8",
        b"\xff\xd8\xff",
        b"%PDF",
        b"PK\x03\x04",
        b"\x1f\x8b",
        b"\0asm",
        b"RIFF",
        b"BM",
        b"\x7fELF",
        b"<svg",
        b"<?xml",
        b"OggS",
        b"fLaC",
        b"ID3",
        b"wOF",
        b"\0\0\0",
    ];
    v.len() >= 16
        && base64_decode(v).is_some_and(|d| {
            MAGIC.iter().any(|m| d.starts_with(m))
                || std::str::from_utf8(&d).is_ok_and(|s| s.contains([' ', '\n']) && is_printable(s))
        })
}

/// Text a person could read: no control characters but line breaks and tabs (2% allowed).
pub(super) fn is_printable(s: &str) -> bool {
    let printable = s.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r')).count();
    !s.is_empty() && printable * 100 >= s.chars().count() * 98
}

/// A high-entropy value in an assignment to a key of any name: a generated credential.
pub(super) fn high_entropy(v: &str) -> bool {
    if v.len() < 20 || !looks_random(v, 20) || is_benign_base64(v) || super::rules::is_snake_identifier(v)
        // Brackets are code (`name[EXE]`, `Vec<u8>`), not a generated credential's alphabet.
        || v.contains(['[', ']', '<', '>', '(', ')', '{', '}', '"', '\\', '`'])
        || super::rules::is_dotted_path(v)
    {
        return false;
    }
    let digits = v.bytes().filter(u8::is_ascii_digit).count();
    has_upper(v) && has_lower(v) && digits >= 2 && entropy(v) >= 3.6
}

/// Whether `text` has a run of at least `min` token characters (`[A-Za-z0-9+/=_.~-]`) with
/// upper and lower case letters and digits: what a generated credential looks like.
pub(super) fn has_random_run(text: &str, min: usize) -> bool {
    let (mut len, mut classes) = (0usize, 0u8);
    for b in text.bytes().chain(std::iter::once(b' ')) {
        let class = match b {
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            b'0'..=b'9' => 4,
            b'+' | b'/' | b'=' | b'_' | b'.' | b'~' | b'-' => 0,
            _ => {
                if len >= min && classes == 7 {
                    return true;
                }
                len = 0;
                classes = 0;
                continue;
            }
        };
        len += 1;
        classes |= class;
    }
    false
}

pub(super) fn is_hex(v: &str) -> bool {
    v.bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn is_uuid(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    parts.len() == 5 && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| is_hex(p))
}

/// Shannon entropy in bits per character.
pub(super) fn entropy(v: &str) -> f64 {
    let mut counts = [0u32; 256];
    let mut n = 0u32;
    for b in v.bytes() {
        counts[b as usize] += 1;
        n += 1;
    }
    counts.iter().filter(|c| **c > 0).map(|&c| f64::from(c) / f64::from(n)).map(|p| -p * p.log2()).sum()
}

/// Standard base64 (padding optional); `None` when `s` is not base64.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for b in s.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}
