//! The model's tokenizer, in Rust: BERT's uncased basic tokenisation (clean the text, CJK
//! ideographs as words of their own, accents stripped, lower-cased, punctuation split off) and
//! greedy longest-match WordPiece over the model's vocabulary. It walks `char`s only, so no text
//! can be cut inside a UTF-8 character. `tests/embed.rs` checks it against the model's own
//! tokenizer (`tokenizer.json` through Hugging Face `tokenizers`) on varied text, with one
//! departure: emoji and other symbols are split off their words too ([`is_pictograph`]).

use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

/// Words longer than this (in characters) are one unknown token, as in the model's tokenizer.
const MAX_WORD_CHARS: usize = 100;

/// Whitespace as BERT counts it (tab, newline and carriage return included).
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control and other invisible characters (categories C*), which BERT drops.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// Pictographs and other symbols outside ASCII (emoji, ✅, skin tones, arrows' kin in So/Sk):
/// split off like punctuation, where BERT leaves them in the word. There a word written against
/// one ("done✅", "🚀deploy") cannot be covered by the vocabulary and the whole word is lost as
/// the unknown token; split off, only the symbol is (or it is a token of its own, as `©` is).
/// The one departure from the model's own tokenizer (`tests/embed.rs`).
fn is_pictograph(c: char) -> bool {
    !c.is_ascii() && (c.is_symbol_other() || c.is_symbol_modifier())
}

/// CJK ideographs (BERT's list of blocks): each is a word of its own.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// The text as BERT normalises it: cleaned, CJK ideographs spaced, accents stripped (NFD, then
/// non-spacing marks dropped), lower-cased character by character.
pub fn normalise(text: &str, out: &mut String) {
    out.clear();
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            out.push(' ');
            continue;
        }
        let cjk = is_cjk(c);
        if cjk {
            out.push(' ');
        }
        for d in std::iter::once(c).nfd().filter(|d| !d.is_mark_nonspacing()) {
            out.extend(d.to_lowercase());
        }
        if cjk {
            out.push(' ');
        }
    }
}

/// The words of a normalised text: split at whitespace, each punctuation character and each
/// pictograph ([`is_pictograph`]) a word.
pub fn words(normalised: &str) -> impl Iterator<Item = &str> {
    normalised.split(is_whitespace).filter(|w| !w.is_empty()).flat_map(|w| {
        let mut parts = Vec::new();
        let mut start = 0;
        for (i, c) in w.char_indices() {
            if is_punctuation(c) || is_pictograph(c) {
                if start < i {
                    parts.push(&w[start..i]);
                }
                parts.push(&w[i..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        if start < w.len() {
            parts.push(&w[start..]);
        }
        parts
    })
}

/// Greedy longest-match WordPiece of one word: pieces after the first carry `##`. A word that
/// cannot be covered, or is too long, is the one `unk` token.
pub fn wordpiece(word: &str, lookup: impl Fn(&str) -> Option<u32>, unk: u32, buf: &mut String, out: &mut Vec<u32>) {
    let chars = word.chars().count();
    if chars > MAX_WORD_CHARS {
        out.push(unk);
        return;
    }
    let mark = out.len();
    // Byte offsets of every char boundary, so a piece always ends on one.
    let bounds: Vec<usize> = word.char_indices().map(|(i, _)| i).chain([word.len()]).collect();
    let mut start = 0;
    while start < chars {
        let mut end = chars;
        let mut found = None;
        while end > start {
            buf.clear();
            if start > 0 {
                buf.push_str("##");
            }
            buf.push_str(&word[bounds[start]..bounds[end]]);
            if let Some(id) = lookup(buf) {
                found = Some(id);
                break;
            }
            end -= 1;
        }
        match found {
            Some(id) => out.push(id),
            None => {
                out.truncate(mark);
                out.push(unk);
                return;
            }
        }
        start = end;
    }
}
