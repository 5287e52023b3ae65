//! A file's bytes held once and shared: the plan, its backups, the journal and the receipt all
//! work from the same bytes of a harness file, and Claude Code's `~/.claude.json` passes 100 MB.
//! A [`Blob`] (any bytes) or [`Text`] (UTF-8) is one allocation behind an `Arc`, so handing it on
//! never copies it, and its sha256 is computed at most once whoever asks.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

struct Inner<T> {
    data: T,
    sha256: OnceLock<String>,
}

impl<T: AsRef<[u8]>> Inner<T> {
    fn new(data: T) -> Arc<Self> {
        Arc::new(Self { data, sha256: OnceLock::new() })
    }

    fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| super::sha256_hex(self.data.as_ref()))
    }
}

/// Shared UTF-8 text: what an editor reads and writes.
#[derive(Clone)]
pub struct Text(Arc<Inner<String>>);

/// Shared bytes: what the journal writes and compares. Bytes that are UTF-8 are held as [`Text`],
/// so [`Blob::text`] hands them to an editor without a copy.
#[derive(Clone)]
pub struct Blob(Repr);

#[derive(Clone)]
enum Repr {
    Text(Arc<Inner<String>>),
    Raw(Arc<Inner<Vec<u8>>>),
}

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0.data
    }

    /// The sha256 of the text, in hex (computed once).
    pub fn sha256(&self) -> &str {
        self.0.sha256()
    }
}

impl Blob {
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Text(t) => t.data.as_bytes(),
            Repr::Raw(r) => &r.data,
        }
    }

    /// The same bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<Text> {
        match &self.0 {
            Repr::Text(t) => Some(Text(Arc::clone(t))),
            Repr::Raw(_) => None,
        }
    }

    /// The sha256 of the bytes, in hex (computed once).
    pub fn sha256(&self) -> &str {
        match &self.0 {
            Repr::Text(t) => t.sha256(),
            Repr::Raw(r) => r.sha256(),
        }
    }

    fn same_allocation(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Text(a), Repr::Text(b)) => Arc::ptr_eq(a, b),
            (Repr::Raw(a), Repr::Raw(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self(Inner::new(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::from(s.to_string())
    }
}

impl From<Text> for Blob {
    fn from(t: Text) -> Self {
        Self(Repr::Text(t.0))
    }
}

impl From<String> for Blob {
    fn from(s: String) -> Self {
        Self::from(Text::from(s))
    }
}

impl From<Vec<u8>> for Blob {
    /// Without a copy either way: UTF-8 becomes text, anything else stays bytes.
    fn from(v: Vec<u8>) -> Self {
        match String::from_utf8(v) {
            Ok(s) => Self::from(s),
            Err(e) => Self(Repr::Raw(Inner::new(e.into_bytes()))),
        }
    }
}

impl From<&[u8]> for Blob {
    fn from(b: &[u8]) -> Self {
        Self::from(b.to_vec())
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.same_allocation(other) || self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Blob {}

/// Short: a 100 MB file is not printed whole by a `{:?}`.
impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 200;
        let shown = crate::cut::clip(self.as_str(), SHOWN);
        let more = if shown.len() < self.len() { format!("… ({} bytes)", self.len()) } else { String::new() };
        write!(f, "{shown:?}{more}")
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.text() {
            Some(t) => t.fmt(f),
            None => write!(f, "<{} bytes, not UTF-8>", self.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_bytes_share_one_allocation_and_one_hash() {
        let t = Text::from("{\"a\": 1}\n".to_string());
        let b = Blob::from(t.clone());
        assert!(std::ptr::eq(t.as_str().as_ptr(), b.as_bytes().as_ptr()), "copied");
        assert_eq!(b.sha256(), super::super::sha256_hex(b"{\"a\": 1}\n"));
        assert!(std::ptr::eq(t.sha256(), b.sha256()), "hashed twice");
        assert_eq!(b.text().unwrap(), t);
        let raw = Blob::from(vec![0xff, 0xfe]);
        assert!(raw.text().is_none());
        assert_eq!(raw, Blob::from(&[0xff, 0xfe][..]));
        assert_ne!(raw, b);
    }
}
