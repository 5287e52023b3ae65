//! A normalised shadow of a text that the rules run on, with a map back to the original's byte
//! offsets. Secrets are said in forms the ASCII rules do not read: markdown emphasis around a
//! label (`**Password:** x`), labels in other languages (`密码`, `Passwort`, `пароль`) and copulas
//! (`是`, `は`, `ist`, `est`), full-width punctuation (`：＝`), curly quotes, zero-width
//! characters, JSON escapes (`\/`, `\u0067`) and percent-encoding (`%3A%2F%2F`). The shadow
//! writes each of these as its ASCII equivalent (a label as `password`), puts a space between a
//! CJK character and an ASCII one (a value ends where the sentence goes on), and drops what
//! means nothing, and joins the pieces of a value split across lines or string literals
//! (`joins`). One pass, linear in the text.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// Labels in other languages, and what the shadow writes for each.
const LABELS: &[(&str, &str)] = &[
    ("密码", "password"),
    ("密碼", "password"),
    ("口令", "password"),
    ("登录密码", "password"),
    ("暗号", "password"),
    ("密钥", "secret"),
    ("密鑰", "secret"),
    ("秘钥", "secret"),
    ("私钥", "secret"),
    ("令牌", "token"),
    ("パスワード", "password"),
    ("暗証番号", "password"),
    ("秘密鍵", "secret"),
    ("トークン", "token"),
    ("비밀번호", "password"),
    ("암호", "password"),
    ("패스워드", "password"),
    ("토큰", "token"),
    ("passwort", "password"),
    ("kennwort", "password"),
    ("пароль", "password"),
    ("Пароль", "password"),
    ("ПАРОЛЬ", "password"),
    ("пароля", "password"),
    ("contraseña", "password"),
    ("Contraseña", "password"),
    ("CONTRASEÑA", "password"),
    ("contrasena", "password"),
    ("clave", "password"),
    ("mot de passe", "password"),
    ("mot_de_passe", "password"),
    ("motdepasse", "password"),
    ("senha", "password"),
    ("parola", "password"),
    ("parolă", "password"),
    ("wachtwoord", "password"),
    ("hasło", "password"),
    ("Hasło", "password"),
    ("HASŁO", "password"),
    ("haslo", "password"),
    ("lösenord", "password"),
    ("Lösenord", "password"),
    ("losenord", "password"),
    ("adgangskode", "password"),
    ("passord", "password"),
    ("salasana", "password"),
    ("şifre", "password"),
    ("Şifre", "password"),
    ("sifre", "password"),
    ("heslo", "password"),
    ("jelszó", "password"),
    ("jelszo", "password"),
    ("κωδικός", "password"),
    ("סיסמה", "password"),
    ("كلمة المرور", "password"),
    ("पासवर्ड", "password"),
    ("mật khẩu", "password"),
    ("รหัสผ่าน", "password"),
];

/// Copulas that may follow a label (`密码是x`, `パスワードはx`, `Passwort ist x`).
const COPULAS_CJK: &[&str] = &["就是", "是", "为", "為", "は", "는", "은", "이", "가"];
const COPULAS_WORD: &[&str] = &["ist", "est", "es", "é", "è", "er", "är", "jest", "je", "is", "era", "era:", "sind"];

fn labels() -> &'static AhoCorasick {
    static AC: LazyLock<AhoCorasick> = LazyLock::new(|| {
        // A contiguous NFA, not the DFA the builder picks for a few hundred labels: built in a
        // tenth of the time (every hook builds it once, for one short text), scanned about as fast.
        AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(LABELS.iter().map(|l| l.0))
            .expect("label automaton")
    });
    &AC
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x1100..=0x11FF | 0x3040..=0x30FF | 0x3130..=0x318F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// What one non-ASCII character becomes in the shadow: `Some("")` dropped, `Some(s)` replaced,
/// `None` kept.
fn map_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}' => "",
        '“' | '”' | '„' | '«' | '»' | '「' | '」' | '『' | '』' => "\"",
        '‘' | '’' | '‚' => "'",
        '：' => ":",
        '＝' => "=",
        '，' | '、' => ",",
        '。' | '｡' => ".",
        '；' => ";",
        '（' => "(",
        '）' => ")",
        '【' => "[",
        '】' => "]",
        '　' | '\u{00A0}' => " ",
        _ => return None,
    })
}

/// The shadow of a text: the normalised text, and for each of its bytes the original bytes it
/// came from.
pub(super) struct Shadow<'t> {
    pub(super) text: Cow<'t, str>,
    from: Vec<(u32, u32)>,
}

impl<'t> Shadow<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        let b = text.as_bytes();
        let special = |c: &u8| matches!(c, b'*' | b'\\' | b'%' | b'_' | b'`') || *c >= 0x80;
        let label_hit = labels().find(text);
        let gaps = super::joins::gaps(text);
        if !b.iter().any(special) && label_hit.is_none() && gaps.is_empty() {
            return Shadow { text: Cow::Borrowed(text), from: Vec::new() };
        }
        let mut gaps = gaps.into_iter().peekable();
        let mut out = String::with_capacity(text.len() + 16);
        let mut from: Vec<(u32, u32)> = Vec::with_capacity(text.len() + 16);
        let mut hits = labels().find_iter(text).peekable();
        let push = |out: &mut String, from: &mut Vec<(u32, u32)>, s: &str, a: usize, z: usize| {
            out.push_str(s);
            from.extend(std::iter::repeat_n((a as u32, z as u32), s.len()));
        };
        // Whether the last character written was CJK (a space separates it from ASCII).
        let mut last_cjk = false;
        let mut i = 0;
        while i < text.len() {
            // The gap between two pieces of one value: dropped, nothing written.
            while gaps.peek().is_some_and(|g| g.0 < i) {
                gaps.next(); // begun inside a character or escape already written
            }
            if let Some(&(_, z)) = gaps.peek().filter(|g| g.0 == i) {
                gaps.next();
                i = z;
                continue;
            }
            // A label in another language, whole-word for alphabetic scripts.
            while hits.peek().is_some_and(|m| m.start() < i) {
                hits.next();
            }
            if let Some(m) = hits.peek().filter(|m| m.start() == i).copied() {
                let word_ok = |c: Option<char>| c.is_none_or(|c| !c.is_alphabetic() || is_cjk(c));
                let first = text[m.start()..].chars().next().unwrap_or(' ');
                let before = text[..i].chars().next_back();
                let after = text[m.end()..].chars().next();
                if is_cjk(first) || (word_ok(before) && word_ok(after)) {
                    hits.next();
                    let word = LABELS[m.pattern().as_usize()].1;
                    if out.bytes().last().is_some_and(|c| !c.is_ascii_whitespace()) {
                        push(&mut out, &mut from, " ", i, i);
                    }
                    push(&mut out, &mut from, word, m.start(), m.end());
                    i = m.end();
                    last_cjk = false;
                    // A copula after the label reads as `is`.
                    let rest = &text[i..];
                    let ws = rest.len() - rest.trim_start_matches([' ', '\t', '\u{3000}']).len();
                    let after_ws = &rest[ws..];
                    let copula =
                        COPULAS_CJK.iter().find(|c| after_ws.starts_with(**c)).map(|c| c.len()).or_else(|| {
                            (ws > 0)
                                .then(|| {
                                    COPULAS_WORD.iter().find(|c| {
                                        after_ws.len() > c.len()
                                            && after_ws.is_char_boundary(c.len())
                                            && after_ws[..c.len()].eq_ignore_ascii_case(c)
                                            && after_ws[c.len()..].starts_with([' ', '\t'])
                                    })
                                })
                                .flatten()
                                .map(|c| c.len())
                        });
                    if let Some(n) = copula {
                        push(&mut out, &mut from, " is ", i, i + ws + n);
                        i += ws + n;
                        let rest = &text[i..];
                        i += rest.len() - rest.trim_start_matches([' ', '\t', '\u{3000}', ':', '：']).len();
                    }
                    continue;
                }
            }
            let c = text[i..].chars().next().expect("in bounds");
            let n = c.len_utf8();
            if !c.is_ascii() {
                if let Some(s) = map_char(c) {
                    push(&mut out, &mut from, s, i, i + n);
                    last_cjk = false;
                } else if ('\u{FF01}'..='\u{FF5E}').contains(&c) {
                    let a = char::from_u32(c as u32 - 0xFEE0).expect("ascii");
                    push(&mut out, &mut from, a.encode_utf8(&mut [0; 4]), i, i + n);
                    last_cjk = false;
                } else {
                    let cjk = is_cjk(c);
                    if cjk && out.bytes().last().is_some_and(|c| c.is_ascii() && !c.is_ascii_whitespace()) {
                        push(&mut out, &mut from, " ", i, i);
                    }
                    push(&mut out, &mut from, &text[i..i + n], i, i + n);
                    last_cjk = cjk;
                }
                i += n;
                continue;
            }
            if last_cjk && !c.is_ascii_whitespace() {
                push(&mut out, &mut from, " ", i, i);
            }
            last_cjk = false;
            // JSON escapes: `\/` and `\u00XX` of a printable ASCII character.
            if c == '\\' {
                if b.get(i + 1) == Some(&b'/') {
                    push(&mut out, &mut from, "/", i, i + 2);
                    i += 2;
                    continue;
                }
                if b.get(i + 1) == Some(&b'u') && i + 6 <= b.len() {
                    if let Some(ch) = std::str::from_utf8(&b[i + 2..i + 6])
                        .ok()
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                        .filter(|ch| ch.is_ascii_graphic() && !matches!(ch, '"' | '\\'))
                    {
                        push(&mut out, &mut from, ch.encode_utf8(&mut [0; 4]), i, i + 6);
                        i += 6;
                        continue;
                    }
                }
            }
            // Percent-encoding of a printable ASCII character.
            if c == '%' && i + 3 <= b.len() {
                if let Some(ch) = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .filter(|h| h.bytes().all(|x| x.is_ascii_hexdigit()))
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    // What a URL or a `key=value` needs, nothing that would end a value early.
                    .filter(|x| x.is_ascii_alphanumeric() || b":/@=?#+.~_-".contains(x))
                {
                    push(&mut out, &mut from, (ch as char).encode_utf8(&mut [0; 4]), i, i + 3);
                    i += 3;
                    continue;
                }
            }
            // Markdown emphasis (`**k:**`, `*k*:`, `__k__`) and code marks around a label.
            if matches!(c, '*' | '_' | '`') {
                let run = b[i..].iter().take_while(|x| **x == c as u8).count();
                let prev = text[..i].chars().next_back();
                let next = text[i + run..].chars().next();
                let open = prev.is_none_or(|p| p.is_whitespace() || "(|>-[\"'".contains(p))
                    && next.is_some_and(|n| n.is_alphanumeric());
                let close = prev.is_some_and(|p| p.is_alphanumeric() || p == ':' || p == ')')
                    && next.is_none_or(|n| n.is_whitespace() || ":=|,;.)：＝".contains(n));
                let max = if c == '*' { 3 } else { 2 };
                // A code mark only around a label (`` `password`: x ``): a value in backticks
                // stays quoted.
                let label_mark = c != '`'
                    || (close && next.is_some_and(|n| ":=".contains(n)))
                    || (open
                        && b[i + run..(i + run + 40).min(b.len())]
                            .iter()
                            .position(|x| *x == b'`' || *x == b'\n')
                            .is_some_and(|j| {
                                b[i + run + j] == b'`' && matches!(b.get(i + run + j + 1), Some(b':' | b'='))
                            }));
                if (open || close) && run <= max && label_mark {
                    i += run; // dropped: nothing written
                    continue;
                }
                push(&mut out, &mut from, &text[i..i + run], i, i + run);
                i += run;
                continue;
            }
            push(&mut out, &mut from, &text[i..i + n], i, i + n);
            i += n;
        }
        Shadow { text: Cow::Owned(out), from }
    }

    /// The original byte range of the shadow's range `start..end`.
    pub(super) fn original(&self, start: usize, end: usize) -> (usize, usize) {
        if self.from.is_empty() {
            return (start, end);
        }
        let len = self.from.len();
        let a = if start < len { self.from[start].0 } else { self.from.last().map_or(0, |f| f.1) } as usize;
        let z = if end == 0 { a } else { self.from[(end - 1).min(len - 1)].1 as usize };
        (a, z.max(a))
    }
}
