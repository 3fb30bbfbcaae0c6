//! TLS for the reference server: its rustls configuration, and the socket as rustls reads and
//! writes it.
//!
//! The crypto provider is ring, as the engine's (one provider for the workspace). aws-lc-rs,
//! rustls' default, was measured against it on this kind of host: this server is the client's
//! ceiling, and with the suite's default key (ECDSA P-256) the server's side of a full TLS 1.3
//! handshake cost 116-143 us of CPU with aws-lc-rs against 154-174 us with ring; with RSA-2048,
//! and per request and answer record, the two were within the noise (docs/DESIGN-engine.md, "The
//! suite's own servers over TLS"). The engine's own client spends about 324 us per full
//! handshake, twice the server's either way, so the ceiling without keep-alive stays the
//! client's; aws-lc-rs's C build (over 4 minutes here, once per cargo profile) did not pay.
//!
//! rustls' buffered `ServerConnection`, not its unbuffered API: in rustls 0.23 both allocate one
//! buffer per record received and one per record sent (the unbuffered API's in-place decryption is
//! still a TODO), so the unbuffered one would buy a copy of a few hundred bytes per request at the
//! price of driving the handshake's state machine here. What this server owns it reuses: the
//! loop's read buffers, the connection's partial request, its queue of prebuilt answers.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerSessionMemoryCache;
use rustls::{ServerConfig, SupportedProtocolVersion};

/// TLS 1.2 sessions kept for resumption by session ID: enough for a load run's tens of thousands
/// of clients (rustls' default of 256 would turn most resumptions into full handshakes). An entry
/// is a few hundred bytes.
const SESSION_CACHE: usize = 1 << 16;

/// ALPN protocols offered, in preference order; `h2` joins here once the server speaks it.
const ALPN: &[&[u8]] = &[b"http/1.1"];

/// The certificate chain of `cert` and the private key of `key` (PEM files; the key PKCS#8, SEC1
/// or PKCS#1, ECDSA or RSA). The error says which file is wrong and how.
pub fn identity(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error("certificate", cert, e))?;
    if chain.is_empty() {
        return Err(pem_error(
            "certificate",
            cert,
            rustls::pki_types::pem::Error::NoItemsFound,
        ));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error("private key", key, e))?;
    Ok((chain, key_der))
}

fn pem_error(what: &str, path: &Path, e: rustls::pki_types::pem::Error) -> String {
    let path = path.display();
    match e {
        rustls::pki_types::pem::Error::Io(e) => format!("cannot read the TLS {what} {path}: {e}"),
        rustls::pki_types::pem::Error::NoItemsFound => {
            format!(
                "the TLS {what} file {path} holds no PEM {what}: give a PEM file (-----BEGIN ...)"
            )
        }
        e => format!("the TLS {what} file {path} is not valid PEM ({e})"),
    }
}

static TLS12_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];
static TLS13_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];

/// The versions spoken: `version` alone when one is pinned ("1.2" or "1.3"), so that a plan
/// measuring TLS 1.2 against 1.3 measures this server at each as it does the others; else both.
fn protocol_versions(
    version: Option<&str>,
) -> Result<&'static [&'static SupportedProtocolVersion], String> {
    match version {
        None => Ok(rustls::ALL_VERSIONS),
        Some("1.2") => Ok(TLS12_ONLY),
        Some("1.3") => Ok(TLS13_ONLY),
        Some(other) => Err(format!(
            "TLS version {other:?} is not one this server speaks: give 1.2 or 1.3, or none for both"
        )),
    }
}

/// The server's TLS configuration: TLS 1.3 and 1.2 (or the one `version` pins), ALPN `http/1.1`,
/// and resumption both ways (stateless tickets for TLS 1.3 and 1.2, a session cache for TLS 1.2
/// session IDs).
pub(crate) fn server_config(
    cert: &Path,
    key: &Path,
    version: Option<&str>,
) -> Result<Arc<ServerConfig>, String> {
    let versions = protocol_versions(version)?;
    let (chain, key_der) = identity(cert, key)?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(versions)
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| {
            format!(
                "the TLS private key {} cannot serve the certificate {} ({e}): give the key the \
                 certificate was made for",
                key.display(),
                cert.display()
            )
        })?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    config.ticketer = ring::Ticketer::new().map_err(|e| format!("TLS session tickets: {e}"))?;
    Ok(Arc::new(config))
}

/// A connection's socket as rustls writes to it: `send`/`sendmsg` with MSG_NOSIGNAL, so a peer
/// gone away is an error to handle, not a SIGPIPE; the records queued go out in one `sendmsg`.
pub(crate) struct Socket(pub(crate) RawFd);

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // SAFETY: a zeroed msghdr is valid; IoSlice is ABI-compatible with iovec, and `bufs`
        // outlives the call.
        let n = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = bufs.len();
            libc::sendmsg(self.0, &msg, libc::MSG_NOSIGNAL)
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The ciphertext of one read handed to `conn`; `plaintext` is called with each run of decrypted
/// bytes, in order, through `scratch`. Ok(true): the peer has sent close_notify. An error ends the connection; rustls' alert saying
/// why has been sent if the socket took it.
pub(crate) fn receive(
    conn: &mut rustls::ServerConnection,
    fd: RawFd,
    mut ciphertext: &[u8],
    scratch: &mut [u8],
    mut plaintext: impl FnMut(&[u8]),
) -> io::Result<bool> {
    while !ciphertext.is_empty() {
        // rustls takes at most a few KiB per call: loop until the read is used up.
        conn.read_tls(&mut ciphertext)?;
        let state = match conn.process_new_packets() {
            Ok(state) => state,
            Err(e) => {
                let _ = conn.write_tls(&mut Socket(fd));
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        let mut left = state.plaintext_bytes_to_read();
        while left > 0 {
            let n = conn.reader().read(scratch)?;
            plaintext(&scratch[..n]);
            left -= n;
        }
        if state.peer_has_closed() {
            return Ok(true);
        }
    }
    Ok(false)
}
