//! Walk or rank: the two ways a page of a candidate set is found, what each costs, and which
//! is chosen (docs/SEARCH.md, "How a search runs", step 4).
//!
//! A *walk* steps along the sort's order from its start, keeping the places whose document is
//! a candidate, until the page's end: about `end × N / |C|` places for candidates spread over
//! the order (`N` listed bots, `C` the candidates). A *ranking* reads each candidate's rank from
//! its document, selects the page's end and sorts the page: `|C|` documents read. The index
//! takes the way whose estimated CPU is the smaller, from the two costs measured below.
//!
//! The way chosen costs at most the two estimates' geometric mean; by the dearest costs
//! measured, a page ending at `end` costs at most `√(WALK_STEP_NS × RANK_READ_NS × end ×
//! N)` nanoseconds whatever `|C|` is ([`page_bound_ns`]): 4.6 ms for the deepest filtered
//! page (`end` = 10,000) at 1,000,000 bots, under the 5 ms of issue 39.
//!
//! Measured in release at 1,000,000 bots, 2026-11-29 03:49 UTC, load 3 to 4
//! (`BOTLIST_BENCH_WAYS=1 BOTLIST_BENCH_SIZES=1000000 cargo bench --bench worst`,
//! docs/PERFORMANCE.md "Walk or rank"): a place walked costs 7 to 14 ns when the candidates are
//! a dense bitmap (a tenth of the directory or more: a bit test) and 26 to 31 ns when they are
//! sparse (a twentieth: a binary search in an array container); a document ranked costs 11 to
//! 24 ns in sets of 275,000 to 600,000, 32 to 59 ns in one of 100,000 and 54 to 67 ns in one
//! of 56,000. A ranking reads each candidate's keys from columns in document order
//! (`keys.rs`); when it read them from each document's entry, a document cost 40 to 87 ns in
//! the same run (180 to 238 ns on 2026-11-28), a cache miss each.

/// The dearest measured cost of a place walked (a sparse candidate set), in nanoseconds. The
/// choice uses the ratio of the two dearest costs, which are those of sparse sets, where the
/// choice is close.
pub const WALK_STEP_NS: u64 = 31;

/// The dearest measured cost of a document ranked (a set of about 56,000), in nanoseconds.
pub const RANK_READ_NS: u64 = 67;

/// The way a page of a candidate set is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    Walk,
    Rank,
}

/// Places a walk is expected to visit to find `end` of `candidates` spread over `listed`
/// places: never more than the whole order.
pub fn walk_steps(end: u64, listed: u64, candidates: u64) -> u64 {
    let steps = u128::from(end) * u128::from(listed) / u128::from(candidates.max(1));
    steps.min(u128::from(listed)) as u64
}

/// The estimated CPU of finding the page one way at the dearest measured costs, in
/// nanoseconds.
pub fn estimate_ns(way: Way, end: u64, listed: u64, candidates: u64) -> u64 {
    match way {
        Way::Walk => walk_steps(end, listed, candidates) * WALK_STEP_NS,
        Way::Rank => candidates * RANK_READ_NS,
    }
}

/// The cheaper way by the measured costs.
pub fn choose(end: u64, listed: u64, candidates: u64) -> Way {
    let walk = estimate_ns(Way::Walk, end, listed, candidates);
    let rank = estimate_ns(Way::Rank, end, listed, candidates);
    if walk < rank {
        Way::Walk
    } else {
        Way::Rank
    }
}

/// How many places a walk of `candidates` may visit before it stops and they are ranked: as
/// many as ranking them costs. A walk is chosen for costing less than that when the candidates
/// are spread over the order, so only a set gathered at the order's far end reaches it. The
/// walk's forecast (`Orders::foresee_walk`) sees such a set before the walk and has it ranked;
/// the budget stops a walk the forecast let through (a set too small for its probes to see),
/// which then costs at most twice its ranking.
pub fn walk_budget(candidates: u64) -> u64 {
    candidates.max(1) * RANK_READ_NS / WALK_STEP_NS
}

/// The hits a walk's forecast (`Orders::foresee_walk`) must have expected, were the candidates
/// spread, before it may say they are not where the walk would look: with 3, a spread set goes
/// unseen one time in twenty (and is then ranked, at most `|C| × read`, which is small where
/// so few probes are expected: `|C|` under about `11.5 × √N`, 0.8 ms at 1,000,000 bots).
pub const FORESIGHT_HITS: u64 = 3;

/// What the chosen way may cost at the dearest measured costs, whatever the number of
/// candidates: the two estimates' geometric mean, the same for every `|C|`.
pub fn page_bound_ns(end: u64, listed: u64) -> u64 {
    let product = u128::from(WALK_STEP_NS * RANK_READ_NS) * u128::from(end) * u128::from(listed);
    (product as f64).sqrt().ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::{choose, estimate_ns, page_bound_ns, walk_steps, Way};
    use crate::domain::search::MAX_FILTERED_END;

    const MILLION: u64 = 1_000_000;
    /// What docs/PERFORMANCE.md claims for the deepest filtered page at 1,000,000 bots: 4.6
    /// ms, under the 5 ms of issue 39 (docs/SEARCH.md, "What a search may cost").
    const DEEPEST_PAGE_NS: u64 = 4_600_000;

    /// Candidate counts to try at `listed`: every one up to a thousand, then about 1,000 a
    /// doubling, and every count within 64 of the crossover of each end.
    fn counts(listed: u64, end: u64) -> Vec<u64> {
        let mut out: Vec<u64> = (1..=1_000.min(listed)).collect();
        let mut c = 1_000u64;
        while c < listed {
            out.push(c);
            c += (c / 1_000).max(1);
        }
        out.push(listed);
        // The least count walked (ranking grows with the count, walking shrinks).
        let (mut low, mut high) = (1, listed);
        while low < high {
            let mid = low + (high - low) / 2;
            if choose(end, listed, mid) == Way::Walk {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        let crossover = low;
        out.extend(crossover.saturating_sub(64)..(crossover + 64).min(listed + 1));
        out.retain(|c| *c >= 1 && *c <= listed);
        out
    }

    /// For every page end a filtered search may ask for, and any number of candidates, the
    /// way chosen costs no more than the other and stays within the page's bound, and the
    /// deepest page's bound is what docs/PERFORMANCE.md claims at 1,000,000 bots.
    #[test]
    fn the_chosen_way_stays_within_the_page_bound_at_every_depth() {
        assert!(page_bound_ns(MAX_FILTERED_END, MILLION) <= DEEPEST_PAGE_NS);
        let ends = (1..=MAX_FILTERED_END).filter(|e| *e <= 200 || e % 97 == 0 || *e % 1_000 == 0);
        for end in ends.chain([MAX_FILTERED_END]) {
            let bound = page_bound_ns(end, MILLION);
            for c in counts(MILLION, end) {
                let way = choose(end, MILLION, c);
                let cost = estimate_ns(way, end, MILLION, c);
                let other = match way {
                    Way::Walk => Way::Rank,
                    Way::Rank => Way::Walk,
                };
                assert!(
                    cost <= estimate_ns(other, end, MILLION, c),
                    "end {end}, {c} candidates: {way:?} is the dearer way"
                );
                assert!(
                    cost <= bound,
                    "end {end}, {c} candidates: {way:?} costs {cost} ns, past {bound} ns"
                );
            }
        }
    }

    /// The deepest filtered page at 1,000,000 bots: the candidates counted in the worst case
    /// the table of docs/PERFORMANCE.md lists (a category of about a tenth of the directory)
    /// are walked, not ranked one by one.
    #[test]
    fn a_deep_page_of_a_tenth_of_the_directory_is_walked() {
        assert_eq!(choose(5_100, MILLION, 100_000), Way::Walk);
        assert_eq!(walk_steps(5_100, MILLION, 100_000), 51_000);
        assert_eq!(choose(100, MILLION, 1_000), Way::Rank);
        assert_eq!(walk_steps(10, 100, 1), 100);
    }
}
