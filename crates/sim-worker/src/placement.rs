//! Where a backtest's threads run.
//!
//! A backtest keeps three threads busy: the tick's (the command's own thread, ticking without
//! a pause), the async runtime's worker (the write-behind's batches: matching the prompt
//! lines, their zstd frame, binding the rows) and sqlx's SQLite thread (the statements).
//! The last two hand each statement over to each other and wait for the answer: they take
//! turns and never need two CPUs at once. Left to the scheduler on the two-core machine the
//! README measures on, the pair's wake-ups land on the tick's CPU and preempt it, and every
//! hand-off between two CPUs costs an inter-processor interrupt (a VM exit on a virtual
//! machine). Placed — the tick's thread on the CPU it runs on, the runtime's threads (and the
//! SQLite thread they start, which inherits their CPU) together on another — the README's
//! backtest ran 15–19 % faster in wall time (median of 15–25 alternating runs, see the
//! performance diary).
//!
//! Placement is opt-in, for benchmarks: `run` and `ab` (for one run at a time) place only with
//! `--pin-threads`. By default the threads are the scheduler's: a user running several
//! backtests side by side would otherwise have each process pin to the CPU it started on.
//! `ab`'s windows run side by side never pin (they would all land on the same two CPUs). It
//! is a hint: where the process may use fewer than two CPUs, on a system other than Linux, or
//! when the system refuses, the threads run where the scheduler puts them. Nothing else
//! changes: the same ticks, the same store.

/// The two CPUs of a placed backtest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The tick's thread.
    pub tick: usize,
    /// The runtime's threads, and the store's thread they start.
    pub store: usize,
}

/// The CPUs for a backtest whose process may run on `allowed` (ascending) and whose tick's
/// thread runs on `current`: the tick's thread stays where it is, the store's threads take the
/// next allowed CPU after it (wrapping around). `None` with fewer than two allowed CPUs.
pub(crate) fn choose(allowed: &[usize], current: usize) -> Option<Placement> {
    if allowed.len() < 2 {
        return None;
    }
    // The current CPU is normally allowed; if not (the mask changed under us), start from the
    // first allowed one.
    let tick = if allowed.contains(&current) {
        current
    } else {
        allowed[0]
    };
    let store = allowed
        .iter()
        .copied()
        .find(|&c| c > tick)
        .unwrap_or(allowed[0]);
    Some(Placement { tick, store })
}

/// The placement for the calling thread's process, or `None` (see the module docs).
pub(crate) fn plan() -> Option<Placement> {
    imp::plan()
}

impl Placement {
    /// Pins the calling thread to the store's CPU (a runtime thread, as it starts). A refusal
    /// leaves it where it was.
    pub(crate) fn pin_store_thread(self) {
        imp::pin(self.store);
    }

    /// Pins the calling thread to the tick's CPU until the guard is dropped, which gives it
    /// back the CPUs it had.
    pub(crate) fn pin_tick_thread(self) -> Pinned {
        Pinned(imp::pin(self.tick))
    }
}

/// The tick's thread pinned; dropping it restores the thread's CPUs as they were.
pub(crate) struct Pinned(Option<imp::Mask>);

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(mask) = self.0.take() {
            imp::restore(&mask);
        }
    }
}

/// The CPU a thread last ran on, from its `/proc/<pid>/task/<tid>/stat` line: the 39th field,
/// counting the command name (in parentheses, which may hold spaces and parentheses of its own)
/// as the 2nd. `None` for a line that does not have it. (Only Linux reads it; the tests run
/// everywhere.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cpu_of_stat(stat: &str) -> Option<usize> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields 3.. follow the name: the 39th is the 37th of them.
    after_name
        .split_whitespace()
        .nth(39 - 3)
        .and_then(|f| f.parse().ok())
}

#[cfg(target_os = "linux")]
mod imp {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

    pub(super) type Mask = CpuSet;

    pub(super) fn plan() -> Option<super::Placement> {
        let mask = sched_getaffinity(None).ok()?;
        let allowed: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| mask.is_set(c)).collect();
        // Read from procfs, not `sched_getcpu`: rustix answers that from the vDSO, whose ELF
        // header it parses, and under valgrind (callgrind is how the README counts
        // instructions) there is none and the process crashed.
        let current = std::fs::read_to_string("/proc/thread-self/stat")
            .ok()
            .and_then(|stat| super::cpu_of_stat(&stat))
            .unwrap_or(usize::MAX);
        super::choose(&allowed, current)
    }

    /// Pins the calling thread to `cpu`; returns the CPUs it had, `None` when refused.
    pub(super) fn pin(cpu: usize) -> Option<Mask> {
        let before = sched_getaffinity(None).ok()?;
        let mut one = CpuSet::new();
        one.set(cpu);
        sched_setaffinity(None, &one).ok().map(|()| before)
    }

    pub(super) fn restore(mask: &Mask) {
        // Best effort: the thread keeps running either way.
        let _ = sched_setaffinity(None, mask);
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) type Mask = ();

    pub(super) fn plan() -> Option<super::Placement> {
        None
    }

    pub(super) fn pin(_cpu: usize) -> Option<Mask> {
        None
    }

    pub(super) fn restore(_mask: &Mask) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tick_stays_on_its_cpu_and_the_store_takes_the_next_allowed() {
        /// (allowed CPUs, current CPU) → (tick, store)
        type Case = (&'static [usize], usize, Option<(usize, usize)>);
        let cases: &[Case] = &[
            (&[0, 1], 0, Some((0, 1))),
            (&[0, 1], 1, Some((1, 0))),
            // the next allowed CPU after the tick's, wrapping around
            (&[2, 5, 7], 5, Some((5, 7))),
            (&[2, 5, 7], 7, Some((7, 2))),
            (&[0, 1, 2, 3], 1, Some((1, 2))),
            // a current CPU outside the mask: the first allowed one
            (&[4, 6], 0, Some((4, 6))),
            // one CPU, or none: nothing to place
            (&[3], 3, None),
            (&[], 0, None),
        ];
        for &(allowed, current, want) in cases {
            let got = choose(allowed, current).map(|p| (p.tick, p.store));
            assert_eq!(got, want, "allowed {allowed:?}, current {current}");
        }
    }

    #[test]
    fn the_cpu_is_the_39th_field_of_a_stat_line_whatever_the_name() {
        let rest = "S 1 1 1 0 -1 4194560 12 0 0 0 0 0 0 0 20 0 1 0 252515 3133440 393 \
                    18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0";
        for (name, cpu) in [("sim-worker", 1), ("a b) (c", 0), ("))", 7)] {
            let line = format!("42 ({name}) {}\n", rest.replace("{cpu}", &cpu.to_string()));
            assert_eq!(cpu_of_stat(&line), Some(cpu), "{line}");
        }
        assert_eq!(cpu_of_stat("42 (cut short) S 1 1"), None);
        assert_eq!(cpu_of_stat("no name at all"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_threads_stat_line_names_a_cpu_it_may_run_on() {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
        let cpu = cpu_of_stat(&stat).expect("a CPU field");
        let mask = rustix::thread::sched_getaffinity(None).expect("the thread's CPUs");
        assert!(mask.is_set(cpu), "CPU {cpu} of {mask:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_tick_thread_is_pinned_while_the_guard_lives_and_released_after() {
        use rustix::thread::sched_getaffinity;
        let count = |m: &rustix::thread::CpuSet| m.count();
        let before = sched_getaffinity(None).expect("the thread's CPUs");
        let Some(placement) = plan() else {
            // A machine (or a test harness's mask) with one CPU: nothing is placed.
            assert!(count(&before) < 2, "two or more CPUs and no placement");
            return;
        };
        assert_ne!(placement.tick, placement.store);
        {
            let _pinned = placement.pin_tick_thread();
            let now = sched_getaffinity(None).expect("the thread's CPUs");
            assert_eq!(count(&now), 1);
            assert!(now.is_set(placement.tick));
        }
        let after = sched_getaffinity(None).expect("the thread's CPUs");
        assert_eq!(after, before, "the guard gives the thread its CPUs back");
        // A thread pinned to the store's CPU, as the runtime's threads are.
        let store = std::thread::spawn(move || {
            placement.pin_store_thread();
            sched_getaffinity(None).expect("the thread's CPUs")
        })
        .join()
        .expect("the pinned thread");
        assert_eq!(count(&store), 1);
        assert!(store.is_set(placement.store));
    }
}
