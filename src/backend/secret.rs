//! A token or API key that cannot end up in a log line by accident: `Debug` prints a redaction,
//! there is no `Display`, and the value is reachable only through [`Secret::expose`], which is
//! called where a header is built or the credentials file is written, nowhere else.

use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw value. Only for the request header and the credentials file.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `text` contains this secret (for tests and for scrubbing output).
    pub fn appears_in(&self, text: &str) -> bool {
        !self.0.is_empty() && text.contains(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hs-very-secret-token-123");
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Holder {
            token: Option<Secret>,
        }
        let shown = format!("{:?} {:#?}", Holder { token: Some(s.clone()) }, Holder { token: Some(s.clone()) });
        assert!(!s.appears_in(&shown), "{shown}");
        assert_eq!(s.expose(), "hs-very-secret-token-123");
    }
}
