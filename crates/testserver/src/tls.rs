//! The TLS faults: a handshake that fails, stalls or gets garbage, a TLS connection that ends
//! without close_notify, inside a body or after a whole response, and one that goes on after it. What a real server will not do
//! on demand is done here with raw bytes (no TLS library sends garbage for a ServerHello); what
//! needs a real session (a response, then the end) uses rustls.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::config::ANSWERED;
use crate::http::close_gracefully;

/// A TLS record's header: content type, legacy version, length.
const RECORD_HEADER: usize = 5;
const HANDSHAKE: u8 = 22;
/// The largest record a ClientHello may come in (2^14 plus the slack RFC 8446 5.2 allows).
const MAX_RECORD: usize = (1 << 14) + 256;
/// A fatal `handshake_failure` alert record (RFC 8446 6.2), as TLS 1.2 and 1.3 servers send it in
/// the clear before any key is agreed.
pub const HANDSHAKE_FAILURE: [u8; 7] = [21, 3, 3, 0, 2, 2, 40];
/// Sent where the ServerHello belongs: not a TLS record (its first byte is no content type).
pub const GARBAGE: &[u8] = b"this is not tls\r\n\r\n";

/// The server's configuration for the modes that finish a handshake: the certificate chain and
/// key in PEM files, TLS 1.3 and 1.2, ALPN h2 for the HTTP/2 modes and http/1.1 for the others.
pub fn config(cert: &Path, key: &Path, h2: bool) -> Result<Arc<ServerConfig>, String> {
    let (chain, key_der) = httpbench_reference::tls::identity(cert, key)?;
    // The reference server's provider (see its tls module), named rather than left to the crate
    // features of the workspace.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            format!(
                "the TLS private key {} cannot serve the certificate {} ({e})",
                key.display(),
                cert.display()
            )
        })?;
    config.alpn_protocols = vec![if h2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(Arc::new(config))
}

/// Read the client's first record whole; true if it is a handshake record (a ClientHello), false
/// if the client went away or sent something else (plain HTTP, say).
pub fn client_hello(stream: &mut TcpStream) -> bool {
    let mut header = [0u8; RECORD_HEADER];
    if stream.read_exact(&mut header).is_err() || header[0] != HANDSHAKE {
        return false;
    }
    let len = u16::from_be_bytes([header[3], header[4]]) as usize;
    if len > MAX_RECORD {
        return false;
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).is_ok()
}

/// After the ClientHello, `bytes` (an alert, garbage) and the close.
pub fn answer_hello_and_close(mut stream: TcpStream, bytes: &[u8]) {
    if client_hello(&mut stream) && stream.write_all(bytes).is_ok() {
        close_gracefully(&stream);
    }
}

/// A whole handshake and one request, answered with `response`, then a TCP close with no
/// close_notify before it: inside the body when `response` is short of its Content-Length (a
/// truncation), after it otherwise (a server's ordinary way to end, not an error).
pub fn answer_then_close_without_notify(
    stream: TcpStream,
    config: &Arc<ServerConfig>,
    response: &[u8],
) {
    let Some(mut tls) = first_request(stream, config) else {
        return;
    };
    if tls.write_all(response).and_then(|_| tls.flush()).is_ok() {
        ANSWERED.fetch_add(1, Ordering::Relaxed);
        close_gracefully(&tls.sock);
    }
}

/// A whole handshake and one request, answered with `response`, then close_notify, then
/// `response` again as application data, with the connection held open until the client closes:
/// a peer that keeps talking after it said it was done.
pub fn answer_then_notify_then_more(
    stream: TcpStream,
    config: &Arc<ServerConfig>,
    response: &[u8],
) {
    let Some(mut tls) = first_request(stream, config) else {
        return;
    };
    // The answer, the close_notify and the bytes after it leave in one write, so that they
    // arrive together: were the answer alone first, the client could send its next request on
    // the connection before the close_notify came, and that request would be lost to the close
    // (an `eof`, as with any server that closes a keep-alive connection under a request), which
    // is not what this mode is for. rustls keeps encrypting application data after its own
    // close_notify; the records leave in the order they were made.
    if tls.conn.writer().write_all(response).is_err() {
        return;
    }
    tls.conn.send_close_notify();
    if tls
        .conn
        .writer()
        .write_all(response)
        .and_then(|_| tls.flush())
        .is_ok()
    {
        ANSWERED.fetch_add(1, Ordering::Relaxed);
        let mut sink = [0u8; 4096];
        while matches!(tls.sock.read(&mut sink), Ok(n) if n > 0) {}
    }
}

/// A whole handshake and the first request's head read; None if either failed.
fn first_request(
    stream: TcpStream,
    config: &Arc<ServerConfig>,
) -> Option<StreamOwned<ServerConnection, TcpStream>> {
    let conn = ServerConnection::new(Arc::clone(config)).ok()?;
    let mut tls = StreamOwned::new(conn, stream);
    request_head(&mut tls).ok()?;
    Some(tls)
}

/// Read up to the end of the first request's head (GET and HEAD have no body to skip).
fn request_head(tls: &mut impl Read) -> io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tls.read(&mut buf)?;
        if n == 0 || head.len() > 64 * 1024 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(())
}
