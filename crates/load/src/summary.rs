//! The human summary, in the spirit of wrk's.

use std::fmt::Write;

use httpbench_engine::report::{Millis, Report, Summary};
use httpbench_engine::spec::Stop;

fn us(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2}s", v / 1e6),
        v if v >= 1e3 => format!("{:.2}ms", v / 1e3),
        v => format!("{v:.0}us"),
    }
}

fn bytes(v: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.2}{}", units[i])
}

fn latency_row(out: &mut String, name: &str, s: &Summary) {
    let _ = writeln!(
        out,
        "    {name:<11}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
        us(s.mean_us),
        us(s.stdev_us),
        us(s.p50_us as f64),
        us(s.p90_us as f64),
        us(s.p99_us as f64),
        us(s.p99_9_us as f64),
        us(s.max_us as f64)
    );
}

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let s = &r.spec;
    let how = match s.stop {
        Stop::Requests(n) => format!("{n} requests"),
        // A probe's time stretched for its percentile is no round number.
        Stop::Duration(d) if d.fract() == 0.0 => format!("{d}s"),
        Stop::Duration(d) => format!("{d:.2}s"),
    };
    let _ = writeln!(
        out,
        "Running {how} test @ {}{} ({})",
        s.urls[0],
        if s.urls.len() > 1 {
            format!(" and {} more URLs", s.urls.len() - 1)
        } else {
            String::new()
        },
        r.engine.io
    );
    let keep = if s.keep_alive {
        "keep-alive"
    } else {
        "a new connection per request"
    };
    let model = match s.rate {
        Some(rate) => format!("open loop at {rate} req/s"),
        None => "closed loop".into(),
    };
    let carried = match &r.h2 {
        Some(h2) => format!(
            "{} {} streams per connection{}",
            r.protocol,
            h2.streams_requested,
            match h2.streams_granted {
                Some(granted) => format!(" (the server allows {granted})"),
                // Null also when no SETTINGS arrived during measurement: unlimited or unseen.
                None => " (no server limit seen)".into(),
            }
        ),
        None => format!("{} pipeline {}", r.protocol, s.pipeline),
    };
    let _ = writeln!(
        out,
        "  {} threads and {} connections, {keep}, {carried}, {model}",
        s.threads, s.connections
    );
    let _ = writeln!(
        out,
        "  Latency      {:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
        "Avg", "Stdev", "p50", "p90", "p99", "p99.9", "Max"
    );
    latency_row(&mut out, "total", &r.latency.total);
    if s.rate.is_some() {
        latency_row(&mut out, "service", &r.latency.service);
    }
    latency_row(&mut out, "first byte", &r.latency.first_byte);
    latency_row(&mut out, "connect", &r.latency.connect);
    if r.tls.is_some() {
        latency_row(&mut out, "handshake", &r.latency.tls_handshake);
    }
    for c in &r.classes {
        let range = match c.bytes_to {
            Some(to) => format!("{}-{to} B", c.bytes_from),
            None => format!("over {} B", c.bytes_from - 1),
        };
        let _ = writeln!(
            out,
            "  Size {range:<18}{:>9} answers, {:>9}, p50 {}, p99 {}",
            c.requests,
            bytes(c.bytes as f64),
            us(c.latency.p50_us as f64),
            us(c.latency.p99_us as f64)
        );
    }
    // Said once a server coded an answer: a run that asked no coding reads as it always did.
    if r.encodings.keys().any(|c| c != "identity") {
        let sent: Vec<String> = (r.encodings.iter())
            .map(|(name, e)| format!("{name} {} ({})", e.answers, bytes(e.bytes as f64)))
            .collect();
        let _ = writeln!(out, "  Encodings    {}", sent.join(", "));
    }
    let q = &r.requests;
    let _ = writeln!(
        out,
        "  {} requests in {:.2}s, {} read",
        q.completed,
        r.duration_s,
        bytes(r.bytes.read as f64)
    );
    let waited = if q.in_flight > 0 {
        format!(
            " (waiting for {} on average, {} at most)",
            us(q.in_flight_age_mean_us),
            us(q.in_flight_age_max_us)
        )
    } else {
        String::new()
    };
    // What the server saw: -n promises exactly the load's requests, and the validation request
    // comes on top of them.
    let before = if r.validation.sent {
        " (+1 validation request before the load)"
    } else {
        " (validation skipped: nothing was checked before the load)"
    };
    let _ = writeln!(
        out,
        "  sent {}{before}, completed {}, failed {}, in flight at the end {}{waited}",
        q.sent, q.completed, q.failed, q.in_flight
    );
    let st = &r.status;
    let _ = writeln!(
        out,
        "  status 2xx {}, 3xx {}, 4xx {}, 5xx {}, other {}",
        st.s2xx,
        st.s3xx,
        st.s4xx,
        st.s5xx,
        st.other + st.s1xx
    );
    if let Some(succeeded) = q.succeeded {
        let expected = if s.expect_status.is_empty() {
            "any 2xx".to_string()
        } else {
            s.expect_status
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let others: Vec<String> = q
            .unexpected_statuses
            .iter()
            .map(|(status, n)| format!("{status} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  succeeded {succeeded} (status {expected}){}",
            if others.is_empty() {
                String::new()
            } else {
                format!(", other statuses: {}", others.join(", "))
            }
        );
    }
    if r.errors_total > 0 {
        let errs: Vec<String> = r
            .errors
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(out, "  Errors: {}", errs.join(", "));
        if r.errors["retryable"] > 0 {
            let _ = writeln!(out, "    retryable: requests a reused keep-alive connection lost before any byte of their answer; --retry-idempotent retries each once");
        }
        if r.errors["source_ports_exhausted"] > 0 {
            let _ = writeln!(out, "    source ports ran out on this host: widen net.ipv4.ip_local_port_range or spread connections with --bind 127.0.0.2,127.0.0.3");
        }
    }
    if r.requests.retried > 0 {
        let _ = writeln!(
            out,
            "  Retried: {} retryable requests, each once on a new connection",
            r.requests.retried
        );
    }
    if let Some(t) = &r.tls {
        let _ = writeln!(
            out,
            "  TLS {} {} {} (ALPN {}), {}; handshakes {} full, {} resumed",
            t.version.as_deref().unwrap_or("(no handshake completed)"),
            t.cipher.as_deref().unwrap_or(""),
            t.group.as_deref().unwrap_or(""),
            t.alpn.as_deref().unwrap_or("none"),
            if t.verified {
                "certificate verified"
            } else {
                "certificate not verified"
            },
            t.handshakes_full,
            t.handshakes_resumed
        );
    }
    if let Some(h2) = &r.h2 {
        let resets: Vec<String> = h2.resets.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            out,
            "  HTTP/2: {} GOAWAY, resets {}, {} refused streams sent again, {} of framing",
            h2.goaways,
            if resets.is_empty() {
                "none".into()
            } else {
                resets.join(", ")
            },
            h2.refused_streams,
            bytes(h2.frame_bytes as f64)
        );
    }
    beside_load(&mut out, r);
    let _ = writeln!(out, "Requests/sec: {:.2}", q.per_second);
    if let Some(succeeded) = q.succeeded_per_second {
        let _ = writeln!(out, "Succeeded/sec: {succeeded:.2}");
    }
    let _ = writeln!(
        out,
        "Transfer/sec: {}",
        bytes(if r.duration_s > 0.0 {
            r.bytes.read as f64 / r.duration_s
        } else {
            0.0
        })
    );
    if let Some(o) = &r.open_loop {
        let short = if o.fell_short {
            "  FELL SHORT of the target"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "Rate: {:.2} req/s sent of {:.2} asked, {} behind schedule{short}",
            o.achieved_rate, o.target_rate, o.behind_schedule
        );
    }
    let c = &r.client;
    let bound = c
        .threads
        .iter()
        .map(|t| t.busy_share + t.waiting_share)
        .fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "Client: user {:.2}s, sys {:.2}s, {:.1} us CPU per request, busiest thread {:.0}% busy{}{}",
        c.user_s,
        c.sys_s,
        c.cpu_us_per_request,
        c.busy_share * 100.0,
        if c.waiting_share > 0.05 {
            format!(
                ", a thread {:.0}% waiting for its CPU (other processes had it)",
                c.waiting_share * 100.0
            )
        } else {
            String::new()
        },
        if bound > 0.9 {
            " (the client may be the bottleneck)"
        } else {
            ""
        }
    );
    if let Some(p) = &r.validation.problem {
        let _ = writeln!(out, "Warning: {p}");
    }
    if let Some(why) = &r.aborted {
        let _ = writeln!(out, "Ended early: {why}");
    }
    out
}

/// The run's verdict on its errors when their share is over `max` (a fraction): how much did not
/// succeed and its main kinds, largest first, e.g. "7.0% of requests did not succeed, over
/// --max-errors 1%: status 503 6.9%, timeout 0.1%". None within it.
pub fn over_max_errors(r: &Report, max: f64) -> Option<String> {
    let share = r.error_share()?;
    if share <= max {
        return None;
    }
    let attempts = (r.requests.completed + r.errors_total) as f64;
    let mut kinds: Vec<(String, u64)> = r
        .requests
        .unexpected_statuses
        .iter()
        .map(|(status, &n)| (format!("status {status}"), n))
        .chain(
            r.errors
                .iter()
                .map(|(class, &n)| (class.replace('_', " "), n)),
        )
        .filter(|&(_, n)| n > 0)
        .collect();
    kinds.sort_by_key(|kind| std::cmp::Reverse(kind.1));
    let kinds: Vec<String> = kinds
        .iter()
        .take(3)
        .map(|(kind, n)| format!("{kind} {}", percent(*n as f64 / attempts)))
        .collect();
    let what = if attempts == 0.0 {
        "nothing was answered".to_string()
    } else {
        kinds.join(", ")
    };
    Some(format!(
        "Errors: {} of requests did not succeed, over --max-errors {}: {what}",
        percent(share),
        percent(max)
    ))
}

/// A share as a percentage with the digits it needs, at most two decimals: "7%", "89.5%",
/// "0.12%".
fn percent(share: f64) -> String {
    let p = format!("{:.2}", share * 100.0);
    format!("{}%", p.trim_end_matches('0').trim_end_matches('.'))
}

/// The idle connections and slow clients beside the load, if any.
fn beside_load(out: &mut String, r: &Report) {
    // How long the connections the server closed had been open, when it closed any.
    let after = |closed: u64, idle: &str, m: &Millis| {
        if closed == 0 {
            return String::new();
        }
        let ms = |v: u64| us(v as f64 * 1e3);
        format!(" after {}{idle} (median), {} at most", ms(m.p50), ms(m.max))
    };
    if let Some(s) = &r.slow_clients {
        let cut = after(s.cut_by_server, "", &s.cut_after_ms);
        let _ = writeln!(
            out,
            "  Slow clients ({}): {} asked, {} held at the end, {} opened, {} cut by the server{cut}, {} answered, {} failed to open",
            s.mode, s.connections, s.held, s.opened, s.cut_by_server, s.answered, s.failed
        );
    }
    if let Some(i) = &r.idle_connections {
        let closed = after(i.closed_by_server, " idle", &i.closed_after_ms);
        let pings = if i.pings > 0 {
            format!(", {} pings ({} failed)", i.pings, i.pings_failed)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  Idle connections: {} asked, {} opened, {} held at the end, {} closed by the server{closed}{pings}",
            i.asked, i.opened, i.held, i.closed_by_server
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shares_read_with_the_digits_they_need() {
        let shown: Vec<String> = [1.0, 0.895, 0.07, 0.005, 0.0012, 0.01]
            .map(super::percent)
            .into();
        assert_eq!(shown, ["100%", "89.5%", "7%", "0.5%", "0.12%", "1%"]);
    }
}
