//! The built-in rule set: each rule a name, the keywords that wake it, a regex with the
//! secret's capture group, and a check of what it matched (is the value assigned to a secret's
//! key, on a config line, random enough); most specific first.

use regex::bytes::Captures;

use super::values::*;
use super::{around, g, gi, span};
use crate::cut::ceil_char;

/// What a rule's check says about one match.
pub(super) enum Verdict {
    Keep,
    Redact,
    /// Redact under another label than the rule's id.
    RedactAs(&'static str),
}

pub(super) struct Rule {
    pub(super) id: &'static str,
    /// Lowercase substrings one of which must occur for the rule to run (empty: always runs).
    pub(super) keywords: &'static [&'static str],
    /// A cheap scan the text must pass too before the regex is compiled and run.
    pub(super) pre: Option<fn(&str) -> bool>,
    pub(super) pattern: &'static str,
    /// Matched against the ASCII-lowercased text (same offsets), with a lowercase pattern: a
    /// case-insensitive rule without `(?i)`, whose literal-set analysis is slow to compile.
    pub(super) fold: bool,
    /// The capture group that is the secret.
    pub(super) group: Group,
    pub(super) check: fn(&str, &Captures) -> Verdict,
}

/// Where the secret is in a match.
pub(super) enum Group {
    /// This group (0: the whole match).
    At(usize),
    /// The first of these named groups that took part.
    First(&'static [&'static str]),
    /// The first of these numbered groups that took part.
    AnyOf(&'static [usize]),
}

impl Group {
    pub(super) fn get<'h>(&self, c: &Captures<'h>) -> Option<regex::bytes::Match<'h>> {
        match self {
            Group::At(i) => c.get(*i),
            Group::First(names) => names.iter().find_map(|n| c.name(n)),
            Group::AnyOf(ids) => ids.iter().find_map(|i| c.get(*i)),
        }
    }
}

/// The text of whichever of groups 1 and 2 took part.
pub(super) fn any_of<'t>(t: &'t str, c: &Captures<'_>) -> &'t str {
    Group::AnyOf(&[1, 2]).get(c).map_or("", |m| span(t, m))
}

pub(super) fn always(_: &str, _: &Captures) -> Verdict {
    Verdict::Redact
}

/// The rule set, most specific first: where matches overlap, the earlier rule names the marker.
pub(super) static RULES: &[Rule] = &[
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

pub(super) fn verdict(redact: bool) -> Verdict {
    if redact {
        Verdict::Redact
    } else {
        Verdict::Keep
    }
}

pub(super) const ASSIGNED: Group = Group::First(&["edq", "dq", "sq", "bq", "val"]);

/// A flag's value, quoted (`-a 'my pass'`) or bare.
pub(super) const QUOTED: Group = Group::First(&["sq", "dq", "val"]);

pub(super) fn quoted<'t>(t: &'t str, c: &Captures<'_>) -> &'t str {
    QUOTED.get(c).map_or("", |m| span(t, m))
}

/// Key names whose values are secrets whatever they look like.
pub(super) const STRONG_LAST: &[&str] = &[
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
pub(super) const STRONG_BEFORE_KEY: &[&str] =
    &["api", "secret", "private", "access", "client", "master", "signing", "encryption"];

/// The generic `key = value` / `key: value` / `"key": "value"` rule: by the key's last word,
/// a secret whatever the value (`password`, `*_SECRET`, `*_TOKEN`, `api_key`), a secret when the
/// value looks like a credential (`*_KEY`, `auth`), or any key with a high-entropy value.
pub(super) fn assignment(text: &str, c: &Captures) -> Verdict {
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
pub(super) struct KeyClass {
    /// The key's words, lowercase.
    pub(super) words: Vec<String>,
    /// A secret whatever it looks like (`password`, `*_SECRET`, `*_TOKEN`, `api_key`).
    pub(super) strong: bool,
}

pub(super) fn key_class(key: &str) -> KeyClass {
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
pub(super) fn is_strong_word(w: &str) -> bool {
    STRONG_LAST.iter().any(|k| w == *k || (k.len() >= 6 && w.ends_with(k)))
}

pub(super) fn label_for(last: &str) -> &'static str {
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
pub(super) fn key_words(key: &str) -> Vec<String> {
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
pub(super) fn line_is_config(text: &str, c: &Captures) -> bool {
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
