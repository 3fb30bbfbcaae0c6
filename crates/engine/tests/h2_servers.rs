//! HTTP/2 load against real servers over h2c: nghttpd (Debian's nghttp2-server), its stream
//! limit below the streams asked for, so each connection must keep to what the server grants,
//! and to one request without keep-alive or its requests per connection when asked; nginx,
//! which sends GOAWAY after `keepalive_requests`, so streams in flight then are refused and must
//! go again on a new connection.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use httpbench_engine::spec::Stop;
use httpbench_engine::{LoadSpec, Report};

/// A server on a loopback port, stopped (by its PID) when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(command: impl FnOnce(u16) -> Command) -> Server {
        // One start at a time, until its server listens: two tests in parallel could otherwise
        // be handed the same free port, and one would load the other's server.
        static STARTING: Mutex<()> = Mutex::new(());
        let _starting = STARTING.lock().unwrap_or_else(|p| p.into_inner());
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let mut command = command(port);
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?}: {e} (make test-deps installs it)"));
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{command:?} did not listen");
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }
}

/// nghttpd over h2c, serving the temporary directory.
fn nghttpd(max_streams: u32) -> Server {
    Server::start(|port| {
        let mut command = Command::new("nghttpd");
        command
            .args(["--no-tls", "-a", "127.0.0.1", "-m"])
            .arg(max_streams.to_string())
            .arg("-d")
            .arg(std::env::temp_dir())
            .arg(port.to_string());
        command
    })
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(server: &Server, spec: LoadSpec) -> Report {
    // Once for all tests: one rewriting it while a server reads it for another would cut a body.
    static BODY: std::sync::Once = std::sync::Once::new();
    BODY.call_once(|| {
        let body = std::env::temp_dir().join("httpbench-h2-test.txt");
        std::fs::write(body, b"hello, h2").unwrap();
    });
    httpbench_engine::run(&LoadSpec {
        urls: vec![format!(
            "http://127.0.0.1:{}/httpbench-h2-test.txt",
            server.port
        )],
        http2: true,
        expect_length: Some(9),
        request_timeout: 5.0,
        ..spec
    })
    .unwrap()
}

fn exact(r: &Report, n: u64) {
    let q = &r.requests;
    assert_eq!(
        (q.sent, q.completed, q.in_flight),
        (n, n, 0),
        "{:?}",
        r.errors
    );
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
}

#[test]
fn a_count_is_exact_with_more_streams_asked_than_granted() {
    let server = nghttpd(3);
    let r = run(
        &server,
        LoadSpec {
            connections: 4,
            streams: 10,
            stop: Stop::Requests(3000),
            ..LoadSpec::default()
        },
    );
    exact(&r, 3000);
    assert_eq!(r.connections.opened, 4);
    assert_eq!(r.protocol, "h2");
    let h2 = r.h2.as_ref().expect("an HTTP/2 run reports its h2 figures");
    assert_eq!((h2.streams_requested, h2.streams_granted), (10, Some(3)));
    assert_eq!((h2.goaways, h2.refused_streams), (0, 0));
    assert!(h2.resets.is_empty(), "{:?}", h2.resets);
    // At least each connection's SETTINGS, its ACK, and a header per HEADERS and DATA frame.
    assert!(h2.frame_bytes >= 4 * 18 + 3000 * 18, "{}", h2.frame_bytes);
    // Without keep-alive: a connection, its preface and SETTINGS, one stream, and the close.
    let r = run(
        &server,
        LoadSpec {
            connections: 2,
            keep_alive: false,
            stop: Stop::Requests(40),
            ..LoadSpec::default()
        },
    );
    exact(&r, 40);
    // A connection per request; a slot that reconnected just before the budget ran out may
    // open one that carries nothing: at most one per slot.
    assert!(
        (40..=40 + 2).contains(&r.connections.opened),
        "{:?}",
        r.connections
    );
    // A limit per connection below the streams a connection opens at once (3 granted, 8
    // asked): each connection's first streams are cut to the 2 it may carry. One slot, so
    // nothing races the budget: exactly 100 / 2 connections.
    let r = run(
        &server,
        LoadSpec {
            connections: 1,
            streams: 8,
            requests_per_connection: Some(2),
            stop: Stop::Requests(100),
            ..LoadSpec::default()
        },
    );
    exact(&r, 100);
    assert_eq!(r.connections.opened, 50, "{:?}", r.connections);
    assert_eq!(r.h2.as_ref().map(|h2| h2.refused_streams), Some(0));
}

#[test]
fn streams_refused_by_a_goaway_are_sent_again() {
    let dir = std::env::temp_dir().join(format!("httpbench-h2-nginx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = Server::start(|port| {
        let conf = dir.join("nginx.conf");
        let temp = dir.display();
        std::fs::write(
            &conf,
            format!(
                "daemon off; master_process off; pid {temp}/nginx.pid; error_log {temp}/error.log;
                 events {{}}
                 http {{ access_log off; client_body_temp_path {temp}; proxy_temp_path {temp};
                   fastcgi_temp_path {temp}; uwsgi_temp_path {temp}; scgi_temp_path {temp};
                   keepalive_requests 50;
                   server {{ listen 127.0.0.1:{port} http2; root {}; }} }}",
                std::env::temp_dir().display()
            ),
        )
        .unwrap();
        let mut command = Command::new("nginx");
        command.arg("-p").arg(&dir).arg("-c").arg(&conf);
        command
    });
    let r = run(
        &server,
        LoadSpec {
            connections: 2,
            streams: 8,
            stop: Stop::Requests(1000),
            ..LoadSpec::default()
        },
    );
    exact(&r, 1000);
    let h2 = r.h2.as_ref().unwrap();
    assert!(h2.goaways >= 10, "{h2:?}");
    assert!(r.connections.opened > 10, "{:?}", r.connections);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
