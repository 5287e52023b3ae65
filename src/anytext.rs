//! Test-only strategies for property tests over arbitrary Unicode: every function that cuts,
//! windows or scans text on the hook path is run on these, so no byte index lands inside a
//! character, whatever the script (CJK without spaces, kana, hangul, accents, emoji sequences).

use proptest::prelude::*;

/// Pieces that stress character boundaries: multi-byte letters of many scripts, combining marks,
/// emoji with joiners and variation selectors, full-width and look-alike `<`, and the words and
/// markup the hook path looks for (tags, secrets' keys, sentence ends).
const PIECES: &[&str] = &[
    "数据库",
    "端口",
    "部署流程",
    "ひらがな",
    "カタカナー",
    "ｶﾀｶﾅ",
    "한국어",
    "데이터베이스",
    "가",
    "ㄱㅏ",
    "Größe",
    "Straße",
    "é",
    "e\u{301}",
    "ß",
    "İ",
    "ﬁ",
    "Ⅻ",
    "😀",
    "👩\u{200d}💻",
    "🇩🇪",
    "❤\u{fe0f}",
    "\u{200b}",
    "\u{feff}",
    "＜",
    "﹤",
    "<",
    ">",
    "</ovmem-memory>",
    "<ovmem-memory>",
    "<private>",
    "</private>",
    "<system-reminder>",
    "password: ",
    "token=",
    "api_key = \"",
    "sk-",
    "ghp_",
    "AKIA",
    "://",
    "@",
    ". ",
    "? ",
    "\n",
    "\t",
    " ",
    "_",
    "-",
    "/",
    ":",
    "fooBar",
    "HTTPServer",
    "v1.2.3",
    "s1234",
    "deploy",
    "the ",
    "retry",
    "a",
];

/// A piece, or any character at all.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(PIECES).prop_map(str::to_string),
        2 => any::<char>().prop_map(String::from),
        1 => "\\PC{1,8}",
    ]
}

/// Text of up to `max` pieces.
pub fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(piece(), 0..max).prop_map(|v| v.concat())
}
