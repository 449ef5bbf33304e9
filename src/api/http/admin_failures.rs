//! Failed admin authentications, counted per client address: after [`MAX_FAILURES`] in a
//! minute the address gets 429 on every admin route until that minute is over, so the admin
//! token cannot be guessed at the speed of the network. Time comes from the injected clock.

use std::net::IpAddr;
use std::sync::Arc;

use dashmap::DashMap;

use crate::domain::time::Clock;

/// Wrong admin tokens one address may send in [`WINDOW_MS`].
pub const MAX_FAILURES: u32 = 10;
/// The window failures are counted in: a minute from the first failure.
pub const WINDOW_MS: i64 = 60_000;
/// Addresses kept before windows that are over are dropped; at most twice this many when an
/// attacker spreads over more addresses than that within one minute.
const MAX_ADDRESSES: usize = 100_000;

/// When an address's window started and how many failures it holds.
#[derive(Clone, Copy, Debug)]
struct Window {
    started: i64,
    failures: u32,
}

pub struct AdminFailures {
    clock: Arc<dyn Clock>,
    windows: DashMap<IpAddr, Window>,
    /// False only under the hidden `--no-admin-lockout` (schemathesis' runs).
    enabled: bool,
}

impl AdminFailures {
    pub fn new(clock: Arc<dyn Clock>, enabled: bool) -> Self {
        Self {
            clock,
            windows: DashMap::new(),
            enabled,
        }
    }

    /// Whole seconds (at least 1) until `client` may try again, when it is locked out now.
    pub fn locked_for(&self, client: IpAddr) -> Option<u64> {
        if !self.enabled {
            return None;
        }
        let now = self.clock.now().millis();
        let window = *self.windows.get(&client)?;
        let ends = window.started + WINDOW_MS;
        (window.failures >= MAX_FAILURES && now < ends)
            .then(|| ((ends - now) as u64).div_ceil(1000).max(1))
    }

    /// Counts a failure of `client`.
    pub fn failed(&self, client: IpAddr) {
        if !self.enabled {
            return;
        }
        let now = self.clock.now().millis();
        {
            let mut window = self.windows.entry(client).or_insert(Window {
                started: now,
                failures: 0,
            });
            if now >= window.started + WINDOW_MS {
                *window = Window {
                    started: now,
                    failures: 0,
                };
            }
            window.failures = window.failures.saturating_add(1);
        }
        if self.windows.len() > MAX_ADDRESSES {
            self.windows
                .retain(|_, window| now < window.started + WINDOW_MS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::{ManualClock, Timestamp};

    #[test]
    fn ten_failures_lock_an_address_out_until_its_minute_is_over() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let failures = AdminFailures::new(clock.clone(), true);
        let (one, other) = (IpAddr::from([192, 0, 2, 1]), IpAddr::from([192, 0, 2, 2]));
        for _ in 0..MAX_FAILURES - 1 {
            failures.failed(one);
        }
        assert_eq!(failures.locked_for(one), None);
        clock.advance(chrono::Duration::milliseconds(500));
        failures.failed(one);
        assert_eq!(failures.locked_for(one), Some(60));
        assert_eq!(failures.locked_for(other), None, "per address");
        clock.advance(chrono::Duration::milliseconds(59_000));
        assert_eq!(failures.locked_for(one), Some(1));
        clock.advance(chrono::Duration::milliseconds(500));
        assert_eq!(failures.locked_for(one), None);
        failures.failed(one);
        assert_eq!(failures.locked_for(one), None, "a new minute, a new count");
    }

    #[test]
    fn with_the_lockout_off_no_number_of_failures_locks_out() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
        let failures = AdminFailures::new(clock, false);
        let client: IpAddr = "127.0.0.1".parse().expect("an address");
        for _ in 0..MAX_FAILURES * 3 {
            failures.failed(client);
        }
        assert_eq!(failures.locked_for(client), None);
    }
}
