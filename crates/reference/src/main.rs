//! httpbench-reference: serve a directory until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};

const USAGE: &str = "\
usage: httpbench-reference --root DIR [--host 127.0.0.1] [--port 8080] [--threads N]
                           [--tls-cert FILE --tls-key FILE [--tls-version 1.2|1.3]]

Serves the files under DIR, read into memory at start, over HTTP/1.1 until SIGINT
or SIGTERM. --threads: event loops, each pinned to one CPU of the process's
affinity mask (default 0: one per CPU of the mask).

--tls-cert FILE --tls-key FILE: serve HTTPS instead (both or neither): FILE is
PEM, the certificate chain (server's first) and its private key (ECDSA or RSA;
PKCS#8, SEC1 or PKCS#1). TLS 1.3 and 1.2 with rustls, ALPN http/1.1, session
resumption by TLS 1.3 tickets, TLS 1.2 tickets and TLS 1.2 session IDs.
--tls-version: speak that version only (a plan that pins one measures every
server at it).
";

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    let (mut root, mut host, mut port, mut threads) =
        (None, "127.0.0.1".to_string(), 8080u16, 0usize);
    let (mut cert, mut key, mut version) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            print!("{USAGE}");
            return;
        }
        let value = args
            .next()
            .unwrap_or_else(|| usage_error(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--root" => root = Some(PathBuf::from(&value)),
            "--host" => host = value.clone(),
            "--port" => port = number(&flag, &value),
            "--threads" => threads = number(&flag, &value),
            "--tls-cert" => cert = Some(PathBuf::from(&value)),
            "--tls-key" => key = Some(PathBuf::from(&value)),
            "--tls-version" => version = Some(value.clone()),
            _ => usage_error(&format!("unknown option {flag}")),
        }
    }
    let root = root.unwrap_or_else(|| usage_error("--root is required"));
    let tls = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) if version.is_some() => {
            usage_error("--tls-version needs --tls-cert and --tls-key: it pins HTTPS's version")
        }
        (None, None) => None,
        (Some(_), None) => {
            usage_error("--tls-cert needs --tls-key: give both, or neither for HTTP")
        }
        (None, Some(_)) => {
            usage_error("--tls-key needs --tls-cert: give both, or neither for HTTP")
        }
    };
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let server = httpbench_reference::Server::bind(&root, &host, port, threads)
        .and_then(|server| match &tls {
            Some((cert, key)) => server.with_tls(cert, key, version.as_deref()),
            None => Ok(server),
        })
        .unwrap_or_else(|e| fail(&e));
    eprintln!("{}", server.banner(&root));
    server.run(&STOP).unwrap_or_else(|e| fail(&e));
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| usage_error(&format!("{flag}: {value:?} is not a number in range")))
}

/// A command line this program cannot parse: the error and the usage.
fn usage_error(message: &str) -> ! {
    eprintln!("httpbench-reference: error: {message}\n\n{USAGE}");
    exit(2)
}

/// What the command line names cannot be served (no such root, port taken, a certificate or key
/// that will not do): one line saying so.
fn fail(message: &str) -> ! {
    eprintln!("httpbench-reference: error: {message}");
    exit(2)
}
