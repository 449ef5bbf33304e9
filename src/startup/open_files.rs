//! The process's open-file limit, raised at start to what `--max-connections` needs.
//!
//! Every connection is a file descriptor. Many systems start a process with a soft limit of
//! 1,024 and a hard limit far above it; left there, the server would refuse connections (the
//! accept loop sees `EMFILE` and pauses) long before the default cap of 10,000. Any process may
//! raise its own soft limit up to the hard one, so the server does it for itself, as Go's
//! runtime and nginx (`worker_rlimit_nofile`) do. Where even the hard limit is too low, the
//! operator is told at start, with the fix (docs/OPERATIONS.md, "Open files").

use crate::api::connection::hard_limit;

/// Descriptors kept beside the connections: data files, the journal's segments, snapshots in
/// progress, webhook and cluster connections, the metrics listener and standard streams.
pub const SPARE: u64 = 512;

/// The descriptors `--max-connections` needs over `workers` workers: each worker's share of
/// connections and what it takes past it, and the [`SPARE`].
pub fn descriptors_needed(max_connections: usize, workers: usize) -> u64 {
    let workers = workers.max(1);
    let share = (max_connections / workers).max(1);
    let connections = hard_limit(share).saturating_mul(workers);
    u64::try_from(connections)
        .unwrap_or(u64::MAX)
        .saturating_add(SPARE)
}

/// The soft limit before and after the raise, and the hard limit over both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub before: u64,
    pub now: u64,
    pub hard: u64,
}

/// Raises the soft open-file limit to `needed`, or as near as the hard limit allows; never
/// lowers it. Logs a warning naming the fix when what is allowed is below `needed`.
pub fn raise_to(needed: u64) -> Option<Limits> {
    let limits = raise(needed)?;
    if limits.now < needed {
        tracing::warn!(
            soft = limits.now,
            hard = limits.hard,
            needed,
            "the open-file limit is below what --max-connections needs: connections past it \
             wait in the listen backlog. Raise the hard limit (LimitNOFILE= in the systemd \
             unit, `ulimit -Hn` in a shell) or lower --max-connections"
        );
    } else if limits.now > limits.before {
        tracing::info!(
            from = limits.before,
            to = limits.now,
            "raised the open-file limit for --max-connections"
        );
    }
    Some(limits)
}

#[cfg(unix)]
fn raise(needed: u64) -> Option<Limits> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit through a pointer to a live, aligned value.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut current) } != 0 {
        return None;
    }
    let before = as_count(current.rlim_cur);
    let hard = as_count(current.rlim_max);
    if before >= needed {
        return Some(Limits {
            before,
            now: before,
            hard,
        });
    }
    let wanted = libc::rlimit {
        rlim_cur: needed.min(hard) as libc::rlim_t,
        rlim_max: current.rlim_max,
    };
    // SAFETY: setrlimit reads one rlimit; a soft limit at or under the hard one is always
    // allowed, and a refusal leaves the limits as they were.
    let now = if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } == 0 {
        as_count(wanted.rlim_cur)
    } else {
        before
    };
    Some(Limits { before, now, hard })
}

#[cfg(not(unix))]
fn raise(_needed: u64) -> Option<Limits> {
    None
}

#[cfg(unix)]
// rlim_t is u64 on Linux but not on every unix.
#[allow(clippy::unnecessary_cast)]
fn as_count(limit: libc::rlim_t) -> u64 {
    if limit == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        limit as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_over_two_workers_needs_its_connections_a_sixteenth_and_the_spare() {
        // 5,000 a worker, and 312 more each while none is idle.
        assert_eq!(descriptors_needed(10_000, 2), 2 * (5_000 + 312) + SPARE);
        // A tiny cap still leaves each worker its 16 past the share.
        assert_eq!(descriptors_needed(1, 4), 4 * (1 + 16) + SPARE);
        assert_eq!(descriptors_needed(10, 0), 10 + 16 + SPARE);
        // Any cap a flag can hold is a number, never an overflow.
        assert_eq!(descriptors_needed(usize::MAX, 3), u64::MAX);
    }

    #[test]
    fn a_limit_already_high_enough_is_left_as_it_is() {
        let Some(limits) = raise(64) else { return };
        assert_eq!(limits.now, limits.before);
    }
}
