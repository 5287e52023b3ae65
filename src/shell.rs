//! The one POSIX-shell tokenizer: hook commands are recognised, and the URI guard reads tool
//! commands, by the same quote rules. No expansion is performed.

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

#[cfg(test)]
mod tests {
    use super::*;

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
