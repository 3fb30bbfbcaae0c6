//! A TLS server for the engine's tests: rustls with the engine's test certificate for localhost
//! (src/tls/testdata), a thread per connection running `answer` on it; it lives as long as the
//! test process.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConnection, StreamOwned};

pub type Tls = StreamOwned<ServerConnection, TcpStream>;

pub const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tls/testdata/");

/// `alpn`: the protocols the server selects from, in its order of preference (none: no ALPN).
pub fn serve_tls(alpn: &[&[u8]], answer: fn(&mut Tls)) -> SocketAddr {
    let certs = CertificateDer::pem_file_iter(format!("{TESTDATA}server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{TESTDATA}server-key.pem")).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let conn = ServerConnection::new(config.clone()).unwrap();
            std::thread::spawn(move || answer(&mut StreamOwned::new(conn, stream)));
        }
    });
    addr
}
