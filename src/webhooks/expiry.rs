//! The expiry timer: when each bot's next voter's window ends (`vote.expired`, CONTRACT
//! section 14).
//!
//! The ends themselves are kept per bot, by the actor that owns its votes: its check window
//! is a queue in time order, and its `announced` mark says up to where they were announced
//! (`domain/votes`). This timer holds only the earliest end still to announce of each bot that
//! has one, in one heap, and is looked at by the dispatcher's loop at each tick on the injected
//! clock: no task or timer per vote, and none per bot. When a bot's end has come, the
//! dispatcher asks the bot's actor to announce what is due ([`super::Owners::expire`]); the
//! actor journals the announcement and arms the timer again with its next end.
//!
//! A bot armed twice keeps its earlier end; the later entry stays in the heap until it comes
//! up and is passed over, so arming costs one hash lookup and at most one push.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::domain::ids::BotId;
use crate::domain::time::Timestamp;

#[derive(Debug, Default)]
pub struct ExpiryTimer {
    /// (end, bot), earliest first; entries whose end is no longer the bot's armed one are stale.
    heap: BinaryHeap<Reverse<(Timestamp, BotId)>>,
    /// Each armed bot's earliest end.
    armed: FxHashMap<BotId, Timestamp>,
}

impl ExpiryTimer {
    /// Wakes `bot` when `end` has come, unless it is armed for an earlier end already.
    pub fn arm(&mut self, bot: BotId, end: Timestamp) {
        if self.armed.get(&bot).is_some_and(|&armed| armed <= end) {
            return;
        }
        self.armed.insert(bot, end);
        self.heap.push(Reverse((end, bot)));
    }

    /// The bots whose end has come by `now`, earliest end first (bots of equal ends in the
    /// order of their ids), each once; they are no longer armed.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<BotId> {
        let mut due = Vec::new();
        while let Some(&Reverse((end, bot))) = self.heap.peek() {
            if end > now {
                break;
            }
            self.heap.pop();
            if self.armed.get(&bot) == Some(&end) {
                self.armed.remove(&bot);
                due.push(bot);
            }
        }
        due
    }

    /// The next end the timer waits for (stale entries included: it may wake for nothing).
    pub fn next(&self) -> Option<Timestamp> {
        self.heap.peek().map(|Reverse((end, _))| *end)
    }

    /// Bots armed.
    pub fn armed(&self) -> usize {
        self.armed.len()
    }

    /// Bytes held, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<(Timestamp, BotId)>();
        self.heap.capacity() * entry + self.armed.capacity() * (entry + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_millis(1_790_000_000_000 + seconds * 1000)
    }

    #[test]
    fn a_bot_wakes_once_at_its_earliest_end() {
        let mut timer = ExpiryTimer::default();
        let bot = BotId::new_random();
        timer.arm(bot, at(20));
        timer.arm(bot, at(10));
        timer.arm(bot, at(30));
        assert!(timer.take_due(at(9)).is_empty());
        assert_eq!(timer.take_due(at(10)), vec![bot]);
        // The stale entries at 20 and 30 wake nobody.
        assert!(timer.take_due(at(100)).is_empty());
        assert_eq!(timer.armed(), 0);
        assert_eq!(timer.next(), None);
    }

    #[test]
    fn equal_ends_wake_every_bot() {
        let mut timer = ExpiryTimer::default();
        let mut bots: Vec<BotId> = (0..5).map(|_| BotId::new_random()).collect();
        for bot in &bots {
            timer.arm(*bot, at(10));
        }
        bots.sort();
        assert_eq!(timer.take_due(at(10)), bots);
    }

    proptest! {
        /// Against a plain map of each bot's earliest end: any arming over many bots wakes
        /// each armed bot exactly once, at its earliest end, in the order of the ends.
        #[test]
        fn wakes_as_a_map_of_earliest_ends_says(
            arms in prop::collection::vec((0usize..50, 0i64..1000), 0..400),
            steps in prop::collection::vec(0i64..1100, 1..20),
        ) {
            let bots: Vec<BotId> = (0..50).map(|_| BotId::new_random()).collect();
            let mut timer = ExpiryTimer::default();
            let mut model: BTreeMap<BotId, i64> = BTreeMap::new();
            for (bot, end) in &arms {
                timer.arm(bots[*bot], at(*end));
                let earliest = model.entry(bots[*bot]).or_insert(*end);
                *earliest = (*earliest).min(*end);
            }
            let mut steps = steps;
            steps.sort_unstable();
            steps.push(1100);
            for now in steps {
                let woken = timer.take_due(at(now));
                let mut expected: Vec<(i64, BotId)> = model
                    .iter()
                    .filter(|(_, end)| **end <= now)
                    .map(|(bot, end)| (*end, *bot))
                    .collect();
                expected.sort();
                model.retain(|_, end| *end > now);
                prop_assert_eq!(woken, expected.into_iter().map(|(_, bot)| bot).collect::<Vec<_>>());
            }
            prop_assert_eq!(timer.armed(), 0);
        }
    }
}
