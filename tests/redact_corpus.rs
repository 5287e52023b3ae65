//! The redaction corpus (`tests/fixtures/redact/`): for every rule family, texts with secrets in
//! prose, env files, JSON (escaped too), YAML, code literals, shell flags, DSNs and curl commands,
//! and texts without any (hashes, integrity strings, fingerprints, identifiers, design
//! sentences). Secrets are generated here, fresh for every seed, with the right alphabets and
//! lengths (12 to 4,000 characters). Prints precision and recall per family and fails unless
//! every positive loses every secret and no negative changes.

mod common;

use std::collections::BTreeMap;

use common::Rng;

const SIZES: &[usize] = &[12, 40, 200, 513, 777, 1100, 4000];
const SEEDS: &[u64] = &[0x9E37_79B9_7F4A_7C15, 0x2545_F491_4F6C_DD1D, 0xDEAD_BEEF_CAFE_F00D, 17, 4242];

struct Case {
    family: String,
    what: String,
    text: String,
}

fn cases(file: &str) -> Vec<Case> {
    let path = format!("{}/redact/{file}", common::FIXTURES);
    let mut raw = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    raw.push('\n');
    raw.push_str(if file == "positive.txt" { EXTRA_POSITIVE } else { EXTRA_NEGATIVE });
    let mut out: Vec<Case> = Vec::new();
    for line in raw.lines() {
        if let Some(head) = line.strip_prefix("=== ") {
            let (family, what) = head.split_once(" | ").unwrap_or_else(|| panic!("{path}: bad header {line:?}"));
            out.push(Case { family: family.trim().into(), what: what.trim().into(), text: String::new() });
        } else if let Some(c) = out.last_mut() {
            c.text.push_str(line);
            c.text.push('\n');
        }
    }
    for c in &mut out {
        // A blank line separates cases in the file; it is not part of the case.
        let t = c.text.trim_end_matches('\n').to_string();
        c.text = t;
    }
    out
}

/// Cases kept here beside the fixture files, in their format: secrets in markdown, other
/// languages, prose, SQL, escapes, any `Authorization` scheme, glued keys and tokens, YAML
/// parents, tool flags, and with no label at all.
const EXTRA_POSITIVE: &str = r#"=== markdown | bold label
- **Password:** {{S:pw:*12}}
- **Host:** db.internal

=== markdown | bold label, colon outside
**Access token**: {{S:alnum:*12}}

=== markdown | table column
| Env | User | Password |
|-----|------|----------|
| prod | ops | {{S:alnum:24}} |

=== i18n | Chinese label and copula
数据库的密码是{{S:alnum:16}}，请保存。

=== i18n | full-width colon
口令：{{S:alnum:16}}

=== i18n | German copula
Das Kennwort ist {{S:alnum:16}} für den Server.

=== i18n | Japanese particle
パスワードは{{S:alnum:16}}です

=== i18n | Spanish label
contraseña: {{S:alnum:16}}

=== unlabelled | bare random token in prose
then run the deploy with {{S:alnum:40}} as the argument

=== unlabelled | quoted token in a call
client = Api("{{S:alnum:32}}")

=== prose | password for someone is
the password for the backup user is {{S:alnum:14}}.

=== prose | changed password to
I changed the root password to {{S:pw:16}} yesterday.

=== prose | value as the password
use "{{S:alnum:14}}" as the password

=== sql | create user with password
CREATE USER reporting WITH PASSWORD '{{S:pw:16}}';

=== sql | identified by
ALTER USER 'app'@'%' IDENTIFIED BY '{{S:pw:16}}';

=== escaped-json | escaped URL password
{"url":"postgres:\/\/app:{{S:alnum:16}}@db:5432\/app"}

=== authorization | unlisted scheme
Authorization: SSWS {{S:alnum:40}}

=== glued | short password key
DBPASS={{S:alnum:16}}

=== glued | session cookie
PHPSESSID={{S:lower:26}}

=== yaml-parent | secrets mapping
secrets:
  db: {{S:alnum:16}}
  smtp: {{S:alnum:16}}

=== tool-flag | gpg passphrase
gpg --batch --passphrase {{S:alnum:16}} -d f.gpg

=== tool-flag | requests auth tuple
requests.get(url, auth=("bob", "{{S:pw:16}}"))

=== cut-value | semicolon in a password
password={{S:alnum:8}};{{S:alnum:10}}
"#;

const EXTRA_NEGATIVE: &str = r#"=== design | markdown without secrets
**Password:** required, at least 12 characters.
| Field | Type | Notes |
|---|---|---|
| password | string | hashed with argon2 |

=== design | i18n sentences
密码长度至少为12位，请定期修改密码。Bitte ändern Sie Ihr Passwort regelmäßig.

=== design | password prose
The password is incorrect. My password's strength is good. Change your password to something longer.

=== ids | unlabelled ids and identifiers
commit {{N:hex:40}} for request {{N:uuid:0}}; createUserAccountRegistrationHandlerWithRetryPolicy in src/features/auth/LoginFormContainer.tsx

=== design | yaml secret references
secrets:
  - name: tls-cert
    secretName: web-tls
  db:
    file: ./db_password.txt
"#;

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn pick(rng: &mut Rng, alphabet: &[u8], n: usize) -> String {
    (0..n).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize] as char).collect()
}

/// `n` characters from `alphabet` holding at least one of each of `must` (groups of characters).
fn mixed(rng: &mut Rng, alphabet: &[u8], must: &[&[u8]], n: usize) -> String {
    let mut v: Vec<u8> = pick(rng, alphabet, n).into_bytes();
    for (i, group) in must.iter().enumerate() {
        if i < n {
            let at = rng.below(n as u64) as usize;
            // Distinct positions for each class: the i-th class goes to a slot of its own.
            let slot = (at / must.len()) * must.len() + i;
            let slot = if slot < n { slot } else { i };
            v[slot] = group[rng.below(group.len() as u64) as usize];
        }
    }
    String::from_utf8(v).unwrap()
}

fn base64(bytes: &[u8], alphabet: &[u8], pad: bool) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next() as u8).collect()
}

/// Base64 of random bytes, `n` characters long (no padding: a fixture writes `=` where the
/// real value has it).
fn b64_random(rng: &mut Rng, alphabet: &[u8], n: usize) -> String {
    let mut s = base64(&random_bytes(rng, n * 3 / 4 + 3), alphabet, false);
    s.truncate(n);
    s
}

const WORDS: &[&str] = &[
    "the", "deploy", "script", "reads", "config", "retries", "after", "timeout", "and", "logs", "every", "request",
    "with", "its", "status", "code", "while", "workers", "drain", "queue", "before", "shutdown", "hello", "world",
];

fn prose(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    while s.len() < n {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s.truncate(n);
    s
}

fn pem_body(rng: &mut Rng, n: usize) -> String {
    let flat = b64_random(rng, B64, n.max(64));
    flat.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\n")
}

fn password(rng: &mut Rng, n: usize) -> String {
    const PW: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!%^*-_+.~";
    let p = mixed(rng, PW, &[b"ABCDEFGHJKLMNPQRSTUVWXYZ", b"abcdefghijkmnopqrstuvwxyz", b"23456789", b"!%^*-_+.~"], n);
    // A password that starts with `-` cannot be given after a flag; nobody has one.
    match p.strip_prefix('-') {
        Some(rest) => format!("Q{rest}"),
        None => p,
    }
}

/// The crypt alphabet of password hashes (`$6$`, bcrypt, yescrypt).
const CRYPT64: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Words of the BIP39 list (3 to 8 letters), for seed phrases.
const SEED_WORDS: &[&str] = &[
    "abandon", "amber", "anchor", "arctic", "bamboo", "blanket", "bonus", "cactus", "candle", "clay", "cousin",
    "crater", "dolphin", "eager", "elite", "fabric", "falcon", "gadget", "garlic", "grain", "harbor", "hover",
    "invest", "jaguar", "kettle", "ladder", "lunar", "mercy", "mimic", "noodle", "orbit", "oyster", "pistol", "quote",
    "rescue", "ripple", "salmon", "sudden", "tackle", "thrive", "umbrella", "velvet", "venue", "walnut", "yellow",
    "zebra",
];

/// DER that starts with one of `heads`, then random bytes: `len` characters of base64 at least,
/// in lines of 64.
fn der(rng: &mut Rng, heads: &[&[u8]], len: usize) -> String {
    let mut bytes = heads[rng.below(heads.len() as u64) as usize].to_vec();
    bytes.extend(random_bytes(rng, (len * 3 / 4).saturating_sub(bytes.len()).max(24)));
    wrap(&base64(&bytes, B64, true), 64)
}

/// `s` cut into lines of `n` characters, as `base64` prints it.
fn wrap(s: &str, n: usize) -> String {
    s.as_bytes().chunks(n).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\n")
}

/// A generated value of `kind`, `len` characters where the kind has a length.
fn generate(rng: &mut Rng, kind: &str, len: usize) -> String {
    let upper_digits = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    match kind {
        "alnum" => mixed(rng, ALNUM, &[b"ABCDEFGHJKLMNPQRSTUVWXYZ", b"abcdefghijkmnopqrstuvwxyz", b"23456789"], len),
        "lower" => {
            mixed(rng, b"abcdefghijklmnopqrstuvwxyz0123456789", &[b"abcdefghijkmnopqrstuvwxyz", b"23456789"], len)
        }
        "upper" => mixed(rng, upper_digits, &[b"ABCDEFGHJKLMNPQRSTUVWXYZ", b"234567"], len),
        "digits" => pick(rng, b"0123456789", len),
        "hex" => pick(rng, b"0123456789abcdef", len),
        "b64" => loop {
            let s = b64_random(rng, B64, len);
            // Real keys of these sizes hold both cases and a digit; so must the generated ones.
            if s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_uppercase()) {
                break s;
            }
        },
        "b64nopad" => b64_random(rng, B64, len),
        "b64url" => loop {
            let s = b64_random(rng, B64URL, len);
            if s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_uppercase()) {
                break s;
            }
        },
        "pw" => password(rng, len),
        "pwurl" => {
            let mut p = password(rng, len.max(6)).into_bytes();
            let n = p.len();
            p[n / 4] = b'#';
            p[n / 2] = b'/';
            p[3 * n / 4] = b'@';
            String::from_utf8(p).unwrap()
        }
        "sts" => {
            let head = "IQoJb3JpZ2luX2VjE";
            format!("{head}{}", b64_random(rng, B64, len.max(head.len() + 8) - head.len()))
        }
        "pem" => pem_body(rng, len),
        "b64pem" => {
            let pem =
                format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n", pem_body(rng, len));
            base64(pem.as_bytes(), B64, true)
        }
        "b64cert" => {
            let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", pem_body(rng, 600));
            base64(pem.as_bytes(), B64, true)
        }
        "b64env" => {
            let mut env = format!(
                "APP_ENV=staging\nDATABASE_URL=postgres://app:{}@db:5432/app\nSTRIPE_SECRET_KEY={}\n",
                password(rng, 16),
                generate(rng, "alnum", 32)
            );
            while env.len() < len {
                env.push_str(&format!("FEATURE_{}=on\n", generate(rng, "digits", 4)));
            }
            base64(env.as_bytes(), B64, true)
        }
        "b64env76" => wrap(&generate(rng, "b64env", len), 76),
        "b64text76" => wrap(&generate(rng, "b64text", len), 76),
        "b64url64" => {
            base64(format!("postgres://app:{}@db.internal:5432/app", password(rng, 16)).as_bytes(), B64, true)
        }
        "b64pw" => base64(format!("admin:{}", password(rng, len.clamp(8, 64))).as_bytes(), B64, true),
        "dockercfg" => {
            let auth = base64(format!("ci:{}", password(rng, 20)).as_bytes(), B64, true);
            base64(format!(r#"{{"auths":{{"registry.example.com":{{"auth":"{auth}"}}}}}}"#).as_bytes(), B64, true)
        }
        "uuid" => {
            let h = generate(rng, "hex", 32);
            format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
        }
        "b64text" => {
            let mut s = base64(prose(rng, len * 3 / 4 + 2).as_bytes(), B64, true);
            s.truncate(len - len % 4);
            s
        }
        "word" => prose(rng, len).replace(' ', ""),
        "crypt64" => pick(rng, CRYPT64, len),
        "mnemonic" => {
            let words: Vec<&str> = (0..len).map(|_| SEED_WORDS[rng.below(SEED_WORDS.len() as u64) as usize]).collect();
            words.join(" ")
        }
        "derkey" => {
            // A private key's DER (PKCS#1 RSA, PKCS#8, SEC1 EC, PKCS#8 Ed25519), base64 in lines of 64.
            const HEADS: &[&[u8]] = &[
                &[0x30, 0x82, 0x04, 0xa3, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00],
                &[0x30, 0x82, 0x04, 0xbd, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7],
                &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20],
                &[0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20],
            ];
            der(rng, HEADS, len)
        }
        "derpublic" => {
            // What is not a private key: a certificate, a public key (SPKI), base64 in lines of 64.
            const HEADS: &[&[u8]] = &[
                &[0x30, 0x82, 0x03, 0x77, 0x30, 0x82, 0x02, 0x5f, 0xa0, 0x03, 0x02, 0x01, 0x02],
                &[0x30, 0x82, 0x01, 0x22, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01],
            ];
            der(rng, HEADS, len)
        }
        other => panic!("unknown generator kind `{other}`"),
    }
}

/// The sizes a case runs at: every size from [`SIZES`] for a `*` placeholder (`*N`: from N on).
fn sizes(template: &str) -> Vec<usize> {
    let Some(at) = template.find(":*") else { return vec![0] };
    let min: usize = template[at + 2..].split("}}").next().and_then(|n| n.parse().ok()).unwrap_or(0);
    SIZES.iter().copied().filter(|s| *s >= min).collect()
}

/// One concrete text of a case: its placeholders filled, with the secrets it holds.
fn instantiate(rng: &mut Rng, template: &str, size: usize) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut secrets = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("{{S:").into_iter().chain(rest.find("{{N:")).min() {
        out.push_str(&rest[..at]);
        let end = rest[at..].find("}}").expect("placeholder closed") + at;
        let spec = &rest[at + 2..end];
        let mut parts = spec.split(':');
        let (role, kind, len) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let len = if len.starts_with('*') { size } else { len.parse().expect("length") };
        let value = generate(rng, kind, len);
        if role == "S" {
            secrets.push(value.clone());
        }
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    (out, secrets)
}

/// The part of `secret` still in `out`: the whole, or a 12-character piece of it that the rest
/// of the input does not hold too (a kubeconfig's certificate and key share their base64 header).
fn leaked(text: &str, out: &str, secret: &str) -> Option<String> {
    if out.contains(secret) {
        return Some(secret.to_string());
    }
    let b = secret.as_bytes();
    if b.len() < 12 {
        return None;
    }
    let rest = text.replace(secret, "");
    (0..=b.len() - 12)
        .map(|i| &secret[i..i + 12])
        .find(|piece| out.contains(piece) && !rest.contains(piece))
        .map(str::to_string)
}

#[derive(Default)]
struct Tally {
    tp: usize,
    fn_: usize,
    tn: usize,
    fp: usize,
}

fn ratio(a: usize, b: usize) -> f64 {
    if a + b == 0 {
        1.0
    } else {
        a as f64 / (a + b) as f64
    }
}

#[test]
fn every_positive_is_redacted_and_no_negative_changes() {
    let positives = cases("positive.txt");
    let negatives = cases("negative.txt");
    assert!(positives.len() > 100 && negatives.len() > 40, "the corpus is smaller than it should be");
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut texts = 0usize;
    for &seed in SEEDS {
        let mut rng = Rng(seed);
        for c in &positives {
            for size in sizes(&c.text) {
                let (text, secrets) = instantiate(&mut rng, &c.text, size);
                assert!(!secrets.is_empty(), "positive case `{}` names no secret", c.what);
                let out = ovmem::redact::scrub(&text);
                texts += 1;
                let t = families.entry(c.family.clone()).or_default();
                match secrets.iter().find_map(|s| leaked(&text, &out, s)) {
                    None => t.tp += 1,
                    Some(piece) => {
                        t.fn_ += 1;
                        failures.push(format!(
                            "MISSED {} | {} (size {size}, seed {seed:#x}): `{}` left in\n{}\n",
                            c.family,
                            c.what,
                            clip(&piece, 40),
                            clip(&out, 600)
                        ));
                    }
                }
            }
        }
        for c in &negatives {
            let (text, _) = instantiate(&mut rng, &c.text, 0);
            let out = ovmem::redact::scrub(&text);
            texts += 1;
            let t = families.entry(format!("(kept) {}", c.family)).or_default();
            if out == text {
                t.tn += 1;
            } else {
                t.fp += 1;
                failures.push(format!(
                    "CHANGED {} | {} (seed {seed:#x}):\n{}\n->\n{}\n",
                    c.family,
                    c.what,
                    clip(&text, 600),
                    clip(&out, 600)
                ));
            }
        }
    }
    let total = families.values().fold(Tally::default(), |a, t| Tally {
        tp: a.tp + t.tp,
        fn_: a.fn_ + t.fn_,
        tn: a.tn + t.tn,
        fp: a.fp + t.fp,
    });
    eprintln!("redaction corpus: {texts} texts, {} seeds", SEEDS.len());
    eprintln!("{:<24} {:>9} {:>9} {:>9} {:>9}", "family", "redacted", "missed", "kept", "changed");
    for (name, t) in &families {
        eprintln!("{name:<24} {:>9} {:>9} {:>9} {:>9}", t.tp, t.fn_, t.tn, t.fp);
    }
    eprintln!(
        "precision {:.4} ({} of {} redacted texts held a secret), recall {:.4} ({} of {} secret texts redacted)",
        ratio(total.tp, total.fp),
        total.tp,
        total.tp + total.fp,
        ratio(total.tp, total.fn_),
        total.tp,
        total.tp + total.fn_
    );
    // The first failure of each case, changes to kept texts first.
    let mut shown = std::collections::BTreeSet::new();
    failures.sort_by_key(|f| !f.starts_with("CHANGED"));
    for f in &failures {
        if shown.insert(f.split(" (").next().unwrap_or_default().to_string()) {
            eprintln!("{f}");
        }
    }
    assert!(failures.is_empty(), "{} corpus failures (first ones above)", failures.len());
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The corpus's secrets never reach the store: `ovmem memory add` through the built binary,
/// then the database file's bytes searched for them.
#[test]
fn corpus_secrets_never_reach_the_database_file() {
    let home = common::Home::new();
    let mut rng = Rng(0x5EED);
    let mut secrets = Vec::new();
    let positives = cases("positive.txt");
    for c in positives.iter().filter(|c| matches!(c.family.as_str(), "long-values" | "yaml-block" | "curl")) {
        let (text, s) = instantiate(&mut rng, &c.text, 777);
        let out = home.run(&["memory", "add", "--", &text]);
        assert!(out.status.success(), "{}: {}", c.what, common::stderr(&out));
        secrets.extend(s);
    }
    let db = std::fs::read_dir(home.path().join(".ovmem")).unwrap();
    let mut bytes = Vec::new();
    for f in db.flatten().filter(|f| f.file_name().to_string_lossy().starts_with("memory.db")) {
        bytes.extend(std::fs::read(f.path()).unwrap());
    }
    assert!(!bytes.is_empty(), "no memory.db written");
    let text = String::from_utf8_lossy(&bytes);
    for s in &secrets {
        assert!(!text.contains(s.as_str()), "`{s}` is in memory.db");
    }
}
