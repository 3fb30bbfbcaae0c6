//! The `httpbench-load` command line, as a library so that the Python module runs the very same
//! flags (`httpbench load ...`) instead of a second definition of them.

mod args;
mod interrupt;
mod summary;
mod urls;
mod verdict;

use clap::Parser;
use httpbench_engine::{capacity, ErrorKind};

/// Run the command line with `args` (the first one is the program name, which starts its error
/// lines); returns the exit code: 0 done, 1 the run ended early (what it measured is still
/// printed), 2 bad input, 3 a capacity search found no rate meeting its objective, or more
/// requests did not succeed than `--max-errors` allows (answers with another status than
/// `--expect-status`, failed requests: `Report::error_share`; the last line says how many and
/// why), 101 a bug in the engine (where a panic does not end the process), 130 Ctrl-C.
pub fn main_with_args<I: IntoIterator<Item = String>>(args: I) -> i32 {
    let args: Vec<String> = args.into_iter().collect();
    let program = match args.first() {
        Some(path) => path.rsplit('/').next().unwrap_or(path).to_string(),
        None => "httpbench-load".to_string(),
    };
    let cli = match args::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            if code == 2 {
                // clap's own message, kept to its first line: what is wrong, then the hint.
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid arguments");
                eprintln!(
                    "{program}: {}; see --help",
                    first.trim_start_matches("error: ")
                );
            } else {
                let _ = e.print();
            }
            return code;
        }
    };
    let spec = match cli.to_spec() {
        Ok(spec) => spec,
        Err(msg) => {
            eprintln!("{program}: {msg}");
            return 2;
        }
    };
    let search = match cli.capacity() {
        Ok(search) => search,
        Err(msg) => {
            eprintln!("{program}: {msg}");
            return 2;
        }
    };
    let outcome = interrupt::on_ctrl_c(|stop| match search {
        Some((mut search, pool)) => {
            let objective = search.objective().clone();
            let mut index = 0;
            capacity::run_until(&spec, &mut search, pool, stop, |probe| {
                index += 1;
                let line = verdict::probe_line(index, probe, &objective);
                // Live, and out of the way of the JSON on stdout.
                if cli.json {
                    eprintln!("{line}");
                } else {
                    println!("{line}");
                }
            })
        }
        None => httpbench_engine::run_until(&spec, stop),
    });
    let report = match outcome {
        Ok(report) => report,
        Err(e) => {
            eprintln!("{program}: {}", in_flags(&e.kind));
            return if matches!(e.kind, ErrorKind::Panicked { .. }) {
                101
            } else {
                2
            };
        }
    };
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("reports serialise")
        );
    } else {
        if report.capacity.is_some() {
            println!("\nThe probes at the capacity, as one run:");
        }
        print!("{}", summary::render(&report));
        if let Some(c) = &report.capacity {
            println!("{}", verdict::verdict(c));
        }
    }
    // A capacity search bounds errors in its objective; its report is of the probes that met it.
    let errors = match report.capacity {
        Some(_) => None,
        None => summary::over_max_errors(&report, cli.max_errors),
    };
    if let Some(line) = &errors {
        // The summary's last line; beside JSON, which must stay whole, on stderr.
        if cli.json {
            eprintln!("{program}: {line}");
        } else {
            println!("{line}");
        }
    }
    let none_met = report.capacity.as_ref().is_some_and(|c| c.rate.is_none());
    match (&report.aborted, errors) {
        (Some(_), _) if interrupt::was_interrupted() => 130,
        (Some(_), _) => 1,
        (None, Some(_)) => 3,
        (None, None) if none_met => 3,
        (None, None) => 0,
    }
}

/// The engine's error worded in this command line's flags.
fn in_flags(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidSpec { field, problem } => match flag(field) {
            Some(flag) => format!("{flag}: {problem}"),
            None => problem.clone(),
        },
        ErrorKind::TooFewRequests { requests, connections } => format!(
            "-n {requests} is smaller than -c {connections}: some connections would send nothing; raise -n or lower -c"
        ),
        ErrorKind::IdleThreads { threads, connections } => format!(
            "-t {threads} for -c {connections} leaves threads idle; use -t {connections} or fewer"
        ),
        ErrorKind::PipelineWithoutKeepAlive { .. } => {
            "pipelining needs keep-alive: drop --pipeline or --no-keepalive".into()
        }
        ErrorKind::StreamsWithoutHttp2 { streams } => {
            format!("--streams {streams} needs --http2: add --http2, or drop --streams")
        }
        ErrorKind::NotWithHttp2 { field: "pipeline" } => {
            "--pipeline with --http2: HTTP/2 multiplexes streams instead of pipelining requests; drop --pipeline and use --streams N".into()
        }
        ErrorKind::NotWithHttp2 { field: "http10" } => {
            "--http1.0 with --http2: HTTP/1.0 requests cannot go over HTTP/2; drop one of the two".into()
        }
        ErrorKind::OpenFiles(o) => format!("{}; lower -c to {} or raise the hard limit", kind.fact(), o.most),
        ErrorKind::ValidationFailed { .. } => format!("{}; pass --allow-errors to load it anyway", kind.fact()),
        ErrorKind::IoUringUnavailable { .. } => format!("{}; use --io epoll or --io auto", kind.fact()),
        ErrorKind::ExpectedBodyUnchecked => "--expect-body needs the validation request, the only answer it is compared with, which --no-validate skips; drop one of the two".into(),
        ErrorKind::CpuNotAllowed { .. } => format!("--cpus: {kind}"),
        ErrorKind::TlsWithoutHttps { field } => format!(
            "{} is for https:// URLs and the URL is http://; use https:// or drop {0}",
            flag(field).unwrap_or(field)
        ),
        ErrorKind::CaCert { .. } => format!(
            "--cacert: {}; give a readable PEM file of the CA that signed the server's certificate",
            kind.fact()
        ),
        ErrorKind::UnknownTlsName { field, name, known } => format!(
            "{}: {name:?} is not one this client offers; choose among {}",
            flag(field).unwrap_or(field),
            known.join(",")
        ),
        ErrorKind::TlsSettings { field: "tls.insecure", .. } => {
            "--insecure verifies no certificate, so --cacert would not be used: drop one of the two".into()
        }
        ErrorKind::TlsSettings { field: "tls.version", .. } => {
            "--tls-resumption ids resumes TLS 1.2 sessions only (TLS 1.3 resumes with tickets only): add --tls-version 1.2, or use --tls-resumption tickets".into()
        }
        ErrorKind::TlsSettings { field, problem } => match flag(field) {
            Some(flag) => format!("{flag}: {problem}"),
            None => problem.clone(),
        },
        ErrorKind::TlsCertificate { reason, host, .. } => format!(
            "the server's certificate is not trusted ({reason}){}: pass --cacert FILE with the CA that signed it, or --insecure",
            if reason == "name mismatch" { format!(": it does not name {host}") } else { String::new() }
        ),
        ErrorKind::TlsHandshake { refused: true, .. } => format!(
            "{}: the server speaks TLS but refused what was offered; check --tls-version, --tls-ciphers and --tls-groups",
            kind.fact()
        ),
        ErrorKind::TlsHandshake { .. } => format!("{}; does the server speak TLS on that port?", kind.fact()),
        ErrorKind::SourceAddress { .. } => format!("--bind: {kind}"),
        ErrorKind::Http2NotSelected { .. } => {
            format!("{}: drop --http2 or enable h2 on the server", kind.fact())
        }
        ErrorKind::InvalidUrl { .. }
        | ErrorKind::NotWithHttp2 { .. }
        | ErrorKind::Unresolved { .. }
        | ErrorKind::Unreachable { .. }
        | ErrorKind::ExpectedBody { .. }
        | ErrorKind::Panicked { .. } => kind.to_string(),
    }
}

/// The flag that sets a field of the spec.
fn flag(field: &str) -> Option<&'static str> {
    Some(match field {
        "connections" => "-c",
        "threads" => "-t",
        "pipeline" => "--pipeline",
        "streams" => "--streams",
        "http2" => "--http2",
        "requests" => "-n",
        "duration" => "-d",
        "rate" => "-R",
        "requests_per_connection" => "--requests-per-connection",
        "method" => "-m",
        "headers" => "-H",
        "bind" => "--bind",
        "warmup" => "--warmup",
        "connect_timeout" => "--connect-timeout",
        "request_timeout" => "--timeout",
        "tls.version" => "--tls-version",
        "tls.ciphers" => "--tls-ciphers",
        "tls.groups" => "--tls-groups",
        "tls.cacert" => "--cacert",
        "tls.insecure" => "--insecure",
        "tls.resumption" => "--tls-resumption",
        "expect_status" => "--expect-status",
        "idle.connections" => "--idle",
        "idle.ping" => "--idle-ping",
        "slow.clients" => "--slow-clients",
        "slow.mode" => "--slow",
        "slow.interval" => "--slow-interval",
        "slow.chunk_bytes" => "--slow-chunk",
        "slow.window_bytes" => "--slow-window",
        "slow.content_length" => "--slow-content-length",
        "slow.hold" => "--slow-hold",
        "slow.path" => "--slow-path",
        _ => return None,
    })
}
