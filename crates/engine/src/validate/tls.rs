//! The validation request's TLS handshake.

use std::net::TcpStream;

use crate::spec::Resolved;
use crate::tls::{self, TlsClient};
use crate::{Error, ErrorKind};

/// The validation request's TLS handshake, made before anything is sent: a certificate that
/// does not verify, or a server that speaks no TLS, is refused here with its reason rather than
/// measured as a run of failed handshakes. The timeouts are the run's.
pub fn handshake(
    client: &TlsClient,
    mut tcp: TcpStream,
    resolved: &Resolved,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, Error> {
    let addr = resolved.addr.to_string();
    let failed = |problem: String| ErrorKind::TlsHandshake {
        addr: addr.clone(),
        refused: false,
        problem,
    };
    let config = client.for_thread(1);
    let mut conn = client
        .connect(&config)
        .map_err(|e| failed(format!("cannot start a TLS handshake with {addr}: {e}")))?;
    let io = |e: std::io::Error| failed(format!("cannot set up the connection to {addr}: {e}"));
    tcp.set_read_timeout(Some(resolved.connect_timeout))
        .map_err(io)?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            let tls_error = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>());
            if let Some(refusal) = tls_error.and_then(|e| client.alpn_refusal(e)) {
                return Err(refusal);
            }
            if let Some(reason) = tls_error.and_then(tls::certificate_reason) {
                return Err(ErrorKind::TlsCertificate {
                    reason,
                    host: resolved.targets[0].host.clone(),
                    problem: e.to_string(),
                }
                .into());
            }
            let problem = match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                    "no TLS handshake with {addr} within {:?}",
                    resolved.connect_timeout
                ),
                std::io::ErrorKind::UnexpectedEof => {
                    format!("{addr} closed the connection in the TLS handshake")
                }
                _ => format!("the TLS handshake with {addr} failed: {e}"),
            };
            return Err(ErrorKind::TlsHandshake {
                addr: addr.clone(),
                refused: matches!(tls_error, Some(rustls::Error::AlertReceived(_))),
                problem,
            }
            .into());
        }
    }
    client.check_alpn(&conn)?;
    tcp.set_read_timeout(Some(resolved.request_timeout))
        .map_err(io)?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}
