//! Text analysis shared by indexing and querying, so a memory and a question meet on the same
//! terms: lowercase words stemmed by the rules of the text's language ([`lang`]: English unless
//! another is plain), English stopwords dropped, and identifiers kept whole as well
//! as split (`billing_worker`, `RetryPolicy`, `src/store/mod.rs`, `localhost:5433`, `s1234`), so a
//! question naming an identifier matches it exactly and a question in plain words still finds it.
//! A command-line flag of one letter (`-X`) is a term of its own, its case kept, and so is a
//! language named by a letter and a sign (C++, C#).

use std::sync::OnceLock;

use super::lang::{self, Lang};
use crate::script::{self, is_cjk};
use rust_stemmers::Stemmer;

/// The version of the analysis below that a bank's index was written with (kept per bank, see
/// `index::step_15`): 0 before Han characters were indexed alone and Korean particles dropped (1);
/// 1 before a text's language chose its stems (2); 2 before a command-line flag of one letter
/// (`-X`) and a language named by a letter and a sign (C++, C#) were terms (3). Raising it takes a
/// schema step that keeps the banks with memories stale and marks the empty ones current
/// (`index::empty_banks_current`); a new bank is written with the current one.
pub const ANALYSIS: i64 = 3;

/// The language whose rules analyse `text` under analysis `analysis`: `None` before 2, when
/// every text was read by English rules alone.
pub fn language(text: &str, analysis: i64) -> Option<Lang> {
    (analysis >= 2).then(|| lang::detect(text))
}

/// Whether `term` is one that analyses after `analysis` write and it did not (a lone Han
/// character: before 1, only a run of one character was indexed alone, which this drops too; a
/// [`symbol`] before 3). Korean words without their particles give a subset of the pairs they
/// gave before: nothing to drop.
pub fn new_since(analysis: i64, term: &str) -> bool {
    let mut chars = term.chars();
    (analysis < 1 && chars.next().is_some_and(script::is_han) && chars.next().is_none())
        || (analysis < 3 && is_symbol(term))
}

/// The term a run of letters, digits and joiners that is nothing else makes (a sentence's full
/// stop or colon after it aside), where its letter alone is too short to be one: a command-line
/// flag of one letter as written (`-X`, `-s`; its case kept, since `-x` and `-X` are different
/// flags), or a language named by a letter and a sign (`c++`, `c#`, `f#`). Without it, "what
/// changes with -R?" was asked by "changes" alone and "the C++ client" by "client". `- item`,
/// `-2`, `x-ray`, `--exec` and `#813` are none of these.
fn symbol(run: &str) -> Option<String> {
    let run = run.trim_end_matches(['.', ':']);
    match run.as_bytes() {
        [b'-', c] if c.is_ascii_alphabetic() => Some(run.to_string()),
        [c, b'+', b'+'] | [c, b'#'] if c.is_ascii_alphabetic() => Some(run.to_ascii_lowercase()),
        _ => None,
    }
}

/// Whether a term is a [`symbol`]: a flag of one letter or a language such as C++.
pub fn is_symbol(term: &str) -> bool {
    symbol(term).is_some_and(|s| s == term)
}

/// One analysed term. `strong` marks identifiers and numbers: the words a search engineer would
/// not let a common word outvote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    /// Word position in the text (an identifier shares the position of its first part).
    pub pos: u32,
    pub strong: bool,
    /// Byte range of the word in the analysed text.
    pub start: u32,
    pub end: u32,
}

const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "couldn",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "else",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "hi",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "many",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "mustn",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "ok",
    "okay",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "re",
    "same",
    "shall",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "would",
    "wouldn",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Every word of every text analysed is looked up here: one hash and one compare, where a
/// binary search over [`STOPWORDS`] compared eight strings.
pub fn is_stopword(w: &str) -> bool {
    static SET: OnceLock<rustc_hash::FxHashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOPWORDS.iter().copied().collect()).contains(w)
}

fn stemmer(lang: Lang) -> &'static Stemmer {
    static S: OnceLock<Vec<Stemmer>> = OnceLock::new();
    &S.get_or_init(|| Lang::ALL.iter().map(|l| Stemmer::create(l.algorithm())).collect())[lang as usize]
}

thread_local! {
    /// Stems already computed, per language: words repeat, and stemming is most of an import's
    /// analysis.
    static STEMS: std::cell::RefCell<Vec<rustc_hash::FxHashMap<Box<str>, Box<str>>>> =
        std::cell::RefCell::new(vec![Default::default(); Lang::ALL.len()]);
}

fn stem(word: &str, lang: Lang) -> String {
    STEMS.with(|cache| {
        let mut caches = cache.borrow_mut();
        let cache = &mut caches[lang as usize];
        if let Some(s) = cache.get(word) {
            return s.to_string();
        }
        let s = stemmer(lang).stem(word).into_owned();
        if cache.len() < 200_000 {
            cache.insert(word.into(), s.as_str().into());
        }
        s
    })
}

/// Characters that join the parts of an identifier (`a_b`, `a-b`, `a.b`, `a/b`, `a:b`, `a@b`, `#1`).
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '-' | '.' | '/' | ':' | '@' | '#' | '+' | '~')
}

/// Calls `f(offset, part)` for each part of a run of letters and digits split at camelCase
/// boundaries (`RetryPolicy` -> `Retry`, `Policy`; `HTTPServer` -> `HTTP`, `Server`).
/// Letter/digit boundaries are kept (`s1234`, `v2`).
fn for_camel_parts(word: &str, mut f: impl FnMut(usize, &str)) {
    if word.bytes().all(|b| !b.is_ascii_uppercase()) && word.is_ascii() {
        return f(0, word);
    }
    let mut start = 0;
    let mut it = word.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((i, cur)) = it.next() {
        if let Some(p) = prev {
            let next = it.peek().map(|x| x.1);
            let lower_to_upper = p.is_lowercase() && cur.is_uppercase();
            let acronym_end = p.is_uppercase() && cur.is_uppercase() && next.is_some_and(char::is_lowercase);
            if (lower_to_upper || acronym_end) && i > start {
                f(start, &word[start..i]);
                start = i;
            }
        }
        prev = Some(cur);
    }
    if start < word.len() {
        f(start, &word[start..]);
    }
}

/// The term for one word part of a text in `lang` (`None`: by the rules before languages were
/// told apart): lowercased, stemmed when it is a plain word, `None` for English stopwords and
/// lone letters. English stems only words of ASCII letters, as before; another language stems
/// any word of letters longer than three (Gaszähler). A word in Cyrillic is stemmed by Russian
/// rules whatever its text's language, so a short question too few words tell apart still meets
/// a Russian memory (сервера / сервер). Another language's function words are kept and left to
/// their IDF: its list also holds words a question means ("von wann bis wann", "manche
/// Zähler"), and dropping them lost two of twelve German dev questions.
pub fn part_term(part: &str, lang: Option<Lang>) -> Option<(String, bool)> {
    if part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return plain_term(part, lang);
    }
    any_term(part, lang)
}

/// [`part_term`] of any part: lowercased first.
fn any_term(part: &str, lang: Option<Lang>) -> Option<(String, bool)> {
    let lower = part.to_lowercase();
    let has_digit = lower.chars().any(|c| c.is_ascii_digit());
    if has_digit {
        return Some((lower, true));
    }
    if lower.chars().count() < 2 || is_stopword(&lower) {
        return None;
    }
    let long = lower.chars().nth(3).is_some();
    let rules = match lang {
        Some(_) if long && lower.chars().all(script::is_cyrillic) => Some(Lang::Russian),
        None | Some(Lang::English) => {
            Some(Lang::English).filter(|_| long && lower.chars().all(|c| c.is_ascii_lowercase()))
        }
        Some(l) => Some(l).filter(|_| long && lower.chars().all(char::is_alphabetic)),
    };
    match rules {
        Some(l) => Some((stem(&lower, l), false)),
        None => Some((lower, false)),
    }
}

/// [`part_term`] of a part of ASCII lower-case letters and digits (most words of most texts),
/// read in place: a stop word is dropped without a copy, and a word is copied once, as its term.
fn plain_term(part: &str, lang: Option<Lang>) -> Option<(String, bool)> {
    if part.bytes().any(|b| b.is_ascii_digit()) {
        return Some((part.to_string(), true));
    }
    if part.len() < 2 || is_stopword(part) {
        return None;
    }
    // Longer than three letters, every one of them a letter: stemmed by the text's language's
    // rules (English's when it has none told), as in `part_term`.
    if part.len() > 3 {
        return Some((stem(part, lang.unwrap_or(Lang::English)), false));
    }
    Some((part.to_string(), false))
}

/// Analyses `text` into terms, appending to `out`. Positions continue from `start`; returns the
/// next free position.
pub fn analyse_into(text: &str, start: u32, out: &mut Vec<Term>) -> u32 {
    analyse_into_with(text, start, out, language(text, ANALYSIS))
}

/// [`analyse_into`] by the rules of language `lang` ([`language`]).
fn analyse_into_with(text: &str, start: u32, out: &mut Vec<Term>, lang: Option<Lang>) -> u32 {
    let mut pos = start;
    let mut chunk: Option<usize> = None;
    let mut cjk: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if is_cjk(c) {
            if let Some(s) = chunk.take() {
                emit_chunk(text, s, i, lang, &mut pos, out);
            }
            cjk.get_or_insert(i);
            continue;
        }
        if let Some(s) = cjk.take() {
            emit_cjk(text, s, i, &mut pos, out);
        }
        if c.is_alphanumeric() || is_joiner(c) {
            chunk.get_or_insert(i);
        } else if let Some(s) = chunk.take() {
            emit_chunk(text, s, i, lang, &mut pos, out);
        }
    }
    if let Some(s) = chunk {
        emit_chunk(text, s, text.len(), lang, &mut pos, out);
    }
    if let Some(s) = cjk {
        emit_cjk(text, s, text.len(), &mut pos, out);
    }
    pos
}

/// A run of Han, kana or hangul: overlapping character bigrams (the usual indexing unit for
/// text without spaces), and each Han character alone besides, or the character itself when the
/// run is one character long. A Han character is a word or a root of words (数据 and 数字 share
/// 数), so a question asked in other words than its answer still meets it on characters, where
/// bigrams alone would have nothing in common; a kana or hangul syllable alone means nothing.
/// A Korean word (a run of hangul syllables between spaces) loses the particles at its end first
/// ([`korean_stem`]). Chosen on the written dev histories (Chinese 65.3% to 77.8% by the words
/// alone; Japanese 54.2% to 66.7% with the words alone; Korean 56.9% to 65.3%, see
/// docs/benchmarks.md); hangul syllables alone lost there, and so did Japanese pairs kept within
/// one script (no pair across kanji and kana).
fn emit_cjk(text: &str, from: usize, to: usize, pos: &mut u32, out: &mut Vec<Term>) {
    let mut chars: Vec<(usize, char)> = text[from..to].char_indices().map(|(i, c)| (from + i, c)).collect();
    let width = chars.len() as u32;
    chars.truncate(korean_stem(&chars));
    let term = |a: usize, b: usize, pos: u32| Term {
        text: text[a..b].to_string(),
        pos,
        strong: false,
        start: a as u32,
        end: b as u32,
    };
    for (k, &(i, c)) in chars.iter().enumerate() {
        let at = *pos + k as u32;
        if chars.len() == 1 || script::is_han(c) {
            out.push(term(i, i + c.len_utf8(), at));
        }
        if let Some(&(j, d)) = chars.get(k + 1) {
            out.push(term(i, j + d.len_utf8(), at));
        }
    }
    *pos += width;
}

/// Korean particles (josa), longest first: a word's case and topic markers and postpositions,
/// which Korean writes glued to the noun (서버를, 서버에서는).
const PARTICLES: &[&str] = &[
    "에서", "에게", "한테", "으로", "까지", "부터", "보다", "처럼", "하고", "이랑", "은", "는", "이", "가", "을", "를",
    "의", "에", "로", "와", "과", "도", "만", "랑",
];

/// How many of a run's characters are its stem: a run of hangul syllables without up to two
/// particles at its end (서버에서는 → 서버), as long as two syllables are left, so that the pair
/// a particle makes with the word's last syllable (버를) does not count as a word; any other run
/// whole. The same rule for a memory and a question, so a noun that merely ends like a particle
/// (고양이) loses it on both sides alike.
fn korean_stem(chars: &[(usize, char)]) -> usize {
    let mut n = chars.len();
    if !chars.iter().all(|&(_, c)| script::is_hangul_syllable(c)) {
        return n;
    }
    for _ in 0..2 {
        let ends = |p: &&&str| {
            let len = p.chars().count();
            n >= len + 2 && chars[n - len..n].iter().map(|&(_, c)| c).eq(p.chars())
        };
        match PARTICLES.iter().find(ends) {
            Some(p) => n -= p.chars().count(),
            None => break,
        }
    }
    n
}

fn emit_chunk(text: &str, from: usize, to: usize, lang: Option<Lang>, pos: &mut u32, out: &mut Vec<Term>) {
    let raw = &text[from..to];
    if let Some(term) = symbol(raw) {
        let end = (from + term.len()) as u32;
        out.push(Term { text: term, pos: *pos, strong: true, start: from as u32, end });
        *pos += 1;
        return;
    }
    let lead = raw.len() - raw.trim_start_matches(is_joiner).len();
    let chunk = raw.trim_matches(is_joiner);
    if chunk.is_empty() {
        return;
    }
    let base = from + lead;
    let first = *pos;
    let mut parts = 0;
    let mut off = 0;
    for word in chunk.split(is_joiner) {
        if !word.is_empty() {
            for_camel_parts(word, |i, p| {
                if let Some((term, strong)) = part_term(p, lang) {
                    let at = base + off + i;
                    out.push(Term { text: term, pos: *pos, strong, start: at as u32, end: (at + p.len()) as u32 });
                }
                *pos += 1;
                parts += 1;
            });
        }
        off += word.len() + 1;
    }
    // The whole identifier, as written (lowercased, unstemmed), when it is more than one word.
    if parts > 1 && chunk.len() <= 64 {
        out.push(Term {
            text: chunk.to_lowercase(),
            pos: first,
            strong: true,
            start: base as u32,
            end: (base + chunk.len()) as u32,
        });
    }
}

pub fn analyse(text: &str) -> Vec<Term> {
    analyse_as(text, ANALYSIS)
}

/// [`analyse`] as analysis `analysis` did (a bank's index written by an older one is read with
/// the terms it wrote).
pub fn analyse_as(text: &str, analysis: i64) -> Vec<Term> {
    analyse_with(text, language(text, analysis))
}

/// [`analyse`] by the rules of language `lang`, told already ([`language`]).
pub fn analyse_with(text: &str, lang: Option<Lang>) -> Vec<Term> {
    // About one term in eight bytes of English prose: a long reply's terms grow the vector once
    // or twice, not ten times.
    let mut out = Vec::with_capacity(text.len() / 8);
    analyse_into_with(text, 0, &mut out, lang);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn every_term_points_at_whole_characters(s in crate::anytext::text(120)) {
            let mut last = 0;
            for t in analyse(&s) {
                let (a, b) = (t.start as usize, t.end as usize);
                proptest::prop_assert!(a < b && b <= s.len(), "{t:?}");
                proptest::prop_assert!(s.is_char_boundary(a) && s.is_char_boundary(b), "{t:?} in {s:?}");
                proptest::prop_assert!(t.pos >= last || t.strong);
                last = last.max(t.pos);
                if s[a..b].chars().all(is_cjk) {
                    proptest::prop_assert_eq!(&s[a..b], t.text.as_str());
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_plain_word_is_read_as_any_other(part in "[a-z0-9]{0,12}", which in 0..4usize) {
            let lang = [None, Some(Lang::English), Some(Lang::German), Some(Lang::Russian)][which];
            proptest::prop_assert_eq!(plain_term(&part, lang), any_term(&part, lang));
        }
    }

    #[test]
    fn stop_words_and_short_words_are_read_alike_too() {
        let words = STOPWORDS.iter().copied().chain(["a", "db", "api", "running", "retries", "x9", "2024"]);
        for w in words {
            for lang in [None, Some(Lang::English), Some(Lang::German)] {
                assert_eq!(plain_term(w, lang), any_term(w, lang), "{w} {lang:?}");
            }
        }
    }

    #[test]
    fn kana_and_hangul_become_bigrams_too() {
        assert_eq!(texts("データベース"), ["デー", "ータ", "タベ", "ベー", "ース"]);
        assert_eq!(texts("ひらがな"), ["ひら", "らが", "がな"]);
        assert_eq!(texts("데이터베이스 포트"), ["데이", "이터", "터베", "베이", "이스", "포트"]);
        // A Korean word's particles are not part of it: up to two, as long as two syllables stay.
        assert_eq!(texts("서버를 서버에서는 아이가 고양이"), ["서버", "서버", "아이", "고양"]);
        // Half-width katakana and compatibility jamo are runs of their script too.
        assert_eq!(texts("ﾃﾞｰﾀ"), ["ﾃﾞ", "ﾞｰ", "ｰﾀ"]);
        assert_eq!(texts("ㅋㅋ"), ["ㅋㅋ"]);
    }

    fn texts(s: &str) -> Vec<String> {
        analyse(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn a_flag_of_one_letter_is_a_term_with_its_case() {
        assert_eq!(texts("`fd -X rm` and (-x), -H."), ["fd", "-X", "rm", "-x", "-H"]);
        let flag = analyse("run -s now").into_iter().find(|t| t.text == "-s").unwrap();
        assert!(flag.strong, "an identifier: {flag:?}");
        assert_eq!((flag.start, flag.end), (4, 6));
        // Not flags of one letter: a list's dash, a negative number, a word with a hyphen, a long
        // flag, a path.
        assert_eq!(texts("- item -2 x-ray --exec a/-b"), ["item", "2", "ray", "x-ray", "exec", "a/-b"]);
        // An index written before flags were terms is not asked for them.
        assert!(new_since(2, "-X") && !new_since(3, "-X") && !new_since(2, "x-ray"));
    }

    #[test]
    fn a_language_named_by_a_letter_and_a_sign_is_a_term() {
        assert_eq!(texts("the client in C++, the tools in C# and F#."), ["client", "c++", "tool", "c#", "f#"]);
        let t = analyse("port it to C++: now").into_iter().find(|t| t.text == "c++").unwrap();
        assert!(t.strong && (t.start, t.end) == (11, 14), "{t:?}");
        // Not a language: an issue number, a sum, a longer name.
        assert_eq!(texts("#813 1+1 ab++"), ["813", "1", "1", "1+1", "ab"]);
        assert!(new_since(2, "c++") && new_since(2, "c#") && !new_since(3, "c++") && !new_since(2, "813"));
    }

    #[test]
    fn a_text_is_stemmed_by_its_language_rules() {
        // German inflections meet on one stem (umlauts folded); its function words stay, weighed
        // by their rarity.
        let german = |s: &str| texts(s);
        let a = german("Wir haben die Dateien der Gaszähler geprüft");
        let b = german("Die Datei mit dem Gaszählern ist geprüft");
        for t in ["datei", "gaszahl", "gepruft"] {
            assert!(a.contains(&t.to_string()) && b.contains(&t.to_string()), "{t}: {a:?} / {b:?}");
        }
        assert!(a.contains(&"die".to_string()), "{a:?}");
        // French and Spanish plurals meet their singulars.
        let fr = texts("Les serveurs de la base de données sont à Paris et nous les surveillons");
        assert!(fr.contains(&"serveur".to_string()), "{fr:?}");
        let es = texts("Los servidores de la base de datos están en Madrid desde el lunes");
        assert!(es.contains(&"servidor".to_string()), "{es:?}");
        // Russian, by its own rules.
        let ru = texts("Мы перенесли базу данных на новый сервер, и серверы теперь в Берлине");
        assert!(ru.iter().filter(|t| *t == "сервер").count() == 2, "{ru:?}");
        // English as before, whatever else a text holds in code.
        assert_eq!(texts("We checked the files `und die der das`"), ["check", "file", "und", "die", "der", "das"]);
        // A word in Cyrillic by Russian rules, however few words tell its text's language.
        assert_eq!(texts("серверы?"), ["сервер"]);
        // An index written before languages were told apart is read as it was written.
        assert!(analyse_as("Die Dateien der Gaszähler", 1).iter().any(|t| t.text == "gaszähler"));
        assert_eq!(analyse_as("серверы?", 1)[0].text, "серверы");
    }

    #[test]
    fn stopwords_are_listed_once_in_order() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn words_are_stemmed_and_stopwords_dropped() {
        assert_eq!(texts("How many retries does the billing worker use?"), ["retri", "bill", "worker", "use"]);
        assert_eq!(texts("Deploying deployments deployed"), ["deploy", "deploy", "deploy"]);
    }

    #[test]
    fn identifiers_are_kept_whole_and_split() {
        let t = analyse("Set RetryPolicy in src/store/mod.rs for s1234 on localhost:5433 (ERR_CONN_RESET).");
        let strong: Vec<&str> = t.iter().filter(|t| t.strong).map(|t| t.text.as_str()).collect();
        assert_eq!(strong, ["retrypolicy", "src/store/mod.rs", "s1234", "5433", "localhost:5433", "err_conn_reset"]);
        let all: Vec<&str> = t.iter().map(|t| t.text.as_str()).collect();
        for w in ["retri", "polici", "src", "store", "mod", "rs", "localhost", "err", "conn", "reset"] {
            assert!(all.contains(&w), "{w} in {all:?}");
        }
    }

    #[test]
    fn trailing_punctuation_is_not_part_of_a_word() {
        assert_eq!(texts("done. v1.2.3. -flag- __init__"), ["done", "v1", "2", "3", "v1.2.3", "flag", "init"]);
    }

    #[test]
    fn cjk_text_becomes_bigrams() {
        assert_eq!(texts("数据库端口 和"), ["数", "数据", "据", "据库", "库", "库端", "端", "端口", "口", "和"]);
        // Only Han characters stand alone: kana between them are in pairs.
        assert_eq!(texts("鍵を"), ["鍵", "鍵を"]);
    }

    #[test]
    fn byte_offsets_point_at_the_words() {
        let text = "Ünïcode: fooBar_baz, 端口 x v2";
        for t in analyse(text) {
            let slice = &text[t.start as usize..t.end as usize];
            if t.strong || !slice.is_ascii() {
                assert_eq!(slice.to_lowercase(), t.text, "{t:?}");
            }
        }
        let t = analyse("see fooBar_baz");
        let spans: Vec<(&str, &str)> =
            t.iter().map(|t| (t.text.as_str(), &"see fooBar_baz"[t.start as usize..t.end as usize])).collect();
        assert_eq!(
            spans,
            [("see", "see"), ("foo", "foo"), ("bar", "Bar"), ("baz", "baz"), ("foobar_baz", "fooBar_baz")]
        );
    }

    #[test]
    fn positions_follow_words() {
        let t = analyse("alpha beta_gamma delta");
        let pos: Vec<(String, u32)> = t.into_iter().map(|t| (t.text, t.pos)).collect();
        assert_eq!(
            pos,
            [
                ("alpha".into(), 0),
                ("beta".into(), 1),
                ("gamma".into(), 2),
                ("beta_gamma".into(), 1),
                ("delta".into(), 3)
            ]
        );
    }
}
