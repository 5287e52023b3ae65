//! Which writing system a character belongs to, where indexing and the model treat scripts apart:
//! the store indexes text written without spaces by characters, and the model reads English.

/// Scripts written without spaces between words (or, for Korean, with particles glued on), which
/// are indexed as character bigrams: Han (with `々` and `〇`), hiragana, katakana (full-width,
/// half-width and the phonetic extensions), and hangul (syllables, jamo, compatibility and
/// half-width jamo).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF // hangul jamo
        | 0x3005..=0x3007 // 々 〆 〇
        | 0x3040..=0x30FF // hiragana, katakana
        | 0x3130..=0x318F // hangul compatibility jamo
        | 0x31F0..=0x31FF // katakana phonetic extensions
        | 0xA960..=0xA97F // hangul jamo extended-A
        | 0xD7B0..=0xD7FF // hangul jamo extended-B
        | 0xFF66..=0xFFDC // half-width katakana and hangul
        | 0x1B000..=0x1B16F) // kana supplement and extended-A
        || is_han(c)
        || is_hangul_syllable(c)
}

/// A letter of the Cyrillic alphabet (its main block and its supplement).
pub fn is_cyrillic(c: char) -> bool {
    matches!(c, '\u{0400}'..='\u{052F}')
}

/// Hangul syllables (precomposed: 가, 서, 버), the units Korean words are written in.
pub fn is_hangul_syllable(c: char) -> bool {
    matches!(c as u32, 0xAC00..=0xD7AF)
}

/// Han ideographs (Chinese characters, kanji, hanja): each one is a word or a root of words.
pub fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF // unified ideographs and extension A
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0x20000..=0x323AF) // extensions B-H
}

/// The share of `text`'s letters that are [`is_cjk`] (0 without letters).
pub fn cjk_share(text: &str) -> f32 {
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        cjk += usize::from(is_cjk(c));
    }
    if letters == 0 {
        0.0
    } else {
        cjk as f32 / letters as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_told_apart() {
        assert!(is_han('库') && is_han('𠀋') && !is_han('々') && !is_han('デ') && !is_han('데'));
        assert!(is_cjk('々') && is_cjk('デ') && is_cjk('데') && is_cjk('ﾃ') && !is_cjk('é') && !is_cjk('1'));
    }

    #[test]
    fn the_share_counts_letters_only() {
        assert_eq!(cjk_share("数据库 port 5432"), 3.0 / 7.0);
        assert_eq!(cjk_share("データベースは？"), 1.0);
        assert_eq!(cjk_share("🙂 123 ?"), 0.0);
        assert_eq!(cjk_share("Wo läuft die Datenbank?"), 0.0);
    }
}
