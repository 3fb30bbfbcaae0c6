//! Ctrl-C ends the run early but still reports what it measured.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Run `f` with SIGINT turned into a stop request, then put back whatever handler was there
/// before (Python's, when called from the Python module).
pub fn on_ctrl_c<T>(f: impl FnOnce(&AtomicBool) -> T) -> T {
    INTERRUPTED.store(false, Ordering::Relaxed);
    // SAFETY: installs an async-signal-safe handler (one atomic store) and restores the old one.
    unsafe {
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_sigint as *const () as usize;
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGINT, &new, &mut old);
        let out = f(&INTERRUPTED);
        libc::sigaction(libc::SIGINT, &old, std::ptr::null_mut());
        out
    }
}

pub fn was_interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
