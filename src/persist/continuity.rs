//! What a data directory proves about its records: which numbers the journal holds, the highest
//! number any file shows was ever used, and which numbers a base state plus the journal would
//! leave out. Recovery starts only from a base that leaves nothing out (docs/PERSISTENCE.md,
//! "Startup"); this module only counts, it reads no file.

use std::ops::RangeInclusive;

/// The record numbers the journal holds, as ranges, and the highest number ever used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    /// Each segment's run of records, in order of their first number.
    held: Vec<RangeInclusive<u64>>,
    /// The highest record number that any file shows was used: a record, a segment's first
    /// number less one (its name says the records before it exist), a snapshot's number, what
    /// the journal's head says.
    pub end: u64,
}

impl Extent {
    /// The journal holds the records `first..=last` (one segment's run).
    pub fn hold(&mut self, first: u64, last: u64) {
        if first <= last {
            self.held.push(first..=last);
            self.end = self.end.max(last);
        }
    }

    /// Some file shows that every record up to `seq` existed.
    pub fn reaches(&mut self, seq: u64) {
        self.end = self.end.max(seq);
    }

    /// The numbers after `base` up to [`Extent::end`] that the journal does not hold: what a
    /// state at `base` plus the journal would lose. Empty when nothing would be.
    pub fn missing_after(&self, base: u64) -> Vec<RangeInclusive<u64>> {
        let mut held = self.held.clone();
        held.sort_by_key(|range| *range.start());
        let mut missing = Vec::new();
        let mut covered = base;
        for range in held {
            if *range.end() <= covered {
                continue;
            }
            if *range.start() > covered + 1 {
                missing.push(covered + 1..=range.start() - 1);
            }
            covered = *range.end();
        }
        if covered < self.end {
            missing.push(covered + 1..=self.end);
        }
        missing
    }
}

/// "records 4 to 9 and 12", for messages.
pub fn describe(ranges: &[RangeInclusive<u64>]) -> String {
    let each: Vec<String> = ranges
        .iter()
        .map(|r| {
            if r.start() == r.end() {
                r.start().to_string()
            } else {
                format!("{} to {}", r.start(), r.end())
            }
        })
        .collect();
    let one = ranges.len() == 1 && ranges[0].start() == ranges[0].end();
    let noun = if one { "record" } else { "records" };
    match each.split_last() {
        Some((last, [])) => format!("{noun} {last}"),
        Some((last, rest)) => format!("{noun} {} and {last}", rest.join(", ")),
        None => "no record".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_journal_that_starts_after_the_base_misses_the_numbers_between() {
        let mut extent = Extent::default();
        // An empty segment journal-4: records 1 to 3 existed somewhere.
        extent.reaches(3);
        assert_eq!(extent.missing_after(0), vec![1..=3]);
        assert_eq!(extent.missing_after(3), vec![]);
        extent.hold(4, 9);
        extent.hold(12, 12);
        assert_eq!(extent.missing_after(0), vec![1..=3, 10..=11]);
        assert_eq!(extent.missing_after(5), vec![10..=11]);
        assert_eq!(
            describe(&extent.missing_after(0)),
            "records 1 to 3 and 10 to 11"
        );
        assert_eq!(describe(&[7..=7]), "record 7");
    }

    proptest! {
        /// Missing is exactly the numbers in (base, end] that no held run contains.
        #[test]
        fn missing_is_what_no_run_holds(
            runs in prop::collection::vec((1u64..60, 0u64..8), 0..6),
            reached in 0u64..80,
            base in 0u64..70,
        ) {
            let mut extent = Extent::default();
            for &(first, len) in &runs {
                extent.hold(first, first + len);
            }
            extent.reaches(reached);
            let missing: Vec<u64> = extent.missing_after(base).into_iter().flatten().collect();
            let expected: Vec<u64> = (base + 1..=extent.end)
                .filter(|n| !runs.iter().any(|&(first, len)| (first..=first + len).contains(n)))
                .collect();
            prop_assert_eq!(missing, expected);
        }
    }
}
