//! The page as the server sends it: the embedded HTML with the token and the newest memories
//! already in it, so the list is there before any script runs (a reader without JavaScript, a
//! headless `--dump-dom`); the script then takes over the same list.

use std::collections::HashSet;

use crate::store::{Kind, Memory};

const INDEX: &str = include_str!("assets/index.html");

/// Memories in the first paint.
pub const FIRST: usize = 50;

/// `s` safe inside HTML text and double-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page, with `memories` (newest first) as the list's first items.
pub fn render(token: &str, memories: &[Memory], pinned: &HashSet<i64>) -> String {
    let items: String = memories.iter().map(|m| card(m, pinned.contains(&m.id))).collect();
    let items = if items.is_empty() {
        "<li class=\"empty\">No memories here yet. They appear as your agents work.</li>".to_string()
    } else {
        items
    };
    INDEX.replace("{{TOKEN}}", &escape(token)).replace("{{LIST}}", &items)
}

fn card(m: &Memory, pinned: bool) -> String {
    let mut meta = format!("<span class=\"id\">#{}</span>", m.id);
    if let Some(h) = &m.harness {
        meta.push_str(&format!("<span>{}</span>", escape(h)));
    }
    meta.push_str(&format!("<span>{}</span>", crate::runtime::format_date(m.created_at)));
    if let Some(s) = &m.session {
        meta.push_str(&format!("<span>session {}</span>", escape(s)));
    }
    let project = m.bank.strip_prefix("project:").unwrap_or(&m.bank);
    meta.push_str(&format!("<span title=\"{}\">{}</span>", escape(&m.bank), escape(project)));
    if pinned {
        meta.push_str("<span class=\"badge pinned\">pinned</span>");
    }
    if m.content().contains("[REDACTED:") {
        meta.push_str("<span class=\"badge redacted\">redacted</span>");
    }
    let text = match m.kind {
        Kind::Fact => escape(&m.prompt),
        Kind::Turn => {
            let mut parts = Vec::new();
            if !m.prompt.is_empty() {
                parts.push(format!("<span class=\"who\">User: </span>{}", escape(&m.prompt)));
            }
            if !m.reply.is_empty() {
                parts.push(format!("<span class=\"who\">Assistant: </span>{}", escape(&m.reply)));
            }
            parts.join("\n")
        }
    };
    format!(
        "<li class=\"card{}\" data-id=\"{}\"><div class=\"meta\">{meta}</div><div class=\"text clip\">{text}</div></li>\n",
        if pinned { " pinned" } else { "" },
        m.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_is_never_markup() {
        let m = Memory {
            id: 7,
            bank: "project:/src/<app>".into(),
            prompt: "<script>alert(1)</script> & \"quotes\"".into(),
            reply: "it's <b>fine</b>".into(),
            harness: Some("x\"><img src=x>".into()),
            created_at: 1_700_000_000,
            ..Default::default()
        };
        let html = render("tok", &[m], &HashSet::from([7]));
        assert!(!html.contains("<script>alert") && !html.contains("<b>fine") && !html.contains("<img src=x>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"));
        assert!(html.contains("it&#39;s &lt;b&gt;fine&lt;/b&gt;"));
        assert!(html.contains("class=\"card pinned\" data-id=\"7\""));
        assert!(html.contains("content=\"tok\""));
        assert!(render("tok", &[], &HashSet::new()).contains("No memories here yet"));
    }
}
