//! Idle connections and slow clients beside the load, against small loopback servers that close
//! idle connections, cut slow heads, serve a large answer, or never answer: each run bounded.

mod common;
mod h2c;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use httpbench_engine::h2::frame::{self, flag, kind};
use httpbench_engine::spec::{IdleSpec, SlowMode, SlowSpec, Stop, TlsSpec};
use httpbench_engine::{LoadSpec, Report};

/// How a test server treats its connections.
#[derive(Clone, Copy, Default)]
struct Knobs {
    /// Close a connection that sends nothing for this long between requests.
    idle_close: Option<Duration>,
    /// Close a connection whose request head has not ended this long after its first byte.
    head_within: Option<Duration>,
    /// Read requests, answer none.
    stall: bool,
}

/// Bytes of `/big`'s answer: more than the socket buffers of a slow reader hold.
const BIG: usize = 8 << 20;

/// Serve one connection: each request head answered with a 200 (7 bytes, `/big` `BIG` bytes),
/// as `knobs` say. `socket` sets the read timeouts (the same socket as `io`, or under its TLS).
fn answer<S: Read + Write>(io: &mut S, socket: &TcpStream, knobs: Knobs) {
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        let mut started = Instant::now();
        let head = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break buf.drain(..end + 4).collect::<Vec<u8>>();
            }
            let wait = if buf.is_empty() {
                knobs.idle_close
            } else {
                knobs
                    .head_within
                    .map(|d| d.saturating_sub(started.elapsed()))
            };
            if wait == Some(Duration::ZERO) {
                return;
            }
            // Every read bounded, so that no test can hang on a client.
            let _ = socket.set_read_timeout(Some(wait.unwrap_or(Duration::from_secs(10))));
            match io.read(&mut chunk) {
                Ok(n @ 1..) => {
                    if buf.is_empty() {
                        started = Instant::now();
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                _ => return,
            }
        };
        if knobs.stall {
            continue;
        }
        let body = if head.starts_with(b"GET /big ") {
            vec![b'x'; BIG]
        } else {
            b"hello!\n".to_vec()
        };
        let mut out =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        out.extend_from_slice(&body);
        if io.write_all(&out).and_then(|()| io.flush()).is_err() {
            return;
        }
    }
}

/// A plain HTTP server of `knobs`: its base URL (no path).
fn serve(knobs: Knobs) -> String {
    serve_first(usize::MAX, knobs)
}

/// A plain HTTP server of `knobs` that accepts its first `connections`, then listens no more
/// (later connects are refused): its base URL.
fn serve_first(connections: usize, knobs: Knobs) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let socket = stream.try_clone().unwrap();
                answer(&mut stream, &socket, knobs);
            });
        }
    });
    base
}

/// `spec` run, bounded: a run that does not end in 30 s fails.
fn run(spec: LoadSpec) -> Report {
    let (done, report) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(httpbench_engine::run(&spec).unwrap());
    });
    report
        .recv_timeout(Duration::from_secs(30))
        .expect("the run ended")
}

fn load(url: String, seconds: f64) -> LoadSpec {
    LoadSpec {
        urls: vec![url],
        connections: 2,
        stop: Stop::Duration(seconds),
        ..LoadSpec::default()
    }
}

fn slow(clients: u32, mode: SlowMode) -> SlowSpec {
    SlowSpec {
        clients,
        mode,
        interval: Some(0.1),
        ..SlowSpec::default()
    }
}

#[test]
fn idle_connections_are_held_beside_the_load() {
    let base = serve(Knobs::default());
    let report = run(LoadSpec {
        idle: IdleSpec {
            connections: 20,
            ping: Some(0.2),
        },
        ..load(format!("{base}/"), 1.0)
    });
    let idle = report.idle_connections.unwrap();
    assert_eq!((idle.asked, idle.opened, idle.held), (20, 20, 20));
    assert_eq!((idle.closed_by_server, idle.pings_failed), (0, 0));
    assert!(idle.pings > 0);
    // Their requests are none of the load's.
    assert!(report.requests.completed > 0 && report.errors_total == 0);
    assert!(report.slow_clients.is_none() && report.aborted.is_none());
    assert!(idle.series.iter().any(|p| p.connected == 20));
    assert!(report.client.hostile_thread.is_some());
}

#[test]
fn a_server_closing_idle_connections_is_seen_doing_it() {
    let base = serve(Knobs {
        idle_close: Some(Duration::from_millis(200)),
        ..Knobs::default()
    });
    let report = run(LoadSpec {
        idle: IdleSpec {
            connections: 10,
            ping: None,
        },
        ..load(format!("{base}/"), 1.0)
    });
    let idle = report.idle_connections.unwrap();
    assert_eq!((idle.opened, idle.closed_by_server, idle.held), (10, 10, 0));
    assert_eq!(idle.closed_after_ms.count, 10);
    assert!(idle.closed_after_ms.p50 > 0 && idle.closed_after_ms.max >= idle.closed_after_ms.p50);
    assert_eq!(idle.series.last().unwrap().closed, 10);
}

#[test]
fn slowloris_connections_are_cut_and_opened_again() {
    let base = serve(Knobs {
        head_within: Some(Duration::from_millis(300)),
        ..Knobs::default()
    });
    let report = run(LoadSpec {
        slow: slow(5, SlowMode::Headers),
        ..load(format!("{base}/"), 1.5)
    });
    let s = report.slow_clients.unwrap();
    assert_eq!((s.mode.as_str(), s.connections), ("headers", 5));
    assert!(s.cut_by_server >= 5, "{s:?}");
    assert!(s.opened > 5, "cut connections are opened again: {s:?}");
    assert_eq!(s.cut_after_ms.count, s.cut_by_server);
    assert!(s.series.iter().any(|p| p.closed > 0));
    // The load's own requests were answered meanwhile.
    assert!(report.requests.completed > 0 && report.aborted.is_none());
}

#[test]
fn slow_readers_hold_a_large_answer() {
    let base = serve(Knobs::default());
    let report = run(LoadSpec {
        slow: SlowSpec {
            path: Some("/big".into()),
            chunk_bytes: Some(64),
            ..slow(4, SlowMode::Read)
        },
        ..load(format!("{base}/"), 1.0)
    });
    let s = report.slow_clients.unwrap();
    assert_eq!((s.opened, s.held, s.cut_by_server), (4, 4, 0), "{s:?}");
    assert_eq!(s.answered, 0);
}

#[test]
fn slow_bodies_are_held_while_the_load_runs() {
    let base = serve(Knobs::default());
    let report = run(LoadSpec {
        slow: slow(4, SlowMode::Body),
        ..load(format!("{base}/"), 1.0)
    });
    let s = report.slow_clients.unwrap();
    assert_eq!((s.opened, s.held, s.cut_by_server), (4, 4, 0), "{s:?}");
}

#[test]
fn a_run_beside_slow_clients_is_never_ended_early() {
    // Its connections never answered, then refused: a server gone, for the give-up rule.
    let stalling = || {
        serve_first(
            5,
            Knobs {
                stall: true,
                ..Knobs::default()
            },
        )
    };
    let spec = |base: String| LoadSpec {
        validate: false,
        connect_timeout: 0.3,
        request_timeout: 0.3,
        // Longer than the give-up rule's silence (the timeouts and 1 s).
        ..load(format!("{base}/"), 2.5)
    };
    let alone = run(spec(stalling()));
    assert!(alone.aborted.is_some(), "the rule this exempts from");
    let beside = run(LoadSpec {
        slow: slow(3, SlowMode::Headers),
        ..spec(stalling())
    });
    assert_eq!(beside.aborted, None);
    // Counted, not fatal.
    assert!(beside.errors["timeout"] > 0 && beside.errors["connect_refused"] > 0);
    assert_eq!(beside.slow_clients.unwrap().held, 3);
}

fn tls_cut_slow_heads(tls: &mut common::Tls) {
    let socket = tls.sock.try_clone().unwrap();
    answer(
        tls,
        &socket,
        Knobs {
            head_within: Some(Duration::from_millis(300)),
            ..Knobs::default()
        },
    );
}

/// A bounded run over https against `answer`, with the test CA.
fn over_https(answer: fn(&mut common::Tls), spec: LoadSpec) -> Report {
    let addr = common::serve_tls(&[b"http/1.1"], answer);
    run(LoadSpec {
        urls: vec![format!("https://localhost:{}/", addr.port())],
        tls: TlsSpec {
            cacert: Some(format!("{}ca.pem", common::TESTDATA).into()),
            ..TlsSpec::default()
        },
        ..spec
    })
}

#[test]
fn slowloris_over_https() {
    let report = over_https(
        tls_cut_slow_heads,
        LoadSpec {
            slow: slow(3, SlowMode::Headers),
            ..load(String::new(), 1.5)
        },
    );
    let s = report.slow_clients.unwrap();
    assert!(s.cut_by_server >= 3 && s.opened > 3, "{s:?}");
    assert!(report.requests.completed > 0);
}

fn tls_keep_alive(tls: &mut common::Tls) {
    let socket = tls.sock.try_clone().unwrap();
    answer(tls, &socket, Knobs::default());
}

#[test]
fn idle_connections_over_https_are_held_and_pinged() {
    let report = over_https(
        tls_keep_alive,
        LoadSpec {
            idle: IdleSpec {
                connections: 5,
                ping: Some(0.2),
            },
            ..load(String::new(), 1.0)
        },
    );
    let idle = report.idle_connections.unwrap();
    assert_eq!(
        (idle.opened, idle.held, idle.closed_by_server),
        (5, 5, 0),
        "{idle:?}"
    );
    assert!(idle.pings > 0 && idle.pings_failed == 0, "{idle:?}");
}

/// An h2c server answering every request with an empty 200, that tells `said` of each
/// connection's second CONTINUATION frame.
fn h2c_server(said: mpsc::Sender<()>) -> String {
    h2c::serve(50, move |mut socket, _| {
        let mut out = Vec::new();
        frame::write_settings(&mut out, &[]);
        h2c::send(&mut socket, &out);
        let mut continuations = 0;
        h2c::each_frame(&mut socket, |io, header, _| {
            let mut out = Vec::new();
            match header.kind {
                kind::SETTINGS if !header.has(flag::ACK) => frame::write_settings_ack(&mut out),
                kind::HEADERS if header.has(flag::END_HEADERS) => {
                    frame::write_headers(&mut out, header.stream, &[0x88], true, 16_384);
                }
                kind::CONTINUATION => {
                    continuations += 1;
                    if continuations == 2 {
                        let _ = said.send(());
                    }
                }
                _ => {}
            }
            h2c::send(io, &out);
        });
    })
}

#[test]
fn h2_slow_headers_trickle_continuation_frames() {
    let (said, heard) = mpsc::channel();
    let url = h2c_server(said);
    let report = run(LoadSpec {
        http2: true,
        slow: slow(3, SlowMode::Headers),
        ..load(url, 1.0)
    });
    let s = report.slow_clients.unwrap();
    assert_eq!((s.opened, s.held, s.cut_by_server), (3, 3, 0), "{s:?}");
    assert_eq!(heard.try_iter().count(), 3);
}

#[test]
fn idle_connections_over_h2_are_held_and_pinged_on_streams_of_their_own() {
    let (said, _) = mpsc::channel();
    let report = run(LoadSpec {
        http2: true,
        idle: IdleSpec {
            connections: 5,
            ping: Some(0.2),
        },
        ..load(h2c_server(said), 1.0)
    });
    let idle = report.idle_connections.unwrap();
    assert_eq!(
        (idle.opened, idle.held, idle.closed_by_server),
        (5, 5, 0),
        "{idle:?}"
    );
    assert!(idle.pings > 5 && idle.pings_failed == 0, "{idle:?}");
    assert!(report.requests.completed > 0 && report.errors_total == 0);
}
