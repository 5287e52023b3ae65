//! Where text may be cut: byte offsets moved onto character boundaries, so no slice of a prompt,
//! a reply or a log line ever splits a character (a Chinese or accented word, an emoji).

/// The largest character boundary of `s` at or below `i` (`s.len()` past its end).
pub fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `s` at or above `i` (`s.len()` past its end).
pub fn ceil_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `s` cut to at most `max` bytes, on a character boundary.
pub fn clip(s: &str, max: usize) -> &str {
    &s[..floor_char(s, max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_between_characters() {
        let s = "a中é🙂";
        assert_eq!((floor_char(s, 2), ceil_char(s, 2)), (1, 4));
        assert_eq!((floor_char(s, 5), ceil_char(s, 5)), (4, 6));
        assert_eq!((floor_char(s, 99), ceil_char(s, 99)), (s.len(), s.len()));
        assert_eq!(clip(s, 9), "a中é");
        assert_eq!(clip("", 3), "");
    }

    proptest::proptest! {
        #[test]
        fn any_offset_of_any_text_becomes_a_boundary(s in "\\PC*", i in 0usize..64) {
            let (lo, hi) = (floor_char(&s, i), ceil_char(&s, i));
            proptest::prop_assert!(s.is_char_boundary(lo) && s.is_char_boundary(hi));
            proptest::prop_assert!(lo <= i.min(s.len()) && hi >= i.min(s.len()) && hi - lo <= 4);
            proptest::prop_assert_eq!(clip(&s, i).len(), lo);
        }
    }
}
