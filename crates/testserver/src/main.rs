//! httpbench-testserver: a tiny HTTP/1.1 server for the engine's tests. It
//! provides ground truth (`slots`: known throughput and latency) and faults a
//! real server will not produce on demand (resets, stalls, short bodies...).
//! Thread per connection on std::net: simple, and plenty for hundreds of
//! connections.

mod http;
mod serve;
mod slots;

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::exit;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use serve::{Config, Freeze, Mode, ANSWERED};
use slots::Slots;

const USAGE: &str = "\
usage: httpbench-testserver --listen 127.0.0.1:0 --mode MODE [options]

Binds a loopback address only, prints `listening ADDR:PORT`, serves until
killed or until --max-seconds.

modes:
  ok            200 with --body-bytes of `x`, keep-alive unless the request closes
  slots         like ok, but each request holds one of --slots K global slots for
                exactly --hold-ms D first (throughput K/D, latency D), or for D plus
                a uniform amount in [-S, S] with --spread-ms S (mean latency D)
  freeze        like ok, but no response is written during --freeze-ms F out of
                every --every-ms E (first freeze at E after start)
  reset         read a request, then close with RST
  stall         read a request, never answer
  short-body    Content-Length: 100 with only 50 bytes of body, then FIN
  garbage       `this is not http\\r\\n\\r\\n`, then FIN
  close-each    like ok with `Connection: close`, FIN after each response
  ignore-close  like ok, but keep-alive even when the request says close
  chunked       --body-bytes in 3-byte chunks with extension `;x=1` and trailer `X-T: 1`
  status        every response has status --status CODE
  deaf          like ok for the first connection, then never accepts again, with
                a listen backlog of 0: later connects hang (connect timeouts)

options:
  --body-bytes N    response body size (default 7)
  --slots K         slots mode: concurrent holders (required)
  --hold-ms D       slots mode: hold per request in ms, fractions allowed (required)
  --spread-ms S     slots mode: spread of the hold, 0 <= S <= D (default 0)
  --freeze-ms F     freeze mode (default 1000)
  --every-ms E      freeze mode (default 3000, must exceed F)
  --status CODE     status mode, 200..=599 (204 and 304 are sent without body)
  --count-file PATH keep PATH holding the number of requests answered
                    (rewritten atomically every 20 ms)
  --max-seconds S   exit by itself after S seconds (default 120)
";

/// Serialises count-file writes: the periodic writer and the exit path share one tmp file.
static COUNT_FILE_LOCK: Mutex<()> = Mutex::new(());

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse_args(&args).unwrap_or_else(|msg| fail(&msg));

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
    let backlog = if opts.config.mode == Mode::Deaf { 0 } else { 4096 };
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

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (mut mode, mut body_bytes, mut status) = (None, 7usize, 200u16);
    let (mut slots, mut hold_ms, mut spread_ms) = (None::<usize>, None::<f64>, 0.0f64);
    let (mut freeze_ms, mut every_ms) = (1000.0f64, 3000.0f64);
    let (mut count_file, mut max_seconds) = (None, 120.0f64);

    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "-h" || arg == "--help" {
            print!("{USAGE}");
            exit(0);
        }
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (arg.as_str(), None),
        };
        let value = match inline {
            Some(v) => v,
            None => it.next().cloned().ok_or(format!("{flag} needs a value"))?,
        };
        match flag {
            "--listen" => {
                listen = value
                    .parse()
                    .map_err(|_| format!("--listen: not an IP:PORT: {value}"))?
            }
            "--mode" => mode = Some(parse_mode(&value)?),
            "--body-bytes" => body_bytes = num(flag, &value)?,
            "--status" => status = num(flag, &value)?,
            "--slots" => slots = Some(num(flag, &value)?),
            "--hold-ms" => hold_ms = Some(num(flag, &value)?),
            "--spread-ms" => spread_ms = num(flag, &value)?,
            "--freeze-ms" => freeze_ms = num(flag, &value)?,
            "--every-ms" => every_ms = num(flag, &value)?,
            "--count-file" => count_file = Some(PathBuf::from(value)),
            "--max-seconds" => max_seconds = num(flag, &value)?,
            _ => return Err(format!("unknown option {flag} (see --help)")),
        }
    }

    // This server exists to be hammered by load tests; never let a typo
    // expose it beyond the machine.
    if !listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on non-loopback address {}",
            listen.ip()
        ));
    }
    let mode = mode.ok_or("--mode is required (see --help)")?;
    if !(max_seconds > 0.0 && max_seconds.is_finite()) {
        return Err("--max-seconds must be positive".into());
    }
    if !(200..=599).contains(&status) {
        return Err("--status must be in 200..=599".into());
    }
    let slots = match mode {
        Mode::Slots => {
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
    Ok(Options {
        listen,
        count_file,
        max_seconds,
        config: Config {
            mode,
            body: vec![b'x'; body_bytes],
            status,
            slots,
            freeze,
        },
    })
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    Ok(match s {
        "ok" => Mode::Ok,
        "slots" => Mode::Slots,
        "freeze" => Mode::Freeze,
        "reset" => Mode::Reset,
        "stall" => Mode::Stall,
        "short-body" => Mode::ShortBody,
        "garbage" => Mode::Garbage,
        "close-each" => Mode::CloseEach,
        "ignore-close" => Mode::IgnoreClose,
        "chunked" => Mode::Chunked,
        "status" => Mode::Status,
        "deaf" => Mode::Deaf,
        _ => return Err(format!("unknown mode {s} (see --help)")),
    })
}

fn num<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: not a valid number: {value}"))
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
