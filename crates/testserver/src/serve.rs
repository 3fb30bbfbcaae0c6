//! One connection, served on its own thread according to the mode.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use clap::ValueEnum;

use crate::h2;
use crate::http::{reason, Conn, ReadError, Request};
use crate::slots::Slots;
use crate::tls;

/// Requests answered so far, for `--count-file`.
pub static ANSWERED: AtomicU64 = AtomicU64::new(0);

/// Write out the responses to pipelined requests at least this often (bytes).
const MAX_BATCH: usize = 64 * 1024;
/// How long a closing connection waits for the client's FIN (see `close_gracefully`).
const LINGER: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// 200 with --body-bytes of `x`, keep-alive unless the request closes.
    Ok,
    /// Like ok, but each request holds one of --slots K global slots for exactly --hold-ms D first
    /// (throughput K/D, latency D), or for D plus a uniform amount in [-S, S] with --spread-ms S
    /// (mean latency D).
    Slots,
    /// Like ok, but no response is written during --freeze-ms F out of every --every-ms E (first
    /// freeze at E after start).
    Freeze,
    /// Read a request, then close with RST.
    Reset,
    /// Read a request, never answer.
    Stall,
    /// Content-Length: 100 with only 50 bytes of body, then FIN.
    ShortBody,
    /// `this is not http\r\n\r\n`, then FIN.
    Garbage,
    /// Like ok with `Connection: close`, FIN after each response.
    CloseEach,
    /// Like ok, but keep-alive even when the request says close.
    IgnoreClose,
    /// --body-bytes in 3-byte chunks with extension `;x=1` and trailer `X-T: 1`.
    Chunked,
    /// Every response has status --status CODE.
    Status,
    /// Like ok for the first connection, then never accepts again, with a listen backlog of 0:
    /// later connects hang (connect timeouts).
    Deaf,
    /// TLS: read the ClientHello, answer with a fatal handshake_failure alert, then FIN.
    TlsAlert,
    /// TLS: read the ClientHello, answer with bytes that are not a TLS record, then FIN.
    TlsGarbage,
    /// TLS: read the ClientHello, never answer; the connection stays open until the client closes.
    TlsStall,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, then Content-Length: 100 with only 50
    /// bytes of body, then FIN without close_notify: a truncation inside a body.
    TlsShortBody,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, a whole response with
    /// `Connection: close`, then FIN without close_notify: a common way for servers to end, which
    /// a client must not count as an error.
    TlsNoCloseNotify,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, a whole keep-alive response,
    /// close_notify, then the same response's bytes again on a connection kept open until the
    /// client closes: data after close_notify, which a client must ignore (RFC 8446 6.1).
    TlsDataAfterCloseNotify,
    /// HTTP/2 (h2c by prior knowledge, or TLS with ALPN h2 given --tls-cert/--tls-key; so all the
    /// h2-* modes), answering like ok, with GOAWAY (NO_ERROR) after --goaway-after N requests of
    /// a connection: its last stream id is the Nth request's, the streams up to it are answered,
    /// then the connection closes.
    H2Goaway,
    /// HTTP/2: RST_STREAM INTERNAL_ERROR instead of every --every K-th stream's answer.
    H2RstStream,
    /// HTTP/2: RST_STREAM REFUSED_STREAM instead of every --every K-th stream's answer.
    H2RefuseStream,
    /// HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS 1; a stream beyond it is refused (REFUSED_STREAM).
    H2OneStream,
    /// HTTP/2: HEADERS without END_STREAM, and never the DATA.
    H2NoData,
    /// HTTP/2: SETTINGS_INITIAL_WINDOW_SIZE 0, never a WINDOW_UPDATE: a request body can never go
    /// (requests without one are answered).
    H2ZeroWindow,
    /// HTTP/2: HEADERS, then one byte of DATA more than the client's windows allow as far as the
    /// server has read them (a client that opens its windows while this is on its way may not
    /// see it).
    H2DataOverWindow,
    /// HTTP/2: a WINDOW_UPDATE that takes the client's connection send window past 2^31-1
    /// (FLOW_CONTROL_ERROR), then the answer.
    H2WindowOverflow,
    /// HTTP/2: response header blocks cut in three: HEADERS, then two CONTINUATION frames (nghttp2
    /// refuses more than 8 as a flood).
    H2Continuation,
    /// HTTP/2: HEADERS and DATA with padding.
    H2Padded,
    /// HTTP/2: a response header list one field over the client's SETTINGS_MAX_HEADER_LIST_SIZE
    /// (64 KiB if it set none).
    H2BigHeaders,
    /// HTTP/2: a frame of an unknown type before each answer's HEADERS and between its HEADERS and
    /// DATA (to be ignored).
    H2UnknownFrame,
    /// HTTP/2: GOAWAY PROTOCOL_ERROR (last stream 0) at the first request, then the close.
    H2GoawayError,
    /// HTTP/2: a PING before each answer, which waits for its ACK.
    H2Ping,
    /// HTTP/2: each answer's DATA one byte longer than the client's SETTINGS_MAX_FRAME_SIZE.
    H2BigFrame,
}

impl Mode {
    /// The modes that complete a TLS handshake, so need a certificate and its key.
    pub fn needs_certificate(self) -> bool {
        matches!(
            self,
            Mode::TlsShortBody | Mode::TlsNoCloseNotify | Mode::TlsDataAfterCloseNotify
        )
    }

    /// The modes that speak (some) TLS; the others are plain HTTP.
    pub fn is_tls(self) -> bool {
        self.needs_certificate()
            || matches!(self, Mode::TlsAlert | Mode::TlsGarbage | Mode::TlsStall)
    }

    /// The HTTP/2 modes, which speak TLS (with ALPN h2) when given a certificate, h2c otherwise.
    pub fn is_h2(self) -> bool {
        self.name().starts_with("h2-")
    }

    /// The name `--mode` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }
}

pub struct Config {
    pub mode: Mode,
    /// The response body: `--body-bytes` bytes of `x`.
    pub body: Vec<u8>,
    pub status: u16,
    pub slots: Option<Slots>,
    pub freeze: Option<Freeze>,
    /// h2-rst-stream and h2-refuse-stream: every this many-th request of a connection.
    pub h2_every: u64,
    /// h2-goaway: the GOAWAY after this many requests of a connection.
    pub h2_goaway_after: u64,
    /// For the modes that complete a TLS handshake.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// `--mode freeze`: nothing is written during [k*every, k*every + length)
/// for k >= 1, measured from server start.
pub struct Freeze {
    pub start: Instant,
    pub every: Duration,
    pub length: Duration,
}

impl Freeze {
    fn wait_out(&self) {
        let t = self.start.elapsed();
        if t < self.every {
            return;
        }
        // `length < every` (checked at startup), so one sleep always lands
        // outside any freeze.
        let window_start = self.every * (t.as_nanos() / self.every.as_nanos()) as u32;
        let window_end = window_start + self.length;
        if t < window_end {
            thread::sleep(window_end - t);
        }
    }
}

pub fn serve(stream: TcpStream, cfg: &Config) {
    // Responses are small single writes; Nagle would only add delay.
    let _ = stream.set_nodelay(true);
    if cfg.mode.is_h2() {
        return h2_over(stream, cfg);
    }
    match cfg.mode {
        Mode::TlsAlert => return tls::answer_hello_and_close(stream, &tls::HANDSHAKE_FAILURE),
        Mode::TlsGarbage => return tls::answer_hello_and_close(stream, tls::GARBAGE),
        Mode::TlsShortBody | Mode::TlsNoCloseNotify | Mode::TlsDataAfterCloseNotify => {
            // `options` refuses these modes without a certificate.
            let Some(config) = &cfg.tls else {
                return;
            };
            if cfg.mode == Mode::TlsShortBody {
                return tls::answer_then_close_without_notify(stream, config, &short_body());
            }
            let mut out = Vec::new();
            let keep_alive = cfg.mode == Mode::TlsDataAfterCloseNotify;
            let get = Request {
                is_head: false,
                http10: false,
                keep_alive,
            };
            write_response(&mut out, 200, &cfg.body, false, &get, !keep_alive);
            return if keep_alive {
                tls::answer_then_notify_then_more(stream, config, &out)
            } else {
                tls::answer_then_close_without_notify(stream, config, &out)
            };
        }
        _ => {}
    }
    let mut conn = Conn::new(stream);
    match cfg.mode {
        Mode::TlsStall => {
            if tls::client_hello(&mut conn.stream) {
                // As `stall`: held open, its receive window draining, until the client closes.
                conn.drain();
            }
        }
        Mode::Reset => {
            if next(&mut conn).is_some() {
                reset(conn.stream);
            }
        }
        Mode::Stall => {
            if next(&mut conn).is_some() {
                // Keep the socket open (and its receive window draining) until
                // the client gives up or the process exits.
                conn.drain();
            }
        }
        Mode::ShortBody => {
            if next(&mut conn).is_some() {
                answer_and_close(conn, &short_body());
            }
        }
        Mode::Garbage => {
            if next(&mut conn).is_some() {
                answer_and_close(conn, b"this is not http\r\n\r\n");
            }
        }
        _ => keep_alive_loop(conn, cfg),
    }
}

/// The h2-* modes, over TLS when there is a certificate.
fn h2_over(mut stream: TcpStream, cfg: &Config) {
    let Some(config) = &cfg.tls else {
        h2::serve(&mut stream, cfg);
        return close_gracefully(&stream);
    };
    let Ok(conn) = rustls::ServerConnection::new(Arc::clone(config)) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(conn, stream);
    h2::serve(&mut tls, cfg);
    tls.conn.send_close_notify();
    let _ = tls.flush();
    close_gracefully(&tls.sock);
}

/// `short-body`'s answer: Content-Length: 100 with only 50 bytes of body.
fn short_body() -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
    out.extend_from_slice(&[b'x'; 50]);
    out
}

/// The modes that answer every request with a well-formed response.
fn keep_alive_loop(mut conn: Conn, cfg: &Config) {
    let mut out = Vec::with_capacity(4096);
    let mut batched = 0;
    loop {
        let req = match conn.next_request() {
            Ok(Some(req)) => req,
            Ok(None) | Err(ReadError::Gone) => {
                flush(&mut conn, &mut out, &mut batched, cfg);
                return;
            }
            Err(ReadError::Bad(status)) => {
                // Answer the good requests before it, then refuse this one.
                error_response(&mut out, status);
                if flush(&mut conn, &mut out, &mut batched, cfg) {
                    close_gracefully(&conn.stream);
                }
                return;
            }
        };
        let close = match cfg.mode {
            Mode::CloseEach => true,
            Mode::IgnoreClose => false,
            _ => !req.keep_alive,
        };
        let status = if cfg.mode == Mode::Status {
            cfg.status
        } else {
            200
        };
        let chunked = cfg.mode == Mode::Chunked;
        write_response(&mut out, status, &cfg.body, chunked, &req, close);
        batched += 1;
        if let Some(slots) = &cfg.slots {
            slots.hold();
        }
        // Batch the answers to pipelined requests, but never sit on a
        // response while blocking in a read (or, for slots, while holding the
        // next request's slot).
        let flush_now =
            close || cfg.slots.is_some() || out.len() >= MAX_BATCH || !conn.has_buffered_request();
        if flush_now && !flush(&mut conn, &mut out, &mut batched, cfg) {
            return;
        }
        if close {
            close_gracefully(&conn.stream);
            return;
        }
    }
}

/// Writes the batched responses (once any freeze is over) and counts them;
/// false if the peer is gone.
fn flush(conn: &mut Conn, out: &mut Vec<u8>, batched: &mut u64, cfg: &Config) -> bool {
    if out.is_empty() {
        return true;
    }
    if let Some(freeze) = &cfg.freeze {
        freeze.wait_out();
    }
    if conn.stream.write_all(out).is_err() {
        return false;
    }
    ANSWERED.fetch_add(*batched, Ordering::Relaxed);
    out.clear();
    *batched = 0;
    true
}

/// The next request for the one-shot modes; malformed ones are answered with
/// an error status and the connection closed. `None` means the connection is
/// finished.
fn next(conn: &mut Conn) -> Option<Request> {
    match conn.next_request() {
        Ok(req) => req,
        Err(ReadError::Gone) => None,
        Err(ReadError::Bad(status)) => {
            let mut out = Vec::new();
            error_response(&mut out, status);
            if conn.stream.write_all(&out).is_ok() {
                close_gracefully(&conn.stream);
            }
            None
        }
    }
}

/// Refusal of a request we cannot frame; it is not counted as answered.
fn error_response(out: &mut Vec<u8>, status: u16) {
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        reason(status)
    );
}

fn write_response(
    out: &mut Vec<u8>,
    status: u16,
    body: &[u8],
    chunked: bool,
    req: &Request,
    close: bool,
) {
    let _ = write!(out, "HTTP/1.1 {status} {}\r\n", reason(status));
    // 204 and 304 never have a body, so they carry no framing headers either.
    let bodyless_status = status == 204 || status == 304;
    if bodyless_status {
        // no Content-Length / Transfer-Encoding
    } else if chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\nTrailer: X-T\r\n");
    } else {
        let _ = write!(out, "Content-Length: {}\r\n", body.len());
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if req.http10 {
        // HTTP/1.0 clients only keep the connection if told so.
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    // A HEAD response has the headers of the GET response but no body.
    if req.is_head || bodyless_status {
        return;
    }
    if chunked {
        // 3-byte chunks, each with an extension, then a trailer: exercises
        // every part of the chunked grammar a client must skip over.
        for chunk in body.chunks(3) {
            let _ = write!(out, "{:x};x=1\r\n", chunk.len());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0;x=1\r\nX-T: 1\r\n\r\n");
    } else {
        out.extend_from_slice(body);
    }
}

fn answer_and_close(mut conn: Conn, bytes: &[u8]) {
    if conn.stream.write_all(bytes).is_ok() {
        ANSWERED.fetch_add(1, Ordering::Relaxed);
        close_gracefully(&conn.stream);
    }
}

/// Close with a FIN the client will actually see. Closing a socket that still
/// has unread input (e.g. pipelined requests) makes the kernel send RST
/// instead, which can even discard the response we just wrote; so send our
/// FIN first, then read until the client closes too (bounded by `LINGER`).
pub fn close_gracefully(mut stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(LINGER));
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Abortive close: SO_LINGER {on, 0} makes close() send RST and drop
/// anything unsent.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid fd owned by `stream`, pointer/len describe `linger`.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(stream);
}
