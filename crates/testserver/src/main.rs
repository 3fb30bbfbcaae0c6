//! httpbench-testserver: a tiny HTTP/1.1 and HTTP/2 server for the engine's tests. It
//! provides ground truth (`slots`: known throughput and latency) and faults a
//! real server will not produce on demand (resets, stalls, short bodies, and TLS handshakes that
//! fail or TLS sessions that end without close_notify: `tls`), and HTTP/2 servers that misbehave
//! (`h2`).
//! Thread per connection on std::net: simple, and plenty for hundreds of
//! connections.

mod config;
mod h2;
mod http;
mod serve;
mod slots;
mod tls;

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::exit;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;
use config::{Config, Freeze, Mode, ANSWERED};
use slots::Slots;

/// A tiny HTTP/1.1 server (HTTP/2 in the h2-* modes) for the engine's tests. Binds a loopback
/// address only, prints `listening ADDR:PORT`, serves until killed or until --max-seconds.
#[derive(Parser)]
#[command(name = "httpbench-testserver", version)]
struct Args {
    /// The address to listen on: loopback only.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// What every connection gets.
    #[arg(long, value_enum)]
    mode: Mode,
    /// Response body size.
    #[arg(long, value_name = "N", default_value_t = 7)]
    body_bytes: usize,
    /// Slots mode: concurrent holders (required).
    #[arg(long, value_name = "K")]
    slots: Option<usize>,
    /// Slots mode: hold per request in ms, fractions allowed (required).
    #[arg(long, value_name = "D")]
    hold_ms: Option<f64>,
    /// Slots mode: spread of the hold, 0 <= S <= D.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    spread_ms: f64,
    /// Freeze mode: how long each freeze lasts.
    #[arg(long, value_name = "F", default_value_t = 1000.0)]
    freeze_ms: f64,
    /// Freeze mode: one freeze every E ms (must exceed F).
    #[arg(long, value_name = "E", default_value_t = 3000.0)]
    every_ms: f64,
    /// Status mode: every response's status (204 and 304 are sent without body).
    #[arg(long, value_name = "CODE", default_value_t = 200,
          value_parser = clap::value_parser!(u16).range(200..=599))]
    status: u16,
    /// Status mode: every K-th answer of a connection (its first included) is ok's 200, only the
    /// others have --status: a server shedding load, which passes a check of one answer.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    ok_every: Option<u64>,
    /// h2-rst-stream and h2-refuse-stream: every K-th request of a connection gets the fault.
    #[arg(long, value_name = "K", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// h2-goaway, h2-goaway-unprocessed: the GOAWAY comes after N requests of a connection.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u64).range(1..))]
    goaway_after: u64,
    /// close-reused: each connection answers N requests, then closes on the next one.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(1..))]
    close_after: u64,
    /// TLS modes that complete a handshake, and h2-* modes over TLS (ALPN h2): the server's
    /// certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS modes that complete a handshake, and h2-* modes over TLS: the certificate's private
    /// key (PEM; ECDSA or RSA).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Keep PATH holding the number of requests answered (rewritten atomically every 20 ms).
    #[arg(long, value_name = "PATH")]
    count_file: Option<PathBuf>,
    /// Exit by itself after S seconds.
    #[arg(long, value_name = "S", default_value_t = 120.0)]
    max_seconds: f64,
}

/// Serialises count-file writes: the periodic writer and the exit path share one tmp file.
static COUNT_FILE_LOCK: Mutex<()> = Mutex::new(());

fn main() {
    let opts = options(Args::parse()).unwrap_or_else(|msg| fail(&msg));

    // The whole point of `slots` is precise sleeps; the default 50 us timer
    // slack would show up as latency. Threads inherit this setting.
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };

    let listener = TcpListener::bind(opts.listen)
        .unwrap_or_else(|e| fail(&format!("cannot listen on {}: {e}", opts.listen)));
    // std listens with a small backlog; listen() again on a listening socket
    // just sets it (capped by net.core.somaxconn), so bursts of connects
    // from a load generator are not dropped; or, for `deaf`, so that the
    // kernel drops every SYN once one connection waits unaccepted.
    let backlog = if opts.config.mode == Mode::Deaf {
        0
    } else {
        4096
    };
    // SAFETY: valid listening fd.
    unsafe { libc::listen(listener.as_raw_fd(), backlog) };
    let local = listener
        .local_addr()
        .unwrap_or_else(|e| fail(&format!("local_addr: {e}")));

    if let Some(path) = &opts.count_file {
        // The file exists (with 0) before a test learns the port.
        write_count(path);
        let path = path.clone();
        thread::spawn(move || count_writer(&path));
    }
    let max_seconds = opts.max_seconds;
    let count_file = opts.count_file.clone();
    thread::spawn(move || {
        thread::sleep(Duration::from_secs_f64(max_seconds));
        if let Some(path) = &count_file {
            write_count(path);
        }
        exit(0);
    });

    let cfg: &'static Config = Box::leak(Box::new(opts.config));
    println!("listening {local}");
    io::stdout().flush().unwrap_or_else(|_| exit(1));

    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                // Small stacks: the per-connection state lives on the heap,
                // and hundreds of threads should not reserve 2 MiB each.
                let spawned = thread::Builder::new()
                    .stack_size(128 * 1024)
                    .spawn(move || serve::serve(stream, cfg));
                if let Err(e) = spawned {
                    eprintln!("httpbench-testserver: cannot spawn connection thread: {e}");
                }
                if cfg.mode == Mode::Deaf {
                    // Until --max-seconds ends the process.
                    loop {
                        thread::park();
                    }
                }
            }
            // Typically EMFILE or ECONNABORTED: back off briefly instead of
            // spinning, and keep serving.
            Err(_) => thread::sleep(Duration::from_millis(10)),
        }
    }
}

struct Options {
    listen: SocketAddr,
    count_file: Option<PathBuf>,
    max_seconds: f64,
    config: Config,
}

/// The flags' meaning, checked beyond what clap checks alone.
fn options(args: Args) -> Result<Options, String> {
    let Args {
        listen,
        mode,
        body_bytes,
        slots,
        hold_ms,
        spread_ms,
        freeze_ms,
        every_ms,
        status,
        ok_every,
        every,
        goaway_after,
        close_after,
        tls_cert,
        tls_key,
        count_file,
        max_seconds,
    } = args;
    // This server exists to be hammered by load tests; never let a typo
    // expose it beyond the machine.
    if !listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on non-loopback address {}",
            listen.ip()
        ));
    }
    if !(max_seconds > 0.0 && max_seconds.is_finite()) {
        return Err("--max-seconds must be positive".into());
    }
    let slots = match mode {
        Mode::Slots | Mode::H2Slots => {
            let k = slots
                .filter(|&k| k > 0)
                .ok_or("slots mode needs --slots K > 0")?;
            let d = hold_ms
                .filter(|d| *d > 0.0 && d.is_finite())
                .ok_or("slots mode needs --hold-ms D > 0")?;
            if !(0.0..=d).contains(&spread_ms) {
                return Err("slots mode needs 0 <= --spread-ms <= --hold-ms".into());
            }
            let ms = |v: f64| Duration::from_secs_f64(v / 1000.0);
            Some(Slots::new(k, ms(d), ms(spread_ms)))
        }
        _ => None,
    };
    let freeze = match mode {
        Mode::Freeze => {
            if !(freeze_ms >= 0.0 && every_ms > freeze_ms && every_ms.is_finite()) {
                return Err("freeze mode needs 0 <= --freeze-ms < --every-ms".into());
            }
            Some(Freeze {
                start: Instant::now(),
                every: Duration::from_secs_f64(every_ms / 1000.0),
                length: Duration::from_secs_f64(freeze_ms / 1000.0),
            })
        }
        _ => None,
    };
    let tls = match (&tls_cert, &tls_key) {
        (Some(_), _) if !mode.is_tls() && !mode.is_h2() => {
            return Err(format!(
                "--mode {} is plain HTTP: drop --tls-cert/--tls-key, or pick a tls-* or h2-* mode",
                mode.name()
            ))
        }
        (Some(cert), Some(key)) if mode.needs_certificate() || mode.is_h2() => {
            Some(tls::config(cert, key, mode.is_h2())?)
        }
        _ if mode.needs_certificate() => {
            return Err(format!(
                "--mode {} completes TLS handshakes: give --tls-cert FILE --tls-key FILE",
                mode.name()
            ))
        }
        _ => None,
    };
    Ok(Options {
        listen,
        count_file,
        max_seconds,
        config: Config {
            mode,
            body: vec![b'x'; body_bytes],
            status,
            ok_every,
            slots,
            freeze,
            h2_every: every,
            h2_goaway_after: goaway_after,
            close_after,
            tls,
        },
    })
}

fn fail(msg: &str) -> ! {
    eprintln!("httpbench-testserver: {msg}");
    exit(2);
}

/// Rewrites the count file every 20 ms when the count changed, so a test
/// that waits 100 ms after its last response reads the exact total.
fn count_writer(path: &Path) {
    let mut written = 0;
    loop {
        thread::sleep(Duration::from_millis(20));
        let now = ANSWERED.load(Ordering::Relaxed);
        if now != written {
            written = write_count(path);
        }
    }
}

/// Writes the current count via tmp + rename so a reader never sees a
/// partial number; returns the count written.
fn write_count(path: &Path) -> u64 {
    let _guard = COUNT_FILE_LOCK.lock().unwrap();
    let count = ANSWERED.load(Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    if let Err(e) =
        std::fs::write(&tmp, count.to_string()).and_then(|_| std::fs::rename(&tmp, path))
    {
        eprintln!("httpbench-testserver: cannot write {}: {e}", path.display());
    }
    count
}
