//! The server over TLS, seen by a rustls client: certificates are made here, per test.

use rustls::client::{Resumption, Tls12Resumption};
use rustls::crypto::ring;
use rustls::pki_types::ServerName;
use rustls::{
    ClientConfig, ClientConnection, HandshakeKind, ProtocolVersion, RootCertStore, StreamOwned,
    SupportedProtocolVersion,
};

use super::*;

/// A certificate for localhost and 127.0.0.1 and its key, as PEM files in a directory of their
/// own (removed on drop).
struct Identity {
    dir: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    der: rustls::pki_types::CertificateDer<'static>,
}

impl Drop for Identity {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn identity(alg: &'static rcgen::SignatureAlgorithm) -> Identity {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "httpbench-reference-tls-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let key = if *alg == rcgen::PKCS_RSA_SHA256 {
        // ring signs with RSA keys but cannot make them: OpenSSL's command line does.
        let made = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ])
            .output()
            .expect("openssl makes the test's RSA key");
        let pem = String::from_utf8(made.stdout).unwrap();
        rcgen::KeyPair::from_pem_and_sign_algo(&pem, alg).unwrap()
    } else {
        rcgen::KeyPair::generate_for(alg).unwrap()
    };
    let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    Identity {
        dir,
        cert: cert_path,
        key: key_path,
        der: cert.der().clone(),
    }
}

fn start_tls(big: usize, id: &Identity) -> Running {
    start_with(big, |server| {
        server.with_tls(&id.cert, &id.key, None).unwrap()
    })
}

/// A client trusting `id` only, speaking `version`, offering ALPN http/1.1.
fn client(
    id: &Identity,
    version: &'static SupportedProtocolVersion,
    resumption: Resumption,
) -> Arc<ClientConfig> {
    client_of(id, &[version], resumption)
}

/// A client trusting `id` only, offering `versions` and ALPN http/1.1.
fn client_of(
    id: &Identity,
    versions: &[&'static SupportedProtocolVersion],
    resumption: Resumption,
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(id.der.clone()).unwrap();
    let mut config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config.resumption = resumption;
    Arc::new(config)
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

fn connect_tls(s: &Running, config: &Arc<ClientConfig>) -> Tls {
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(Arc::clone(config), name).unwrap();
    let sock = connect(s);
    // rustls writes a flight in several writes: without this, Nagle holds the last back for the
    // server's delayed ACK, tens of ms per handshake.
    sock.set_nodelay(true).unwrap();
    StreamOwned::new(conn, sock)
}

/// One GET of /index.html on `c`, checked.
fn get_index(c: &mut Tls) {
    c.write_all(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let r = response(c, false);
    assert_eq!(
        (r.status.as_str(), r.body.as_slice()),
        ("HTTP/1.1 200 OK", INDEX)
    );
}

#[test]
fn tls_1_3_and_1_2_serve_with_ecdsa_and_rsa_keys() {
    for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_RSA_SHA256] {
        let id = identity(alg);
        let s = start_tls(10, &id);
        for (version, wire) in [
            (&rustls::version::TLS13, ProtocolVersion::TLSv1_3),
            (&rustls::version::TLS12, ProtocolVersion::TLSv1_2),
        ] {
            let mut c = connect_tls(&s, &client(&id, version, Resumption::disabled()));
            get_index(&mut c);
            assert_eq!(c.conn.protocol_version(), Some(wire));
            assert_eq!(c.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
            assert_eq!(c.conn.handshake_kind(), Some(HandshakeKind::Full));
        }
    }
}

#[test]
fn a_pinned_version_is_the_only_one_spoken() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    for (pinned, wire, other) in [
        ("1.2", ProtocolVersion::TLSv1_2, &rustls::version::TLS13),
        ("1.3", ProtocolVersion::TLSv1_3, &rustls::version::TLS12),
    ] {
        let s = start_with(10, |server| {
            server.with_tls(&id.cert, &id.key, Some(pinned)).unwrap()
        });
        // A client offering both gets the pinned one ...
        let both = client_of(&id, rustls::ALL_VERSIONS, Resumption::disabled());
        let mut c = connect_tls(&s, &both);
        get_index(&mut c);
        assert_eq!(c.conn.protocol_version(), Some(wire));
        // ... and one offering only the other is refused in the handshake.
        let mut c = connect_tls(&s, &client(&id, other, Resumption::disabled()));
        let refused = c.conn.complete_io(&mut c.sock).unwrap_err();
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::InvalidData,
            "{refused:?}"
        );
    }
    let err = Server::bind(&id.dir, "127.0.0.1", 0, 1)
        .unwrap()
        .with_tls(&id.cert, &id.key, Some("1.1"))
        .err()
        .unwrap();
    assert!(
        err.contains("\"1.1\" is not one this server speaks: give 1.2 or 1.3"),
        "{err}"
    );
}

#[test]
fn keep_alive_serves_many_requests_on_one_tls_connection() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(3000, &id);
    let mut c = connect_tls(
        &s,
        &client(&id, &rustls::version::TLS13, Resumption::disabled()),
    );
    for _ in 0..50 {
        get_index(&mut c);
        c.write_all(b"GET /big.bin HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(response(&mut c, false).body, pattern(3000));
    }
}

#[test]
fn pipelined_requests_over_tls_are_answered_in_order_even_when_larger_than_the_socket() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(4 << 20, &id);
    let mut c = connect_tls(
        &s,
        &client(&id, &rustls::version::TLS12, Resumption::disabled()),
    );
    pipelined_in_order(&mut c, 40, 4 << 20, Duration::from_millis(100));
}

#[test]
fn resumed_handshakes_resume_by_tickets_and_by_session_ids() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(10, &id);
    let ways = [
        (&rustls::version::TLS13, Tls12Resumption::SessionIdOrTickets),
        (&rustls::version::TLS12, Tls12Resumption::SessionIdOrTickets),
        (&rustls::version::TLS12, Tls12Resumption::SessionIdOnly),
    ];
    for (version, tls12) in ways {
        let config = client(&id, version, Resumption::default().tls12_resumption(tls12));
        let kinds: Vec<_> = (0..3)
            .map(|_| {
                let mut c = connect_tls(&s, &config);
                // The answer comes after the TLS 1.3 tickets: reading it takes them in.
                get_index(&mut c);
                c.conn.handshake_kind()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                Some(HandshakeKind::Full),
                Some(HandshakeKind::Resumed),
                Some(HandshakeKind::Resumed)
            ],
            "{version:?} {tls12:?}"
        );
    }
}

#[test]
fn more_tls_1_2_session_ids_are_kept_than_rustls_keeps_by_default() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(10, &id);
    // A client keeps one TLS 1.2 session per server name: one client each, more than the 256
    // sessions rustls' default server cache would keep, all connecting before any reconnects.
    let clients: Vec<_> = (0..300)
        .map(|_| {
            let resumption = Resumption::default().tls12_resumption(Tls12Resumption::SessionIdOnly);
            client(&id, &rustls::version::TLS12, resumption)
        })
        .collect();
    for config in &clients {
        get_index(&mut connect_tls(&s, config));
    }
    let resumed = clients
        .iter()
        .filter(|config| {
            let mut c = connect_tls(&s, config);
            get_index(&mut c);
            c.conn.handshake_kind() == Some(HandshakeKind::Resumed)
        })
        .count();
    assert_eq!(resumed, clients.len());
}

#[test]
fn connection_close_over_tls_ends_with_close_notify() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(10, &id);
    let config = client(&id, &rustls::version::TLS13, Resumption::disabled());
    let mut c = connect_tls(&s, &config);
    c.write_all(b"GET /index.html HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        .unwrap();
    assert_eq!(response(&mut c, false).body, INDEX);
    // rustls reports a close without close_notify as an error (UnexpectedEof).
    assert!(at_eof(&mut c));

    // The client's own close_notify after its requests: answered, then the close.
    let mut c = connect_tls(&s, &config);
    c.write_all(b"GET /index.html HTTP/1.1\r\n\r\n").unwrap();
    c.conn.send_close_notify();
    c.flush().unwrap();
    assert_eq!(response(&mut c, false).body, INDEX);
    assert!(at_eof(&mut c));
}

#[test]
fn plain_http_to_a_tls_server_is_dropped() {
    let id = identity(&rcgen::PKCS_ECDSA_P256_SHA256);
    let s = start_tls(10, &id);
    let mut c = connect(&s);
    c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    // rustls answers with an alert or nothing; never an HTTP response.
    let _ = c.read_to_end(&mut rest);
    assert!(!rest.starts_with(b"HTTP/"), "{rest:?}");
}

#[test]
fn a_key_that_is_not_the_certificates_or_not_pem_is_refused_at_start() {
    let (a, b) = (
        identity(&rcgen::PKCS_ECDSA_P256_SHA256),
        identity(&rcgen::PKCS_ECDSA_P256_SHA256),
    );
    let tls = |cert: &Path, key: &Path| {
        Server::bind(&a.dir, "127.0.0.1", 0, 1)
            .unwrap()
            .with_tls(cert, key, None)
            .err()
            .unwrap()
    };
    let err = tls(&a.cert, &b.key);
    assert!(err.contains("cannot serve the certificate"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let err = tls(&a.cert, &a.cert);
    assert!(err.contains("holds no PEM private key"), "{err}");
    let err = tls(&a.key, &a.key);
    assert!(err.contains("holds no PEM certificate"), "{err}");
    let err = tls(&a.dir.join("missing.pem"), &a.key);
    assert!(err.starts_with("cannot read the TLS certificate"), "{err}");
}
