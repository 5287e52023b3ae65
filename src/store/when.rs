//! The time a question names ("in late November", "since the autumn", "spring 2022", "two weeks
//! ago", "seit September", "去年11月"), read as a window of dates: the memories written inside it
//! are the ones the question is about, so the ranker can count them for more. Only names of
//! periods are read, and only where the words around them make them times: "may", "march",
//! "spring" and "fall" usually are not.

use crate::dates::{civil_from_days, days_from_civil};

const DAY: i64 = 86_400;
/// Margin on each side of a named period: a session often talks about an event a few days after.
const PAD: i64 = 3 * DAY;

/// Unix seconds, `from` inclusive, `to` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: i64,
    pub to: i64,
}

impl Window {
    pub fn contains(&self, at: i64) -> bool {
        self.from <= at && at < self.to
    }
}

/// The window `question` names, placed on the calendar as seen at `anchor` (Unix seconds): a
/// month or season without a year is the latest one that had begun by then. `None`: it names no
/// time. Several named periods ("between September and November", "January … in March") give
/// the window that spans them.
pub fn window(question: &str, anchor: i64) -> Option<Window> {
    let cal = Calendar::at(anchor);
    let mut spans = in_words(question, &cal);
    spans.extend(in_cjk(question, &cal));
    let from = spans.iter().map(|s| s.0).min()?;
    let to = spans.iter().map(|s| s.1).max()?;
    Some(Window { from, to })
}

/// A period named by its name, not yet placed in a year.
#[derive(Debug, Clone, Copy)]
enum Named {
    /// 1..=12.
    Month(i64),
    /// By its first month: 3 spring, 6 summer, 9 autumn, 12 winter (to February).
    Season(i64),
    Year(i64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Part {
    Whole,
    Early,
    Mid,
    Late,
}

/// The anchor's date, and the arithmetic of placing periods around it.
struct Calendar {
    at: i64,
    year: i64,
    month: i64,
}

impl Calendar {
    fn at(at: i64) -> Self {
        let (year, month, _) = civil_from_days(at.div_euclid(DAY));
        Calendar { at, year, month }
    }

    /// The first second of month `m` of year `y` (`m` may run past 12 or below 1).
    fn month_start(&self, y: i64, m: i64) -> i64 {
        let (y, m) = (y + (m - 1).div_euclid(12), (m - 1).rem_euclid(12) + 1);
        days_from_civil(y, m, 1) * DAY
    }

    /// The year a period named without one falls in: the latest whose start is not after the
    /// anchor.
    fn latest_year(&self, first_month: i64) -> i64 {
        if first_month <= self.month {
            self.year
        } else {
            self.year - 1
        }
    }

    fn span(&self, named: Named, year: Option<i64>, part: Part) -> (i64, i64) {
        let (from, to) = match named {
            Named::Year(y) => (self.month_start(y, 1), self.month_start(y + 1, 1)),
            Named::Month(m) => {
                let y = year.unwrap_or_else(|| self.latest_year(m));
                (self.month_start(y, m), self.month_start(y, m + 1))
            }
            Named::Season(first) => {
                // "Winter 2022" is the winter that is mostly in 2022: from December 2021.
                let y = match year {
                    Some(y) if first == 12 => y - 1,
                    Some(y) => y,
                    None => self.latest_year(first),
                };
                (self.month_start(y, first), self.month_start(y, first + 3))
            }
        };
        let len = to - from;
        let (from, to) = match part {
            Part::Whole => (from, to),
            Part::Early => (from, from + len * 2 / 5),
            Part::Mid => (from + len * 3 / 10, from + len * 7 / 10),
            Part::Late => (from + len * 3 / 5, to),
        };
        (from - PAD, to + PAD)
    }

    /// `n` units before the anchor ("2 weeks ago", "两周前"), give or take one unit.
    fn ago(&self, n: i64, u: Unit) -> (i64, i64) {
        (self.at - (n + 1) * u.secs(), self.at - (n - 1) * u.secs() + DAY)
    }

    /// Up to the anchor's day, included.
    fn until_now(&self, from: i64) -> (i64, i64) {
        (from, self.at + DAY)
    }

    /// The first second of the latest day before the anchor's that is weekday `wd` (0 Monday).
    fn last_weekday(&self, wd: i64) -> i64 {
        let today = self.at.div_euclid(DAY);
        // 1970-01-01 was a Thursday.
        let back = match (today + 3 - wd).rem_euclid(7) {
            0 => 7,
            n => n,
        };
        (today - back) * DAY
    }
}

/// A word of the question, lowercased, and whether it was written with a capital.
struct Word {
    lower: String,
    capital: bool,
}

fn words(text: &str) -> Vec<Word> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| Word { lower: w.to_lowercase(), capital: w.starts_with(char::is_uppercase) })
        .collect()
}

fn month(w: &str) -> Option<i64> {
    Some(match w {
        "january" | "januar" | "jänner" => 1,
        "february" | "februar" => 2,
        "march" | "märz" | "maerz" => 3,
        "april" => 4,
        "may" | "mai" => 5,
        "june" | "juni" => 6,
        "july" | "juli" => 7,
        "august" => 8,
        "september" => 9,
        "october" | "oktober" => 10,
        "november" => 11,
        "december" | "dezember" => 12,
        _ => return None,
    })
}

/// Abbreviations count only before a year ("Nov 2025"): alone, several are words.
fn month_abbreviation(w: &str) -> Option<i64> {
    Some(match w {
        "jan" => 1,
        "feb" => 2,
        "mar" => 3,
        "apr" => 4,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" | "sept" => 9,
        "oct" | "okt" => 10,
        "nov" => 11,
        "dec" | "dez" => 12,
        _ => return None,
    })
}

fn season(w: &str) -> Option<i64> {
    Some(match w {
        "spring" | "frühling" | "frühjahr" => 3,
        "summer" | "sommer" => 6,
        "autumn" | "fall" | "herbst" => 9,
        "winter" => 12,
        _ => return None,
    })
}

/// Words after which "spring" and "fall" are not seasons.
const NOT_A_SEASON_AFTER: &str = "boot framework cloud batch security data mvc bean beans \
    back through over apart behind off out short into down asleep under below";

fn year(w: &str) -> Option<i64> {
    if w.len() != 4 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok().filter(|y| (1970..=2100).contains(y))
}

fn qualifier(w: &str) -> Option<Part> {
    Some(match w {
        "early" | "start" | "beginning" | "anfang" => Part::Early,
        "mid" | "middle" | "mitte" => Part::Mid,
        "late" | "end" | "ende" => Part::Late,
        _ => return None,
    })
}

/// Whether `w` is one of the space-separated `words`.
fn listed(words: &str, w: &str) -> bool {
    !w.is_empty() && words.split(' ').any(|x| x == w)
}

/// Words before a period that make it a time ("in", "since the", "im", …).
fn is_context(w: &str) -> bool {
    const WORDS: &str = "in during since from after between and of the this last past over throughout \
        through around im seit ab nach zwischen und letzten letzte letztes diesen dieses diese vergangenen \
        vergangene vergangenes den dem des";
    listed(WORDS, w)
}

/// Words before "spring" or "fall" (past an article) that make it the season.
fn is_during(w: &str) -> bool {
    listed("in during since this last over through throughout im seit", w)
}

/// "since September": from then until now.
fn is_since(w: &str) -> bool {
    listed("since after seit ab nach", w)
}

/// A period after these is not one the memories are from: before it, up to it, one the question
/// cannot place ("that autumn"), or one to come.
fn is_not_inside(w: &str) -> bool {
    listed("before until till by that next upcoming coming bis vor nächsten nächste kommenden kommende", w)
}

fn is_this(w: &str) -> bool {
    listed("this diesen dieses diese dieser", w)
}

fn is_last(w: &str) -> bool {
    listed("last previous letzte letzten letztes vergangene vergangenen vergangenes vorige vorigen voriges", w)
}

fn weekday(w: &str) -> Option<i64> {
    Some(match w {
        "monday" | "montag" => 0,
        "tuesday" | "dienstag" => 1,
        "wednesday" | "mittwoch" => 2,
        "thursday" | "donnerstag" => 3,
        "friday" | "freitag" => 4,
        "saturday" | "samstag" | "sonnabend" => 5,
        "sunday" | "sonntag" => 6,
        _ => return None,
    })
}

/// The unit of "two weeks ago", "the last 3 days", "vor zwei Wochen".
#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    fn of(w: &str) -> Option<Unit> {
        Some(match w {
            "day" | "days" | "tag" | "tage" | "tagen" => Unit::Day,
            "week" | "weeks" | "woche" | "wochen" => Unit::Week,
            "month" | "months" | "monat" | "monate" | "monaten" => Unit::Month,
            "year" | "years" | "jahr" | "jahre" | "jahren" => Unit::Year,
            _ => return None,
        })
    }

    fn secs(self) -> i64 {
        DAY * match self {
            Unit::Day => 1,
            Unit::Week => 7,
            Unit::Month => 30,
            Unit::Year => 365,
        }
    }
}

fn number(w: &str) -> Option<i64> {
    if !w.is_empty() && w.len() <= 2 && w.bytes().all(|b| b.is_ascii_digit()) {
        return w.parse().ok().filter(|&n| n > 0);
    }
    Some(match w {
        "a" | "an" | "one" | "ein" | "eine" | "einer" | "einem" | "einen" => 1,
        "two" | "couple" | "zwei" | "paar" => 2,
        "three" | "few" | "several" | "drei" => 3,
        "four" | "vier" => 4,
        "five" | "fünf" => 5,
        "six" | "sechs" => 6,
        "seven" | "sieben" => 7,
        "eight" | "acht" => 8,
        "nine" | "neun" => 9,
        "ten" | "zehn" => 10,
        "eleven" | "elf" => 11,
        "twelve" | "zwölf" => 12,
        _ => return None,
    })
}

/// A time said relative to now at `w[0..]`: its span and how many words it took.
fn relative(w: &[Word], cal: &Calendar) -> Option<((i64, i64), usize)> {
    let at = |i: usize| w.get(i).map(|x| x.lower.as_str()).unwrap_or("");
    let a = cal.at;
    if matches!(at(0), "yesterday" | "gestern") {
        return Some(((a - 2 * DAY, a + DAY), 1));
    }
    // "2 weeks ago", "a couple of months ago", "vor zwei Wochen".
    if let Some(n) = number(at(0)) {
        let skip = usize::from(at(1) == "of");
        if let (Some(u), "ago") = (Unit::of(at(1 + skip)), at(2 + skip)) {
            return Some((cal.ago(n, u), 3 + skip));
        }
    }
    if at(0) == "vor" {
        if let (Some(n), Some(u)) = (number(at(1)), Unit::of(at(2))) {
            return Some((cal.ago(n, u), 3));
        }
    }
    // "the last three weeks", "in den letzten 10 Tagen", "seit drei Wochen".
    if is_last(at(0)) || matches!(at(0), "past" | "seit") {
        if let (Some(n), Some(u)) = (number(at(1)), Unit::of(at(2))) {
            return Some((cal.until_now(a - n * u.secs() - PAD), 3));
        }
    }
    // "last Saturday", "this past weekend", "over the weekend", "letzten Samstag". A weekday
    // said alone ("on Friday") may be the one to come.
    let named_day = if is_this(at(0)) && at(1) == "past" {
        2
    } else if is_last(at(0)) || at(0) == "over" && at(1) == "the" {
        1 + usize::from(at(0) == "over")
    } else {
        0
    };
    if named_day > 0 {
        if let Some(wd) = weekday(at(named_day)) {
            let day = cal.last_weekday(wd);
            return Some(((day - DAY, day + 2 * DAY), named_day + 1));
        }
        if matches!(at(named_day), "weekend" | "wochenende") {
            let saturday = cal.last_weekday(5);
            return Some(((saturday - DAY, saturday + 3 * DAY), named_day + 1));
        }
    }
    // "last week", "the past month", "this year".
    let month_start = |back: i64| cal.month_start(cal.year, cal.month - back);
    let year_start = |back: i64| cal.month_start(cal.year - back, 1);
    let span = match (at(0), Unit::of(at(1))?) {
        (_, Unit::Day) => return None,
        ("past", Unit::Week) => cal.until_now(a - 8 * DAY),
        ("past", Unit::Month) => cal.until_now(a - 34 * DAY),
        ("past", Unit::Year) => cal.until_now(a - 370 * DAY),
        (w, Unit::Week) if is_last(w) => cal.until_now(a - 14 * DAY),
        (w, Unit::Month) if is_last(w) => (month_start(1) - PAD, month_start(0) + PAD),
        (w, Unit::Year) if is_last(w) => (year_start(1) - PAD, year_start(0) + PAD),
        (w, Unit::Week) if is_this(w) => cal.until_now(a - 8 * DAY),
        (w, Unit::Month) if is_this(w) => cal.until_now(month_start(0) - PAD),
        (w, Unit::Year) if is_this(w) => cal.until_now(year_start(0) - PAD),
        _ => return None,
    };
    Some((span, 2))
}

/// A named period at `w[i..]` ("mid-October", "spring 2022", "end of 2022"): what it names, its
/// year if said, which part of it, and the index after it.
fn named(w: &[Word], i: usize) -> Option<(Named, Option<i64>, Part, usize)> {
    let at = |i: usize| w.get(i).map(|x| x.lower.as_str()).unwrap_or("");
    let mut j = i;
    let mut part = Part::Whole;
    if let Some(p) = qualifier(at(j)) {
        part = p;
        j += 1;
        while matches!(at(j), "of" | "the" | "des") {
            j += 1;
        }
    }
    let name = if let Some(m) = month(at(j)) {
        Named::Month(m)
    } else if let Some(s) = season(at(j)) {
        Named::Season(s)
    } else if let Some(y) = year(at(j)) {
        return Some((Named::Year(y), None, part, j + 1));
    } else if let (Some(m), Some(_)) = (month_abbreviation(at(j)), year(at(j + 1))) {
        Named::Month(m)
    } else {
        return None;
    };
    j += 1;
    let skip = usize::from(at(j) == "of");
    let said = year(at(j + skip));
    if said.is_some() {
        j += 1 + skip;
    }
    Some((name, said, part, j))
}

fn in_words(text: &str, cal: &Calendar) -> Vec<(i64, i64)> {
    let w = words(text);
    let at = |i: usize| w.get(i).map(|x| x.lower.as_str()).unwrap_or("");
    let mut spans = Vec::new();
    let mut i = 0;
    while i < w.len() {
        if let Some((span, used)) = relative(&w[i..], cal) {
            spans.push(span);
            i += used;
            continue;
        }
        let Some((name, year, part, end)) = named(&w, i) else {
            i += 1;
            continue;
        };
        // The word that says what the period is to the question, past an article.
        let mut k = i;
        while k > 0 && matches!(at(k - 1), "the" | "den" | "dem" | "des") {
            k -= 1;
        }
        let before = if k > 0 { at(k - 1) } else { "" };
        let said_as_time = i > 0 && is_context(at(i - 1));
        let first = &w[i];
        let strong = year.is_some() || qualifier(&first.lower).is_some();
        let ok = match name {
            // "may" and "march" are months only with a capital ("in May", not "and may").
            Named::Month(_) if matches!(first.lower.as_str(), "may" | "march") => {
                first.capital && (strong || said_as_time)
            }
            Named::Month(_) | Named::Year(_) => strong || said_as_time,
            // "spring" and "fall" are seasons where nothing else could be meant: "in the
            // spring", "this fall", "fall 2022"; not "after the fall", "spring boot".
            Named::Season(_) if matches!(first.lower.as_str(), "spring" | "fall") => {
                !listed(NOT_A_SEASON_AFTER, at(end)) && (strong || is_during(before))
            }
            Named::Season(_) => strong || said_as_time,
        };
        if ok && !is_not_inside(before) {
            // "This spring" is this year's; asked in winter, it is the one to come, and no memory
            // is from it yet.
            let this = is_this(before) && year.is_none() && !matches!(name, Named::Season(12));
            let span = cal.span(name, if this { Some(cal.year) } else { year }, part);
            let to_come = this && span.0 + PAD > cal.at;
            if !to_come {
                spans.push(if is_since(before) { cal.until_now(span.0) } else { span });
            }
        }
        i = end.max(i + 1);
    }
    spans
}

/// A count written in digits (ASCII or full-width) or in Chinese numerals, ending at `chars[end]`
/// (exclusive): its value and where it starts.
fn cjk_number(chars: &[char], end: usize) -> Option<(i64, usize)> {
    let mut start = end;
    while start > 0 && (chars[start - 1].is_ascii_digit() || ('０'..='９').contains(&chars[start - 1])) {
        start -= 1;
    }
    if start < end && end - start <= 4 {
        let digit = |c: char| if c.is_ascii_digit() { c as i64 - '0' as i64 } else { c as i64 - '０' as i64 };
        return Some((chars[start..end].iter().fold(0, |n, &c| n * 10 + digit(c)), start));
    }
    let value = |c: char| match c {
        '两' | '兩' => Some(2),
        _ => "一二三四五六七八九".chars().position(|d| d == c).map(|p| p as i64 + 1),
    };
    let mut start = end;
    while start > 0 && (value(chars[start - 1]).is_some() || chars[start - 1] == '十') && end - start < 3 {
        start -= 1;
    }
    if start == end {
        return None;
    }
    let s = &chars[start..end];
    let n = match s {
        ['十'] => 10,
        ['十', u] => 10 + value(*u)?,
        [t, '十'] => value(*t)? * 10,
        [t, '十', u] => value(*t)? * 10 + value(*u)?,
        [u] => value(*u)?,
        _ => return None,
    };
    Some((n, start))
}

fn starts(chars: &[char], at: usize, with: &str) -> bool {
    let mut rest = chars.get(at..).unwrap_or(&[]).iter();
    with.chars().all(|c| rest.next() == Some(&c))
}

fn ends(chars: &[char], at: usize, with: &str) -> bool {
    let n = with.chars().count();
    at >= n && starts(chars, at - n, with)
}

/// Chinese, Japanese and Korean: "11月", "去年十一月下旬", "9월부터", "2022年", "上周", "先月", "작년".
fn in_cjk(text: &str, cal: &Calendar) -> Vec<(i64, i64)> {
    if text.is_ascii() {
        return Vec::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut spans = Vec::new();
    let mut month_years: Vec<(usize, usize)> = Vec::new();
    for i in 0..chars.len() {
        if !matches!(chars[i], '月' | '월') {
            continue;
        }
        let Some((m, start)) = cjk_number(&chars, i).filter(|(m, _)| (1..=12).contains(m)) else { continue };
        // "三个月" / "3ヶ月" / "3개월" count months; they do not name one.
        if start > 0 && matches!(chars[start - 1], '个' | '個' | 'ヶ' | 'か' | 'ケ' | 'カ' | '箇' | '개') {
            continue;
        }
        let mut from = start;
        let mut b = start;
        while b > 0 && chars[b - 1].is_whitespace() {
            b -= 1;
        }
        let year = if ["去年", "昨年", "작년"].iter().any(|y| ends(&chars, b, y)) {
            from = b - 2;
            Some(cal.year - 1)
        } else if ["今年", "올해"].iter().any(|y| ends(&chars, b, y)) {
            from = b - 2;
            Some(cal.year)
        } else if start > 0 && matches!(chars[start - 1], '年' | '년') {
            let y = cjk_number(&chars, start - 1).filter(|(y, _)| (1970..=2100).contains(y));
            if let Some((_, s)) = y {
                from = s;
            }
            y.map(|(y, _)| y)
        } else {
            None
        };
        let mut after = i + 1;
        let part = if starts(&chars, after, "上旬") || starts(&chars, after, "初") || starts(&chars, after, "초") {
            Part::Early
        } else if starts(&chars, after, "中旬") || starts(&chars, after, "중순") {
            Part::Mid
        } else if starts(&chars, after, "下旬")
            || starts(&chars, after, "底")
            || starts(&chars, after, "末")
            || starts(&chars, after, "말")
        {
            Part::Late
        } else {
            Part::Whole
        };
        if part != Part::Whole {
            after += if matches!(chars[after], '上' | '中' | '下' | '중') { 2 } else { 1 };
        }
        while chars.get(after).is_some_and(|c| c.is_whitespace() || matches!(c, '份')) {
            after += 1;
        }
        let span = cal.span(Named::Month(m), year, part);
        let since = ["以来", "以後", "以后", "开始", "開始", "から", "부터", "이후", "起"]
            .iter()
            .any(|s| starts(&chars, after, s));
        spans.push(if since { cal.until_now(span.0) } else { span });
        month_years.push((from, i));
    }
    // "两周前", "3日前", "2주 전": a count of units back from the anchor.
    const AGO: [(&str, Unit); 16] = [
        ("天", Unit::Day),
        ("日", Unit::Day),
        ("일", Unit::Day),
        ("个星期", Unit::Week),
        ("個星期", Unit::Week),
        ("星期", Unit::Week),
        ("週間", Unit::Week),
        ("周", Unit::Week),
        ("週", Unit::Week),
        ("주", Unit::Week),
        ("个月", Unit::Month),
        ("個月", Unit::Month),
        ("ヶ月", Unit::Month),
        ("か月", Unit::Month),
        ("개월", Unit::Month),
        ("年", Unit::Year),
    ];
    for i in 0..chars.len() {
        if !matches!(chars[i], '前' | '전') {
            continue;
        }
        let mut end = i;
        while end > 0 && chars[end - 1].is_whitespace() {
            end -= 1;
        }
        let said = AGO.iter().find(|(unit, _)| ends(&chars, end, unit)).and_then(|&(unit, u)| {
            let (n, start) = cjk_number(&chars, end - unit.chars().count())?;
            // "3月5日前" is before a date, not five days ago.
            let date = start > 0 && matches!(chars[start - 1], '月' | '월');
            (!date).then_some((n, u))
        });
        if let Some((n, u)) = said.filter(|&(n, _)| (1..=100).contains(&n)) {
            spans.push(cal.ago(n, u));
        }
    }
    // A year alone: "2022年".
    for i in 0..chars.len() {
        if !matches!(chars[i], '年' | '년') || month_years.iter().any(|&(s, e)| s <= i && i <= e) {
            continue;
        }
        if let Some((y, _)) = cjk_number(&chars, i).filter(|(y, _)| (1970..=2100).contains(y)) {
            spans.push(cal.span(Named::Year(y), Some(y), Part::Whole));
        }
    }
    let named_month = |at: usize| month_years.iter().any(|&(s, _)| s == at);
    let a = cal.at;
    let relative: [(&[&str], (i64, i64)); 7] = [
        (&["昨天", "昨日", "어제"], (a - 2 * DAY, a + DAY)),
        (&["前天", "一昨日", "그저께"], (a - 3 * DAY, a)),
        (&["上周", "上週", "上星期", "上个星期", "上個星期", "先週", "지난주", "지난 주"], (a - 14 * DAY, a + DAY)),
        (&["这周", "這週", "本周", "本週", "今週", "이번 주", "이번주"], (a - 8 * DAY, a + DAY)),
        (
            &["上个月", "上個月", "上月", "先月", "지난달", "지난 달"],
            (cal.month_start(cal.year, cal.month - 1) - PAD, cal.month_start(cal.year, cal.month) + PAD),
        ),
        (
            &["这个月", "這個月", "本月", "今月", "이번 달", "이번달"],
            (cal.month_start(cal.year, cal.month) - PAD, a + DAY),
        ),
        (
            &["去年", "昨年", "작년", "지난해"],
            (cal.month_start(cal.year - 1, 1) - PAD, cal.month_start(cal.year, 1) + PAD),
        ),
    ];
    for (said, span) in relative {
        for s in said {
            // "去年十一月" is the month, not the whole year.
            if text.contains(s) && (0..chars.len()).any(|i| starts(&chars, i, s) && !named_month(i)) {
                spans.push(span);
            }
        }
    }
    let this_year = |i: usize| starts(&chars, i, "今年") || starts(&chars, i, "올해");
    if (text.contains("今年") || text.contains("올해")) && (0..chars.len()).any(|i| this_year(i) && !named_month(i))
    {
        spans.push(cal.until_now(cal.month_start(cal.year, 1) - PAD));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-02-20 12:00 UTC.
    const ANCHOR: i64 = 1_771_588_800;

    fn on(y: i64, m: i64, d: i64) -> i64 {
        days_from_civil(y, m, d) * DAY
    }

    fn dates(w: Option<Window>) -> Option<(String, String)> {
        w.map(|w| (crate::dates::date(w.from), crate::dates::date(w.to)))
    }

    fn said(q: &str) -> Option<(String, String)> {
        dates(window(q, ANCHOR))
    }

    fn pair(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn the_anchor_is_where_it_should_be() {
        assert_eq!(crate::dates::date(ANCHOR), "2026-02-20");
        assert_eq!(on(2026, 2, 20) + DAY / 2, ANCHOR);
    }

    #[test]
    fn a_month_without_a_year_is_the_latest_one_begun() {
        assert_eq!(said("How did we fix the dashboard in November?"), pair("2025-10-29", "2025-12-04"));
        assert_eq!(said("What broke in February?"), pair("2026-01-29", "2026-03-04"));
        assert_eq!(
            said("What broke the ratio calculation in late November, and how?"),
            pair("2025-11-16", "2025-12-04")
        );
        assert_eq!(said("Why did the worker keep dying in January?"), pair("2025-12-29", "2026-02-04"));
    }

    #[test]
    fn since_runs_to_the_anchor_and_between_spans_both() {
        assert_eq!(said("How many getaways have you planned since September?"), pair("2025-08-29", "2026-02-21"));
        assert_eq!(
            said("Who did I want gifts for between mid-October and mid-December?"),
            pair("2025-10-07", "2025-12-25")
        );
        assert_eq!(said("How many times were the kids ill since the autumn?"), pair("2025-08-29", "2026-02-21"));
        assert_eq!(said("Wie viele Tickets seit September?"), pair("2025-08-29", "2026-02-21"));
    }

    #[test]
    fn years_seasons_and_their_parts() {
        assert_eq!(said("Which crates did we trim at the end of 2022?"), pair("2022-08-05", "2023-01-04"));
        assert_eq!(
            said("When we bumped the allocator in spring 2022, which version?"),
            pair("2022-02-26", "2022-06-04")
        );
        assert_eq!(said("What drove the mid-2021 overhaul?"), pair("2021-04-17", "2021-09-16"));
        assert_eq!(said("What did the vendor's files cause over the winter?"), pair("2025-11-28", "2026-03-04"));
        assert_eq!(said("Was haben wir im Herbst 2024 geändert?"), pair("2024-08-29", "2024-12-04"));
        assert_eq!(said("Which shell got completions in early 2022?"), pair("2021-12-29", "2022-05-30"));
        assert_eq!(said("What did we ship in the fall?"), pair("2025-08-29", "2025-12-04"));
        assert_eq!(said("Who joined in May?"), pair("2025-04-28", "2025-06-04"));
    }

    #[test]
    fn relative_times_count_back_from_the_anchor() {
        assert_eq!(said("what did we decide yesterday"), pair("2026-02-18", "2026-02-21"));
        assert_eq!(said("what did we change last week?"), pair("2026-02-06", "2026-02-21"));
        assert_eq!(said("the bug from two weeks ago"), pair("2026-01-30", "2026-02-14"));
        assert_eq!(said("everything in the last 3 days"), pair("2026-02-14", "2026-02-21"));
        assert_eq!(said("what went out last month"), pair("2025-12-29", "2026-02-04"));
        assert_eq!(said("Was war letzte Woche?"), pair("2026-02-06", "2026-02-21"));
        assert_eq!(said("Der Fehler von vor zwei Wochen"), pair("2026-01-30", "2026-02-14"));
        // The anchor is a Friday.
        assert_eq!(said("what did I cook last Saturday?"), pair("2026-02-13", "2026-02-16"));
        assert_eq!(said("what did I cook last Friday?"), pair("2026-02-12", "2026-02-15"));
        assert_eq!(said("the hike this past weekend"), pair("2026-02-13", "2026-02-17"));
        assert_eq!(said("what broke over the weekend"), pair("2026-02-13", "2026-02-17"));
        assert_eq!(said("Was haben wir letzten Montag entschieden?"), pair("2026-02-15", "2026-02-18"));
    }

    #[test]
    fn words_that_only_look_like_times_are_not_read() {
        for q in [
            "How out of date may online sales figures get before it counts as a breach?",
            "Who did each of the two friends fall out with?",
            "Why did the input rate fall by two thirds after the migration?",
            "What got the checkpoint stall down from a quarter of an hour?",
            "any ideas for how to season the sardines?",
            "Put together a routine to get me in shape before summer.",
            "What did he change that autumn?",
            "How do we configure Spring Boot in the service?",
            "What does TK-QUOTA-409 mean, and port 2022?",
            "What categories of cheating does our server catch today?",
            "march the migration forward",
            "Who left the team and may come back?",
            "What changed after the fall of the old API?",
            "Why did spring cleaning of the cache start?",
            "What are we shipping next March?",
            "I'm bringing home sardines on Friday.",
            "What is the last step of the weekend job?",
            "",
        ] {
            assert_eq!(said(q), None, "{q}");
        }
        // "This spring" asked in February is the spring to come: no memory is from it.
        assert_eq!(said("Suggest somewhere I could go this spring."), None);
        assert_eq!(
            dates(window("Suggest somewhere we went this spring.", on(2026, 6, 1))),
            pair("2026-02-26", "2026-06-04")
        );
    }

    #[test]
    fn chinese_japanese_and_korean() {
        assert_eq!(said("11月修的那个仪表盘问题？"), pair("2025-10-29", "2025-12-04"));
        assert_eq!(said("去年十一月下旬出了什么问题"), pair("2025-11-16", "2025-12-04"));
        assert_eq!(said("9월부터 무엇을 바꿨나요?"), pair("2025-08-29", "2026-02-21"));
        assert_eq!(said("작년 11월에 무슨 일이 있었나요?"), pair("2025-10-29", "2025-12-04"));
        assert_eq!(said("2024年3月の障害"), pair("2024-02-27", "2024-04-04"));
        assert_eq!(said("2022年的发布"), pair("2021-12-29", "2023-01-04"));
        assert_eq!(said("上周决定了什么"), pair("2026-02-06", "2026-02-21"));
        assert_eq!(said("先月のリリース"), pair("2025-12-29", "2026-02-04"));
        assert_eq!(said("两周前修的那个问题"), pair("2026-01-30", "2026-02-14"));
        assert_eq!(said("3日前のデプロイ"), pair("2026-02-16", "2026-02-19"));
        assert_eq!(said("2주 전에 무엇을 결정했나요?"), pair("2026-01-30", "2026-02-14"));
        assert_eq!(said("之前的决定"), None);
        assert_eq!(said("3月5日前"), pair("2025-02-26", "2025-04-04"));
        assert_eq!(said("三个月的试用期"), None);
        assert_eq!(said("每月的费用"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_reads_without_panicking(s in crate::anytext::text(120), at in -4_000_000_000i64..8_000_000_000i64) {
            if let Some(w) = window(&s, at) {
                proptest::prop_assert!(w.from < w.to);
            }
        }

        #[test]
        fn any_mix_of_time_words_reads_without_panicking(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "since", "the", "mid", "end", "of", "2022", "November", "spring", "last", "week", "3", "ago",
                "上周", "去年", "十二", "月", "下旬", "년", "9", "월", "부터", "vor", "zwei", "Wochen", "this", " ",
            ]), 0..12),
        ) {
            let q = parts.join(" ");
            let _ = window(&q, ANCHOR);
            let _ = window(&parts.concat(), ANCHOR);
        }
    }
}
