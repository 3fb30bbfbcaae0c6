//! Host facts recorded with each run, so that a result says what machine it came from.
//!
//! Everything is read from /proc, /sys and libc calls: no process is spawned, so gathering facts
//! is cheap and cannot fail for want of a tool. A fact that cannot be read is left empty rather
//! than failing the run.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fs;

/// The sysctls that web-server benchmark write-ups tune; recorded so that two runs can be told
/// apart by their kernel settings, and checked by `httpbench doctor`.
pub const SYSCTLS: &[&str] = &[
    "net.core.somaxconn",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_max_syn_backlog",
    "net.core.netdev_max_backlog",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_syncookies",
    "fs.file-max",
    "fs.nr_open",
    "net.ipv4.tcp_congestion_control",
    "net.core.rmem_max",
    "net.core.wmem_max",
];

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HostFacts {
    /// `model name` of /proc/cpuinfo; `None` where the architecture does not report one.
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus: usize,
    /// CPU ids this process may run on (its affinity mask): what pinning can choose from.
    pub cpus_allowed: Vec<usize>,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// `PRETTY_NAME` of /etc/os-release.
    pub distro: Option<String>,
    pub memory_bytes: u64,
    pub hostname: String,
    /// Whether this process may use io_uring, judged from kernel.io_uring_disabled. When the file
    /// is missing (kernels before 6.6) it is assumed enabled; the engine still probes at run time
    /// and falls back to epoll.
    pub io_uring_enabled: bool,
    /// RLIMIT_NOFILE; `None` means unlimited.
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
    /// [`SYSCTLS`] that this kernel has, name to value.
    pub sysctls: BTreeMap<String, String>,
}

pub fn facts() -> HostFacts {
    let (kernel, hostname) = uname();
    let (nofile_soft, nofile_hard) = nofile();
    HostFacts {
        cpu_model: cpu_model(),
        cpus: online_cpus(),
        cpus_allowed: cpus_allowed(),
        kernel,
        distro: distro(),
        memory_bytes: memory_bytes(),
        hostname,
        io_uring_enabled: io_uring_enabled(),
        nofile_soft,
        nofile_hard,
        sysctls: SYSCTLS
            .iter()
            .filter_map(|name| Some((name.to_string(), sysctl(name)?)))
            .collect(),
    }
}

/// A sysctl's value: the file's text with whitespace runs folded to one space (ip_local_port_range
/// is tab-separated in the file).
fn sysctl(name: &str) -> Option<String> {
    let text = fs::read_to_string(format!("/proc/sys/{}", name.replace('.', "/"))).ok()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// The CPUs this process may run on (empty if the kernel would not say).
pub fn cpus_allowed() -> Vec<usize> {
    // SAFETY: the set is plain data, zeroed is its empty value, and its size is passed along.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// (release, nodename) from uname(2).
fn uname() -> (String, String) {
    // SAFETY: utsname is plain data that uname fills with NUL-terminated strings.
    let uts = unsafe {
        let mut uts: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut uts) != 0 {
            return (String::new(), String::new());
        }
        uts
    };
    // SAFETY: uname NUL-terminates both fields within their arrays.
    let field = |chars: &[libc::c_char]| {
        unsafe { CStr::from_ptr(chars.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (field(&uts.release), field(&uts.nodename))
}

fn distro() -> Option<String> {
    let text = fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("PRETTY_NAME="))
        .map(|value| value.trim().trim_matches('"').to_string())
}

fn memory_bytes() -> u64 {
    let kib = fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
    });
    kib.unwrap_or(0) * 1024
}

fn io_uring_enabled() -> bool {
    // 0: everyone may; 1: only CAP_SYS_ADMIN or members of kernel.io_uring_group (approximated
    // here by root); 2: nobody.
    match sysctl("kernel.io_uring_disabled").as_deref() {
        None | Some("0") => true,
        // SAFETY: geteuid has no preconditions.
        Some("1") => unsafe { libc::geteuid() == 0 },
        Some(_) => false,
    }
}

/// Raise this process's open-file limit to its hard limit, as programs that hold a descriptor per
/// connection must; returns the limit then in force.
pub fn raise_open_files_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on an rlimit that we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        }
    }
    limit
}

fn nofile() -> (Option<u64>, Option<u64>) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit that we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return (None, None);
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is 32 bits wide on some targets
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v as u64);
    (finite(limit.rlim_cur), finite(limit.rlim_max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_describe_this_host() {
        let f = facts();
        assert!(!f.kernel.is_empty());
        assert!(f.cpus >= 1);
        assert!(!f.cpus_allowed.is_empty());
        assert!(f.memory_bytes > 0);
        // Every Linux kernel has somaxconn; a present value is folded to single spaces.
        assert!(f.sysctls.contains_key("net.core.somaxconn"));
        assert!(f
            .sysctls
            .values()
            .all(|v| !v.contains("  ") && !v.contains('\t')));
    }
}
