//! A span-preserving JSON/JSONC editor. The agents' config files are parsed into a tree of byte
//! ranges, and every edit is a splice of new text into the original: comments, key order,
//! indentation (tabs or spaces), CRLF, BOM and the final newline stay exactly as they were.
//! Insertions and removals are exact inverses, so install followed by uninstall restores the
//! original bytes.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    String,
    Scalar,
}

#[derive(Debug, Clone)]
pub struct Member {
    /// The decoded key.
    pub key: String,
    /// Byte offset of the key's opening quote.
    pub key_start: usize,
    pub value: Node,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

impl Node {
    pub fn member(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().rev().find(|m| m.key == key).map(|m| &m.value),
            _ => None,
        }
    }

    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(ms) => ms,
            _ => &[],
        }
    }

    pub fn elements(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(es) => es,
            _ => &[],
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self.kind, Kind::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self.kind, Kind::Array(_))
    }

    /// Start offsets of the children (member key or element value) and their end offsets.
    fn child_spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().map(|m| (m.key_start, m.value.end)).collect(),
            Kind::Array(es) => es.iter().map(|e| (e.start, e.end)).collect(),
            _ => Vec::new(),
        }
    }
}

/// A parsed document: the text (without BOM) and its tree. Line endings and BOM are remembered
/// so that [`Document::finish`] writes them back.
#[derive(Debug, Clone)]
pub struct Document {
    text: String,
    bom: bool,
    crlf: bool,
    pub root: Node,
}

impl Document {
    pub fn parse(input: &str) -> Result<Self, ParseError> {
        let (bom, body) = match input.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, input),
        };
        let crlf = body.contains("\r\n") && !body.replace("\r\n", "").contains('\n');
        let root = Parser { s: body.as_bytes(), i: 0, values: 0 }.document()?;
        Ok(Self { text: body.to_string(), bom, crlf, root })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn slice(&self, node: &Node) -> &str {
        &self.text[node.start..node.end]
    }

    /// The node's value, read from the tree: comments and trailing commas inside it do not
    /// matter, so an entry is recognised however it was annotated.
    pub fn value(&self, node: &Node) -> Option<serde_json::Value> {
        Some(match &node.kind {
            Kind::Object(ms) => {
                let mut m = serde_json::Map::new();
                for mem in ms {
                    m.insert(mem.key.clone(), self.value(&mem.value)?);
                }
                serde_json::Value::Object(m)
            }
            Kind::Array(es) => serde_json::Value::Array(es.iter().map(|e| self.value(e)).collect::<Option<_>>()?),
            Kind::String => serde_json::Value::String(unescape(self.slice(node).as_bytes()).ok()?),
            Kind::Scalar => serde_json::from_str(self.slice(node)).ok()?,
        })
    }

    /// The text between a container's brackets (empty for anything else).
    pub fn inner(&self, node: &Node) -> &str {
        if node.is_object() || node.is_array() {
            &self.text[node.start + 1..node.end - 1]
        } else {
            ""
        }
    }

    /// Replaces the text between the brackets of the (empty) container at `path`: how the
    /// whitespace of a container that was empty before ovmem inserted into it is given back.
    pub fn set_inner(&mut self, path: &[&str], inner: &str) -> Result<(), ParseError> {
        let node = self.node_at(path).cloned().expect("caller checked the path");
        if !node.child_spans().is_empty() {
            return Ok(());
        }
        self.splice(node.start + 1, node.end - 1, inner)
    }

    /// The document as bytes to write, with the original BOM and line endings.
    pub fn finish(&self) -> String {
        let mut s = String::with_capacity(self.text.len() + 3);
        if self.bom {
            s.push('\u{feff}');
        }
        s.push_str(&self.text);
        s
    }

    /// [`Document::finish`] without a copy of the text, for an editor done with the document
    /// (a 100 MB `~/.claude.json` is not held twice).
    pub fn into_string(mut self) -> String {
        if self.bom {
            self.text.insert(0, '\u{feff}');
        }
        self.text
    }

    fn newline(&self) -> &'static str {
        if self.crlf {
            "\r\n"
        } else {
            "\n"
        }
    }

    /// The file's indentation unit: a tab, or the smallest run of leading spaces.
    fn indent_unit(&self) -> String {
        let mut best: Option<usize> = None;
        for line in self.text.lines() {
            let trimmed = line.trim_start_matches([' ', '\t']);
            if trimmed.is_empty() || trimmed.len() == line.len() {
                continue;
            }
            let lead = &line[..line.len() - trimmed.len()];
            if lead.starts_with('\t') {
                return "\t".into();
            }
            best = Some(best.map_or(lead.len(), |b| b.min(lead.len())));
        }
        " ".repeat(best.unwrap_or(2))
    }

    /// Leading whitespace of the line containing `pos`.
    fn line_indent(&self, pos: usize) -> String {
        let line_start = self.text[..pos].rfind('\n').map_or(0, |i| i + 1);
        self.text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
    }

    fn is_multiline(&self, node: &Node) -> bool {
        self.text[node.start..node.end].contains('\n')
    }

    /// A one-line container written without spaces after `,` and `:` (`{"a":1,"b":2}`). Only
    /// positive evidence counts: an empty container is judged by the whole document, and a
    /// document with no separators at all is not tight.
    fn is_tight(&self, node: &Node) -> bool {
        let t = if node.child_spans().is_empty() { &self.text[..] } else { &self.text[node.start..node.end] };
        let loose = t.contains(": ") || t.contains(", ");
        let tight = t.contains("\":") && !t.contains("\": ");
        tight && !loose
    }

    /// Renders `value` as it would sit at `indent`, in the file's style.
    fn render(&self, value: &serde_json::Value, indent: &str, multiline: bool) -> String {
        if !multiline {
            return serde_json::to_string(value).expect("json values serialise");
        }
        let unit = self.indent_unit();
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        serde::Serialize::serialize(value, &mut ser).expect("json values serialise");
        let pretty = String::from_utf8(out).expect("serde_json writes utf-8");
        let nl = self.newline();
        let mut s = String::new();
        for (i, line) in pretty.split('\n').enumerate() {
            if i > 0 {
                s.push_str(nl);
                s.push_str(indent);
            }
            s.push_str(line);
        }
        s
    }

    fn splice(&mut self, start: usize, end: usize, with: &str) -> Result<(), ParseError> {
        self.text.replace_range(start..end, with);
        let reparsed = Self::parse(&self.text)?;
        self.root = reparsed.root;
        Ok(())
    }

    /// Inserts `"key": value` at the end of the object at `path`.
    pub fn insert_member(&mut self, path: &[&str], key: &str, value: &serde_json::Value) -> Result<(), ParseError> {
        let obj = self.node_at(path).cloned().expect("caller checked the path");
        let key_json = serde_json::to_string(key).expect("strings serialise");
        let colon = if !self.is_multiline(&obj) && self.is_tight(&obj) { ":" } else { ": " };
        let item =
            |this: &Self, indent: &str, multi: bool| format!("{key_json}{colon}{}", this.render(value, indent, multi));
        self.insert_child(&obj, item)
    }

    /// Appends `value` to the array at `path`.
    pub fn push_element(&mut self, path: &[&str], value: &serde_json::Value) -> Result<(), ParseError> {
        let arr = self.node_at(path).cloned().expect("caller checked the path");
        self.insert_child(&arr, |this, indent, multi| this.render(value, indent, multi))
    }

    fn insert_child(&mut self, container: &Node, item: impl Fn(&Self, &str, bool) -> String) -> Result<(), ParseError> {
        let spans = container.child_spans();
        let nl = self.newline();
        match spans.last() {
            None => {
                // Empty container: lay it out over lines, one level deeper than its own line.
                let outer = self.line_indent(container.start);
                let inner = format!("{outer}{}", self.indent_unit());
                let multi = self.text.trim_end().contains('\n') || self.text.trim().len() <= 2;
                let old = self.inner(container);
                let trimmed = old.trim_end_matches([' ', '\t', '\r', '\n']);
                if !trimmed.trim_start_matches([' ', '\t', '\r', '\n']).is_empty() {
                    // Comments inside: they stay, and the item goes after them.
                    let at = container.start + 1 + trimmed.len();
                    let text = if multi {
                        format!("{nl}{inner}{}", item(self, &inner, true))
                    } else {
                        format!(" {}", item(self, "", false))
                    };
                    return self.splice(at, at, &text);
                }
                let text = if multi {
                    format!("{nl}{inner}{}{nl}{outer}", item(self, &inner, true))
                } else {
                    item(self, "", false)
                };
                self.splice(container.start + 1, container.end - 1, &text)
            }
            Some(&(last_start, last_end)) => {
                if self.is_multiline(container) {
                    let indent = self.line_indent(last_start);
                    let text = format!(",{nl}{indent}{}", item(self, &indent, true));
                    self.splice(last_end, last_end, &text)
                } else {
                    let sep = if self.is_tight(container) { "," } else { ", " };
                    let text = format!("{sep}{}", item(self, "", false));
                    self.splice(last_end, last_end, &text)
                }
            }
        }
    }

    /// Removes child `index` (member or element) of the container at `path`: the exact inverse
    /// of the insertions above.
    pub fn remove_child(&mut self, path: &[&str], index: usize) -> Result<(), ParseError> {
        let container = self.node_at(path).cloned().expect("caller checked the path");
        self.remove_child_of(&container, index)
    }

    pub fn remove_child_of(&mut self, container: &Node, index: usize) -> Result<(), ParseError> {
        let spans = container.child_spans();
        let (start, end) = spans[index];
        if spans.len() == 1 {
            let ws = [' ', '\t', '\r', '\n'];
            let lead = &self.text[container.start + 1..start];
            let trail = &self.text[end..container.end - 1];
            let trail_body = trail.trim_start_matches(ws).trim_start_matches(',');
            if lead.trim_matches(ws).is_empty() && trail_body.trim_matches(ws).is_empty() {
                return self.splice(container.start + 1, container.end - 1, "");
            }
            // Comments beside the only child stay: take the child and the blank run before it
            // (what inserting after those comments added), and a comma right after it.
            let from = container.start + 1 + lead.trim_end_matches(ws).len();
            let mut to = end;
            if self.text[end..].trim_start_matches(ws).starts_with(',') {
                to = end + self.text[end..].find(',').expect("a comma") + 1;
            }
            return self.splice(from, to, "");
        }
        if index + 1 < spans.len() {
            self.splice(start, spans[index + 1].0, "")
        } else {
            self.splice(spans[index - 1].1, end, "")
        }
    }

    /// Replaces the value of `node` with `value`, rendered at that node's indentation.
    pub fn replace_value(&mut self, node: &Node, value: &serde_json::Value) -> Result<(), ParseError> {
        let indent = self.line_indent(node.start);
        let multi = self.is_multiline(node) || self.text.contains('\n');
        let text = self.render(value, &indent, multi);
        self.splice(node.start, node.end, &text)
    }

    /// Replaces the text of `node` with `text` as it is (text a value had before, given back).
    pub fn replace_raw(&mut self, node: &Node, text: &str) -> Result<(), ParseError> {
        self.splice(node.start, node.end, text)
    }

    pub fn node_at(&self, path: &[&str]) -> Option<&Node> {
        let mut node = &self.root;
        for key in path {
            node = node.member(key)?;
        }
        Some(node)
    }

    /// Index of `key` among the members of the object at `path`.
    pub fn member_index(&self, path: &[&str], key: &str) -> Option<usize> {
        self.node_at(path)?.members().iter().rposition(|m| m.key == key)
    }
}

/// The most values one document may hold. Each costs its node in the tree (48 bytes), so this
/// is what bounds a parse's memory, whatever the text: 4 million values are about 200 MB, where a
/// 63 MiB `[0,0,…]` (two bytes a value) took 1.7 GB. No agent config comes near it: Claude Code's
/// `~/.claude.json`, the largest, reaches 100 MB and more, mostly prompt history (long strings).
pub const MAX_VALUES: usize = 4_000_000;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Values read so far (see [`MAX_VALUES`]).
    values: usize,
}

/// The value of a JSON string literal (`raw`, quotes included, valid UTF-8), or where in it and
/// why it is not one. RFC 8259's grammar takes any `\uXXXX`, a surrogate without its pair too
/// (editors write them: VS Code keeps a lone `"\ud800"`), though it is no character: such an
/// escape reads as U+FFFD. No key or value of ovmem's holds U+FFFD, so a string with one is never
/// taken for ovmem's, and nothing is written back from a decoded string (every edit is a splice),
/// so the escape stays in the file as it was written.
fn unescape(raw: &[u8]) -> Result<String, (usize, &'static str)> {
    let body = &raw[1..raw.len() - 1];
    let mut out = String::with_capacity(body.len());
    // A pending high surrogate, waiting for its low half.
    let mut high: Option<u16> = None;
    let mut i = 0;
    const CONTROL: &str = "a control character in a string (write it as an escape, such as \\n or \\t)";
    let hex4 = |at: usize| -> Result<u16, (usize, &'static str)> {
        // Named at its backslash.
        let bad = (at - 1, "invalid \\u escape in string (`\\u` and four hex digits)");
        let digits = body.get(at..at + 4).filter(|d| d.iter().all(u8::is_ascii_hexdigit)).ok_or(bad)?;
        Ok(digits.iter().fold(0u16, |n, d| n << 4 | (*d as char).to_digit(16).expect("a hex digit") as u16))
    };
    while i < body.len() {
        if body[i] != b'\\' {
            if high.take().is_some() {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            // The run up to the next escape, whole (it is UTF-8: the caller checked).
            let end = memchr::memchr(b'\\', &body[i..]).map_or(body.len(), |n| i + n);
            let run = std::str::from_utf8(&body[i..end]).map_err(|_| (i + 1, "invalid UTF-8"))?;
            if let Some(c) = run.bytes().position(|c| c < 0x20) {
                return Err((i + c + 1, CONTROL));
            }
            out.push_str(run);
            i = end;
            continue;
        }
        let Some(&e) = body.get(i + 1) else { return Err((i + 1, "invalid escape in string")) };
        if e != b'u' {
            if high.take().is_some() {
                out.push(char::REPLACEMENT_CHARACTER);
            }
            out.push(match e {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                _ => return Err((i + 1, "invalid escape in string")),
            });
            i += 2;
            continue;
        }
        let unit = hex4(i + 2)?;
        i += 6;
        match (high.take(), unit) {
            (Some(h), 0xDC00..=0xDFFF) => {
                let c = 0x10000 + ((u32::from(h) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                out.push(char::from_u32(c).expect("a surrogate pair is a character"));
            }
            (pending, _) => {
                if pending.is_some() {
                    out.push(char::REPLACEMENT_CHARACTER);
                }
                match unit {
                    0xD800..=0xDBFF => high = Some(unit),
                    0xDC00..=0xDFFF => out.push(char::REPLACEMENT_CHARACTER),
                    _ => out.push(char::from_u32(u32::from(unit)).expect("not a surrogate")),
                }
            }
        }
    }
    if high.is_some() {
        out.push(char::REPLACEMENT_CHARACTER);
    }
    Ok(out)
}

impl Parser<'_> {
    fn document(mut self) -> Result<Node, ParseError> {
        self.ws()?;
        if self.i >= self.s.len() {
            return Err(self.err("the file is empty; expected a JSON object"));
        }
        let root = self.value(0)?;
        self.ws()?;
        if self.i < self.s.len() {
            return Err(self.err("unexpected text after the end of the JSON value"));
        }
        Ok(root)
    }

    fn err(&self, message: &str) -> ParseError {
        let before = &self.s[..self.i.min(self.s.len())];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        ParseError { line, column, message: message.to_string() }
    }

    /// Whitespace and JSONC comments.
    fn ws(&mut self) -> Result<(), ParseError> {
        loop {
            match self.s.get(self.i) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.i += 1,
                Some(b'/') => match self.s.get(self.i + 1) {
                    Some(b'/') => {
                        while self.i < self.s.len() && self.s[self.i] != b'\n' {
                            self.i += 1;
                        }
                    }
                    Some(b'*') => {
                        let start = self.i;
                        self.i += 2;
                        loop {
                            if self.i + 1 >= self.s.len() {
                                self.i = start;
                                return Err(self.err("unterminated /* comment"));
                            }
                            if &self.s[self.i..self.i + 2] == b"*/" {
                                self.i += 2;
                                break;
                            }
                            self.i += 1;
                        }
                    }
                    _ => return Err(self.err("unexpected `/`")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        if depth > 256 {
            return Err(self.err("nesting is too deep"));
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(self.err(&format!(
                "it holds more than {} million JSON values, more than any agent config; ovmem does not read \
                 it whole",
                MAX_VALUES / 1_000_000
            )));
        }
        let start = self.i;
        let kind = match self.s.get(self.i) {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => {
                self.string_value()?;
                Kind::String
            }
            Some(b't') => self.word("true")?,
            Some(b'f') => self.word("false")?,
            Some(b'n') => self.word("null")?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.err("expected a JSON value")),
            None => return Err(self.err("unexpected end of file")),
        };
        Ok(Node { start, end: self.i, kind })
    }

    fn object(&mut self, depth: usize) -> Result<Kind, ParseError> {
        self.i += 1;
        let mut members = Vec::new();
        loop {
            self.ws()?;
            match self.s.get(self.i) {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Kind::Object(members));
                }
                Some(b'"') => {}
                None => return Err(self.err("unexpected end of file inside an object; is a `}` missing?")),
                Some(_) => return Err(self.err("expected a quoted key or `}`")),
            }
            let key_start = self.i;
            let key = self.string()?;
            self.ws()?;
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.err("expected `:` after the key"));
            }
            self.i += 1;
            self.ws()?;
            let value = self.value(depth + 1)?;
            members.push(Member { key, key_start, value });
            self.ws()?;
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                None => return Err(self.err("unexpected end of file inside an object; is a `}` missing?")),
                Some(_) => return Err(self.err("expected `,` or `}` after the value")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Kind, ParseError> {
        self.i += 1;
        let mut elements = Vec::new();
        loop {
            self.ws()?;
            match self.s.get(self.i) {
                Some(b']') => {
                    self.i += 1;
                    return Ok(Kind::Array(elements));
                }
                None => return Err(self.err("unexpected end of file inside an array; is a `]` missing?")),
                _ => {}
            }
            elements.push(self.value(depth + 1)?);
            self.ws()?;
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {}
                None => return Err(self.err("unexpected end of file inside an array; is a `]` missing?")),
                Some(_) => return Err(self.err("expected `,` or `]` after the value")),
            }
        }
    }

    /// A string whose value is not needed (only keys are decoded): checked as [`Parser::string`]
    /// checks it, without decoding one that has no escape or control character in it (prompt
    /// history is most of a large config's bytes).
    fn string_value(&mut self) -> Result<(), ParseError> {
        let start = self.i;
        self.skip_string()?;
        let body = &self.s[start + 1..self.i - 1];
        if memchr::memchr(b'\\', body).is_none() && !body.iter().any(|b| *b < 0x20) {
            return Ok(());
        }
        self.i = start;
        self.string().map(drop)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.i;
        self.skip_string()?;
        std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("invalid UTF-8"))?;
        unescape(&self.s[start..self.i]).map_err(|(at, message)| {
            self.i = start + at;
            self.err(message)
        })
    }

    /// Past the string at `self.i` (its closing quote), or the error of one that does not end.
    fn skip_string(&mut self) -> Result<(), ParseError> {
        let start = self.i;
        self.i += 1;
        loop {
            // Straight to the next byte that matters: a config's strings are most of its bytes
            // (Claude Code's prompt history), and a byte at a time was most of a parse.
            match memchr::memchr3(b'"', b'\\', b'\n', self.s.get(self.i..).unwrap_or_default()) {
                Some(n) => self.i += n,
                None => self.i = self.i.max(self.s.len()),
            }
            match self.s.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => self.i += 2,
                Some(b'\n') => return Err(self.err("unterminated string")),
                Some(_) => self.i += 1,
                None => {
                    self.i = start;
                    return Err(self.err("unterminated string"));
                }
            }
        }
    }

    fn word(&mut self, w: &str) -> Result<Kind, ParseError> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(Kind::Scalar)
        } else {
            Err(self.err("expected a JSON value"))
        }
    }

    fn number(&mut self) -> Result<Kind, ParseError> {
        let start = self.i;
        while matches!(self.s.get(self.i), Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
            self.i += 1;
        }
        let raw = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("x");
        if raw.parse::<f64>().is_err() {
            self.i = start;
            return Err(self.err("invalid number"));
        }
        Ok(Kind::Scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_read_to_their_end_and_no_further() {
        let d = Document::parse(r#"{"a": "x\"y\\", "b": "ü✓ 𝄞", "c": ""}"#).unwrap();
        let v = d.value(&d.root).unwrap();
        assert_eq!(v, json!({"a": "x\"y\\", "b": "ü✓ 𝄞", "c": ""}));
        // Cut anywhere, or broken by a newline: an error, never a panic or a read past the end.
        for bad in ["\"abc", "\"abc\\", "\"ab\\\"", "{\"a\": \"x\ny\"}", "[\"\\\"] "] {
            assert!(Document::parse(bad).is_err(), "{bad:?}");
        }
    }

    fn roundtrip(src: &str, path: &[&str], key: &str) -> String {
        let mut d = Document::parse(src).unwrap();
        d.insert_member(path, key, &json!([{"command": "x", "timeout": 5}])).unwrap();
        let inserted = d.finish();
        let idx = d.member_index(path, key).unwrap();
        d.remove_child(path, idx).unwrap();
        assert_eq!(d.finish(), src, "remove must invert insert");
        inserted
    }

    #[test]
    fn a_document_holds_at_most_max_values() {
        // The root object and its array are two values; the zeros fill the rest.
        let doc = |zeros: usize| format!("{{\"a\":[{}]}}", vec!["0"; zeros].join(","));
        assert!(Document::parse(&doc(MAX_VALUES - 2)).is_ok());
        let e = Document::parse(&doc(MAX_VALUES - 1)).unwrap_err();
        assert!(e.message.contains("more than 4 million JSON values"), "{e}");
    }

    #[test]
    fn insert_then_remove_restores_bytes() {
        for src in [
            "{}",
            "{}\n",
            "{\n  \"a\": 1\n}\n",
            "{\n\t\"a\": 1, // note\n\t\"b\": [1,2]\n}",
            "{\r\n    \"a\": \"é\"\r\n}\r\n",
            "\u{feff}{\"a\":1}",
            "{\n  /* lead */ \"a\": {\"x\": 1},\n}\n",
        ] {
            roundtrip(src, &[], "hooks");
        }
    }

    #[test]
    fn insert_keeps_style() {
        let out = roundtrip("{\n\t\"a\": 1\n}\n", &[], "k");
        assert_eq!(
            out,
            "{\n\t\"a\": 1,\n\t\"k\": [\n\t\t{\n\t\t\t\"command\": \"x\",\n\t\t\t\"timeout\": 5\n\t\t}\n\t]\n}\n"
        );
        let out = roundtrip("{\r\n  \"a\": 1\r\n}\r\n", &[], "k");
        assert!(!out.replace("\r\n", "").contains('\n'), "only CRLF: {out:?}");
        let out = roundtrip("\u{feff}{\"a\":1}", &[], "k");
        assert_eq!(out, "\u{feff}{\"a\":1,\"k\":[{\"command\":\"x\",\"timeout\":5}]}");
        let out = roundtrip("{\"a\": 1, \"b\": 2}", &[], "k");
        assert_eq!(out, "{\"a\": 1, \"b\": 2, \"k\": [{\"command\":\"x\",\"timeout\":5}]}");
    }

    #[test]
    fn remove_first_middle_last_elements() {
        let src = "{\"h\": [\n  1,\n  2,\n  3\n]}";
        for (i, want) in
            [(0, "{\"h\": [\n  2,\n  3\n]}"), (1, "{\"h\": [\n  1,\n  3\n]}"), (2, "{\"h\": [\n  1,\n  2\n]}")]
        {
            let mut d = Document::parse(src).unwrap();
            d.remove_child(&["h"], i).unwrap();
            assert_eq!(d.finish(), want);
        }
    }

    #[test]
    fn a_lone_surrogate_escape_parses_and_reads_as_the_replacement_character() {
        let src = r#"{"\udc00k": "\ud800", "pair": "\ud83d\ude00", "two": "\ud800\ud800x", "esc": "\n\/\u00e9"}"#;
        let d = Document::parse(src).unwrap();
        assert_eq!(
            d.value(&d.root).unwrap(),
            json!({"\u{fffd}k": "\u{fffd}", "pair": "😀", "two": "\u{fffd}\u{fffd}x", "esc": "\n/é"})
        );
        assert_eq!(d.finish(), src, "kept as written");
        for (bad, column) in [(r#"{"a": "\ud80"}"#, 8), (r#"{"a": "x\q"}"#, 9), ("{\"a\": \"x\ty\"}", 9)] {
            let e = Document::parse(bad).unwrap_err();
            assert_eq!((e.line, e.column), (1, column), "{bad}: {e}");
        }
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = Document::parse("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 7));
        assert!(Document::parse("").is_err());
        assert!(Document::parse("{\"a\": }").is_err());
        assert!(Document::parse("{\"a\": 1} x").is_err());
        assert!(Document::parse("{\"a\": \"x").is_err());
    }

    #[test]
    fn comments_in_an_empty_container_stay_through_insert_and_remove() {
        for src in [
            "{\n  \"hooks\": {\n    // none yet\n  }\n}\n",
            "{\"hooks\": { /* add hooks here */ }}",
            "{ // first\n}\n",
            "{\n  /* a */ /* b */\n}",
        ] {
            let mut d = Document::parse(src).unwrap();
            let path: Vec<&str> = if src.contains("hooks") { vec!["hooks"] } else { vec![] };
            d.insert_member(&path, "Stop", &json!([{"command": "x"}])).unwrap();
            let inserted = d.finish();
            for c in ["none yet", "add hooks here", "// first", "/* a */ /* b */"] {
                assert_eq!(src.contains(c), inserted.contains(c), "{inserted}");
            }
            assert!(Document::parse(&inserted).unwrap().node_at(&[&path[..], &["Stop"]].concat()).is_some());
            let idx = d.member_index(&path, "Stop").unwrap();
            d.remove_child(&path, idx).unwrap();
            assert_eq!(d.finish(), src);
        }
    }

    #[test]
    fn values_are_read_through_comments() {
        let d = Document::parse("{\"a\": {\"command\": \"x\", // why\n \"timeout\": 5, /* t */},}").unwrap();
        assert_eq!(d.value(d.node_at(&["a"]).unwrap()).unwrap(), json!({"command": "x", "timeout": 5}));
    }

    #[test]
    fn jsonc_is_accepted() {
        let d = Document::parse("// c\n{ /* x */ \"a\": [1, 2,], }").unwrap();
        assert_eq!(d.root.members().len(), 1);
        assert_eq!(d.root.member("a").unwrap().elements().len(), 2);
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in "\\PC{0,64}") {
            let _ = Document::parse(&s);
        }
    }
}
