//! httpbench-reference: serve a directory until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};

const USAGE: &str = "\
usage: httpbench-reference --root DIR [--host 127.0.0.1] [--port 8080] [--threads N]

Serves the files under DIR, read into memory at start, over HTTP/1.1 until SIGINT
or SIGTERM. --threads: event loops, each pinned to one CPU of the process's
affinity mask (default 0: one per CPU of the mask).
";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    let (mut root, mut host, mut port, mut threads) =
        (None, "127.0.0.1".to_string(), 8080u16, 0usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            print!("{USAGE}");
            return;
        }
        let value = args
            .next()
            .unwrap_or_else(|| fail(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--root" => root = Some(PathBuf::from(&value)),
            "--host" => host = value.clone(),
            "--port" => port = number(&flag, &value),
            "--threads" => threads = number(&flag, &value),
            _ => fail(&format!("unknown option {flag}")),
        }
    }
    let root = root.unwrap_or_else(|| fail("--root is required"));
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let server =
        httpbench_reference::Server::bind(&root, &host, port, threads).unwrap_or_else(|e| fail(&e));
    eprintln!("{}", server.banner(&root));
    server.run(&STOP).unwrap_or_else(|e| fail(&e));
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| fail(&format!("{flag}: {value:?} is not a number in range")))
}

fn fail(message: &str) -> ! {
    eprintln!("httpbench-reference: error: {message}\n\n{USAGE}");
    exit(2)
}
