//! The client configuration from a spec, and resumption through the session store, against a
//! rustls server in memory (testdata/: a CA and a certificate for localhost, made by the suite's
//! certificates.py, valid for a century; test keys only).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConnection, ServerConfig, ServerConnection};

use super::*;

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/tls/testdata")
        .join(name)
}

fn spec(f: impl FnOnce(&mut TlsSpec)) -> TlsSpec {
    let mut s = TlsSpec {
        cacert: Some(testdata("ca.pem")),
        ..TlsSpec::default()
    };
    f(&mut s);
    s
}

fn kind(spec: &TlsSpec) -> ErrorKind {
    TlsClient::new(spec, "localhost", false).unwrap_err().kind
}

#[test]
fn names_are_taken_by_iana_or_rustls_spelling_in_any_case() {
    let s = spec(|s| {
        s.ciphers = vec![
            "tls_aes_128_gcm_sha256".into(),
            "TLS13_CHACHA20_POLY1305_SHA256".into(),
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into(),
        ];
        s.groups = vec!["P-256".into(), "x25519".into()];
    });
    let p = provider(&s).unwrap();
    let suites: Vec<String> = p
        .cipher_suites
        .iter()
        .map(|c| suite_name(c.suite()))
        .collect();
    assert_eq!(
        suites,
        [
            "TLS_AES_128_GCM_SHA256",
            "TLS_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
        ]
    );
    let groups: Vec<String> = p
        .kx_groups
        .iter()
        .map(|g| format!("{:?}", g.name()))
        .collect();
    assert_eq!(groups, ["secp256r1", "X25519"]);
    assert!(TlsClient::new(&s, "localhost", false).is_ok());
}

#[test]
fn unknown_names_and_impossible_settings_are_refused_with_their_field() {
    match kind(&spec(|s| s.ciphers = vec!["RC4-MD5".into()])) {
        ErrorKind::UnknownTlsName { field, name, known } => {
            assert_eq!((field, name.as_str()), ("tls.ciphers", "RC4-MD5"));
            assert!(known.contains(&"TLS_AES_128_GCM_SHA256".to_string()));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        kind(&spec(|s| s.groups = vec!["ffdhe1024".into()])),
        ErrorKind::UnknownTlsName {
            field: "tls.groups",
            ..
        }
    ));
    // A TLS 1.2 suite only, for TLS 1.3.
    assert!(matches!(
        kind(&spec(|s| {
            s.version = Some(TlsVersion::Tls13);
            s.ciphers = vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into()];
        })),
        ErrorKind::TlsSettings {
            field: "tls.ciphers",
            ..
        }
    ));
    assert!(matches!(
        kind(&spec(|s| s.resumption = Resumption::Ids)),
        ErrorKind::TlsSettings {
            field: "tls.version",
            ..
        }
    ));
    assert!(TlsClient::new(
        &spec(|s| {
            s.resumption = Resumption::Ids;
            s.version = Some(TlsVersion::Tls12);
        }),
        "localhost",
        false
    )
    .is_ok());
    assert!(matches!(
        kind(&spec(|s| s.insecure = true)),
        ErrorKind::TlsSettings {
            field: "tls.insecure",
            ..
        }
    ));
}

#[test]
fn a_ca_file_must_be_readable_pem_with_a_certificate() {
    for (file, says) in [
        (testdata("missing.pem"), "No such file"),
        (testdata("server-key.pem"), "no PEM certificate"),
        (
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            "no PEM certificate",
        ),
    ] {
        match kind(&spec(|s| s.cacert = Some(file.clone()))) {
            ErrorKind::CaCert { problem, .. } => assert!(problem.contains(says), "{problem}"),
            other => panic!("{other:?}"),
        }
    }
}

fn server(version: TlsVersion) -> Arc<ServerConfig> {
    let certs = CertificateDer::pem_file_iter(testdata("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(testdata("server-key.pem")).unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] = match version {
        TlsVersion::Tls12 => &[&rustls::version::TLS12],
        TlsVersion::Tls13 => &[&rustls::version::TLS13],
    };
    Arc::new(
        ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    )
}

/// Shuttle records between the two ends until neither has anything to say.
fn exchange(
    client: &mut ClientConnection,
    server: &mut ServerConnection,
) -> Result<(), rustls::Error> {
    loop {
        let mut moved = false;
        while client.wants_write() {
            let mut buf = Vec::new();
            client.write_tls(&mut buf).unwrap();
            server.read_tls(&mut buf.as_slice()).unwrap();
            server.process_new_packets()?;
            moved = true;
        }
        while server.wants_write() {
            let mut buf = Vec::new();
            server.write_tls(&mut buf).unwrap();
            client.read_tls(&mut buf.as_slice()).unwrap();
            client.process_new_packets()?;
            moved = true;
        }
        if !moved {
            return Ok(());
        }
    }
}

/// Which of `n` handshakes in a row, on one thread's configuration, resumed.
fn handshakes(s: &TlsSpec, version: TlsVersion, n: usize) -> Vec<bool> {
    let client = TlsClient::new(s, "localhost", false).unwrap();
    let config = client.for_thread(4);
    let server_config = server(version);
    (0..n)
        .map(|_| {
            let mut c = client.connect(&config).unwrap();
            let mut srv = ServerConnection::new(server_config.clone()).unwrap();
            exchange(&mut c, &mut srv).unwrap();
            assert!(!c.is_handshaking());
            assert_eq!(Negotiated::of(&c).version.as_deref(), Some(version.name()));
            resumed(&c)
        })
        .collect()
}

#[test]
fn every_connection_after_the_first_resumes_and_none_without_resumption() {
    let all_after_first = vec![false, true, true, true, true, true, true, true];
    for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
        assert_eq!(
            handshakes(&spec(|_| {}), version, 8),
            all_after_first,
            "{version:?}"
        );
        let none = spec(|s| s.resumption = Resumption::None);
        assert_eq!(handshakes(&none, version, 3), [false; 3], "{version:?}");
    }
    let ids = spec(|s| {
        s.resumption = Resumption::Ids;
        s.version = Some(TlsVersion::Tls12);
    });
    assert_eq!(handshakes(&ids, TlsVersion::Tls12, 8), all_after_first);
}

#[test]
fn certificate_refusals_name_their_reason() {
    let client = TlsClient::new(&spec(|_| {}), "example.com", false).unwrap();
    let mut c = client.connect(&client.for_thread(1)).unwrap();
    let mut srv = ServerConnection::new(server(TlsVersion::Tls13)).unwrap();
    let e = exchange(&mut c, &mut srv).unwrap_err();
    assert_eq!(certificate_reason(&e).as_deref(), Some("name mismatch"));
    assert_eq!(class_of(&e, true), ErrorClass::TlsCertificate);

    let system = TlsClient::new(&TlsSpec::default(), "localhost", false).unwrap();
    let mut c = system.connect(&system.for_thread(1)).unwrap();
    let mut srv = ServerConnection::new(server(TlsVersion::Tls13)).unwrap();
    let e = exchange(&mut c, &mut srv).unwrap_err();
    assert_eq!(certificate_reason(&e).as_deref(), Some("unknown CA"));

    let insecure = TlsClient::new(
        &TlsSpec {
            insecure: true,
            ..TlsSpec::default()
        },
        "example.com",
        false,
    )
    .unwrap();
    assert!(!insecure.verified);
    let mut c = insecure.connect(&insecure.for_thread(1)).unwrap();
    let mut srv = ServerConnection::new(server(TlsVersion::Tls13)).unwrap();
    exchange(&mut c, &mut srv).unwrap();
    assert!(!c.is_handshaking());
}

#[test]
fn as_many_connections_as_the_thread_has_resume_at_once() {
    // rustls' own store keeps 8 TLS 1.3 tickets per server: the last 12 of these would be full.
    let client = TlsClient::new(&spec(|_| {}), "localhost", false).unwrap();
    let config = client.for_thread(20);
    let server_config = server(TlsVersion::Tls13);
    let handshake = |c: &mut ClientConnection| {
        let mut srv = ServerConnection::new(server_config.clone()).unwrap();
        exchange(c, &mut srv).unwrap();
        resumed(c)
    };
    // A full handshake brings two tickets and takes none, a resumed one brings two and takes
    // one: twenty in a row leave the pool full.
    for _ in 0..20 {
        handshake(&mut client.connect(&config).unwrap());
    }
    // Each ClientHello takes its ticket when the connection is made: all twenty are in flight
    // together, as a thread's connections are.
    let mut together: Vec<ClientConnection> =
        (0..20).map(|_| client.connect(&config).unwrap()).collect();
    let resumed: Vec<bool> = together.iter_mut().map(handshake).collect();
    assert_eq!(resumed, [true; 20]);
}

/// The protocol a server offering `server_alpn` selects for a client offering HTTP/2 or not, or
/// the client's error when the handshake fails.
fn alpn(
    http2: bool,
    server_alpn: &[&[u8]],
) -> (TlsClient, Result<ClientConnection, rustls::Error>) {
    let client = TlsClient::new(&spec(|_| {}), "localhost", http2).unwrap();
    let mut c = client.connect(&client.for_thread(1)).unwrap();
    let mut config = (*server(TlsVersion::Tls13)).clone();
    config.alpn_protocols = server_alpn.iter().map(|p| p.to_vec()).collect();
    let mut srv = ServerConnection::new(Arc::new(config)).unwrap();
    if exchange(&mut c, &mut srv).is_err() {
        // The server's alert, as the client sees it.
        let mut buf = Vec::new();
        while srv.wants_write() {
            srv.write_tls(&mut buf).unwrap();
        }
        c.read_tls(&mut buf.as_slice()).unwrap();
        let alert = c.process_new_packets().expect_err("the server's alert");
        return (client, Err(alert));
    }
    (client, Ok(c))
}

#[test]
fn http2_offers_h2_alone_and_refuses_a_server_that_does_not_select_it() {
    let both: &[&[u8]] = &[b"h2", b"http/1.1"];
    let (client, c) = alpn(true, both);
    let c = c.unwrap();
    assert_eq!(Negotiated::of(&c).alpn.as_deref(), Some("h2"));
    assert!(client.check_alpn(&c).is_ok());
    let (client, c) = alpn(false, both);
    let c = c.unwrap();
    assert_eq!(Negotiated::of(&c).alpn.as_deref(), Some("http/1.1"));
    assert!(client.check_alpn(&c).is_ok());
    // A server that ignores ALPN.
    let (client, c) = alpn(true, &[]);
    assert_eq!(
        client.check_alpn(&c.unwrap()).unwrap_err().kind,
        ErrorKind::Http2NotSelected { selected: None }
    );
    // A server that speaks HTTP/1.1 only refuses the handshake (RFC 7301).
    let (client, c) = alpn(true, &[b"http/1.1"]);
    let refusal = client.alpn_refusal(&c.unwrap_err()).unwrap();
    assert_eq!(
        refusal.to_string(),
        "the server did not agree to HTTP/2 over ALPN (it selected no protocol); drop http2, or enable h2 on the server"
    );
    let (client, c) = alpn(false, &[b"http/1.1"]);
    assert!(client.check_alpn(&c.unwrap()).is_ok());
}
