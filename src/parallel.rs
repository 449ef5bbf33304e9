//! Mapping a slice on every core, each result written where it ends up: the one way start-up
//! spreads a phase over the cores (decoding a snapshot's voters and bots, numbering the voters,
//! preparing every bot's view).
//!
//! The items are cut into many more shares than cores (sixteen a core), taken in turn: items
//! differ in cost, and one equal share per core left a core idle at the end of each phase of a
//! start (a tenth of its time). Each result is written into its slot of the returned vector by
//! the thread that made it. Collecting each share's results apart and joining them afterwards
//! moved every result once more, on one core and into fresh pages while the other cores waited:
//! for the bots of a snapshot (664 bytes each, 66 MB at 100,000 bots) that was a third of a
//! start's single-threaded time (docs/PERFORMANCE.md, "Start-up and snapshots").
//!
//! The lowest floor: it imports nothing of the crate.

use std::any::Any;
use std::mem::MaybeUninit;

/// The threads a phase is spread over: the cores, at most eight.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Why [`map`] gave no vector.
#[derive(Debug)]
pub enum Failed<E> {
    /// What `each` answered for the first item that failed, in the items' order.
    Item(E),
    /// A thread panicked; its payload, to resume or to report.
    Panicked(Box<dyn Any + Send>),
}

/// Maps each of `items` to one result, in order, over `threads` threads of its own, with the
/// error of the first item that fails. Results already made are dropped when
/// a mapping fails.
pub fn map<T: Sync, R: Send, E: Send>(
    items: &[T],
    threads: usize,
    each: impl Fn(&T) -> Result<R, E> + Sync,
) -> Result<Vec<R>, Failed<E>> {
    if threads <= 1 || items.len() < 2 {
        return items
            .iter()
            .map(each)
            .collect::<Result<_, _>>()
            .map_err(Failed::Item);
    }
    let run = items.len().div_ceil(threads * 16);
    let mut all: Vec<R> = Vec::with_capacity(items.len());
    let slots = &mut all.spare_capacity_mut()[..items.len()];
    // Shares are taken in order, so a thread's first failure is its lowest-numbered one and it
    // takes no more: no share it would take could fail first.
    let shares = parking_lot::Mutex::new(items.chunks(run).zip(slots.chunks_mut(run)).enumerate());
    let fill = || {
        let mut runs = Vec::new();
        loop {
            let next = shares.lock().next();
            let Some((number, (share, slots))) = next else {
                return (runs, None);
            };
            let mut run = Run { slots, filled: 0 };
            for item in share {
                match each(item) {
                    Ok(result) => run.push(result),
                    Err(error) => return (runs, Some((number, error))),
                }
            }
            runs.push(run);
        }
    };
    let filled = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads).map(|_| scope.spawn(fill)).collect();
        let mut runs = Vec::new();
        let mut failed: Option<(usize, E)> = None;
        let mut panicked = None;
        for worker in workers {
            match worker.join() {
                Ok((filled, failure)) => {
                    runs.extend(filled);
                    let Some((number, error)) = failure else {
                        continue;
                    };
                    if failed.as_ref().is_none_or(|(first, _)| number < *first) {
                        failed = Some((number, error));
                    }
                }
                Err(payload) => panicked = Some(payload),
            }
        }
        // Dropping the runs drops the results they hold.
        if let Some(payload) = panicked {
            return Err(Failed::Panicked(payload));
        }
        if let Some((_, error)) = failed {
            return Err(Failed::Item(error));
        }
        let filled: usize = runs.iter().map(|run| run.filled).sum();
        // The results are the vector's from here on: each is dropped with it, not with its run.
        runs.into_iter().for_each(std::mem::forget);
        Ok(filled)
    })?;
    // Every share was taken, none failed and each run was full, so the runs cover every slot.
    assert_eq!(filled, items.len(), "every share of the mapping was run");
    // SAFETY: the first `filled` slots are the disjoint runs of `slots`, which cover them; every
    // run was full (they add up to `filled`, each at most its length) and was forgotten, so each
    // slot holds a result that nothing else drops.
    unsafe { all.set_len(filled) };
    Ok(all)
}

/// A share's slots in the vector [`map`] fills, the first `filled` of them written: dropped
/// with the run unless it is forgotten once every share is done.
struct Run<'a, R> {
    slots: &'a mut [MaybeUninit<R>],
    filled: usize,
}

impl<R> Run<'_, R> {
    fn push(&mut self, result: R) {
        self.slots[self.filled].write(result);
        self.filled += 1;
    }
}

impl<R> Drop for Run<'_, R> {
    fn drop(&mut self) {
        for slot in &mut self.slots[..self.filled] {
            // SAFETY: `push` wrote the first `filled` slots; a run is dropped at most once, and
            // a run whose results were handed over is forgotten instead.
            unsafe { slot.assume_init_drop() };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn each_result_comes_in_order_on_any_number_of_threads() {
        let items: Vec<u64> = (0..1_000).collect();
        let serial: Vec<String> = items.iter().map(|n| format!("bot {n}")).collect();
        for threads in [1, 2, 3, 8] {
            let mapped = map(&items, threads, |n| Ok::<_, ()>(format!("bot {n}"))).expect("mapped");
            assert_eq!(mapped, serial, "{threads} threads");
        }
        assert!(map(&[] as &[u8], 4, |_| Ok::<u8, ()>(0))
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn a_failed_mapping_names_the_first_failure_and_drops_every_result_made() {
        let made = Arc::new(());
        let items: Vec<u64> = (0..5_000).collect();
        for threads in [1, 2, 3, 8] {
            let failed = map(&items, threads, |&n| {
                if n == 1_234 || n == 4_321 {
                    return Err(n);
                }
                Ok(Arc::clone(&made))
            });
            assert!(
                matches!(failed, Err(Failed::Item(1_234))),
                "{threads} threads"
            );
            assert_eq!(
                Arc::strong_count(&made),
                1,
                "{threads} threads: every result dropped"
            );
        }
    }

    #[test]
    fn a_panic_is_handed_back_with_every_result_made_dropped() {
        let made = Arc::new(());
        let items: Vec<u64> = (0..5_000).collect();
        let failed = map(&items, 2, |&n| {
            if n == 2_500 {
                panic!("item {n}");
            }
            Ok::<_, ()>(Arc::clone(&made))
        });
        let Err(Failed::Panicked(payload)) = failed else {
            panic!("the panic is handed back");
        };
        assert_eq!(
            payload.downcast_ref::<String>().map(String::as_str),
            Some("item 2500")
        );
        assert_eq!(Arc::strong_count(&made), 1, "every result dropped");
    }
}
