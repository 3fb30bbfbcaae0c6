//! Ground truth for `--mode slots`: a FIFO counting semaphore of K slots, each
//! request holding one for exactly D, or for D plus a uniform amount in [-S, S]
//! (so that responses do not come back in step).
//!
//! The hold is measured on a *logical* clock: a slot handed from one request to
//! the next becomes free at the previous holder's deadline, not at the moment
//! its thread happened to wake up. Scheduler oversleep therefore delays
//! individual responses a little but never accumulates, so throughput stays at
//! K/D instead of drifting towards K/(D + wakeup latency).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

pub struct Slots {
    hold: Duration,
    spread: Duration,
    state: Mutex<State>,
}

struct State {
    /// xorshift64 state for the spread: the same sequence of holds every run.
    rng: u64,
    /// Slots nobody holds. Invariant: `free > 0` implies `waiters` is empty,
    /// because a release hands its slot straight to the first waiter.
    free: usize,
    waiters: VecDeque<Arc<Waiter>>,
}

struct Waiter {
    thread: Thread,
    /// Set by the releaser to the instant the slot logically became free.
    granted: Mutex<Option<Instant>>,
}

impl Slots {
    pub fn new(slots: usize, hold: Duration, spread: Duration) -> Self {
        Slots {
            hold,
            spread,
            state: Mutex::new(State {
                rng: 0x9e37_79b9_7f4a_7c15,
                free: slots,
                waiters: VecDeque::new(),
            }),
        }
    }

    /// Blocks for the queueing time plus exactly the hold; returns once the
    /// slot has been released, so the caller writes its response after it.
    pub fn hold(&self) {
        let acquired = self.acquire();
        let deadline = acquired + self.this_hold();
        let now = Instant::now();
        if deadline > now {
            thread::sleep(deadline - now);
        }
        self.release(deadline);
    }

    fn this_hold(&self) -> Duration {
        if self.spread.is_zero() {
            return self.hold;
        }
        let mut state = self.state.lock().unwrap();
        state.rng ^= state.rng << 13;
        state.rng ^= state.rng >> 7;
        state.rng ^= state.rng << 17;
        let u = (state.rng >> 11) as f64 / (1u64 << 53) as f64; // uniform in [0, 1)
        (self.hold + self.spread.mul_f64(2.0 * u)).saturating_sub(self.spread)
    }

    fn acquire(&self) -> Instant {
        let mut state = self.state.lock().unwrap();
        let arrived = Instant::now();
        if state.free > 0 {
            state.free -= 1;
            return arrived;
        }
        let me = Arc::new(Waiter {
            thread: thread::current(),
            granted: Mutex::new(None),
        });
        state.waiters.push_back(me.clone());
        drop(state);
        loop {
            if let Some(freed_at) = *me.granted.lock().unwrap() {
                // We may have queued after the slot freed but before its
                // holder woke up to hand it over; the hold starts at whichever
                // came last.
                return freed_at.max(arrived);
            }
            // Spurious wakeups are fine: the loop re-checks `granted`, and an
            // unpark that lands before this park is not lost (token semantics).
            thread::park();
        }
    }

    fn release(&self, freed_at: Instant) {
        let mut state = self.state.lock().unwrap();
        match state.waiters.pop_front() {
            Some(next) => {
                *next.granted.lock().unwrap() = Some(freed_at);
                next.thread.unpark();
            }
            None => state.free += 1,
        }
    }
}
