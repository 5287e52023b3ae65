//! The events a question relates. "How long was there between the interview and starting at the
//! co-op?" or "Which came first: selling the car, or the new job?" asks about two or three things
//! that happened in different sessions. Asked whole, the question's words and meaning sit between
//! them, and the ranking fills its slots with one of them and whatever resembles both. Each event
//! named is also asked on its own ([`facets`]), and its best memory is given a slot when its
//! session is not shown yet (`Store::recall`).

use super::text;

/// At most this many events are asked about on their own.
pub const MAX: usize = 3;
/// An event is named in at least this many words of its own (beyond the words that ask, and the
/// words of a time: "between mid-October and mid-December" names a window, not two events).
const WORDS: usize = 2;
/// An event is shown when one of its best this many memories (asked on its own) is shown, or one
/// of their sessions.
pub const COVERED: usize = 2;

/// Words that ask which of several things came first or last.
const ORDER: &[&str] = &["first", "earlier", "earliest", "later", "latest", "sooner", "last", "order"];
/// Words that ask how far apart two things were.
const APART: &[&str] = &["between", "separated", "separate", "apart", "passed", "elapsed"];
/// Words that open a yes-or-no question ("Had the car been sold before the new job?").
const OPENS: &[&str] = &["did", "had", "was", "were", "is", "has", "have", "does", "do"];

/// Words that ask, whichever event they stand next to: not counted as naming it.
const ASKING: &[&str] = &[
    "how",
    "long",
    "many",
    "much",
    "which",
    "what",
    "when",
    "who",
    "whether",
    "happened",
    "happen",
    "came",
    "come",
    "first",
    "earlier",
    "earliest",
    "later",
    "latest",
    "last",
    "time",
    "day",
    "days",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "passed",
    "separated",
    "elapsed",
    "apart",
    "order",
    "sooner",
    "did",
    "had",
    "was",
    "were",
    "there",
    "mid",
    "early",
    "late",
    "beginning",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "spring",
    "summer",
    "autumn",
    "fall",
    "winter",
    "weekend",
    "today",
    "yesterday",
    "tomorrow",
    "ago",
    "next",
    "previous",
];

/// The events a question relates in time, each as its own words (in the question's order), when
/// it names at least two; none otherwise. Only questions that ask which came first, how far apart
/// two things were, or whether one happened before another are split, at `and`, `or`, `before`,
/// `after`, `between`, commas and semicolons; a list after a colon is split alone ("Which
/// happened first: A, B, or C?").
pub fn facets(question: &str) -> Vec<String> {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|w| !w.is_empty()).collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    let colon = question.rfind(": ");
    // Only questions that relate things in time are split: "which came first: A, B or C",
    // "how long between A and B", "did A happen before B", "which was first, A or B".
    let relates = colon.is_some_and(|i| {
        let head: Vec<String> = question[..i].to_lowercase().split_whitespace().map(str::to_string).collect();
        head.iter().any(|w| ORDER.contains(&w.as_str()) || APART.contains(&w.as_str()))
    }) || has(APART) && has(&["and"])
        || words.first().is_some_and(|w| OPENS.contains(w)) && has(&["before", "after"])
        || has(ORDER) && has(&["or"]) && words.first().is_some_and(|w| ["which", "what", "who"].contains(w));
    if !relates {
        return Vec::new();
    }
    // The list after a colon holds the events; what comes before it only asks.
    let body = colon.map_or(question, |i| &question[i + 2..]);
    static ASKED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let asking = ASKED.get_or_init(|| ASKING.iter().flat_map(|w| text::analyse(w)).map(|t| t.text).collect());
    let mut out: Vec<String> = Vec::new();
    for piece in split(body) {
        let piece = piece.trim_matches(|c: char| !c.is_alphanumeric());
        // An identifier counts by its parts (`mid-October`: `mid`, `october`), not again whole.
        let named = text::analyse(piece)
            .into_iter()
            .filter(|t| !t.text.contains(|c: char| !c.is_alphanumeric()) && !asking.contains(&t.text))
            .count();
        if named >= WORDS && !out.iter().any(|o| o == piece) {
            out.push(piece.to_string());
        }
    }
    if out.len() < 2 {
        return Vec::new();
    }
    out.truncate(MAX);
    out
}

/// `text` cut at the words and marks that join events.
fn split(text: &str) -> Vec<&str> {
    const JOINS: &[&str] = &["and", "or", "before", "after", "between", "separated", "then", "than", "versus", "vs"];
    let mut pieces = Vec::new();
    let (mut start, mut word) = (0, None);
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        if c.is_alphanumeric() || c == '\'' || c == '-' {
            word.get_or_insert(i);
            continue;
        }
        if let Some(w) = word.take() {
            if JOINS.iter().any(|j| text[w..i].eq_ignore_ascii_case(j)) {
                pieces.push(&text[start..w]);
                start = i;
            }
        }
        if i < text.len() && matches!(c, ',' | ';' | '?' | '!' | '.' | '(' | ')') {
            pieces.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&text[start..]);
    pieces.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_events_between_and() {
        assert_eq!(
            facets("How long was there between sitting in front of the panel and starting at the co-op?"),
            ["sitting in front of the panel", "starting at the co-op"]
        );
        assert_eq!(
            facets("How many months separated the Portugal holiday and my visit to my sister?"),
            ["the Portugal holiday", "my visit to my sister"]
        );
    }

    #[test]
    fn a_list_after_a_colon() {
        assert_eq!(
            facets("Which happened earliest and which latest: swapping my car, taking in a dog, or being offered a new post?"),
            ["swapping my car", "taking in a dog", "being offered a new post"]
        );
        assert_eq!(
            facets("Which was earlier: the leak getting repaired, or the new laundry appliance turning up?"),
            ["the leak getting repaired", "the new laundry appliance turning up"]
        );
    }

    #[test]
    fn before_or_after() {
        assert_eq!(
            facets("Did Maya's leg injury happen before or after the greyhound arrived?"),
            ["Did Maya's leg injury happen", "the greyhound arrived"]
        );
        assert_eq!(
            facets("Had the Dacia been sold off before my first shift at the warehouse?"),
            ["Had the Dacia been sold off", "my first shift at the warehouse"]
        );
    }

    #[test]
    fn questions_about_one_thing_are_not_split() {
        for q in [
            "Which port does the staging database listen on?",
            "What did we pick for the cache, and what did we steer away from?",
            "How long after she moved in did Maple get seen by a vet?",
            "Where does the backend server run?",
            "",
            "between and or before",
            "For which people did I want gift suggestions between mid-October and mid-December?",
            "What did we ship between the spring and the autumn?",
            "How out of date may online sales figures get before it counts as a breach?",
            "The first time we hammered the pre-prod environment, how bad was the slowest one percent?",
            "Where on disk do the generated scripts land, before packaging picks them up?",
        ] {
            assert!(facets(q).is_empty(), "{q}: {:?}", facets(q));
        }
    }

    #[test]
    fn which_first_without_a_colon() {
        assert_eq!(
            facets("Which came first, Jonas quitting the band or the museum job offer?"),
            ["Jonas quitting the band", "the museum job offer"]
        );
    }

    #[test]
    fn at_most_max_events() {
        let q = "Which came first: the move to Leeds, the new boiler fitted, the dog adopted, the car sold, or the job offer?";
        assert_eq!(facets(q).len(), MAX);
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_split_at_character_boundaries(s in crate::anytext::text(200)) {
            let q = format!("which came first: {s}");
            for f in facets(&q) {
                proptest::prop_assert!(q.contains(&f));
            }
        }
    }
}
