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

/// The byte range of at most `chars` characters of `s` around byte offset `at`: half before it
/// and half from it, more on one side when the other runs out; on character boundaries. How an
/// error quotes the part of a long line it is about.
pub fn around(s: &str, at: usize, chars: usize) -> std::ops::Range<usize> {
    let at = floor_char(s, at);
    let back = |from: usize, n: usize| s[..from].char_indices().rev().take(n).last().map_or(from, |(i, _)| i);
    let mut start = back(at, chars / 2);
    let before = s[start..at].chars().count();
    let after = s[at..].char_indices().take(chars - before).last().map_or(at, |(i, c)| at + i + c.len_utf8());
    let taken = before + s[at..after].chars().count();
    if taken < chars {
        start = back(start, chars - taken);
    }
    start..after
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

    #[test]
    fn a_window_around_an_offset_holds_at_most_its_characters() {
        let s = "ab中é🙂cd";
        assert_eq!(around(s, 0, 99), 0..s.len());
        assert_eq!(&s[around(s, 2, 2)], "b中");
        assert_eq!(&s[around(s, 3, 2)], "b中", "an offset inside a character counts from its start");
        assert_eq!(&s[around(s, s.len(), 3)], "🙂cd", "at the end, all of it before");
        assert_eq!(&s[around(s, 0, 3)], "ab中", "at the start, all of it after");
        assert_eq!(around("", 0, 5), 0..0);
    }

    proptest::proptest! {
        #[test]
        fn a_window_is_on_boundaries_and_never_longer(s in "\\PC*", i in 0usize..64, n in 0usize..16) {
            let r = around(&s, i, n);
            proptest::prop_assert!(s.is_char_boundary(r.start) && s.is_char_boundary(r.end));
            proptest::prop_assert!(r.start <= floor_char(&s, i) && floor_char(&s, i) <= r.end);
            proptest::prop_assert_eq!(s[r.clone()].chars().count(), n.min(s.chars().count()));
        }

        #[test]
        fn any_offset_of_any_text_becomes_a_boundary(s in "\\PC*", i in 0usize..64) {
            let (lo, hi) = (floor_char(&s, i), ceil_char(&s, i));
            proptest::prop_assert!(s.is_char_boundary(lo) && s.is_char_boundary(hi));
            proptest::prop_assert!(lo <= i.min(s.len()) && hi >= i.min(s.len()) && hi - lo <= 4);
            proptest::prop_assert_eq!(clip(&s, i).len(), lo);
        }
    }
}
