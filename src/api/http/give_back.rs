//! Freed memory given back to the system once a burst of connections has ended.
//!
//! Every connection has its buffers, and a compressed answer its encoder's window. glibc's
//! allocator keeps what they free for the next allocations of the same thread's arena and
//! returns pages to the system only from the top of the main heap, so a server that took
//! 1,000 connections at once stayed about 18% above where it started once they closed, with
//! or without compression (docs/PERFORMANCE.md, "Memory given back, again"). `malloc_trim`
//! returns the free pages of every arena. It holds each arena's lock while it walks it, so it
//! runs on a thread of its own and only after a burst: when the connections open have fallen
//! to half of their peak since the last trim, and by at least [`BURST`]. A steady load, whose
//! connections come and go at a level, never triggers it.

use std::time::{Duration, Instant};

/// How many connections must have closed since the peak for a trim.
const BURST: usize = 256;

/// How often the thread looks.
const EVERY: Duration = Duration::from_secs(1);

/// Whether `open` connections, down from a `peak` of `peak` since the last trim, mean a
/// burst has ended.
pub(super) fn burst_ended(peak: usize, open: usize) -> bool {
    peak >= open.saturating_add(BURST) && open <= peak / 2
}

/// Starts the thread. `look` says whether a burst has ended since it last said so (and
/// starts the next peak from there), or `None` once the server is gone: the thread then ends.
pub(super) fn watch(look: impl Fn() -> Option<bool> + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("memory-give-back".into())
        .spawn(move || loop {
            std::thread::sleep(EVERY);
            match look() {
                None => return,
                Some(true) => trim(),
                Some(false) => {}
            }
        })
        .map(drop)
}

/// Returns the allocator's free pages to the system, and counts it.
fn trim() {
    let began = Instant::now();
    release();
    crate::telemetry::memory_given_back(began.elapsed());
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release() {
    // SAFETY: malloc_trim works under the allocator's own locks; glibc lets any thread call
    // it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators (musl's, or a platform's own) give pages back by themselves, or not at all.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_fall_to_half_the_peak_by_a_burst_is_a_burst_ended() {
        assert!(burst_ended(1000, 0));
        assert!(burst_ended(1000, 500));
        assert!(!burst_ended(1000, 501), "above half the peak");
        assert!(burst_ended(BURST, 0));
        assert!(!burst_ended(BURST - 1, 0), "fewer closed than a burst");
        assert!(!burst_ended(300, 100), "200 closed, under a burst");
        assert!(!burst_ended(0, 0));
        assert!(!burst_ended(5, 10), "a peak is never below what is open");
    }
}
