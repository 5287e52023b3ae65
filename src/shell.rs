//! The one POSIX-shell tokenizer: hook commands are recognised, and the URI guard reads tool
//! commands, by the same quote rules. [`commands`] and [`words`] split words only; [`parse`]
//! reads a script as bash would, without running or expanding anything: pipelines, redirections,
//! here-strings and here-documents, ANSI-C `$'…'` quoting, parameters (`$x`, `${x:-word}`) and
//! command substitutions (`$(…)`, backticks, `<(…)`) kept as parts for the caller to evaluate.

/// Splits `cmd` into simple commands, each a list of unquoted words. With `operators`, `|`, `;`,
/// `&`, newlines, parentheses and backticks end a command and `<`, `>` end a word; without it they
/// are ordinary characters and the result is a single command.
pub fn commands(cmd: &str, operators: bool) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars();
    let flush = |out: &mut Vec<Vec<String>>, cur: &mut String, in_word: &mut bool| {
        if *in_word {
            out.last_mut().expect("non-empty").push(std::mem::take(cur));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        _ => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            '|' | ';' | '&' | '\n' | '(' | ')' | '`' if operators => {
                flush(&mut out, &mut cur, &mut in_word);
                out.push(Vec::new());
            }
            '<' | '>' if operators => flush(&mut out, &mut cur, &mut in_word),
            c if c.is_whitespace() => flush(&mut out, &mut cur, &mut in_word),
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    flush(&mut out, &mut cur, &mut in_word);
    out.retain(|s| !s.is_empty());
    out
}

/// The words of a command line, quotes removed.
pub fn words(cmd: &str) -> Vec<String> {
    commands(cmd, false).into_iter().flatten().collect()
}

/// Quotes a path for POSIX `sh -c`: bare when it holds only safe characters.
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// One piece of a word, before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text, quotes removed and escapes resolved.
    Lit(String),
    /// `$name`, `${name}`, `${name<op>word}` (`op` is `:-`, `-`, `:=`, `=`, `:+`, `+`, `:?`, `?`).
    Param { name: String, op: Option<(String, Word)> },
    /// `$(…)` or `` `…` ``: the inner script.
    Subst(String),
    /// `<(…)` or `>(…)`: the inner script (the word becomes a `/dev/fd` path).
    ProcSubst(String),
}

/// A shell word: its parts, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
}

impl Word {
    fn lit(&mut self, c: char) {
        match self.parts.last_mut() {
            Some(Part::Lit(s)) => s.push(c),
            _ => self.parts.push(Part::Lit(c.to_string())),
        }
    }

    fn lit_str(&mut self, t: &str) {
        for c in t.chars() {
            self.lit(c);
        }
    }

    /// The word's text when it has no expansions.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.push_str(s),
                _ => return None,
            }
        }
        Some(out)
    }
}

/// What a redirection does with its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redir {
    /// `<`, `<>`: the target file is read.
    Read,
    /// `>`, `>>`, `>|`, `&>`, `&>>`: the target file is written.
    Write,
    /// `<&n`, `>&n`: a descriptor is copied; the target is a number or `-`.
    Dup,
    /// `<<< word`: the word is the command's stdin.
    HereString,
    /// `<< DELIM`: the body is the command's stdin.
    HereDoc,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: Redir,
    /// The file, the here-string, or the here-document's body.
    pub target: Word,
}

/// One simple command: its words and redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
}

/// Commands joined by `|` or `|&`; a script is a list of pipelines.
pub type Pipeline = Vec<Command>;

/// Reads `script` into pipelines. Never fails: unclosed quotes and substitutions run to the end,
/// as a reader of the text would take them. Subshell and group parentheses end a pipeline.
pub fn parse(script: &str) -> Vec<Pipeline> {
    let mut p = Parser { s: script.chars().collect(), i: 0, heredocs: Vec::new() };
    p.script()
}

struct Parser {
    s: Vec<char>,
    i: usize,
    /// Here-documents whose bodies start after the next newline: (pipeline, command, redirect, delimiter, strip tabs, expand).
    heredocs: Vec<(usize, usize, usize, String, bool, bool)>,
}

impl Parser {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn script(&mut self) -> Vec<Pipeline> {
        let mut out: Vec<Pipeline> = vec![vec![Command::default()]];
        loop {
            // Blanks and comments.
            while let Some(c) = self.peek(0) {
                if c == ' ' || c == '\t' || (c == '\\' && self.peek(1) == Some('\n')) {
                    self.i += if c == '\\' { 2 } else { 1 };
                } else if c == '#' {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                } else {
                    break;
                }
            }
            let Some(c) = self.peek(0) else { break };
            match c {
                '\n' => {
                    self.i += 1;
                    self.read_heredocs(&mut out);
                    out.push(vec![Command::default()]);
                }
                '|' => {
                    self.i += 1;
                    if self.peek(0) == Some('|') {
                        self.i += 1;
                        out.push(vec![Command::default()]);
                    } else {
                        if self.peek(0) == Some('&') {
                            self.i += 1;
                        }
                        out.last_mut().expect("non-empty").push(Command::default());
                    }
                }
                '&' if self.peek(1) == Some('>') => self.redirect(&mut out),
                ';' | '&' | '(' | ')' => {
                    self.i += 1;
                    while matches!(self.peek(0), Some(';') | Some('&')) {
                        self.i += 1;
                    }
                    out.push(vec![Command::default()]);
                }
                '<' | '>' if self.peek(1) == Some('(') => {
                    let w = self.word();
                    cur(&mut out).words.push(w);
                }
                '<' | '>' => self.redirect(&mut out),
                c if c.is_ascii_digit() && self.fd_then_redirect() => {
                    while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    self.redirect(&mut out);
                }
                _ => {
                    let w = self.word();
                    cur(&mut out).words.push(w);
                }
            }
        }
        for p in &mut out {
            p.retain(|c| !c.words.is_empty() || !c.redirects.is_empty());
        }
        out.retain(|p| !p.is_empty());
        out
    }

    fn fd_then_redirect(&self) -> bool {
        let mut k = 0;
        while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
            k += 1;
        }
        matches!(self.peek(k), Some('<') | Some('>'))
    }

    fn redirect(&mut self, out: &mut [Pipeline]) {
        let ops = ["<<<", "<<-", "&>>", "<<", "<>", "<&", ">&", ">>", ">|", "&>", "<", ">"];
        let op =
            ops.iter().find(|op| op.chars().enumerate().all(|(k, c)| self.peek(k) == Some(c))).expect("an operator");
        self.i += op.len();
        while matches!(self.peek(0), Some(' ') | Some('\t')) {
            self.i += 1;
        }
        let start = self.i;
        let target = self.word();
        let kind = match *op {
            "<<<" => Redir::HereString,
            "<<" | "<<-" => {
                let raw: String = self.s[start..self.i].iter().collect();
                let quoted = raw.contains(['\'', '"', '\\']);
                let delim = target.literal().unwrap_or(raw);
                let (pi, ci) = (out.len() - 1, out.last().map_or(0, |p| p.len() - 1));
                let ri = out[pi][ci].redirects.len();
                self.heredocs.push((pi, ci, ri, delim, *op == "<<-", !quoted));
                Redir::HereDoc
            }
            "<&" | ">&" if target.literal().is_some_and(|t| t == "-" || t.chars().all(|c| c.is_ascii_digit())) => {
                Redir::Dup
            }
            "<" | "<>" | "<&" => Redir::Read,
            _ => Redir::Write,
        };
        let cmd = cur_mut(out);
        let target = if kind == Redir::HereDoc { Word::default() } else { target };
        cmd.redirects.push(Redirect { kind, target });
    }

    /// Bodies of pending here-documents, from the current position (just after a newline).
    fn read_heredocs(&mut self, out: &mut [Pipeline]) {
        for (pi, ci, ri, delim, strip, expand) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.i >= self.s.len() {
                    break;
                }
                let start = self.i;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line: String = self.s[start..self.i].iter().collect();
                self.i = (self.i + 1).min(self.s.len());
                let line = if strip { line.trim_start_matches('\t').to_string() } else { line };
                if line == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            let word = if expand {
                let mut p = Parser { s: body.chars().collect(), i: 0, heredocs: Vec::new() };
                p.double_quoted_until(None)
            } else {
                Word { parts: vec![Part::Lit(body)] }
            };
            if let Some(r) = out.get_mut(pi).and_then(|p| p.get_mut(ci)).and_then(|c| c.redirects.get_mut(ri)) {
                r.target = word;
            }
        }
    }

    /// One word, from the current position to the first unquoted blank or operator.
    fn word(&mut self) -> Word {
        let mut w = Word::default();
        if let (Some(c @ ('<' | '>')), Some('(')) = (self.peek(0), self.peek(1)) {
            let _ = c;
            self.i += 2;
            let inner = self.until_paren();
            w.parts.push(Part::ProcSubst(inner));
        }
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | '|' | '&' | ';' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.i += 1;
                    w.lit_str("");
                    while let Some(c) = self.peek(0) {
                        self.i += 1;
                        if c == '\'' {
                            break;
                        }
                        w.lit(c);
                    }
                }
                '"' => {
                    self.i += 1;
                    let inner = self.double_quoted_until(Some('"'));
                    if inner.parts.is_empty() {
                        w.lit_str("");
                        if w.parts.is_empty() {
                            w.parts.push(Part::Lit(String::new()));
                        }
                    }
                    w.parts.extend(inner.parts);
                }
                '\\' => {
                    self.i += 1;
                    match self.peek(0) {
                        Some('\n') => self.i += 1,
                        Some(c) => {
                            self.i += 1;
                            w.lit(c);
                        }
                        None => {}
                    }
                }
                '$' if self.peek(1) == Some('\'') => {
                    self.i += 2;
                    let text = self.ansi_c();
                    if w.parts.is_empty() && text.is_empty() {
                        w.parts.push(Part::Lit(String::new()));
                    }
                    w.lit_str(&text);
                }
                '$' if self.peek(1) == Some('"') => {
                    self.i += 2;
                    let inner = self.double_quoted_until(Some('"'));
                    w.parts.extend(inner.parts);
                }
                '$' | '`' => self.dollar(&mut w),
                c => {
                    self.i += 1;
                    w.lit(c);
                }
            }
        }
        w
    }

    /// Inside double quotes (or a here-document body when `end` is `None`): `$` and backticks
    /// expand, `\\` escapes only `$`, `` ` ``, `"`, `\\` and newline.
    fn double_quoted_until(&mut self, end: Option<char>) -> Word {
        let mut w = Word::default();
        while let Some(c) = self.peek(0) {
            if Some(c) == end {
                self.i += 1;
                break;
            }
            match c {
                '\\' => match self.peek(1) {
                    Some(n @ ('$' | '`' | '"' | '\\')) => {
                        self.i += 2;
                        w.lit(n);
                    }
                    Some('\n') => self.i += 2,
                    _ => {
                        self.i += 1;
                        w.lit('\\');
                    }
                },
                '$' | '`' => self.dollar(&mut w),
                c => {
                    self.i += 1;
                    w.lit(c);
                }
            }
        }
        w
    }

    /// `$name`, `${…}`, `$(…)`, `$((…))`, `` `…` `` at the current position.
    fn dollar(&mut self, w: &mut Word) {
        if self.peek(0) == Some('`') {
            self.i += 1;
            let mut inner = String::new();
            while let Some(c) = self.peek(0) {
                self.i += 1;
                match c {
                    '`' => break,
                    '\\' if matches!(self.peek(0), Some('`' | '\\' | '$')) => {
                        inner.extend(self.peek(0));
                        self.i += 1;
                    }
                    c => inner.push(c),
                }
            }
            w.parts.push(Part::Subst(inner));
            return;
        }
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                // Arithmetic: a number, never a path.
                self.i += 3;
                let _ = self.until_paren();
                if self.peek(0) == Some(')') {
                    self.i += 1;
                }
                w.parts.push(Part::Lit("0".into()));
            }
            Some('(') => {
                self.i += 2;
                let inner = self.until_paren();
                w.parts.push(Part::Subst(inner));
            }
            Some('{') => {
                self.i += 2;
                let mut name = String::new();
                while let Some(c) = self.peek(0) {
                    if c.is_ascii_alphanumeric() || c == '_' || (name.is_empty() && "#!@*?$-".contains(c)) {
                        name.push(c);
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                let ops = [":-", ":=", ":+", ":?", "-", "=", "+", "?", "##", "#", "%%", "%", "//", "/", ":"];
                let op = ops.iter().find(|op| op.chars().enumerate().all(|(k, c)| self.peek(k) == Some(c))).copied();
                let mut word = None;
                if let Some(op) = op {
                    self.i += op.len();
                    let arg = self.double_quoted_until(Some('}'));
                    word = Some((op.to_string(), arg));
                } else {
                    while let Some(c) = self.peek(0) {
                        self.i += 1;
                        if c == '}' {
                            break;
                        }
                    }
                }
                w.parts.push(Part::Param { name, op: word });
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.i += 1;
                let mut name = String::new();
                while self.peek(0).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    name.extend(self.peek(0));
                    self.i += 1;
                }
                w.parts.push(Part::Param { name, op: None });
            }
            Some(c) if c.is_ascii_digit() || "#?@*$!-".contains(c) => {
                self.i += 2;
                w.parts.push(Part::Param { name: c.to_string(), op: None });
            }
            _ => {
                self.i += 1;
                w.lit('$');
            }
        }
    }

    /// The text up to the `)` matching an already consumed `(`, which is consumed too.
    fn until_paren(&mut self) -> String {
        let start = self.i;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.i += 1,
                '\'' => {
                    self.i += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                }
                '"' => {
                    self.i += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '\\' {
                            self.i += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner: String = self.s[start..self.i].iter().collect();
                        self.i += 1;
                        return inner;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        self.i = self.i.min(self.s.len());
        self.s[start.min(self.s.len())..].iter().collect()
    }

    /// The body of `$'…'` (after the opening quote), its escapes resolved.
    fn ansi_c(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '\'' => break,
                '\\' => {
                    let Some(e) = self.peek(0) else { break };
                    self.i += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'e' | 'E' => out.push('\x1b'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        'c' => {
                            if let Some(x) = self.peek(0) {
                                self.i += 1;
                                out.push(char::from((x as u8) & 0x1f));
                            }
                        }
                        'x' => out.extend(self.number(16, 2)),
                        'u' => out.extend(self.number(16, 4)),
                        'U' => out.extend(self.number(16, 8)),
                        '0'..='7' => {
                            self.i -= 1;
                            out.extend(self.number(8, 3));
                        }
                        other => {
                            if !matches!(other, '\\' | '\'' | '"' | '?') {
                                out.push('\\');
                            }
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    fn number(&mut self, radix: u32, max: usize) -> Option<char> {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            let Some(d) = self.peek(0).and_then(|c| c.to_digit(radix)) else { break };
            v = v * radix + d;
            self.i += 1;
            n += 1;
        }
        (n > 0).then(|| char::from_u32(v)).flatten()
    }
}

fn cur(out: &mut [Pipeline]) -> &mut Command {
    cur_mut(out)
}

fn cur_mut(out: &mut [Pipeline]) -> &mut Command {
    out.last_mut().and_then(|p| p.last_mut()).expect("a command is always open")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(script: &str) -> Vec<Vec<Vec<Option<String>>>> {
        parse(script).iter().map(|p| p.iter().map(|c| c.words.iter().map(Word::literal).collect()).collect()).collect()
    }

    #[test]
    fn parse_reads_quotes_ansi_c_and_operators() {
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            lits("cat $'\\x76iking://x' | head -n1 && ls"),
            vec![vec![vec![s("cat"), s("viking://x")], vec![s("head"), s("-n1")]], vec![vec![s("ls")]],]
        );
        assert_eq!(
            lits("echo \"a b\"'c'd\\ e # comment\nls"),
            vec![vec![vec![s("echo"), s("a bcd e")]], vec![vec![s("ls")]]]
        );
        assert_eq!(lits("printf $'\\u0041\\101\\t'"), vec![vec![vec![s("printf"), s("AA\t")]]]);
    }

    #[test]
    fn parse_keeps_expansions_and_redirections() {
        let p = parse("cat < viking://a 2>/dev/null <<< \"$x\" \"$(echo `ls`)\" ${U:-viking://d}");
        let c = &p[0][0];
        assert_eq!(
            c.redirects[0],
            Redirect { kind: Redir::Read, target: Word { parts: vec![Part::Lit("viking://a".into())] } }
        );
        assert_eq!(c.redirects[1].kind, Redir::Write);
        assert_eq!(c.redirects[2].kind, Redir::HereString);
        assert_eq!(c.words[1].parts, vec![Part::Subst("echo `ls`".into())]);
        assert!(matches!(&c.words[2].parts[0], Part::Param { name, op: Some((op, _)) } if name == "U" && op == ":-"));
        let p = parse("cat <<'EOF' | sh\ncat viking://x\nEOF\nls");
        assert_eq!(p[0][0].redirects[0].target.literal().as_deref(), Some("cat viking://x\n"));
        assert_eq!(p[0][1].words[0].literal().as_deref(), Some("sh"));
        assert_eq!(p[1][0].words[0].literal().as_deref(), Some("ls"));
    }

    #[test]
    fn parse_never_panics_on_unclosed_things() {
        for s in ["$(", "`", "'", "\"", "${", "$'\\", "<<", "cat <(", "a\\", "$((1", "x >&", "<<<", "2>", "${x:-"] {
            let _ = parse(s);
        }
    }

    #[test]
    fn quoting_round_trips() {
        for s in ["/usr/bin/ovmem", "/a b/ovmem", "/it's/ovmem", "/ünï/ovmem", "/x\"y\\z/ovmem", "a|b;c"] {
            assert_eq!(words(&quote(s)), vec![s.to_string()]);
        }
    }

    #[test]
    fn operators_split_commands_only_when_asked() {
        assert_eq!(
            commands("cat 'a b' | head -n1; ls>x", true),
            vec![vec!["cat", "a b"], vec!["head", "-n1"], vec!["ls", "x"]]
        );
        assert_eq!(words("echo a|b"), vec!["echo", "a|b"]);
    }
}
