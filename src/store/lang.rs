//! Which language a text is written in, told by its function words (NLTK's stop word lists, as
//! the `stop-words` crate ships them), so that its words are stemmed by that language's rules:
//! "Gaszähler" and "Gaszählern", "Datei" and "Dateien" are one term in a German text, which
//! English rules leave apart. English is assumed unless another language's words clearly
//! outnumber it; code between backticks does not count.

use std::sync::OnceLock;

use rust_stemmers::Algorithm;
use rustc_hash::FxHashMap;

/// The languages told apart: those with both a stop word list and a Snowball stemmer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Lang {
    #[default]
    English,
    German,
    French,
    Spanish,
    Italian,
    Portuguese,
    Dutch,
    Swedish,
    Danish,
    Norwegian,
    Finnish,
    Russian,
}

impl Lang {
    pub const ALL: [Lang; 12] = [
        Lang::English,
        Lang::German,
        Lang::French,
        Lang::Spanish,
        Lang::Italian,
        Lang::Portuguese,
        Lang::Dutch,
        Lang::Swedish,
        Lang::Danish,
        Lang::Norwegian,
        Lang::Finnish,
        Lang::Russian,
    ];

    fn code(self) -> &'static str {
        match self {
            Lang::English => "en",
            Lang::German => "de",
            Lang::French => "fr",
            Lang::Spanish => "es",
            Lang::Italian => "it",
            Lang::Portuguese => "pt",
            Lang::Dutch => "nl",
            Lang::Swedish => "sv",
            Lang::Danish => "da",
            Lang::Norwegian => "no",
            Lang::Finnish => "fi",
            Lang::Russian => "ru",
        }
    }

    pub fn algorithm(self) -> Algorithm {
        match self {
            Lang::English => Algorithm::English,
            Lang::German => Algorithm::German,
            Lang::French => Algorithm::French,
            Lang::Spanish => Algorithm::Spanish,
            Lang::Italian => Algorithm::Italian,
            Lang::Portuguese => Algorithm::Portuguese,
            Lang::Dutch => Algorithm::Dutch,
            Lang::Swedish => Algorithm::Swedish,
            Lang::Danish => Algorithm::Danish,
            Lang::Norwegian => Algorithm::Norwegian,
            Lang::Finnish => Algorithm::Finnish,
            Lang::Russian => Algorithm::Russian,
        }
    }

    /// Whether the language writes compounds as one word (Gaszähler, bestandsdatei), which a
    /// question may split or join.
    pub fn compounds(self) -> bool {
        matches!(self, Lang::German | Lang::Dutch | Lang::Swedish | Lang::Danish | Lang::Norwegian | Lang::Finnish)
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// NLTK's stop-word lists (by the `stop-words` crate, written out by `build.rs`): language codes
/// with their words, one per line.
mod nltk {
    include!(concat!(env!("OUT_DIR"), "/stop_words.rs"));
}

/// The words NLTK lists for the language of this code (none for a code it has no list for).
fn listed(code: &str) -> std::str::Lines<'static> {
    nltk::STOP_WORDS.iter().find(|(c, _)| *c == code).map_or("", |(_, words)| words).lines()
}

/// Every listed word with the languages that list it.
fn lists() -> &'static FxHashMap<&'static str, u16> {
    static LISTS: OnceLock<FxHashMap<&'static str, u16>> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut m: FxHashMap<&'static str, u16> = FxHashMap::default();
        for lang in Lang::ALL {
            for w in listed(lang.code()) {
                *m.entry(w).or_insert(0) |= lang.bit();
            }
        }
        m
    })
}

/// Bytes of a text read to tell its language (and the most a text's beginning must hold for
/// two readings of it, its index's and a recall's, to agree: both read at least this much).
pub const SAMPLE: usize = 800;

/// The language of `text`, by its beginning: another than English when at least three of its
/// function words (two, with no English one) are listed for it, and more of its words than
/// English's. Words between backticks are code and not counted.
pub fn detect(text: &str) -> Lang {
    let end = crate::cut::floor_char(text, SAMPLE);
    let lists = lists();
    let mut english = 0u32;
    let mut hits = [0u32; Lang::ALL.len()];
    // Distinct words per language: a few dozen at most, kept in one short list.
    let mut seen: Vec<(&str, u16)> = Vec::new();
    let mut lower = String::new();
    let mut code = false;
    let mut start: Option<usize> = None;
    let sample = &text[..end];
    for (i, c) in sample.char_indices().chain(std::iter::once((end, ' '))) {
        if c.is_alphabetic() && !code && i < end {
            start.get_or_insert(i);
            continue;
        }
        if c == '`' {
            code = !code;
        }
        let Some(s) = start.take() else { continue };
        let word = &sample[s..i];
        if word.chars().nth(1).is_none() {
            continue;
        }
        let word = if word.bytes().all(|b| b.is_ascii_lowercase()) {
            word
        } else {
            lower.clear();
            lower.extend(word.chars().flat_map(char::to_lowercase));
            &lower
        };
        let Some((&listed, &langs)) = lists.get_key_value(word) else { continue };
        if langs & Lang::English.bit() != 0 {
            english += 1;
            // A text this plainly English says no more: most of what ovmem reads is.
            if english >= 12 && hits.iter().all(|&h| h * 3 < english) {
                return Lang::English;
            }
            continue;
        }
        for lang in &Lang::ALL[1..] {
            if langs & lang.bit() != 0 {
                hits[*lang as usize] += 1;
            }
        }
        if !seen.iter().any(|(w, _)| *w == listed) {
            seen.push((listed, langs));
        }
    }
    let distinct = |lang: Lang| seen.iter().filter(|(_, m)| m & lang.bit() != 0).count();
    let best = Lang::ALL[1..]
        .iter()
        .copied()
        .max_by_key(|&l| (distinct(l), hits[l as usize], std::cmp::Reverse(l as usize)))
        .expect("languages besides English");
    let n = distinct(best);
    if hits[best as usize] > english && (n >= 3 || n >= 2 && english == 0) {
        best
    } else {
        Lang::English
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_read_has_its_list() {
        for lang in Lang::ALL {
            let words: Vec<&str> = listed(lang.code()).collect();
            assert!(words.len() > 50, "{:?}: {} words", lang, words.len());
            assert!(words.iter().all(|w| !w.is_empty() && w.trim() == *w), "{lang:?}");
        }
        assert!(listed("de").any(|w| w == "und") && listed("en").any(|w| w == "the"));
        assert_eq!(listed("xx").count(), 0);
    }

    #[test]
    fn a_text_is_in_the_language_its_function_words_are() {
        for (text, lang) in [
            ("Wie viele Gaszähler betreibt der Versorger ungefähr?", Lang::German),
            ("Welchen Zeichensatz hat die nächtliche Bestandsdatei?", Lang::German),
            ("Zählerwechsel erkennen wir wie?", Lang::German),
            ("Où est le serveur de base de données de la recette ?", Lang::French),
            ("¿Dónde corre el servidor de la base de datos?", Lang::Spanish),
            ("Где работает сервер базы данных, который мы подняли для тестов?", Lang::Russian),
            ("Which port does the staging database listen on for integration tests?", Lang::English),
            ("Ethan wants .deb packages built in CI", Lang::English),
            ("ok", Lang::English),
            ("", Lang::English),
            ("部署脚本放在运维仓库里", Lang::English),
        ] {
            assert_eq!(detect(text), lang, "{text}");
        }
    }

    #[test]
    fn code_between_backticks_is_not_counted() {
        let text =
            "已经配好：\n```go\nh := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ a, a, a, mod, ci })\n```";
        assert_eq!(detect(text), Lang::English);
        assert_eq!(detect("Setz `die` und `der` in `das` Feld, und wir sind fertig"), Lang::German);
    }

    #[test]
    fn only_the_beginning_is_read_and_never_cut_inside_a_character() {
        let long = format!("x{} und die der das wir sind nicht mit", "ä".repeat(SAMPLE));
        assert_eq!(detect(&long), Lang::English);
        let german = format!("{}{}", "Wir sind nicht mit der Datei fertig, ".repeat(25), "the and of ".repeat(200));
        assert_eq!(detect(&german), Lang::German);
    }
}
