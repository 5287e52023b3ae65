//! Live updates for the page (`GET /api/events`, server-sent events). Every answer is one short
//! stream: the store's change mark (a few indexed reads that move with every capture, forget,
//! edit, pin and injection) as a `change` event, then the end of the stream with `retry: 1000`,
//! so the browser's `EventSource` asks again a second later and the page reloads what moved.
//! A stream that ends at once holds no thread or connection per open page, and keeps a headless
//! browser's virtual time going (`--virtual-time-budget` waits for open requests forever).

use crate::store::Store;

/// How long the browser waits before it asks again, in milliseconds.
pub const RETRY_MS: u64 = 1000;

/// The body of one answer.
pub fn body(store: &Store) -> anyhow::Result<String> {
    let mark = serde_json::to_string(&store.change_mark()?)?;
    Ok(format!("retry: {RETRY_MS}\nevent: change\ndata: {mark}\n\n"))
}
