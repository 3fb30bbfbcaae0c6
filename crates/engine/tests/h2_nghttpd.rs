//! HTTP/2 load against a real server: nghttpd (Debian's nghttp2-server) over h2c, its stream
//! limit below the streams asked for, so each connection must keep to what the server grants.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use httpbench_engine::spec::Stop;
use httpbench_engine::{LoadSpec, Report};

/// nghttpd on a loopback port, stopped (by its PID) when dropped.
struct Nghttpd {
    child: Child,
    port: u16,
}

impl Nghttpd {
    fn start(max_streams: u32) -> Nghttpd {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let root = std::env::temp_dir();
        let child = Command::new("nghttpd")
            .args(["--no-tls", "-a", "127.0.0.1", "-m"])
            .arg(max_streams.to_string())
            .arg("-d")
            .arg(&root)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nghttpd (apt-get install nghttp2-server; make test-deps installs it)");
        let server = Nghttpd { child, port };
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "nghttpd did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        server
    }
}

impl Drop for Nghttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(server: &Nghttpd, spec: LoadSpec) -> Report {
    let body = std::env::temp_dir().join("httpbench-h2-test.txt");
    std::fs::write(&body, b"hello, h2").unwrap();
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
    let server = Nghttpd::start(3);
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
}
