//! The process's own families (`process_*`), read from the operating system at each scrape.
//! `metrics-process` reads them; its collector records the CPU time through a `metrics`
//! counter, which holds whole numbers and so moved in whole seconds. The gauges go through the
//! recorder here and the CPU time is written into the exposition by hand, as the fraction of a
//! second the kernel counts (clock ticks, 10 ms on Linux).

use std::fmt::Write;

use metrics::gauge;

/// Brings the `process_*` gauges up to date and answers the text of
/// `process_cpu_seconds_total` (empty where the platform does not say).
pub(super) fn collect() -> String {
    let m = metrics_process::collector::collect();
    let gauges = [
        ("process_open_fds", m.open_fds),
        ("process_max_fds", m.max_fds),
        ("process_virtual_memory_bytes", m.virtual_memory_bytes),
        (
            "process_virtual_memory_max_bytes",
            m.virtual_memory_max_bytes,
        ),
        ("process_resident_memory_bytes", m.resident_memory_bytes),
        ("process_start_time_seconds", m.start_time_seconds),
        ("process_threads", m.threads),
    ];
    for (name, value) in gauges {
        if let Some(value) = value {
            gauge!(name).set(value as f64);
        }
    }
    m.cpu_seconds_total.map(cpu_seconds).unwrap_or_default()
}

/// The exposition of the CPU time: a counter in seconds, with its fraction.
fn cpu_seconds(seconds: f64) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
         # TYPE process_cpu_seconds_total counter\n\
         process_cpu_seconds_total {seconds}"
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_now() -> f64 {
        let text = collect();
        let line = text
            .lines()
            .find(|line| line.starts_with("process_cpu_seconds_total "))
            .expect("the sample");
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a number")
    }

    #[test]
    fn the_cpu_time_is_written_with_its_fraction() {
        assert!(cpu_seconds(1.25).ends_with("process_cpu_seconds_total 1.25\n"));
        assert!(cpu_seconds(1.25).contains("# TYPE process_cpu_seconds_total counter\n"));
    }

    /// Whole seconds would move by 1 at the earliest, after up to a second of work: the
    /// first move here is a clock tick or a few.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_cpu_time_moves_by_less_than_a_second() {
        let start = cpu_now();
        let began = std::time::Instant::now();
        let mut spin = 0u64;
        let moved = loop {
            for i in 0..100_000u64 {
                spin = std::hint::black_box(spin.wrapping_mul(31).wrapping_add(i));
            }
            let now = cpu_now();
            if now > start {
                break now - start;
            }
            assert!(began.elapsed().as_secs() < 30, "the CPU time never moved");
        };
        assert!(moved < 0.5, "moved by {moved}");
    }
}
