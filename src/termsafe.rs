//! Text from outside (a memory server's answers, its error bodies) made safe to print: a server
//! must not be able to clear the screen, move the cursor to fake ovmem's output, set the window
//! title or write the clipboard (OSC 52). [`clean`] drops every escape sequence (ESC, CSI, OSC,
//! DCS, APC, PM, SOS, both 7-bit and C1 forms), every other control character but newline and tab,
//! and the bidirectional overrides that reorder what a line seems to say.

use std::borrow::Cow;

/// `s` without terminal control sequences, control characters (newline and tab stay) or bidi
/// overrides. Borrowed when there was nothing to drop.
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \ or U+009C).
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // Two-character sequences (`ESC c` resets the terminal) and charset selections.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if unsafe_char(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return; // a malformed sequence ends at anything else
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\x07' | '\u{9c}' => return,
            '\x1b' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn escape_sequences_and_controls_are_dropped() {
        for (dirty, want) in [
            ("ok\x1b[2J\x1b[Hfake", "okfake"),
            ("a\x1b]52;c;ZWNobyBoaQ==\x07b", "ab"),
            ("a\x1b]0;title\x1b\\b", "ab"),
            ("a\x1bPq#0;2;0;0;0\x1b\\b", "ab"),
            ("a\u{9b}31mred\u{9b}0m", "ared"),
            ("a\u{9d}52;c;eA==\u{9c}b", "ab"),
            ("line\rover", "lineover"),
            ("bell\x07 back\x08 del\x7f", "bell back del"),
            ("user \u{202e}gnp.exe", "user gnp.exe"),
            ("a\u{2066}b\u{2069}c", "abc"),
            ("keeps\nnew lines\tand tabs, ünïcode", "keeps\nnew lines\tand tabs, ünïcode"),
            ("unterminated \x1b]52;c;AAAA", "unterminated "),
            ("esc at end \x1b", "esc at end "),
            ("\x1bcreset", "reset"),
        ] {
            assert_eq!(clean(dirty), want, "{dirty:?}");
        }
        assert!(matches!(clean("plain text"), std::borrow::Cow::Borrowed(_)));
    }

    proptest::proptest! {
        #[test]
        fn nothing_unsafe_survives(s in "(\\PC|[\\x00-\\x1f\\x7f\u{80}-\u{9f}\u{202a}-\u{202e}\u{2066}-\u{2069}]|\\x1b\\[|\\x1b\\]){0,80}") {
            let out = clean(&s);
            proptest::prop_assert!(!out.chars().any(super::unsafe_char), "{:?}", out);
        }
    }
}
