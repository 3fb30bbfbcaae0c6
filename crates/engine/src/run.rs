//! A run from start to end: check, validate with one request (unless the spec says not to),
//! spread the connections over the
//! threads, start them together, and add up what they measured.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::h2::request::RequestBlocks;
use crate::hostile::{BesideLoad, Finished};
use crate::http::request::RequestSet;
use crate::io::epoll::EpollReactor;
use crate::io::uring::UringReactor;
use crate::io::{new_socket, Reactor, SockAddr};
use crate::mix::Mix;
use crate::report::{self, Report};
use crate::spec::{IdleSpec, IoChoice, LoadSpec, PanicAt, Resolved, SlowSpec, Stop};
use crate::stats::cpu::pin_this_thread;
use crate::stats::series::SeriesMerger;
use crate::stats::sizes::Answers;
use crate::stats::{Counters, Latencies};
use crate::tls::TlsClient;
use crate::validate::validate;
use crate::worker::{wall_clock_of, Assignment, Budget, Http2, Outcome, Shared, Warmup, Worker};
use crate::{host, Error, ErrorKind, OpenFiles};

/// Run `spec` to its end, or until `stop` is set (then what was measured so far is reported).
pub fn run_until(spec: &LoadSpec, stop: &AtomicBool) -> Result<Report, Error> {
    let resolved = spec.resolve()?;
    if spec.panic == Some(PanicAt::Run) {
        panic!("a panic asked for by the spec");
    }
    raise_open_files(&resolved)?;
    check_cpus(&spec.cpus)?;
    check_sources(&spec.bind, &resolved)?;
    let expect_body = match &spec.expect_body_file {
        Some(path) => Some(std::fs::read(path).map_err(|e| ErrorKind::ExpectedBody {
            path: path.clone(),
            problem: e.to_string(),
        })?),
        None => None,
    };
    let first = &resolved.targets[0];
    let tls = if first.tls {
        Some(TlsClient::new(&spec.tls, &first.host, spec.http2)?)
    } else {
        None
    };
    let requests = RequestSet::build(spec, &resolved.targets, resolved.pipeline as usize);
    let h2_requests = resolved
        .http2
        .then(|| RequestBlocks::build(spec, &resolved.targets));
    let validation = if spec.validate {
        validate(
            spec,
            &resolved,
            tls.as_ref(),
            (&requests, h2_requests.as_ref()),
            expect_body.as_deref(),
        )?
    } else {
        report::Validation::skipped()
    };
    let io = choose_io(spec.io, resolved.connections as usize)?;
    // Before the load's warm-up: they hold what they can before its clients arrive.
    let beside = BesideLoad::start(spec, &resolved, tls.as_ref())?;

    let http2 = h2_requests.map(|requests| Http2 {
        requests,
        streams: resolved.streams,
    });
    let shared = Shared {
        addr: SockAddr::new(&resolved.addr),
        bind: spec.bind.clone(),
        tls,
        http2,
        head_request: spec.method.eq_ignore_ascii_case("HEAD"),
        answers: Answers::of(spec),
        expect_status: spec.expect_status.clone(),
        budget: Budget::of(&resolved.stop),
        stop: AtomicBool::new(false),
        abort_reason: Mutex::new(None),
        refusal: Mutex::new(None),
        start: Instant::now(),
        warmup: Warmup::of(&resolved),
        mix: Mix::of(spec, resolved.threads as usize),
        requests,
        spec: resolved,
    };
    let assignments = assign(&shared.spec, &spec.cpus);
    let (tx, rx) = mpsc::channel();
    let mut merger = SeriesMerger::new(assignments.len());
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = assignments
            .iter()
            .map(|a| {
                let (shared, tx) = (&shared, tx.clone());
                scope.spawn(move || {
                    let _stop_on_panic = StopOnPanic(shared);
                    if spec.panic == Some(PanicAt::Worker) {
                        panic!("a panic asked for by the spec");
                    }
                    run_thread(shared, a, tx, io)
                })
            })
            .collect();
        drop(tx);
        // Merge the per-second series as it comes, and pass a stop request on to the threads.
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(sample) => merger.add(sample),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if stop.load(Ordering::Relaxed) {
                shared.stop.store(true, Ordering::Relaxed);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().map_err(|payload| Error::panicked(&*payload)))
            .collect::<Result<Vec<_>, _>>()
    })?;
    if let Some(refusal) = shared
        .refusal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(refusal);
    }
    let aborted = shared
        .abort_reason
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .or_else(|| {
            stop.load(Ordering::Relaxed)
                .then(|| "stopped on request before the end".to_string())
        });
    let window_start = shared.start + Duration::from_nanos(shared.warmup.started());
    let beside = beside.map(|b| b.finish(window_start)).transpose()?;
    // The wall clock of time zero, for lining up engines on several hosts.
    let started_at = wall_clock_of(shared.start).as_secs_f64();
    let verified = shared.tls.as_ref().map(|t| t.verified);
    Ok(summarise(
        spec,
        verified,
        io,
        validation,
        started_at,
        &assignments,
        outcomes,
        merger,
        aborted,
        beside,
    ))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Io {
    Uring,
    Epoll,
}

impl Io {
    fn name(self) -> &'static str {
        match self {
            Io::Uring => UringReactor::NAME,
            Io::Epoll => EpollReactor::NAME,
        }
    }
}

fn choose_io(choice: IoChoice, connections: usize) -> Result<Io, Error> {
    let probe = || UringReactor::new(connections.min(256), true).map(drop);
    match choice {
        IoChoice::Epoll => Ok(Io::Epoll),
        IoChoice::IoUring => probe().map(|_| Io::Uring).map_err(|e| {
            Error::from(ErrorKind::IoUringUnavailable {
                problem: e.to_string(),
            })
        }),
        IoChoice::Auto => Ok(if probe().is_ok() {
            Io::Uring
        } else {
            Io::Epoll
        }),
    }
}

fn run_thread(
    shared: &Shared,
    a: &Assignment,
    tx: mpsc::Sender<crate::stats::series::SecondSample>,
    io: Io,
) -> Outcome {
    if let Some(cpu) = a.cpu {
        if let Err(e) = pin_this_thread(cpu) {
            shared.abort(format!("cannot pin an engine thread to CPU {cpu}: {e}"));
        }
    }
    let worker = Worker::new(shared, a, tx);
    let multishot = shared.spec.requests_per_connection != Some(1);
    if io == Io::Uring {
        match UringReactor::new(a.connections, multishot) {
            Ok(mut r) => return worker.run(&mut r),
            // The run stops; this thread's worker still ends its own way, on epoll.
            Err(e) => shared.abort(format!("cannot set up io_uring for an engine thread: {e}")),
        }
    }
    match EpollReactor::new() {
        Ok(mut r) => worker.run(&mut r),
        Err(e) => {
            shared.abort(format!("cannot create an epoll instance: {e}"));
            Outcome::default()
        }
    }
}

/// Stops the other engine threads when one panics: the run then ends at once, with the panic as
/// its error, instead of at its budget.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Part `index` of `total` split into `parts` as evenly as whole numbers allow: the first parts
/// take the remainder.
fn share(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

/// The share of an open loop's `rate` (None: closed loop) of the part that has `connections` of
/// its `total`: each connection sends at the same pace.
fn rate_share(rate: Option<f64>, connections: u64, total: u64) -> Option<f64> {
    rate.map(|r| r * connections as f64 / total as f64)
}

/// Spread connections (and an open loop's rate) as evenly as possible over the threads.
fn assign(spec: &Resolved, cpus: &[usize]) -> Vec<Assignment> {
    let (c, t) = (u64::from(spec.connections), spec.threads as usize);
    let mut first = 0;
    (0..t)
        .map(|index| {
            let connections = share(c, t as u64, index as u64) as usize;
            let a = Assignment {
                index,
                first_connection: first,
                connections,
                rate: rate_share(spec.rate, connections as u64, c),
                cpu: (!cpus.is_empty()).then(|| cpus[index % cpus.len()]),
            };
            first += connections;
            a
        })
        .collect()
}

impl LoadSpec {
    /// One spec per client host of a run spread over `hosts` hosts: connections, rate and a
    /// request budget split as `assign` splits connections over threads. The run takes no more
    /// hosts than it has connections and requests, since a host with nothing to do would only add
    /// noise (and a budget of 0 is refused). How many threads each host runs is its own choice.
    pub fn split(&self, hosts: usize) -> Vec<LoadSpec> {
        let budget = match self.stop {
            Stop::Requests(n) => n,
            Stop::Duration(_) => u64::MAX,
        };
        let c = u64::from(self.connections);
        let parts = (hosts as u64).min(c).min(budget).max(1);
        (0..parts)
            .map(|index| {
                let connections = share(c, parts, index);
                LoadSpec {
                    connections: connections as u32,
                    rate: rate_share(self.rate, connections, c),
                    // Hosts of one seed would send their Poisson arrivals in step.
                    seed: self
                        .seed
                        .wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    stop: match self.stop {
                        Stop::Requests(n) => Stop::Requests(share(n, parts, index)),
                        duration => duration,
                    },
                    idle: IdleSpec {
                        connections: share(self.idle.connections.into(), parts, index) as u32,
                        ..self.idle.clone()
                    },
                    slow: SlowSpec {
                        clients: share(self.slow.clients.into(), parts, index) as u32,
                        ..self.slow.clone()
                    },
                    ..self.clone()
                }
            })
            .collect()
    }
}

/// Descriptors the engine needs besides one per connection: rings, epoll, pipes, stdio.
const SPARE_FILES: u64 = 64;

/// The most connections a run of `threads` threads may open under the open-file limit (raised
/// to its hard limit first).
pub fn most_connections(threads: u32) -> u64 {
    let lim = host::raise_open_files_limit();
    lim.rlim_cur
        .saturating_sub(SPARE_FILES + 8 * u64::from(threads))
}

fn raise_open_files(spec: &Resolved) -> Result<(), Error> {
    let lim = host::raise_open_files_limit();
    let spare = SPARE_FILES + 8 * spec.threads as u64;
    let beside = spec.idle.as_ref().map_or(0, |i| u64::from(i.connections))
        + spec.slow.as_ref().map_or(0, |s| u64::from(s.clients));
    let need = spec.connections as u64 + spare + beside;
    if beside > 0 && need > lim.rlim_cur && need - beside <= lim.rlim_cur {
        let most = lim.rlim_cur - (need - beside);
        return Err(Error::spec(
            if spec.slow.is_some() {
                "slow.clients"
            } else {
                "idle.connections"
            },
            format!(
                "{beside} idle and slow connections beside the load's {} need about {need} open files but this process may have {} (hard limit {}, which ulimit -Hn or LimitNOFILE= raise); at most {most} fit beside the load",
                spec.connections, lim.rlim_cur, lim.rlim_max
            ),
        ));
    }
    if need > lim.rlim_cur {
        return Err(Error::from(OpenFiles {
            connections: spec.connections,
            need,
            limit: lim.rlim_cur,
            hard_limit: lim.rlim_max,
            most: lim.rlim_cur.saturating_sub(spare),
        }));
    }
    Ok(())
}

/// Pinning to a CPU this process may not use fails in every engine thread: refused up front.
fn check_cpus(cpus: &[usize]) -> Result<(), Error> {
    let allowed = host::cpus_allowed();
    match cpus.iter().find(|cpu| !allowed.contains(cpu)) {
        Some(&cpu) => Err(ErrorKind::CpuNotAllowed { cpu, allowed }.into()),
        None => Ok(()),
    }
}

/// A source address this host does not have fails every connect with the error a lack of source
/// ports gives (EADDRNOTAVAIL): refused up front, or the run would blame the ports.
fn check_sources(bind: &[IpAddr], resolved: &Resolved) -> Result<(), Error> {
    let family = SockAddr::new(&resolved.addr).family();
    for &ip in bind {
        match new_socket(family, Some(ip), false) {
            // SAFETY: closes the descriptor just opened, which nothing else holds.
            Ok(fd) => unsafe {
                libc::close(fd);
            },
            Err(e) => {
                return Err(ErrorKind::SourceAddress {
                    address: ip,
                    problem: e.to_string(),
                }
                .into())
            }
        }
    }
    Ok(())
}

/// The run's report: the threads' outcomes added (counts, and histograms for exact
/// percentiles), every figure derived from those by the report's constructors, as
/// `Report::merge` derives them for a run's hosts; and the series the threads' per-second
/// histograms gave.
#[allow(clippy::too_many_arguments)]
fn summarise(
    spec: &LoadSpec,
    verified: Option<bool>,
    io: Io,
    validation: report::Validation,
    started_at: f64,
    assignments: &[Assignment],
    outcomes: Vec<Outcome>,
    merger: SeriesMerger,
    aborted: Option<String>,
    beside: Option<Finished>,
) -> Report {
    let (slow_clients, idle_connections, hostile_thread) = match beside {
        Some(b) => (b.slow, b.idle, Some(b.thread)),
        None => (None, None, None),
    };
    let (mut c, mut latencies) = (Counters::default(), Latencies::default());
    for o in &outcomes {
        c.add(&o.counters);
        latencies.add(&o.latencies);
    }
    let sum = |field: fn(&Outcome) -> u64| outcomes.iter().map(field).sum::<u64>();
    // The longest thread's.
    let duration_s = outcomes
        .iter()
        .map(|o| o.wall.as_secs_f64())
        .fold(0.0, f64::max);
    let mut timeseries = merger.into_points();
    // The last point may be a sliver of a second past the end with nothing in it.
    while timeseries
        .last()
        .is_some_and(|p| p.requests + p.errors == 0 && p.second as f64 >= duration_s)
    {
        timeseries.pop();
    }
    Report {
        schema: report::SCHEMA.into(),
        engine: report::Engine {
            version: env!("CARGO_PKG_VERSION").into(),
            io: io.name().into(),
        },
        protocol: if spec.http2 {
            report::H2_PROTOCOL
        } else {
            report::HTTP1
        }
        .into(),
        spec: spec.clone(),
        validation,
        started_at,
        duration_s,
        requests: report::Requests::new(
            report::Tally {
                sent: c.sent,
                completed: c.completed,
                failed: c.failed_requests(),
                in_flight: sum(|o| o.in_flight),
                age_total_us: latencies.in_flight_ages_us().0,
                age_max_us: latencies.in_flight_ages_us().1,
                answered: c.answered,
                retried: c.retried,
                succeeded: Some(c.succeeded),
                unexpected_statuses: c
                    .unexpected
                    .iter()
                    .map(|(status, &n)| (status.to_string(), n))
                    .collect(),
            },
            duration_s,
        ),
        open_loop: spec.rate.map(|rate| {
            let behind = sum(|o| o.behind_schedule);
            report::OpenLoop::new(rate, c.sent, duration_s, behind, (c.sent + behind) as f64)
        }),
        status: report::Status::of(&c),
        errors: report::errors_of(&c),
        errors_total: c.errors_total(),
        bytes: report::Bytes {
            head: c.head_bytes,
            body: c.body_bytes,
            read: c.bytes_read,
            written: c.bytes_written,
        },
        encodings: report::Encoding::of(&c.encodings),
        connections: report::Connections {
            opened: c.connects,
            server_closes: c.server_closes,
        },
        tls: verified.map(|verified| {
            report::Tls::new(
                outcomes.iter().find_map(|o| o.negotiated.clone()),
                verified,
                c.handshakes_full,
                c.handshakes_resumed,
            )
        }),
        h2: spec.http2.then(|| report::H2::of(spec.streams, &c.h2)),
        latency: report::LatencyReport::of(&latencies),
        classes: report::SizeClass::of(&spec.size_classes, &latencies.sizes),
        timeseries,
        ticks: report::Ticks::merge(outcomes.iter().filter_map(|o| o.ticks.as_ref()))
            .expect("the threads' points share the spec's interval"),
        client: report::Client {
            hostile_thread,
            ..report::Client::new(
                outcomes
                    .iter()
                    .zip(assignments)
                    .map(|(o, a)| {
                        report::ThreadUse::new(
                            a.cpu,
                            o.cpu.user.as_secs_f64(),
                            o.cpu.sys.as_secs_f64(),
                            o.cpu.waiting.as_secs_f64(),
                            o.wall.as_secs_f64(),
                        )
                    })
                    .collect(),
                c.completed,
                c.handling_delay_ns as f64 / 1e3,
            )
        },
        slow_clients,
        idle_connections,
        aborted,
        host: host::facts(),
        capacity: None,
    }
}
