//! The server over real sockets on 127.0.0.1, one event loop, a fresh document root per test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::*;

mod tls;

const INDEX: &[u8] = b"hello!\n";

struct Running {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), String>>>,
    root: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let outcome = self.thread.take().unwrap().join().unwrap();
        std::fs::remove_dir_all(&self.root).ok();
        outcome.unwrap();
    }
}

fn start(big: usize) -> Running {
    start_with(big, |server| server)
}

/// `start`, with `setup` applied to the bound server before it runs.
fn start_with(big: usize, setup: impl FnOnce(Server) -> Server) -> Running {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let root = std::env::temp_dir().join(format!(
        "httpbench-reference-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("index.html"), INDEX).unwrap();
    std::fs::write(root.join("sub/a b.css"), b"p{}").unwrap();
    std::fs::write(root.join("big.bin"), pattern(big)).unwrap();
    let server = setup(Server::bind(&root, "127.0.0.1", 0, 1).unwrap());
    let port = server.local_addr().port();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = Arc::clone(&stop);
        Some(thread::spawn(move || server.run(&stop)))
    };
    Running {
        port,
        stop,
        thread,
        root,
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

fn connect(s: &Running) -> TcpStream {
    let c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

struct Response {
    status: String,
    headers: String,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One response from `c`, its body read by Content-Length (none for HEAD).
fn response(c: &mut impl Read, head_only: bool) -> Response {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        c.read_exact(&mut byte).expect("a response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap();
    let mut r = Response {
        status: status.to_string(),
        headers: headers.to_string(),
        body: Vec::new(),
    };
    if !head_only {
        let len: usize = r.header("content-length").unwrap().parse().unwrap();
        r.body = vec![0; len];
        c.read_exact(&mut r.body).unwrap();
    }
    r
}

fn at_eof(c: &mut impl Read) -> bool {
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).is_ok() && rest.is_empty()
}

#[test]
fn get_serves_the_file_with_its_type_and_length() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = response(&mut c, false);
    assert_eq!(r.status, "HTTP/1.1 200 OK");
    assert_eq!(r.body, INDEX);
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert_eq!(r.header("connection"), Some("keep-alive"));
    // The directory's index, a query string, percent-escapes.
    c.write_all(b"GET /?x=1 HTTP/1.1\r\n\r\nGET /sub/a%20b.css HTTP/1.1\r\n\r\n")
        .unwrap();
    assert_eq!(response(&mut c, false).body, INDEX);
    let css = response(&mut c, false);
    assert_eq!(
        (css.body.as_slice(), css.header("content-type")),
        (&b"p{}"[..], Some("text/css"))
    );
}

#[test]
fn a_request_split_across_reads_is_answered_once_whole() {
    let s = start(10);
    let mut c = connect(&s);
    c.set_nodelay(true).unwrap();
    let request = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n";
    for piece in request.chunks(5) {
        c.write_all(piece).unwrap();
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(response(&mut c, false).body, INDEX);
    // The end of one request and the start of the next in one segment.
    c.write_all(b"GET /index.html HTTP/1.1\r\n\r\nGET /big")
        .unwrap();
    assert_eq!(response(&mut c, false).body, INDEX);
    thread::sleep(Duration::from_millis(20));
    c.write_all(b".bin HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(response(&mut c, false).body, pattern(10));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let s = start(3000);
    pipelined_in_order(&mut connect(&s), 3, 3000, Duration::ZERO);
}

/// 100 GETs sent in one write, every `big_every`th of /big.bin (`big` bytes), the others of
/// /index.html; after `pause` (for the server to fill the socket and wait for the reader first),
/// every answer read and checked in order.
fn pipelined_in_order(c: &mut (impl Read + Write), big_every: usize, big: usize, pause: Duration) {
    let mut batch = Vec::new();
    for i in 0..100 {
        batch.extend_from_slice(if i % big_every == 0 {
            b"GET /big.bin HTTP/1.1\r\n\r\n"
        } else {
            b"GET /index.html HTTP/1.1\r\n\r\n"
        });
    }
    c.write_all(&batch).unwrap();
    thread::sleep(pause);
    for i in 0..100 {
        let body = response(c, false).body;
        let want = if i % big_every == 0 {
            pattern(big)
        } else {
            INDEX.to_vec()
        };
        // Not assert_eq: a mismatch of megabytes is no message to print.
        assert!(body == want, "response {i}: {} bytes", body.len());
    }
}

#[test]
fn answers_larger_than_the_socket_buffer_wait_for_the_reader() {
    let s = start(4 << 20);
    let mut c = connect(&s);
    c.write_all(b"GET /big.bin HTTP/1.1\r\n\r\nGET /big.bin HTTP/1.1\r\n\r\nHEAD /index.html HTTP/1.1\r\n\r\n").unwrap();
    // Let the server fill the socket and wait for writability before anything is read.
    thread::sleep(Duration::from_millis(100));
    assert_eq!(response(&mut c, false).body, pattern(4 << 20));
    assert_eq!(response(&mut c, false).body, pattern(4 << 20));
    assert_eq!(response(&mut c, true).status, "HTTP/1.1 200 OK");
}

#[test]
fn head_sends_the_headers_of_get_without_the_body() {
    let s = start(25 * 1024);
    let mut c = connect(&s);
    c.write_all(b"HEAD /big.bin HTTP/1.1\r\n\r\nGET /index.html HTTP/1.1\r\n\r\n")
        .unwrap();
    let head = response(&mut c, true);
    assert_eq!(head.header("content-length"), Some("25600"));
    assert_eq!(
        head.header("content-type"),
        Some("application/octet-stream")
    );
    // The next bytes are the next response, so HEAD sent no body.
    assert_eq!(response(&mut c, false).body, INDEX);
}

#[test]
fn unknown_paths_are_404_and_the_connection_stays() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(
        b"GET /nope HTTP/1.1\r\n\r\nGET /sub HTTP/1.1\r\n\r\nGET /index.html HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    assert_eq!(response(&mut c, false).status, "HTTP/1.1 404 Not Found");
    assert_eq!(response(&mut c, false).status, "HTTP/1.1 404 Not Found");
    assert_eq!(response(&mut c, false).body, INDEX);
}

#[test]
fn connection_close_is_honoured_and_what_follows_is_not_answered() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(b"GET /index.html HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = response(&mut c, false);
    assert_eq!(
        (r.header("connection"), r.body.as_slice()),
        (Some("close"), INDEX)
    );
    assert!(at_eof(&mut c));

    let mut c = connect(&s);
    c.write_all(b"GET /big.bin HTTP/1.1\r\nconnection: Keep-Alive, CLOSE\r\n\r\nGET /index.html HTTP/1.1\r\n\r\n").unwrap();
    let r = response(&mut c, false);
    assert_eq!(
        (r.header("connection"), &r.body),
        (Some("close"), &pattern(10))
    );
    assert!(at_eof(&mut c));
}

#[test]
fn a_peer_that_stops_sending_gets_its_answers_then_the_close() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(b"GET /index.html HTTP/1.1\r\n\r\nGET /big.bin HTTP/1.1\r\n\r\n")
        .unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(response(&mut c, false).body, INDEX);
    assert_eq!(response(&mut c, false).body, pattern(10));
    assert!(at_eof(&mut c));
}

#[test]
fn http_1_0_closes_unless_asked_to_keep_alive() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(b"GET /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .unwrap();
    assert_eq!(
        response(&mut c, false).header("connection"),
        Some("keep-alive")
    );
    c.write_all(b"HEAD /index.html HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(response(&mut c, true).header("connection"), Some("close"));
    assert!(at_eof(&mut c));
}

#[test]
fn malformed_requests_and_other_methods_get_an_error_and_a_close() {
    let s = start(10);
    let mut c = connect(&s);
    c.write_all(b"this is not http\r\n\r\n").unwrap();
    assert_eq!(response(&mut c, false).status, "HTTP/1.1 400 Bad Request");
    assert!(at_eof(&mut c));

    let mut c = connect(&s);
    c.write_all(b"POST /index.html HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    let r = response(&mut c, false);
    assert_eq!(
        (r.status.as_str(), r.header("allow")),
        ("HTTP/1.1 405 Method Not Allowed", Some("GET, HEAD"))
    );
    assert!(at_eof(&mut c));

    // A head that never ends is cut off, not buffered forever.
    let mut c = connect(&s);
    c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let filler = format!("X-Filler: {}\r\n", "y".repeat(100));
    for _ in 0..100 {
        if c.write_all(filler.as_bytes()).is_err() {
            break;
        }
    }
    assert_eq!(response(&mut c, false).status, "HTTP/1.1 400 Bad Request");
}

#[test]
fn many_threads_share_one_port() {
    let root = std::env::temp_dir().join(format!(
        "httpbench-reference-{}-threads",
        std::process::id()
    ));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("index.html"), INDEX).unwrap();
    let server = Server::bind(&root, "127.0.0.1", 0, 3).unwrap();
    assert_eq!((server.threads(), server.files()), (3, 1));
    let port = server.local_addr().port();
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let run = s.spawn(|| server.run(&stop));
        for _ in 0..20 {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            assert_eq!(response(&mut c, false).body, INDEX);
        }
        stop.store(true, Ordering::Relaxed);
        run.join().unwrap().unwrap();
    });
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_missing_root_and_a_taken_port_are_errors() {
    let err = Server::bind(Path::new("/no/such/dir"), "127.0.0.1", 0, 1)
        .err()
        .unwrap();
    assert!(err.contains("not a directory"), "{err}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let root = std::env::temp_dir();
    let empty = root.join(format!("httpbench-reference-{}-empty", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let err = Server::bind(&empty, "127.0.0.1", port, 1)
        .err()
        .unwrap_or_default();
    std::fs::remove_dir_all(&empty).ok();
    assert!(err.contains("cannot listen"), "{err}");
}
