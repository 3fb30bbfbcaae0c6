//! One connection, served on its own thread according to the mode.

use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::{Config, Mode, ANSWERED};
use crate::h2;
use crate::http::{close_gracefully, reason, Conn, ReadError, Request};
use crate::tls;

/// Write out the responses to pipelined requests at least this often (bytes).
const MAX_BATCH: usize = 64 * 1024;

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
    let mut answered: u64 = 0;
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
        if cfg.mode == Mode::CloseReused && answered == cfg.close_after {
            if flush(&mut conn, &mut out, &mut batched, cfg) {
                close_gracefully(&conn.stream);
            }
            return;
        }
        let close = match cfg.mode {
            Mode::CloseEach => true,
            Mode::IgnoreClose => false,
            _ => !req.keep_alive,
        };
        let ok = cfg.ok_every.is_some_and(|k| answered.is_multiple_of(k));
        answered += 1;
        let status = if cfg.mode == Mode::Status && !ok {
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
