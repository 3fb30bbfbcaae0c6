//! The engine's own CPU use, so that a report can say when the client, not the server, was the
//! bottleneck.

use std::time::Duration;

/// User and system CPU time of the calling thread.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    pub user: Duration,
    pub sys: Duration,
}

impl CpuTime {
    pub fn of_this_thread() -> CpuTime {
        Self::rusage(libc::RUSAGE_THREAD)
    }

    fn rusage(who: libc::c_int) -> CpuTime {
        // SAFETY: getrusage only writes into the zeroed struct we own.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
        CpuTime { user: tv(ru.ru_utime), sys: tv(ru.ru_stime) }
    }

    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime { user: self.user.saturating_sub(earlier.user), sys: self.sys.saturating_sub(earlier.sys) }
    }

    pub fn total(self) -> Duration {
        self.user + self.sys
    }
}

/// Pin the calling thread to one CPU.
pub fn pin_this_thread(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
