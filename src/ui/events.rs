//! Live updates for the page (`GET /api/events`, server-sent events): one thread per open page
//! polls the store's change mark (a few indexed reads) every second and sends a `change` event
//! when it moved, so captures, recalls, forgets and pins show up while the agents work. A
//! comment line every 15 s finds a page that went away; no daemon, nothing outlives the viewer.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::store::Store;

/// How often the store is looked at.
pub const POLL: Duration = Duration::from_secs(1);
const PING: Duration = Duration::from_secs(15);

/// Streams events to one page until it goes away or the viewer stops.
pub fn stream(request: tiny_http::Request, db: PathBuf, stop: Arc<AtomicBool>, open: Arc<AtomicUsize>) {
    open.fetch_add(1, Ordering::SeqCst);
    let mut out = request.into_writer();
    let _ = run(&mut *out, &db, &stop);
    open.fetch_sub(1, Ordering::SeqCst);
}

fn run(out: &mut dyn Write, db: &std::path::Path, stop: &AtomicBool) -> std::io::Result<()> {
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\n\
          X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 2000\n\n",
    )?;
    out.flush()?;
    let store = Store::open(db, Duration::from_secs(1)).map_err(std::io::Error::other)?;
    let mut last = None;
    let mut pinged = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if let Ok(mark) = store.change_mark() {
            if last != Some(mark) {
                let data = serde_json::to_string(&mark).unwrap_or_default();
                write!(out, "event: change\ndata: {data}\n\n")?;
                out.flush()?;
                last = Some(mark);
                pinged = Instant::now();
            }
        }
        if pinged.elapsed() >= PING {
            out.write_all(b": ping\n\n")?;
            out.flush()?;
            pinged = Instant::now();
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}
