//! Secrets never outlive the turn they were said in: every text ovmem stores, logs or sends to a
//! backend goes through [`scrub`] first. `<private>…</private>` spans are dropped whole, then a
//! rule set of the kind secret scanners keep (gitleaks-style: a name, keywords, a regex, the
//! secret's capture group and a check) replaces each secret with `[REDACTED:<rule>]`. Rules are
//! data, compiled lazily and only when one of their keywords occurs, so a 4 KB prompt costs
//! microseconds on the hook path. Two passes of their own find YAML block scalars under a secret's
//! key and base64 runs whose decoded text holds a secret; what lies inside a hash (`sha512-…`,
//! `h1:…`, `SHA256:…`) is kept. No value is too long to redact, and every pass is linear in the
//! text. `tests/redact_corpus.rs` measures the whole set. Extra patterns come from
//! `redact_patterns` in `config.toml`.

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::bytes::{Captures, Regex as BytesRegex, RegexBuilder as BytesRegexBuilder};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

/// An extra pattern from `config.toml`: a regex, or a table naming it (`{ name, pattern }`).
/// A named capture group `secret` limits what is replaced; else the whole match is.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Pattern {
    Plain(String),
    Named { name: String, pattern: String },
}

/// What a rule's check says about one match.
enum Verdict {
    Keep,
    Redact,
    /// Redact under another label than the rule's id.
    RedactAs(&'static str),
}

struct Rule {
    id: &'static str,
    /// Lowercase substrings one of which must occur for the rule to run (empty: always runs).
    keywords: &'static [&'static str],
    /// A cheap scan the text must pass too before the regex is compiled and run.
    pre: Option<fn(&str) -> bool>,
    pattern: &'static str,
    /// Matched against the ASCII-lowercased text (same offsets), with a lowercase pattern: a
    /// case-insensitive rule without `(?i)`, whose literal-set analysis is slow to compile.
    fold: bool,
    /// The capture group that is the secret.
    group: Group,
    check: fn(&str, &Captures) -> Verdict,
}

/// Where the secret is in a match.
enum Group {
    /// This group (0: the whole match).
    At(usize),
    /// The first of these named groups that took part.
    First(&'static [&'static str]),
    /// The first of these numbered groups that took part.
    AnyOf(&'static [usize]),
}

impl Group {
    fn get<'h>(&self, c: &Captures<'h>) -> Option<regex::bytes::Match<'h>> {
        match self {
            Group::At(i) => c.get(*i),
            Group::First(names) => names.iter().find_map(|n| c.name(n)),
            Group::AnyOf(ids) => ids.iter().find_map(|i| c.get(*i)),
        }
    }
}

/// The text of whichever of groups 1 and 2 took part.
fn any_of<'t>(t: &'t str, c: &Captures<'_>) -> &'t str {
    Group::AnyOf(&[1, 2]).get(c).map_or("", |m| span(t, m))
}

fn always(_: &str, _: &Captures) -> Verdict {
    Verdict::Redact
}

/// The rule set, most specific first: where matches overlap, the earlier rule names the marker.
static RULES: &[Rule] = &[
    Rule {
        id: "private-key",
        keywords: &["private key"],
        pre: None,
        // A block, or (cut short, as a truncated turn may be) everything after its header.
        pattern: r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "anthropic-key",
        keywords: &["sk-ant-"],
        pre: None,
        pattern: r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "openai-key",
        keywords: &["sk-"],
        pre: None,
        pattern: r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        fold: false,
        group: Group::At(0),
        check: |t, c| verdict(has_digit(gi(t, c, 0)) && gi(t, c, 0).bytes().any(|b| b.is_ascii_alphabetic())),
    },
    Rule {
        id: "github-token",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pre: None,
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "gitlab-token",
        keywords: &["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-"],
        pre: None,
        pattern: r"\bgl(?:pat|dt|rt|ptt|cbt|ft|imt|agent|oas|soat)-[A-Za-z0-9_.-]{19,}[A-Za-z0-9_]",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "slack-token",
        keywords: &["xox", "xapp-"],
        pre: None,
        pattern: r"\b(?:xox[abposre]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "slack-webhook",
        keywords: &["hooks.slack.com"],
        pre: None,
        pattern: r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{10,}",
        fold: true,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "discord-webhook",
        keywords: &["discord"],
        pre: None,
        pattern: r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "google-api-key",
        keywords: &["aiza"],
        pre: None,
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "google-oauth",
        keywords: &["gocspx-", "ya29."],
        pre: None,
        pattern: r"\b(?:GOCSPX-[A-Za-z0-9_-]{24,}|ya29\.[0-9A-Za-z_-]{20,})",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "stripe-key",
        keywords: &["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
        pre: None,
        pattern: r"\b(?:[sr]k_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[A-Za-z0-9+/=]{20,})",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "jwt",
        keywords: &["eyj"],
        pre: None,
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "aws-access-key-id",
        keywords: &["akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"],
        pre: None,
        pattern: r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "aws-secret-key",
        keywords: &["aws", "secret"],
        pre: None,
        // 40 base64 characters said near `aws` or `secret`, in prose or an assignment.
        pattern: r"(?:aws|secret)[\x20-\x7e\t]{0,48}?[^A-Za-z0-9/+=]([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        fold: true,
        group: Group::At(1),
        check: |t, c| {
            let s = gi(t, c, 1);
            verdict(has_upper(s) && has_lower(s) && (has_digit(s) || s.contains(['/', '+'])))
        },
    },
    Rule {
        id: "aws-secret-key",
        keywords: &[],
        pre: Some(|t| has_random_run(t, 40)),
        // The shape alone (40 base64 characters with `/` or `+`, both cases, digits, random),
        // outside URLs.
        pattern: r"(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
        fold: false,
        group: Group::At(1),
        check: |t, c| {
            let m = c.get(1).expect("group 1");
            let s = gi(t, c, 1);
            let (before, after) = around(t, m.start(), m.end(), 512);
            let token_start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
            let token_end = after.find(char::is_whitespace).unwrap_or(after.len());
            let in_url = before[token_start..].contains("://") || after[..token_end].contains("://");
            verdict(
                !in_url
                    && has_upper(s)
                    && has_lower(s)
                    && has_digit(s)
                    && s.contains(['/', '+'])
                    && entropy(s) >= 4.0
                    && !is_composite(s),
            )
        },
    },
    Rule {
        id: "npm-token",
        keywords: &["npm_"],
        pre: None,
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "pypi-token",
        keywords: &["pypi-age"],
        pre: None,
        pattern: r"\bpypi-AgE[A-Za-z0-9_-]{50,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "huggingface-token",
        keywords: &["hf_"],
        pre: None,
        pattern: r"\bhf_[A-Za-z0-9]{30,}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        // Twilio API key SIDs (`SK` + 32 hex), as secret scanners flag them.
        id: "twilio-key",
        keywords: &["sk"],
        // `sk` is in many words (`task`, `ask`); the key's `SK` is upper case.
        pre: Some(|t| t.contains("SK")),
        pattern: r"\bSK[0-9a-fA-F]{32}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "sendgrid-key",
        keywords: &["sg."],
        pre: None,
        pattern: r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "digitalocean-token",
        keywords: &["_v1_"],
        pre: None,
        pattern: r"\bdo[opr]_v1_[a-f0-9]{64}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "shopify-token",
        keywords: &["shpat_", "shpca_", "shppa_", "shpss_"],
        pre: None,
        pattern: r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "vault-token",
        keywords: &["hvs.", "hvb.", "hvr."],
        pre: None,
        pattern: r"\bhv[sbr]\.[A-Za-z0-9_-]{20,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "groq-key",
        keywords: &["gsk_"],
        pre: None,
        pattern: r"\bgsk_[A-Za-z0-9]{40,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "xai-key",
        keywords: &["xai-"],
        pre: None,
        pattern: r"\bxai-[A-Za-z0-9]{40,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "databricks-token",
        keywords: &["dapi"],
        pre: None,
        pattern: r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "sentry-token",
        keywords: &["sntrys_", "sntryu_"],
        pre: None,
        pattern: r"\bsntry[su]_[A-Za-z0-9+/=_]{30,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "linear-key",
        keywords: &["lin_api_"],
        pre: None,
        pattern: r"\blin_api_[A-Za-z0-9]{40}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "notion-token",
        keywords: &["ntn_"],
        pre: None,
        pattern: r"\bntn_[A-Za-z0-9]{40,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "postman-key",
        keywords: &["pmak-"],
        pre: None,
        pattern: r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "grafana-token",
        keywords: &["glc_", "glsa_"],
        pre: None,
        pattern: r"\bgl(?:c|sa)_[A-Za-z0-9+/=_]{32,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "supabase-token",
        keywords: &["sbp_"],
        pre: None,
        pattern: r"\bsbp_[a-f0-9]{40}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "replicate-token",
        keywords: &["r8_"],
        pre: None,
        pattern: r"\br8_[A-Za-z0-9]{37}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "age-secret-key",
        keywords: &["age-secret-key-"],
        pre: None,
        pattern: r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "atlassian-token",
        keywords: &["atatt"],
        pre: None,
        pattern: r"\bATATT3[A-Za-z0-9_=-]{100,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "azure-storage-key",
        keywords: &["accountkey="],
        pre: None,
        pattern: r"AccountKey=[A-Za-z0-9+/=]{40,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "telegram-bot-token",
        keywords: &[":aa"],
        pre: None,
        pattern: r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "mailgun-key",
        keywords: &["key-"],
        pre: None,
        pattern: r"\bkey-[0-9a-zA-Z]{32}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "square-token",
        keywords: &["sq0atp-", "sq0csp-", "eaaa"],
        pre: None,
        pattern: r"\b(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60})\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "doppler-token",
        keywords: &["dp.pt.", "dp.st.", "dp.sa.", "dp.ct."],
        pre: None,
        pattern: r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "pulumi-token",
        keywords: &["pul-"],
        pre: None,
        pattern: r"\bpul-[a-f0-9]{40}\b",
        fold: false,
        group: Group::At(0),
        check: always,
    },
    Rule {
        id: "url-password",
        keywords: &["://"],
        pre: None,
        // The password runs to the last `@` that a host follows, so it may hold `#`, `/`, `@`
        // (`postgres://app:p#ss/w@rd@db:5432/app`).
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/?#@:'"<>\[\]]*:([^\s'"<>`]+)@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*(?::\d{1,5})?|\[[0-9A-Fa-f:.]+\](?::\d{1,5})?)(?:[/?#,;)\s'"`]|$)"#,
        fold: false,
        group: Group::At(1),
        check: |t, c| {
            let pw = gi(t, c, 1);
            // `https://host:8080/users/@me`: a port and a path, no password.
            let port = pw.contains('/')
                && pw
                    .split('/')
                    .next()
                    .is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
            verdict(!is_placeholder(pw) && !port)
        },
    },
    Rule {
        id: "dsn-password",
        keywords: &["@tcp", "@unix", "@udp", "@/"],
        pre: None,
        // Go's MySQL driver: `user:password@tcp(host:3306)/db`, `user:password@/db`.
        pattern: r#"(?:^|[\s"'=(,;`])[A-Za-z0-9_.$-]+:([^\s'"`]+?)@(?:(?:tcp6?|unix|udp)\(|/[A-Za-z0-9_]+(?:[?"'`\s]|$))"#,
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(!is_placeholder(gi(t, c, 1)) && !is_reference(gi(t, c, 1))),
    },
    Rule {
        id: "dsn-password",
        keywords: &["@//", "thin:"],
        pre: None,
        // Oracle: `scott/tiger@//host:1521/service` (easy connect), `thin:scott/tiger@host`.
        pattern: r#"(?:(?:^|[\s"'=(`])[A-Za-z][A-Za-z0-9_$#]*/([^\s/@'"`]+)@//|thin:[A-Za-z][A-Za-z0-9_$#]*/([^\s/@'"`]+)@)"#,
        fold: false,
        group: Group::AnyOf(&[1, 2]),
        check: |t, c| verdict(!is_placeholder(any_of(t, c))),
    },
    Rule {
        id: "dsn-password",
        keywords: &["sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "connect", "conn "],
        pre: None,
        // Oracle tools given `user/password[@alias]`, and SQL*Plus `CONNECT user/password@alias`.
        pattern: r#"(?:\b(?:sqlplus|sqlldr|expdp|impdp|exp|imp|rman|dgmgrl)(?:\s+-[a-z]+)*\s+["']?[a-z][a-z0-9_$#]*/([^\s/@'"]+)(?:@|["']|\s|$)|\bconn(?:ect)?\s+[a-z][a-z0-9_$#]*/([^\s/@'"]+)@)"#,
        fold: true,
        group: Group::AnyOf(&[1, 2]),
        check: |t, c| verdict(!is_placeholder(any_of(t, c)) && !is_reference(any_of(t, c))),
    },
    Rule {
        id: "url-password",
        keywords: &["://"],
        pre: None,
        // A token as the whole user part (`https://<token>@host`).
        pattern: r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://([A-Za-z0-9_.~-]{16,})@",
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(looks_random(gi(t, c, 1), 16)),
    },
    Rule {
        id: "authorization",
        keywords: &["authorization"],
        pre: None,
        pattern: r#"\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate|apikey|sso-key)\s+)?([^\s"',;]{6,})"#,
        fold: true,
        group: Group::At(1),
        check: |t, c| {
            let v = gi(t, c, 1).trim_end_matches(['`', '.', ')', ']']);
            verdict(
                !matches!(v.to_ascii_lowercase().as_str(), "bearer" | "basic" | "digest" | "header" | "headers")
                    && !is_placeholder(v)
                    && !is_reference(v),
            )
        },
    },
    Rule {
        id: "bearer-token",
        keywords: &["bearer", "token "],
        pre: None,
        pattern: r"\b(?:bearer|token)\s+([A-Za-z0-9._~+/=-]{16,})",
        fold: true,
        group: Group::At(1),
        check: |t, c| verdict(credential_like(gi(t, c, 1))),
    },
    Rule {
        id: "basic-auth",
        keywords: &["basic"],
        pre: None,
        pattern: r"\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=]|$)",
        fold: true,
        group: Group::At(1),
        check: |t, c| verdict(base64_decode(gi(t, c, 1)).is_some_and(|d| d.contains(&b':'))),
    },
    Rule {
        id: "password",
        keywords: &["-u", "--user"],
        pre: None,
        // curl/wget style `-u user:password`.
        pattern: r#"(?:^|\s)(?:-u|--user|--proxy-user)[= ]\s*["']?[^\s:"']+:([^\s"']+)"#,
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(!is_placeholder(gi(t, c, 1))),
    },
    Rule {
        id: "password",
        keywords: &["mysql", "mariadb"],
        pre: None,
        // `mysql -pSECRET` (the password glued to `-p`).
        pattern: r#"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p["']?([^\s'"-][^\s'"]{2,})"#,
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(!is_reference(gi(t, c, 1))),
    },
    Rule {
        id: "password",
        keywords: &["login", "sshpass", "pass:"],
        // `.netrc` (`login u password p`), `docker login -p p`, `sshpass -p p`, openssl `pass:p`.
        pre: None,
        pattern: r#"(?:\blogin\s+\S+\s+password\s+|\blogin\b[^\n|;&]*?\s(?:-p|--password)[= ]|\bsshpass\s+-p\s*|\bpass:)["']?([^\s"']{3,})"#,
        fold: true,
        group: Group::At(1),
        check: |t, c| verdict(!is_reference(gi(t, c, 1)) && !is_placeholder(gi(t, c, 1))),
    },
    Rule {
        id: "password",
        keywords: &["redis-cli", "keydb-cli", "sqlcmd", "bcp", "osql", "isql", "mongo", "cqlsh", "ldap", "smbclient"],
        pre: None,
        // Password flags of database and directory clients: `redis-cli -a p`, `sqlcmd -P p`,
        // `mongosh -p p`, `ldapsearch -w p`, `smbclient -U user%p`.
        pattern: r#"(?:\b(?:redis-cli|keydb-cli)\b[^\n|;&]*?\s-a|\b(?:sqlcmd|bcp|osql|isql)\b[^\n|;&]*?\s-P|\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|mongostat|mongotop|mongofiles|cqlsh)\b[^\n|;&]*?\s-p|\bldap[a-z]*\b[^\n|;&]*?\s-w|\bsmbclient\b[^\n|;&]*?\s(?:-U|--user)[= ]?\s*["']?[^\s%"']+%)[= ]?\s*(?:'(?P<sq>[^'\n]+)'|"(?P<dq>[^"\n]+)"|["']?(?P<val>[^\s"'-][^\s"']*))"#,
        fold: false,
        group: QUOTED,
        check: |t, c| verdict(!is_placeholder(quoted(t, c)) && !is_reference(quoted(t, c))),
    },
    Rule {
        id: "secret-flag",
        keywords: &["storepass", "keypass", "-password", "-passwd", "-pass ", "-pwd", "-token", "-apikey", "-secret"],
        pre: None,
        // Single-dash flags (`keytool -storepass p`, `influx -password p`).
        pattern: r#"(?:^|\s)-(?:src|dest)?(?:storepass|keypass|password|passwd|pass|pwd|token|apikey|secret)(?:=|\s+)["']?([^\s"'-][^\s"']*)"#,
        fold: true,
        group: Group::At(1),
        check: |t, c| {
            verdict(!is_placeholder(gi(t, c, 1)) && !is_reference(gi(t, c, 1)) && !gi(t, c, 1).starts_with("pass:"))
        },
    },
    Rule {
        id: "password",
        keywords: &["htpasswd", "mysqlsh", "requirepass", "masterauth", "auth "],
        pre: None,
        // `htpasswd -b file user p`, `mysqlsh user:p@host`, redis.conf `requirepass p`, a redis
        // prompt's `AUTH [user] p`.
        pattern: r#"(?:\bhtpasswd\s+-[a-zA-Z]*b[a-zA-Z]*\s+\S+\s+\S+\s+|\bmysqlsh\b[^\n|;&]*?\s(?:--uri[= ])?["']?[A-Za-z0-9_.-]+:|(?m:^)[ \t]*(?:requirepass|masterauth)[ \t]+|(?:(?m:^)|>[ \t]*)AUTH[ \t]+(?:[A-Za-z0-9_-]+[ \t]+)?)["']?([^\s"'@]+)"#,
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(!is_placeholder(gi(t, c, 1)) && !is_reference(gi(t, c, 1))),
    },
    Rule {
        id: "assignment",
        keywords: &["config set", "configure set", "config:set", "secret set", "\"name\""],
        pre: None,
        // A key and its value as separate words or fields: `aws configure set aws_session_token
        // …`, `npm config set //registry/:_authToken …`, `gh secret set NAME --body …`, and a HAR
        // file's `{"name": "Cookie", "value": "…"}`.
        pattern: r#"(?:\bconfig(?:ure)?[ :]set\s+(?:--[a-z-]+\s+)*["']?(?P<key2>[^\s="']+?)["']?(?:\s+|=)|\bsecret\s+set\s+(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s+(?:-b|--body)[= ]\s*|"name"\s*:\s*"(?P<key3>[A-Za-z_][A-Za-z0-9_-]*)"\s*,\s*"value"\s*:\s*)(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<val>[^\s"']+))"#,
        fold: false,
        group: ASSIGNED,
        check: assignment,
    },
    Rule {
        id: "password",
        keywords: &[":5432:", ":*:", ":3306:"],
        pre: None,
        // `.pgpass` / `.my.cnf`-style lines: `host:port:database:user:password`.
        pattern: r"(?m)^[A-Za-z0-9_.*-]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(\S+)$",
        fold: false,
        group: Group::At(1),
        check: |t, c| verdict(!is_placeholder(gi(t, c, 1))),
    },
    Rule {
        id: "assignment",
        keywords: &["value="],
        pre: None,
        // .NET appSettings: `<add key="ApiKey" value="…"/>`.
        pattern: r#"\bkey\s*=\s*"(?P<key2>[A-Za-z_][A-Za-z0-9_.:-]*)"\s+value\s*=\s*(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)')"#,
        fold: false,
        group: ASSIGNED,
        check: assignment,
    },
    Rule {
        id: "cookie",
        keywords: &["cookie"],
        pre: None,
        // A cookie header (`-H 'cookie: a=b; c=d'`, a raw request's `Cookie:` line, `Set-Cookie:`):
        // every value in it goes.
        pattern: r#"(?:^|[\s'"`$])(?:set-)?cookie\s*:\s*([^'"`\r\n]+)"#,
        fold: true,
        group: Group::At(1),
        check: |t, c| verdict(gi(t, c, 1).contains('=')),
    },
    Rule {
        id: "cookie",
        keywords: &["-b", "--cookie"],
        pre: None,
        // curl's `-b 'name=value; …'` / `--cookie` (a value without `=` is a cookie file).
        pattern: r#"(?:^|\s)(?:-b|--cookie)(?:=|\s+)\$?(?:'(?P<sq>[^'\n]+)'|"(?P<dq>[^"\n]+)"|(?P<val>[^\s'"]+))"#,
        fold: false,
        group: Group::First(&["sq", "dq", "val"]),
        check: |t, c| verdict(Group::First(&["sq", "dq", "val"]).get(c).is_some_and(|m| span(t, m).contains('='))),
    },
    Rule {
        id: "assignment",
        keywords: &["pass", "pwd", "secret", "token", "key", "auth", "cred"],
        pre: None,
        // Setters and key-value calls: `setPassword("p")`, `define('DB_PASSWORD', 'p')`,
        // `os.Setenv("API_TOKEN", "p")`.
        pattern: r#"(?:\b(?:set|with|put)(?P<key>[A-Z][A-Za-z0-9_]*)\s*\(\s*|\(\s*["'](?P<key2>[A-Za-z_][A-Za-z0-9_.-]*)["']\s*,\s*)(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)')"#,
        fold: false,
        group: ASSIGNED,
        check: assignment,
    },
    Rule {
        id: "secret-flag",
        keywords: &["pass", "pwd", "token", "secret", "key", "bearer"],
        pre: None,
        pattern: r#"(?:^|\s)--(?:[a-z0-9]+[-_])*(?:password|passwd|pass|pwd|token|secret|bearer|api[-_]?key|apikey|access[-_]?key|secret[-_]?key|private[-_]?key|client[-_]?secret)(?:=|\s+)(?:'(?P<sq>[^'\n]+)'|"(?P<dq>[^"\n]+)"|(?P<val>[^\s"']+))"#,
        fold: true,
        group: QUOTED,
        check: |t, c| {
            let v = quoted(t, c);
            verdict(!v.starts_with('-') && !is_placeholder(v) && !is_reference(v))
        },
    },
    Rule {
        id: "secret",
        keywords: &["pass", "secret", "token", "key", "pwd"],
        pre: None,
        pattern: r"<((?:[a-z]+[-_]?)?(?:password|passwd|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key))>([^<\s]{3,})</",
        fold: true,
        group: Group::At(2),
        check: |t, c| verdict(!is_placeholder(gi(t, c, 2))),
    },
    Rule {
        id: "assignment",
        keywords: &["pass", "pwd", "secret", "token", "key", "auth", "cred", "sig", "salt", "cookie", "pat"],
        pre: None,
        // `key = value`, `key: value`, `"key": "value"`, `key := value`, `key => value`, in a text
        // that has a secret word somewhere; the check reads the key's words.
        // Quoted values may be escaped JSON from a log (`{\"password\":\"p\"}`) or Python
        // literals (`b'p'`, `r"p"`).
        pattern: r#"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)\\*["']?\]?[ \t]*(?P<sep>:=|=>|==?|:)[ \t]*(?:\\+"(?P<edq>(?:[^"\\\n]|\\+[^"\\\n])*)\\+"|(?:[bBrRuU]|[bB][rR]|[rR][bB])?"(?P<dq>(?:[^"\\\n]|\\.)*)"|(?:[bBrRuU]|[bB][rR]|[rR][bB])?'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|(?P<val>[^\s"'`,;&)}\]\\]+))"#,
        fold: false,
        group: ASSIGNED,
        check: assignment,
    },
    Rule {
        id: "high-entropy",
        keywords: &["=", ":"],
        pre: Some(|t| has_random_run(t, 20)),
        // Any key with a long token-like value: the check keeps only generated credentials.
        pattern: r#"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)\\*["']?\]?[ \t]*(?P<sep>:=|=>|==?|:)[ \t]*(?:\\*["'`])?(?P<val>[A-Za-z0-9+/=_.~-]{20,})"#,
        fold: false,
        group: Group::At(3),
        check: |t, c| verdict(high_entropy(g(t, c, "val"))),
    },
    Rule {
        id: "password",
        keywords: &["pass", "pwd", "secret", "token", "key"],
        pre: None,
        // Prose: "the password is hunter2", "my API key was ...".
        pattern: r#"\b(?:password|passwd|passphrase|pwd|secret|token|api[ _-]?key|access[ _-]?key|secret[ _-]?key)\s+(?:is|was|=|:|->|will be|should be)\s+[`"']?([^\s`"',;]{4,})"#,
        fold: true,
        group: Group::At(1),
        check: |t, c| {
            let v = gi(t, c, 1).trim_end_matches(['.', ')', '!', '?', ':']);
            // `password = getpass.getpass()`: a call, as the assignment rule reads it too.
            verdict(credential_like(v) && !is_reference(v) && !is_design_term(v) && !v.contains('('))
        },
    },
];

fn verdict(redact: bool) -> Verdict {
    if redact {
        Verdict::Redact
    } else {
        Verdict::Keep
    }
}

const ASSIGNED: Group = Group::First(&["edq", "dq", "sq", "bq", "val"]);

/// A flag's value, quoted (`-a 'my pass'`) or bare.
const QUOTED: Group = Group::First(&["sq", "dq", "val"]);

fn quoted<'t>(t: &'t str, c: &Captures<'_>) -> &'t str {
    QUOTED.get(c).map_or("", |m| span(t, m))
}

/// Key names whose values are secrets whatever they look like.
const STRONG_LAST: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "pass",
    "secret",
    "secrets",
    "token",
    "apikey",
    "credential",
    "credentials",
    "privatekey",
    "secretkey",
    "accesskey",
    "authtoken",
    "pat",
    "authorization",
];

/// `key`/`auth` names before which these words make the value a secret whatever it looks like.
const STRONG_BEFORE_KEY: &[&str] = &["api", "secret", "private", "access", "client", "master", "signing", "encryption"];

/// The generic `key = value` / `key: value` / `"key": "value"` rule: by the key's last word,
/// a secret whatever the value (`password`, `*_SECRET`, `*_TOKEN`, `api_key`), a secret when the
/// value looks like a credential (`*_KEY`, `auth`), or any key with a high-entropy value.
fn assignment(text: &str, c: &Captures) -> Verdict {
    let key = c.name("key").or(c.name("key2")).or(c.name("key3")).map_or("", |m| span(text, m));
    let quoted = c.name("val").is_none();
    let Some(val) = ASSIGNED.get(c).map(|m| span(text, m)) else { return Verdict::Keep };
    // No cap on the value's length: session tokens run to 1,100 characters, keys to many more.
    if key.len() > 64 || (g(text, c, "sep").starts_with(':') && val.starts_with("//")) {
        return Verdict::Keep;
    }
    // `scheme://user:password@host`: the URL rules take the password, and the host stays.
    if c.name("key").is_some_and(|k| text[..k.start()].ends_with("://")) {
        return Verdict::Keep;
    }
    if val.is_empty() || val.contains("REDACTED") || is_placeholder(val) || is_reference(val) {
        return Verdict::Keep;
    }
    // A data URI is a file, not a credential.
    if val.starts_with("data:") {
        return Verdict::Keep;
    }
    if !quoted && (val.contains('(') || is_path(val)) {
        return Verdict::Keep;
    }
    let KeyClass { words, strong } = key_class(key);
    let last = words.last().map(String::as_str).unwrap_or_default();
    if strong {
        if last == "pwd" && is_path(val) {
            return Verdict::Keep;
        }
        // `Password: must be 8 characters` in prose is no assignment; `password: hunter2` is.
        let prose_colon =
            !quoted && g(text, c, "sep").starts_with(':') && g(text, c, "sep").len() == 1 && !line_is_config(text, c);
        if prose_colon && !credential_like(val) {
            return Verdict::Keep;
        }
        if val.eq_ignore_ascii_case(last) || val.eq_ignore_ascii_case(key) {
            return Verdict::Keep;
        }
        return Verdict::RedactAs(label_for(last));
    }
    let long_hex = val.len() >= 16 && is_hex(val);
    // A session id is a bearer credential (`sessionid`, `PHPSESSID`, `connect.sid`).
    if matches!(last, "session" | "sessionid" | "sid" | "sessid" | "phpsessid" | "jsessionid")
        && (looks_random(val, 16) || long_hex)
    {
        return Verdict::RedactAs("cookie");
    }
    // A cookie string (`Cookie: session=…; theme=dark`) is every cookie's value.
    if last == "cookie" && val.contains('=') {
        return Verdict::RedactAs("cookie");
    }
    if matches!(last, "key" | "keys" | "auth" | "sig" | "signature" | "salt" | "cookie")
        && (looks_random(val, 8) || long_hex)
    {
        return Verdict::RedactAs(if last == "auth" { "secret" } else { "key" });
    }
    // `SECRET_KEY_BASE`, `TOKEN_SECRET_VALUE`: a secret word inside the key and a generated value.
    if words.iter().any(|w| is_strong_word(w)) && (long_hex || looks_random(val, 16)) {
        return Verdict::RedactAs("secret");
    }
    if high_entropy(val) {
        return Verdict::RedactAs("high-entropy");
    }
    Verdict::Keep
}

/// What a key's name says about its value.
struct KeyClass {
    /// The key's words, lowercase.
    words: Vec<String>,
    /// A secret whatever it looks like (`password`, `*_SECRET`, `*_TOKEN`, `api_key`).
    strong: bool,
}

fn key_class(key: &str) -> KeyClass {
    let words = key_words(key);
    let last = words.last().map(String::as_str).unwrap_or_default();
    let prev = words.len().checked_sub(2).map(|i| words[i].as_str()).unwrap_or_default();
    let joined = format!("{prev}{last}");
    let strong = is_strong_word(last)
        || is_strong_word(&joined)
        || (matches!(last, "key" | "keys") && STRONG_BEFORE_KEY.contains(&prev));
    KeyClass { words, strong }
}

/// `PGPASSWORD`, `dbPassword`, `MYSECRET`: a long keyword may end a word it is glued into.
fn is_strong_word(w: &str) -> bool {
    STRONG_LAST.iter().any(|k| w == *k || (k.len() >= 6 && w.ends_with(k)))
}

fn label_for(last: &str) -> &'static str {
    let ends = |ks: &[&str]| ks.iter().any(|k| last.ends_with(k));
    if ends(&["password", "passwd", "passphrase", "pwd", "pass"]) {
        "password"
    } else if ends(&["token", "pat"]) {
        "token"
    } else if ends(&["key", "keys"]) {
        "key"
    } else {
        "secret"
    }
}

/// The words of an identifier, lowercase: `DB_PASSWORD` -> db, password; `apiKey` -> api, key.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in key.chars() {
        if !ch.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        cur.push(ch.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The key starts its line (after indentation, `-`, `{`, `,`, quotes, `export`) and the value
/// ends it (or a comment does): a config line (YAML, env, INI), not a sentence.
fn line_is_config(text: &str, c: &Captures) -> bool {
    let (Some(key), Some(val)) = (c.name("key"), ASSIGNED.get(c)) else { return false };
    let val_end = ceil_char(text, val.end());
    let (head, tail) = around(text, key.start(), val_end, 256);
    // A line longer than the window is prose, not a config line.
    let Some(line_start) = head.rfind('\n').map(|i| i + 1).or((head.len() == key.start()).then_some(0)) else {
        return false;
    };
    let before = head[line_start..].trim_start();
    let before = before.strip_prefix("export ").unwrap_or(before);
    let lead_ok = before.chars().all(|ch| ch.is_whitespace() || "-{,[\"'".contains(ch));
    let line_end = tail.find('\n').unwrap_or(tail.len());
    let after = tail[..line_end].trim();
    lead_ok && (after.is_empty() || after.starts_with('#') || after.chars().all(|ch| ",}]".contains(ch)))
}

fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}
fn has_upper(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
}
fn has_lower(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_lowercase())
}

/// Not a secret: empty, masked (`***`, `xxxx`), a type or a null-ish word, or `<your-token>`.
fn is_placeholder(v: &str) -> bool {
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
/// `%(x)s`, `os.environ`, `process.env.X`, `config.password`.
fn is_reference(v: &str) -> bool {
    let v = v.trim();
    if ["$", "{{", "%(", "%{", "<%", "#{", "!ref", "!secret", "secretref"].iter().any(|p| v.starts_with(p)) {
        return true;
    }
    let dotted = v.contains('.')
        && v.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphabetic() || c == '_'))
        && v.starts_with(|c: char| c.is_ascii_lowercase());
    dotted || v.starts_with("process.env") || v.starts_with("os.environ") || v.starts_with("env.")
}

/// A design word, not a secret: "the token is HMAC-SHA256 signed", "the secret is
/// AES-256-GCM encrypted", "the key is 256-bit".
fn is_design_term(v: &str) -> bool {
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

fn is_path(v: &str) -> bool {
    // A generated key may start with `/` too (AWS secret keys do): a path's pieces are not
    // random mixes of both cases and digits.
    let random_piece = |p: &&str| p.len() >= 8 && has_upper(p) && has_lower(p) && has_digit(p);
    (v.starts_with('/') || v.starts_with("./") || v.starts_with("../") || v.starts_with("~/"))
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "/._-~".contains(c))
        && !v.split('/').any(|p| random_piece(&p))
}

/// Looks like a password or token rather than a word: digits or symbols, or mixed case.
fn credential_like(v: &str) -> bool {
    let v = v.trim();
    if v.len() < 4 || is_placeholder(v) {
        return false;
    }
    let symbols = v.chars().any(|c| !c.is_alphanumeric());
    has_digit(v) || symbols || (has_upper(v) && has_lower(v) && v.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// Random-looking: at least `min` characters from a token alphabet, more than one character
/// class, and not a plain word, hex digest, UUID, number, version or path.
fn looks_random(v: &str, min: usize) -> bool {
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
fn is_composite(v: &str) -> bool {
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
fn is_wordy(seg: &str) -> bool {
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
fn is_benign_base64(v: &str) -> bool {
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
fn is_printable(s: &str) -> bool {
    let printable = s.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r')).count();
    !s.is_empty() && printable * 100 >= s.chars().count() * 98
}

/// A high-entropy value in an assignment to a key of any name: a generated credential.
fn high_entropy(v: &str) -> bool {
    if v.len() < 20 || !looks_random(v, 20) || is_benign_base64(v) {
        return false;
    }
    let digits = v.bytes().filter(u8::is_ascii_digit).count();
    has_upper(v) && has_lower(v) && digits >= 2 && entropy(v) >= 3.6
}

/// Whether `text` has a run of at least `min` token characters (`[A-Za-z0-9+/=_.~-]`) with
/// upper and lower case letters and digits: what a generated credential looks like.
fn has_random_run(text: &str, min: usize) -> bool {
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

fn is_hex(v: &str) -> bool {
    v.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_uuid(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    parts.len() == 5 && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12]) && parts.iter().all(|p| is_hex(p))
}

/// Shannon entropy in bits per character.
fn entropy(v: &str) -> f64 {
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

/// The built-in rules, each compiled on first use, as byte regexes without Unicode classes:
/// every secret format is ASCII, and ASCII-only automata compile in microseconds (a hook
/// process compiles what its text needs on every run). Matches are widened to character
/// boundaries before use.
static COMPILED: LazyLock<Vec<OnceLock<BytesRegex>>> =
    LazyLock::new(|| RULES.iter().map(|_| OnceLock::new()).collect());

fn compiled(i: usize) -> &'static BytesRegex {
    COMPILED[i].get_or_init(|| {
        BytesRegexBuilder::new(RULES[i].pattern)
            .unicode(false)
            .build()
            .unwrap_or_else(|e| panic!("built-in rule `{}`: {e}", RULES[i].id))
    })
}

/// The original text of a match, widened to character boundaries.
fn span<'t>(text: &'t str, m: regex::bytes::Match<'_>) -> &'t str {
    &text[floor_char(text, m.start())..ceil_char(text, m.end())]
}

/// The text of a named capture group (empty when it did not take part).
fn g<'t>(text: &'t str, c: &Captures<'_>, name: &str) -> &'t str {
    c.name(name).map_or("", |m| span(text, m))
}

/// The text of a numbered capture group.
fn gi<'t>(text: &'t str, c: &Captures<'_>, i: usize) -> &'t str {
    c.get(i).map_or("", |m| span(text, m))
}

/// At most `n` bytes of `text` before `start` and after `end` (on character boundaries), so a
/// check never scans a long line from each of its many matches.
fn around(text: &str, start: usize, end: usize, n: usize) -> (&str, &str) {
    let from = ceil_char(text, start.saturating_sub(n));
    let to = floor_char(text, (end + n).min(text.len()));
    (&text[from..start], &text[end..to.max(end)])
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

/// Which rules have a keyword in `text` (or none at all). A short text (a prompt, a reply: the
/// hook path) is searched keyword by keyword on its lowercased bytes, with searchers built once:
/// far cheaper in a fresh hook process than building an automaton. A long text takes one pass of
/// one automaton.
fn triggered(text: &str) -> Vec<bool> {
    const SHORT: usize = 16 << 10;
    let mut wanted: Vec<bool> = RULES.iter().map(|r| r.keywords.is_empty()).collect();
    if text.len() <= SHORT {
        static FINDERS: LazyLock<Vec<(usize, memchr::memmem::Finder<'static>)>> = LazyLock::new(|| {
            RULES
                .iter()
                .enumerate()
                .flat_map(|(i, r)| r.keywords.iter().map(move |k| (i, k)))
                .map(|(i, k)| (i, memchr::memmem::Finder::new(k.to_ascii_lowercase().as_bytes()).into_owned()))
                .collect()
        });
        let lower = text.as_bytes().to_ascii_lowercase();
        for (rule, finder) in FINDERS.iter() {
            if !wanted[*rule] && finder.find(&lower).is_some() {
                wanted[*rule] = true;
            }
        }
        return wanted;
    }
    static KEYWORDS: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
        let (words, owners): (Vec<&str>, Vec<usize>) =
            RULES.iter().enumerate().flat_map(|(i, r)| r.keywords.iter().map(move |k| (*k, i))).unzip();
        let ac = AhoCorasick::builder().ascii_case_insensitive(true).build(words).expect("keyword automaton");
        (ac, owners)
    });
    let (ac, owners) = &*KEYWORDS;
    let mut left = wanted.iter().filter(|w| !**w).count();
    for m in ac.find_overlapping_iter(text) {
        let rule = owners[m.pattern().as_usize()];
        if !wanted[rule] {
            wanted[rule] = true;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    wanted
}

/// A configured extra pattern, compiled.
#[derive(Debug, Clone)]
struct Extra {
    label: String,
    re: Regex,
}

/// The built-in rules plus extra patterns.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    extra: Vec<Extra>,
}

impl Redactor {
    /// Compiles the extra patterns; each one that is not usable is left out with a message
    /// saying why (a bad regex, one that matches the empty string, one too large).
    pub fn new(patterns: &[Pattern]) -> (Self, Vec<String>) {
        let mut extra = Vec::new();
        let mut problems = Vec::new();
        for p in patterns {
            let (label, pattern) = match p {
                Pattern::Plain(s) => ("custom".to_string(), s.as_str()),
                Pattern::Named { name, pattern } => (sanitise_label(name), pattern.as_str()),
            };
            match RegexBuilder::new(pattern).size_limit(1 << 20).dfa_size_limit(2 << 20).build() {
                Ok(re) if re.is_match("") => problems.push(format!(
                    "redact_patterns: `{pattern}` matches the empty string; ignored (it would redact everything)"
                )),
                Ok(re) => extra.push(Extra { label, re }),
                Err(e) => problems.push(format!(
                    "redact_patterns: `{pattern}` is not a valid regex ({}); ignored",
                    e.to_string().lines().last().unwrap_or_default().trim()
                )),
            }
        }
        (Self { extra }, problems)
    }

    /// `text` with `<private>` spans dropped and every secret replaced by its marker.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match strip_private(text) {
            Cow::Borrowed(t) => self.redact(t),
            Cow::Owned(t) => Cow::Owned(self.redact(&t).into_owned()),
        }
    }

    /// `text` with every secret replaced by `[REDACTED:<rule>]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_at(text, true)
    }

    /// [`Self::redact`]; `decode`: base64 runs are also decoded and searched (once, not again
    /// inside what they decode to, so the cost stays linear).
    fn redact_at<'a>(&self, text: &'a str, decode: bool) -> Cow<'a, str> {
        let wanted = triggered(text);
        let mut lower: Option<String> = None;
        // (start, end, priority, label)
        let mut spans: Vec<(usize, usize, usize, Cow<'_, str>)> = Vec::new();
        for (i, rule) in RULES.iter().enumerate() {
            if !wanted[i] || rule.pre.is_some_and(|pre| !pre(text)) {
                continue;
            }
            let re = compiled(i);
            let mut pos = 0;
            // `find_at` runs on the fast DFA; captures are only resolved where there is a match.
            let hay = if rule.fold {
                lower.get_or_insert_with(|| text.to_ascii_lowercase()).as_bytes()
            } else {
                text.as_bytes()
            };
            while let Some(c) = re.find_at(hay, pos).and_then(|m| re.captures_at(hay, m.start())) {
                let whole = c.get(0).expect("whole match");
                let verdict = match rule.group.get(&c) {
                    Some(m) if m.start() < m.end() && !span(text, m).contains("REDACTED:") => (rule.check)(text, &c),
                    _ => Verdict::Keep,
                };
                let label = match verdict {
                    Verdict::Keep => {
                        // What was not a secret may still hold the start of one (`note: password: x`):
                        // search again from after the key, else from the next character.
                        let next = c.name("key").map_or(whole.start(), |k| k.end());
                        pos = text[next..].chars().next().map_or(text.len() + 1, |ch| next + ch.len_utf8());
                        if pos > text.len() {
                            break;
                        }
                        continue;
                    }
                    Verdict::Redact => rule.id,
                    Verdict::RedactAs(l) => l,
                };
                let m = rule.group.get(&c).expect("checked above");
                let (start, end) = (floor_char(text, m.start()), ceil_char(text, m.end()));
                spans.push((start, end, i, Cow::Borrowed(label)));
                pos = ceil_char(text, whole.end().max(whole.start() + 1));
                if pos > text.len() {
                    break;
                }
            }
        }
        let finders = RULES.len() + self.extra.len();
        block_scalars(text, finders, &mut spans);
        if decode {
            self.encoded(text, finders + 1, &mut spans);
        }
        // Hashes are kept (`integrity: sha512-…`, `h1:…`, `SHA256:…` fingerprints): what a rule
        // found wholly inside one is no secret.
        if !spans.is_empty() {
            let kept = digests(text);
            if !kept.is_empty() {
                spans.retain(|s| {
                    let i = kept.partition_point(|d| d.0 <= s.0);
                    s.2 >= RULES.len() && s.2 < finders || i == 0 || kept[i - 1].1 < s.1
                });
            }
        }
        for (j, x) in self.extra.iter().enumerate() {
            let named = x.re.capture_names().any(|n| n == Some("secret"));
            for c in x.re.captures_iter(text) {
                let m = if named { c.name("secret") } else { c.get(0) };
                if let Some(m) = m.filter(|m| m.start() < m.end()) {
                    spans.push((m.start(), m.end(), RULES.len() + j, Cow::Owned(x.label.clone())));
                }
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_by_key(|s| (s.0, s.2));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut iter = spans.into_iter().peekable();
        while let Some((start, mut end, mut prio, mut label)) = iter.next() {
            while let Some(next) = iter.peek() {
                if next.0 >= end {
                    break;
                }
                let next = iter.next().expect("peeked");
                end = end.max(next.1);
                if next.2 < prio {
                    prio = next.2;
                    label = next.3;
                }
            }
            let start = start.max(at);
            out.push_str(&text[at..start]);
            out.push_str("[REDACTED:");
            out.push_str(&label);
            out.push(']');
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

impl Redactor {
    /// Base64 runs whose text holds a secret (a base64 `.env`, a kubeconfig's `client-key-data`,
    /// a Kubernetes Secret's `data:`, a `.dockerconfigjson`): the whole run goes.
    fn encoded(&self, text: &str, prio: usize, spans: &mut Vec<(usize, usize, usize, Cow<'_, str>)>) {
        static RUN: LazyLock<BytesRegex> = LazyLock::new(|| {
            BytesRegexBuilder::new(r"[A-Za-z0-9+/]{24,}={0,2}").unicode(false).build().expect("base64 run")
        });
        if !has_random_run(text, 24) {
            return;
        }
        let b = text.as_bytes();
        let is_b64 = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
        let mut taken = 0;
        for m in RUN.find_iter(b) {
            let (start, mut end) = (m.start(), m.end());
            if start < taken {
                continue; // the tail of a wrapped run already taken
            }
            // `base64` wraps its output (76 columns, PEM bodies 64): a whole line of a multiple
            // of four characters continues on the next line, which may be shorter.
            let mut line = end - start;
            while line >= 60 && line % 4 == 0 {
                let gap = b[end..].iter().take_while(|c| matches!(c, b'\n' | b'\r' | b' ' | b'\t')).count();
                let next = b[end + gap..].iter().take_while(|c| is_b64(c)).count();
                let after = b.get(end + gap + next).copied();
                if gap == 0
                    || !b[end..end + gap].contains(&b'\n')
                    || next == 0
                    || next > line
                    || after.is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b','))
                {
                    break;
                }
                line = next;
                end += gap + next;
            }
            taken = end;
            let run: String = text[start..end].split_ascii_whitespace().collect();
            let Some(bytes) = base64_decode(&run) else { continue };
            let Ok(inner) = String::from_utf8(bytes) else { continue };
            if !is_printable(&inner) {
                continue;
            }
            if matches!(self.redact_at(&inner, false), Cow::Owned(_)) {
                spans.push((start, end, prio, Cow::Borrowed("encoded-secret")));
            }
        }
    }
}

/// The hashes in `text` (`sha512-…`, `sha256:…`, go.sum `h1:…`, `SHA256:…`), as sorted byte
/// ranges.
fn digests(text: &str) -> Vec<(usize, usize)> {
    static DIGEST: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(
            r"(?i)\b(?:sha(?:1|224|256|384|512)(?:-256)?|sha3-(?:224|256|384|512)|md5|blake2[bs]?|blake3|h1)[-:][A-Za-z0-9+/_=-]{16,}",
        )
        .unicode(false)
        .build()
        .expect("digest")
    });
    let b = text.as_bytes();
    let finder = |k: &[u8]| memchr::memmem::find(b, k).is_some();
    if ![&b"sha"[..], b"SHA", b"Sha", b"md5", b"MD5", b"h1:", b"blake", b"BLAKE"].iter().any(|k| finder(k)) {
        return Vec::new();
    }
    // A sentence's full stop after a fingerprint is taken along (a rule's match may hold it).
    let tail = |end: usize| end + b[end..].iter().take_while(|c| matches!(c, b'.' | b'~')).count();
    DIGEST.find_iter(b).map(|m| (m.start(), tail(m.end()))).collect()
}

/// YAML block scalars under a secret's key (`password: |` and the indented lines after it):
/// the block's lines go.
fn block_scalars(text: &str, prio: usize, spans: &mut Vec<(usize, usize, usize, Cow<'_, str>)>) {
    static HEAD: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(
            r#"(?m)^([ \t]*(?:-[ \t]+)?)["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*:[ \t]*(?:!!?[A-Za-z]+[ \t]+)?[|>][-+0-9]{0,2}[ \t]*(?:#[^\n]*)?\r?$"#,
        )
        .unicode(false)
        .build()
        .expect("block scalar head")
    });
    let b = text.as_bytes();
    // Cheap first: a `|` or `>` right after a colon (or a `!!tag`), else no block starts here and
    // the pattern is never compiled (a hook process compiles what its text needs).
    let head_at = |i: usize| {
        let before = b[..i].iter().rev().skip_while(|c| matches!(c, b' ' | b'\t')).copied().next();
        before == Some(b':')
    };
    if !memchr::memchr2_iter(b'|', b'>', b).any(head_at) && memchr::memmem::find(b, b"!!").is_none() {
        return;
    }
    for c in HEAD.captures_iter(b) {
        let column = c[1].len();
        let key = &text[c.get(2).expect("key").range()];
        let mut at = c.get(0).expect("whole").end() + 1;
        let (mut start, mut end) = (None, at);
        while at < b.len() {
            let line_end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i);
            let line = &text[at..line_end];
            let body = line.trim_start_matches([' ', '\t']);
            if !body.trim().is_empty() {
                if line.len() - body.len() <= column {
                    break;
                }
                start.get_or_insert(at + line.len() - body.len());
                end = line_end;
            }
            at = line_end + 1;
        }
        let Some(start) = start else { continue };
        let block = &text[start..end];
        let flat: String = block.split_whitespace().collect();
        let class = key_class(key);
        let last = class.words.last().map(String::as_str).unwrap_or_default();
        let label = if class.strong {
            label_for(last)
        } else if matches!(last, "key" | "keys" | "auth" | "signature" | "cookie") && looks_random(&flat, 16) {
            "key"
        } else if high_entropy(&flat) {
            "high-entropy"
        } else {
            continue;
        };
        if flat.len() >= 3 && !is_placeholder(&flat) && !is_reference(&flat) {
            spans.push((start, end, prio, Cow::Borrowed(label)));
        }
    }
}

fn sanitise_label(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c.to_ascii_lowercase() } else { '-' })
        .take(40)
        .collect();
    if s.is_empty() {
        "custom".into()
    } else {
        s
    }
}

static CONFIGURED: OnceLock<Redactor> = OnceLock::new();

/// Installs the extra patterns for this process's [`scrub`] (the first call wins) and returns
/// what was wrong with any of them, for the caller to log. A bad pattern never stops ovmem.
pub fn configure(patterns: &[Pattern]) -> Vec<String> {
    let (r, problems) = Redactor::new(patterns);
    let _ = CONFIGURED.set(r);
    problems
}

/// Whether extra patterns are configured (text stored before they were would not have had them
/// applied, so recalled text is scrubbed again).
pub fn has_extra() -> bool {
    CONFIGURED.get().is_some_and(|r| !r.extra.is_empty())
}

/// The one function to call on every text before it is stored, logged or sent: `<private>`
/// spans dropped, secrets replaced by `[REDACTED:<rule>]` (built-in rules plus the configured
/// extra patterns). Idempotent.
pub fn scrub(text: &str) -> Cow<'_, str> {
    static DEFAULT: LazyLock<Redactor> = LazyLock::new(Redactor::default);
    CONFIGURED.get().unwrap_or(&DEFAULT).scrub(text)
}

/// `text` without its `<private>…</private>` spans (tags included, nested spans whole, an
/// unclosed `<private>` to the end). Tags are case-insensitive and may carry attributes.
pub fn strip_private(text: &str) -> Cow<'_, str> {
    static TAG: LazyLock<BytesRegex> = LazyLock::new(|| {
        BytesRegexBuilder::new(r"(?i)<(/?)[ \t]*private(?:[ \t\r\n][^<>]*)?>")
            .unicode(false)
            .build()
            .expect("private tag")
    });
    if !text.as_bytes().windows(8).any(|w| w.eq_ignore_ascii_case(b"<private")) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut at = 0;
    for c in TAG.captures_iter(text.as_bytes()) {
        let m = c.get(0).expect("whole match");
        let closing = !c[1].is_empty();
        if depth == 0 {
            if closing {
                continue; // a stray close tag: nothing was private
            }
            out.push_str(&text[at..m.start()]);
            depth = 1;
        } else if closing {
            depth -= 1;
            if depth == 0 {
                at = m.end();
            }
        } else {
            depth += 1;
        }
    }
    if depth == 0 {
        out.push_str(&text[at..]);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test secrets are built from pieces so that no scanner mistakes this file for a leak.
    fn k(parts: &[&str]) -> String {
        parts.concat()
    }

    fn r(s: &str) -> String {
        Redactor::default().scrub(s).into_owned()
    }

    /// (text with `{}` where the secret goes, the secret, the marker it must become).
    fn secrets() -> Vec<(String, String, &'static str)> {
        let ghp = k(&["gh", "p_", "R8sV2nXq7LmZ4tWc9YbK1dPe6HfJ3gAu0oSi"]);
        let aws_id = k(&["AK", "IA", "Q3EGRZ7JX5PLM2TA"]);
        let aws_secret = k(&["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY9a8b7c6d5e"]);
        let pem = k(&[
            "-----BEGIN RSA PRIVATE ",
            "KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE ",
            "KEY-----",
        ]);
        let gl = k(&["gl", "pat-", "xR4mK9pQ2sT7vW1yZ3bN"]);
        let slack = k(&["xo", "xb-", "2913457781-4857195823-QdS9tXvB2mWlKc8nRj5aZp1e"]);
        let hook = k(&["https://hooks.sl", "ack.com/services/T0A1B2C3D/B0E4F5G6H/", "aZ9yX8wV7uT6sR5qP4oN3mL2"]);
        let openai = k(&["sk", "-proj-", "Zk7Qm2Xv9Rt4Lp8Wn3Bc6Hd1Jf5Gs0Ay-TqUe"]);
        let openai_old = k(&["sk", "-", "4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB2c"]);
        let ant = k(&["sk", "-ant-", "api03-Zq8Xr2Mv7Ns4Tb9Kc1Lw6Pd3Yf5Hg0Ju-AbCdEf"]);
        let google = k(&["AI", "za", "SyD3f8Kq2Lm9Nx7Pv4Rt1Wb6Zc0Hj5Gs8Ue"]);
        let stripe = k(&["sk", "_live_", "51HqT9xKLm2Zp8Vr4Wn7Bc3Df"]);
        let jwt = k(&[
            "ey",
            "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
            "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ.",
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        ]);
        let npm = k(&["np", "m_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"]);
        vec![
            ("my token is {} keep it safe".into(), ghp.clone(), "github-token"),
            ("git push https://{}@github.com/acme/w.git".into(), ghp.clone(), "github-token"),
            ("AWS_ACCESS_KEY_ID={}\n".into(), aws_id.clone(), "aws-access-key-id"),
            ("aws_secret_access_key = {}\n".into(), aws_secret.clone(), "aws-secret-key"),
            ("Our AWS secret key is {}, rotate it monthly.".into(), aws_secret.clone(), "aws-secret-key"),
            ("key file:\n{}\nend".into(), pem, "private-key"),
            ("export GITLAB_TOKEN={}".into(), gl, "gitlab-token"),
            ("SLACK_BOT_TOKEN=\"{}\"".into(), slack, "slack-token"),
            ("curl -X POST {} -d '{\"text\":\"hi\"}'".into(), hook, "slack-webhook"),
            ("client = OpenAI(api_key=\"{}\")".into(), openai, "openai-key"),
            ("OPENAI_API_KEY={}".into(), openai_old, "openai-key"),
            ("{\"anthropic\": {\"apiKey\": \"{}\"}}".into(), ant, "anthropic-key"),
            ("maps key {} in index.html".into(), google, "google-api-key"),
            ("stripe.api_key = '{}'".into(), stripe, "stripe-key"),
            ("Authorization: Bearer {}".into(), jwt.clone(), "jwt"),
            ("cookie was {} yesterday".into(), jwt, "jwt"),
            ("//registry.npmjs.org/:_authToken={}".into(), npm, "npm-token"),
            ("DATABASE_URL=postgres://app:{}@db.internal:5432/app".into(), "S3cr3t-Pa55".into(), "url-password"),
            ("password=\"{}\"".into(), "hunter2".into(), "password"),
            ("DB_PASSWORD={}".into(), "correct-horse-battery".into(), "password"),
            ("  password: {}\n  user: app\n".into(), "hunter2".into(), "password"),
            ("{{\"password\": \"{}\", \"user\": \"app\"}}".into(), "p@ss w0rd".into(), "password"),
            ("passwd: {}".into(), "Tr0ub4dor&3".into(), "password"),
            ("JWT_SECRET={}".into(), "mysupersecretvalue".into(), "secret"),
            ("export NPM_TOKEN='{}'".into(), "plainvalue123".into(), "token"),
            ("STRIPE_KEY={}".into(), "abc123def456ghi".into(), "key"),
            ("api_key: {}".into(), "q1w2e3r4t5".into(), "key"),
            ("mysql --password={} -u root".into(), "hunter22".into(), "secret-flag"),
            ("curl -u admin:{} https://ci.local/api".into(), "Sup3rS3cret".into(), "password"),
            ("curl -H 'Authorization: Basic {}' https://x".into(), "YWRtaW46aHVudGVyMg==".into(), "authorization"),
            ("send Basic {} to the proxy".into(), "YWRtaW46aHVudGVyMg==".into(), "basic-auth"),
            ("the password is {} for now".into(), "hunter2".into(), "password"),
            ("session_cookie_signer = \"{}\"".into(), "Xk9fR2mQ7vL3pW8nZ4tB6cY1".into(), "high-entropy"),
            ("<password>{}</password>".into(), "hunter2x".into(), "secret"),
            ("PGPASSWORD={} psql -h db".into(), "hunter2".into(), "password"),
            ("machine api.example.com login bob password {}\n".into(), "s3cr3tpw".into(), "password"),
            ("docker login -u bob -p {} registry.example.com".into(), "dckr-pw-123".into(), "password"),
            ("sshpass -p {} ssh bob@host".into(), "hunter22".into(), "password"),
            ("openssl rsa -in k.pem -passin pass:{} -out k2.pem".into(), "topsecret9".into(), "password"),
            ("docker run -e POSTGRES_PASSWORD={} postgres".into(), "pgpass123".into(), "password"),
            ("kubectl create secret generic db --from-literal=password={}".into(), "hunter2".into(), "password"),
            ("$password = '{}';".into(), "hunter2".into(), "password"),
            ("os.environ[\"DB_TOKEN\"] = \"{}\"".into(), "tok-998877".into(), "token"),
            ("mailgun {} here".into(), ["ke", "y-", "3ax6xnjp29jd6fds4gc373sgvjxteol0"].concat(), "mailgun-key"),
            (
                "use {} for the bucket".into(),
                ["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY9a8b7c6d5e"].concat(),
                "aws-secret-key",
            ),
            ("mysql -u root -p{} app".into(), "S3cretPass".into(), "password"),
            ("SECRET_KEY_BASE={}".into(), "8a3f0e6d2b9c1f7e4a5d8b2c9e6f1a3d7b4c8e2f5a9d1b6c".into(), "secret"),
            ("DATADOG_KEY={}".into(), "3f9c2e1d8b7a6f5e4d3c2b1a0f9e8d7c".into(), "key"),
            ("twilio sid {} for sms".into(), "SK0123456789abcdef0123456789abcdef".into(), "twilio-key"),
        ]
    }

    #[test]
    fn secrets_in_prose_code_env_json_and_shell_are_redacted() {
        for (template, secret, label) in secrets() {
            let text = template.replacen("{}", &secret, 1);
            let out = r(&text);
            assert!(!out.contains(&secret), "leaked `{secret}` in {out:?}");
            assert!(out.contains(&format!("[REDACTED:{label}]")), "{text:?} -> {out:?} (wanted {label})");
            assert_eq!(r(&out), out, "not idempotent: {out:?}");
        }
    }

    #[test]
    fn keys_survive_and_only_values_go() {
        assert_eq!(r("DB_PASSWORD=hunter2 ./run"), "DB_PASSWORD=[REDACTED:password] ./run");
        assert_eq!(r(r#"{"token": "abc123x", "n": 1}"#), r#"{"token": "[REDACTED:token]", "n": 1}"#);
        assert_eq!(r("Say hi, then: password: hunter2"), "Say hi, then: password: [REDACTED:password]");
        // A URL's password goes; its scheme, user, host, port and path stay, in prose too.
        assert_eq!(
            r("connect to postgres://admin:S3cr3tPassw0rd@db.internal:5432/app now"),
            "connect to postgres://admin:[REDACTED:url-password]@db.internal:5432/app now"
        );
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for text in [
            "Reset your password in the settings page; the password field must be validated.",
            "Password: must be at least 12 characters and is required.",
            "The token count was 4096 and max_tokens = 4096 in the request.",
            "fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
            "commit: 9fceb02d0ae598e95dc970b74767f19372d61af8",
            "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "session id 123e4567-e89b-12d3-a456-426614174000 expired",
            "request_id = 123e4567-e89b-12d3-a456-426614174000",
            "Antidisestablishmentarianism and internationalization are long words.",
            "const handler = createRequestHandlerWithRetries;",
            "see https://cdn.example.com/assets/aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=/logo.png",
            "primary_key: id\nsort_key: created_at\ncache_key: cargo",
            "password = os.environ[\"DB_PASSWORD\"]",
            "PASSWORD=${DB_PASSWORD} TOKEN=$GITHUB_TOKEN",
            "password: \"{{ vault_db_password }}\"",
            "interface User { password: string; token?: string }",
            "The bearer of this letter uses Basic authentication.",
            "PWD=/home/dev/project",
            "Use `ovmem memory add` to remember that the API is at https://api.example.com/v2.",
            "git@github.com:acme/widgets.git and https://github.com/acme/widgets",
            "ports: 5432:5432, retries=3, timeout: 30s",
            "jobs:\n  deploy:\n    secrets: inherit\n    token_type: bearer\n    secret_name: app-tls",
            "password_min_length: 12\ntoken_count: 5\nbypass: true",
            "mkdir -p build && cp -p a b; ssh -p 2222 host; pass: true",
            "Log in with your password, then login as admin to reset the password policy.",
            "docker login registry.example.com",
        ] {
            assert_eq!(r(text), text);
        }
    }

    #[test]
    fn private_spans_are_never_kept() {
        assert_eq!(strip_private("a <private>secret plan</private> b"), "a  b");
        assert_eq!(strip_private("a <PRIVATE reason=\"x\">s</Private > b"), "a  b");
        assert_eq!(strip_private("a <private>x <private>y</private> z</private> b"), "a  b");
        assert_eq!(strip_private("a <private>x</private> b <private>y</private> c"), "a  b  c");
        assert_eq!(strip_private("keep <private>unclosed to the end"), "keep ");
        assert_eq!(strip_private("stray </private> close stays"), "stray </private> close stays");
        assert_eq!(strip_private("<privateer> is a word"), "<privateer> is a word");
        assert_eq!(strip_private("no tags"), "no tags");
        assert!(matches!(strip_private("no tags"), Cow::Borrowed(_)));
    }

    #[test]
    fn extra_patterns_are_validated_and_applied() {
        let (red, problems) = Redactor::new(&[
            Pattern::Plain(r"ACME-[0-9]{6}".into()),
            Pattern::Named { name: "Employee ID".into(), pattern: r"emp#(?P<secret>\d+)".into() },
            Pattern::Plain("(unclosed".into()),
            Pattern::Plain("a*".into()),
        ]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("(unclosed") && problems[1].contains("empty string"));
        assert_eq!(red.scrub("ticket ACME-123456 by emp#42"), "ticket [REDACTED:custom] by emp#[REDACTED:employee-id]");
    }

    proptest::proptest! {
        #[test]
        fn scrub_of_any_unicode_never_panics(s in crate::anytext::text(100)) {
            let out = r(&s);
            proptest::prop_assert!(!out.contains("<private>"));
            proptest::prop_assert!(out.len() <= s.len() + 40 * (out.matches("[REDACTED:").count() + 1));
        }

        #[test]
        fn scrub_never_panics(s in "(\\PC|[=:'\"<>/ \n-]|password|token|sk-|ghp_|-----BEGIN|PRIVATE KEY|://|@){0,60}") {
            let out = r(&s);
            proptest::prop_assert!(!out.contains("<private"));
        }
    }

    #[test]
    fn pathological_text_stays_linear() {
        for unit in [
            "password: a ",
            "a=b ",
            "x: y, ",
            "<private>",
            "ghp_",
            "AKIA",
            "-----BEGIN PRIVATE KEY-----",
            "aws ",
            "postgres://u:p@",
            "u:p@tcp(",
            "a/b@//",
            "sqlplus a/b ",
            "redis-cli -a ",
            "mongosh -p x ",
            "cookie: a=b; ",
            "-b a=b ",
            "k: |\n  v\n",
            "password: |\n",
            "\\\"password\\\":\\\"",
            "b'x' ",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo",
            "cGFzc3dvcmQ9aHVudGVyMgo=\n",
            "sha512-",
            "setPassword(\"",
            "host:5432:db:u:p\n",
        ] {
            let text = unit.repeat((1 << 20) / unit.len());
            let t = std::time::Instant::now();
            let _ = r(&text);
            assert!(t.elapsed() < std::time::Duration::from_secs(3), "{unit:?}: {:?}", t.elapsed());
        }
    }

    #[test]
    fn a_4kb_turn_redacts_well_under_a_millisecond() {
        let mut turn = String::new();
        while turn.len() < 4096 {
            turn.push_str("User: the deploy script reads config.yaml: retries: 3, timeout = 30s; ");
            turn.push_str("Assistant: run `cargo test --all-targets` then git push origin main. ");
        }
        let red = Redactor::default();
        let _ = red.scrub(&turn); // compile what the text needs
        let n = 200;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(red.scrub(std::hint::black_box(&turn)));
        }
        let per = t.elapsed() / n;
        eprintln!("scrub of a {} byte turn: {per:?}", turn.len());
        // A guard against pathological rules (benches/redact.rs measures the release build, which
        // the hook runs: a few microseconds per KB). Debug builds on a loaded CI machine are slower.
        assert!(per < std::time::Duration::from_millis(if cfg!(debug_assertions) { 40 } else { 2 }), "{per:?}");
    }
}
