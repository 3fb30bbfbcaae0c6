//! The engine's own CPU use, so that a report can say when the client, not the server, was the
//! bottleneck.

use std::time::Duration;

/// User and system CPU time of the calling thread, and the time it was ready to run but waited
/// for its CPU: a client thread starved by other processes on a shared machine sets the pace as
/// surely as a busy one, yet its CPU time alone would not say so.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub sys: Duration,
    /// Zero where the kernel keeps no scheduler statistics.
    pub waiting: Duration,
}

impl CpuTime {
    pub fn of_this_thread() -> CpuTime {
        // SAFETY: getrusage only writes into the zeroed struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
        CpuTime {
            user: tv(ru.ru_utime),
            sys: tv(ru.ru_stime),
            waiting: runqueue_wait().unwrap_or_default(),
        }
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
            waiting: self.waiting.saturating_sub(earlier.waiting),
        }
    }

    pub fn total(self) -> Duration {
        self.user + self.sys
    }
}

/// The calling thread's time on a run queue: the second field of its schedstat (CONFIG_SCHED_INFO).
fn runqueue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace()
        .nth(1)?
        .parse()
        .ok()
        .map(Duration::from_nanos)
}

/// Pin the calling thread to one CPU.
pub fn pin_this_thread(cpu: usize) -> std::io::Result<()> {
    pin_this_thread_to(&[cpu])
}

/// Let the calling thread run on `cpus` only.
pub fn pin_this_thread_to(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
