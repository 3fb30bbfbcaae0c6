//! The TLS fault modes, each seen by a rustls client as designed. The server runs as its binary,
//! as the suite's tests run it; its certificate is made here.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// A self-signed certificate for localhost as PEM files (removed on drop), and a client trusting it.
struct Identity {
    dir: PathBuf,
    client: Arc<ClientConfig>,
}

impl Identity {
    fn new(name: &str) -> Identity {
        let dir = std::env::temp_dir().join(format!(
            "httpbench-testserver-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("cert.pem"), made.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), made.key_pair.serialize_pem()).unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(made.cert.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Identity {
            dir,
            client: Arc::new(client),
        }
    }

    fn flags(&self) -> [String; 4] {
        let path = |name: &str| self.dir.join(name).display().to_string();
        [
            "--tls-cert".into(),
            path("cert.pem"),
            "--tls-key".into(),
            path("key.pem"),
        ]
    }
}

impl Drop for Identity {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// The server in `mode`, killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(mode: &str, options: &[String]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_httpbench-testserver"))
            .args(["--mode", mode, "--max-seconds", "60"])
            .args(options)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("testserver said {line:?}"))
            .trim()
            .to_string();
        Server { child, addr }
    }

    fn connect(&self, id: &Identity) -> StreamOwned<ClientConnection, TcpStream> {
        let sock = TcpStream::connect(&self.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        StreamOwned::new(
            ClientConnection::new(Arc::clone(&id.client), name).unwrap(),
            sock,
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The rustls error inside an I/O error.
fn tls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

fn handshake(c: &mut StreamOwned<ClientConnection, TcpStream>) -> std::io::Result<()> {
    while c.conn.is_handshaking() {
        c.conn.complete_io(&mut c.sock)?;
    }
    Ok(())
}

/// How a client's handshake with a server in `mode` fails.
fn failed_handshake(mode: &str) -> std::io::Error {
    let id = Identity::new(mode);
    let s = Server::start(mode, &[]);
    handshake(&mut s.connect(&id)).unwrap_err()
}

#[test]
fn tls_alert_fails_the_handshake_with_handshake_failure() {
    let e = failed_handshake("tls-alert");
    assert!(
        matches!(
            tls_error(&e),
            Some(rustls::Error::AlertReceived(
                AlertDescription::HandshakeFailure
            ))
        ),
        "{e:?}"
    );
}

#[test]
fn tls_garbage_is_no_tls_record() {
    let e = failed_handshake("tls-garbage");
    assert!(
        matches!(tls_error(&e), Some(rustls::Error::InvalidMessage(_))),
        "{e:?}"
    );
}

#[test]
fn tls_stall_holds_the_handshake_until_the_client_gives_up() {
    let id = Identity::new("stall");
    let s = Server::start("tls-stall", &[]);
    let mut c = s.connect(&id);
    c.sock
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let e = handshake(&mut c).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{e:?}"
    );
    assert!(c.conn.is_handshaking());
}

/// The response head (through CRLFCRLF) and whatever body follows until the stream ends or fails.
fn read_response(
    c: &mut StreamOwned<ClientConnection, TcpStream>,
) -> (String, Vec<u8>, std::io::Error) {
    c.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        match c.read(&mut buf) {
            Ok(0) => panic!("a clean close (close_notify) after {all:?}"),
            Ok(n) => all.extend_from_slice(&buf[..n]),
            Err(e) => break e,
        }
    };
    let at = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    (
        String::from_utf8(all[..at].to_vec()).unwrap(),
        all[at..].to_vec(),
        end,
    )
}

#[test]
fn tls_short_body_ends_inside_the_body_without_close_notify() {
    let id = Identity::new("short");
    let s = Server::start("tls-short-body", &id.flags());
    let (head, body, end) = read_response(&mut s.connect(&id));
    assert!(head.contains("Content-Length: 100\r\n"), "{head}");
    assert_eq!(body.len(), 50);
    // rustls' word for a TCP close with no close_notify.
    assert_eq!(end.kind(), ErrorKind::UnexpectedEof, "{end:?}");
}

#[test]
fn tls_no_close_notify_ends_after_a_whole_response() {
    let id = Identity::new("whole");
    let s = Server::start(
        "tls-no-close-notify",
        &[&id.flags()[..], &["--body-bytes".into(), "20".into()]].concat(),
    );
    let (head, body, end) = read_response(&mut s.connect(&id));
    assert!(
        head.contains("Content-Length: 20\r\n") && head.contains("Connection: close\r\n"),
        "{head}"
    );
    assert_eq!(body, [b'x'; 20]);
    assert_eq!(end.kind(), ErrorKind::UnexpectedEof, "{end:?}");
}

#[test]
fn tls_flags_are_checked_in_one_line() {
    let id = Identity::new("flags");
    let run = |args: &[String]| {
        // Bounded: a server that starts instead of refusing exits 0 after 5 s.
        let out = Command::new(env!("CARGO_BIN_EXE_httpbench-testserver"))
            .args(["--max-seconds", "5"])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, err) = run(&["--mode".into(), "tls-short-body".into()]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("give --tls-cert FILE --tls-key FILE") && err.trim().lines().count() == 1,
        "{err}"
    );
    let (code, err) = run(&[&["--mode".into(), "ok".into()], &id.flags()[..]].concat());
    assert_eq!(code, Some(2));
    assert!(err.contains("--mode ok is plain HTTP"), "{err}");
    let mut wrong = id.flags();
    wrong[3] = wrong[1].clone(); // the certificate as its own key
    let (code, err) = run(&[&["--mode".into(), "tls-no-close-notify".into()], &wrong[..]].concat());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("holds no PEM private key") && err.trim().lines().count() == 1,
        "{err}"
    );
}
