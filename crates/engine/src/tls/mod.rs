//! TLS for https:// runs, with rustls: the client configuration a [`TlsSpec`] describes, and
//! what a finished handshake negotiated.
//!
//! The record layer runs inside the worker's connection state machine ([`crate::worker`]): a
//! rustls `ClientConnection` per connection takes the ciphertext the reactor received and gives
//! back plaintext for the response parser; requests are encrypted into the connection's own
//! send buffer, which the reactor sends as it sends plain requests.

mod session;
mod store;

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption as RustlsResumption, Tls12Resumption};
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, ClientConnection, CommonState,
    DigitallySignedStruct, HandshakeKind, RootCertStore, SignatureScheme,
};

use crate::spec::{Resumption, TlsSpec, TlsVersion};
use crate::stats::ErrorClass;
use crate::{Error, ErrorKind};

pub use session::Session;
pub use store::SessionStore;

/// What ALPN offers for HTTP/2: `h2` alone, so that a server that would fall back to HTTP/1.1
/// says so in the handshake and the run is refused rather than measured as HTTP/2.
const ALPN_H2: &[u8] = b"h2";
/// ... and otherwise: HTTP/1.1, so that servers that care see what is spoken.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// What every connection of a run shares: the configuration without its session store, which
/// each thread gets its own of ([`TlsClient::for_thread`]).
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    resumption: Resumption,
    pub server_name: ServerName<'static>,
    /// Whether certificates are verified (not `insecure`).
    pub verified: bool,
    /// Whether ALPN offers `h2` (and only it).
    http2: bool,
}

impl TlsClient {
    /// The client `spec` describes, for the server `host` (a name for SNI and verification, or
    /// an IP address, which verification checks and SNI leaves out), offering HTTP/2 by ALPN if
    /// `http2`, HTTP/1.1 if not.
    pub fn new(spec: &TlsSpec, host: &str, http2: bool) -> Result<TlsClient, Error> {
        if spec.insecure && spec.cacert.is_some() {
            return Err(ErrorKind::TlsSettings {
                field: "tls.insecure",
                problem: "tls.insecure verifies no certificate, so tls.cacert would not be used"
                    .into(),
            }
            .into());
        }
        if spec.resumption == Resumption::Ids && spec.version != Some(TlsVersion::Tls12) {
            return Err(ErrorKind::TlsSettings {
                field: "tls.version",
                problem: "session IDs resume TLS 1.2 sessions only (TLS 1.3 resumes with tickets): resumption ids needs version 1.2".into(),
            }
            .into());
        }
        let provider = Arc::new(provider(spec)?);
        let versions: &[&rustls::SupportedProtocolVersion] = match spec.version {
            Some(TlsVersion::Tls12) => &[&rustls::version::TLS12],
            Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
            None => rustls::ALL_VERSIONS,
        };
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| {
                let version = spec.version.map_or("1.2 or 1.3", TlsVersion::name);
                Error::from(if spec.ciphers.is_empty() {
                    ErrorKind::TlsSettings {
                        field: "tls.groups",
                        problem: format!("no group offered fits TLS {version}: {e}"),
                    }
                } else {
                    // rustls' own words ("no usable cipher suites configured") do not say which
                    // suites would do: the version's own are named.
                    let fitting: Vec<String> = ring::default_provider()
                        .cipher_suites
                        .iter()
                        .filter(|s| versions.iter().any(|v| v.version == s.version().version))
                        .map(|s| suite_name(s.suite()))
                        .collect();
                    ErrorKind::TlsSettings {
                        field: "tls.ciphers",
                        problem: format!(
                            "none of the cipher suites offered is for TLS {version}: offer one of \
                             {}, or another version",
                            fitting.join(",")
                        ),
                    }
                })
            })?;
        let mut config = if spec.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(
                    provider.signature_verification_algorithms,
                )))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(roots(spec)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![if http2 { ALPN_H2 } else { ALPN_HTTP1 }.to_vec()];
        let server_name = ServerName::try_from(host.to_string()).map_err(|e| {
            Error::from(ErrorKind::InvalidUrl {
                url: host.to_string(),
                problem: format!("{host:?} is no name a TLS certificate can hold: {e}"),
            })
        })?;
        Ok(TlsClient {
            config: Arc::new(config),
            resumption: spec.resumption,
            server_name,
            verified: !spec.insecure,
            http2,
        })
    }

    /// Over HTTP/2, the refusal of a finished handshake in which the server did not select `h2`.
    pub fn check_alpn(&self, c: &CommonState) -> Result<(), Error> {
        match c.alpn_protocol() {
            Some(ALPN_H2) => Ok(()),
            _ if !self.http2 => Ok(()),
            selected => Err(ErrorKind::Http2NotSelected {
                selected: selected.map(|p| String::from_utf8_lossy(p).into_owned()),
            }
            .into()),
        }
    }

    /// Over HTTP/2, the refusal of a handshake that failed because the server speaks no protocol
    /// offered (the no_application_protocol alert of a server without `h2`, RFC 7301).
    pub fn alpn_refusal(&self, e: &rustls::Error) -> Option<Error> {
        let refused = rustls::Error::AlertReceived(AlertDescription::NoApplicationProtocol);
        (self.http2 && *e == refused).then(|| ErrorKind::Http2NotSelected { selected: None }.into())
    }

    /// The configuration of one engine thread with `connections`: its own session store, which
    /// serves every one of its connections (none with resumption off).
    pub fn for_thread(&self, connections: usize) -> Arc<ClientConfig> {
        let mut config = (*self.config).clone();
        config.resumption = match self.resumption {
            Resumption::None => RustlsResumption::disabled(),
            Resumption::Tickets => {
                RustlsResumption::store(Arc::new(SessionStore::new(connections)))
                    .tls12_resumption(Tls12Resumption::SessionIdOrTickets)
            }
            Resumption::Ids => RustlsResumption::store(Arc::new(SessionStore::new(connections)))
                .tls12_resumption(Tls12Resumption::SessionIdOnly),
        };
        Arc::new(config)
    }

    /// A new client connection, its ClientHello ready to be written (the validation
    /// request's, and the unit tests'; the load's are [`Session`]s).
    pub fn connect(&self, config: &Arc<ClientConfig>) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(config.clone(), self.server_name.clone())
    }
}

/// ring's provider, its cipher suites and groups cut down to those `spec` names, in its order.
fn provider(spec: &TlsSpec) -> Result<CryptoProvider, Error> {
    let mut provider = ring::default_provider();
    if !spec.ciphers.is_empty() {
        let all = provider.cipher_suites.clone();
        provider.cipher_suites = chosen(
            "tls.ciphers",
            &spec.ciphers,
            &all,
            |s| suite_name(s.suite()),
            cipher_key,
        )?;
    }
    if !spec.groups.is_empty() {
        let all = provider.kx_groups.clone();
        provider.kx_groups = chosen(
            "tls.groups",
            &spec.groups,
            &all,
            |g| format!("{:?}", g.name()),
            group_key,
        )?;
    }
    Ok(provider)
}

/// The items of `all` that `names` ask for, in the order asked; an unknown name is refused with
/// the names known. `key` makes a name comparable, `name` gives an item's.
fn chosen<T: Clone>(
    field: &'static str,
    names: &[String],
    all: &[T],
    name: impl Fn(&T) -> String,
    key: impl Fn(&str) -> String,
) -> Result<Vec<T>, Error> {
    names
        .iter()
        .map(|wanted| {
            all.iter()
                .find(|item| key(&name(item)) == key(wanted))
                .cloned()
                .ok_or_else(|| {
                    ErrorKind::UnknownTlsName {
                        field,
                        name: wanted.clone(),
                        known: all.iter().map(&name).collect(),
                    }
                    .into()
                })
        })
        .collect()
}

/// A suite's IANA name (rustls calls the TLS 1.3 ones TLS13_...).
fn suite_name(suite: rustls::CipherSuite) -> String {
    let name = format!("{suite:?}");
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

fn cipher_key(name: &str) -> String {
    let upper = name.trim().to_ascii_uppercase();
    match upper.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => upper,
    }
}

/// Groups by their TLS names, or the NIST curve names OpenSSL also takes.
fn group_key(name: &str) -> String {
    match name.trim().to_ascii_lowercase().as_str() {
        "p-256" | "prime256v1" => "secp256r1".into(),
        "p-384" => "secp384r1".into(),
        "p-521" => "secp521r1".into(),
        other => other.into(),
    }
}

/// The CA certificates to verify against: the spec's file, or the system's.
fn roots(spec: &TlsSpec) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    match &spec.cacert {
        Some(path) => {
            let fail = |problem: String| {
                Error::from(ErrorKind::CaCert {
                    path: path.clone(),
                    problem,
                })
            };
            let pem = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| fail(format!("it is not PEM ({e})")))?;
            if certs.is_empty() {
                return Err(fail(
                    "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
                ));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| fail(format!("a certificate in it does not parse ({e})")))?;
            }
        }
        None => {
            // Certificates the system has but webpki cannot parse are left out, as by browsers.
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    Ok(roots)
}

/// `insecure`: any certificate is taken, but the handshake's signature is still checked with
/// the key it holds, as OpenSSL does for clients that verify nothing (wrk, h2load), so that both
/// do the same work per handshake.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// The class of a connection's TLS failure.
pub fn class_of(e: &rustls::Error, handshaking: bool) -> ErrorClass {
    match e {
        rustls::Error::InvalidCertificate(_) => ErrorClass::TlsCertificate,
        _ if handshaking => ErrorClass::TlsHandshake,
        _ => ErrorClass::TlsProtocol,
    }
}

/// Why a certificate was refused, in a few words ("unknown CA", "name mismatch", "expired"), if
/// `e` is such a refusal.
pub fn certificate_reason(e: &rustls::Error) -> Option<String> {
    let rustls::Error::InvalidCertificate(c) = e else {
        return None;
    };
    Some(match c {
        CertificateError::UnknownIssuer => "unknown CA".into(),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "name mismatch".into()
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "not valid yet".into()
        }
        CertificateError::Revoked => "revoked".into(),
        CertificateError::BadSignature => "bad signature".into(),
        CertificateError::BadEncoding => "bad encoding".into(),
        other => format!("{other:?}"),
    })
}

/// What a handshake agreed on, as a report names it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Negotiated {
    pub version: Option<String>,
    pub cipher: Option<String>,
    pub group: Option<String>,
    pub alpn: Option<String>,
}

impl Negotiated {
    pub fn of(c: &CommonState) -> Negotiated {
        Negotiated {
            version: c.protocol_version().map(|v| match v {
                rustls::ProtocolVersion::TLSv1_2 => "1.2".to_string(),
                rustls::ProtocolVersion::TLSv1_3 => "1.3".to_string(),
                other => format!("{other:?}"),
            }),
            cipher: c.negotiated_cipher_suite().map(|s| suite_name(s.suite())),
            group: c
                .negotiated_key_exchange_group()
                .map(|g| format!("{:?}", g.name())),
            alpn: c
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        }
    }
}

/// Whether a finished handshake resumed a session.
pub fn resumed(c: &CommonState) -> bool {
    c.handshake_kind() == Some(HandshakeKind::Resumed)
}

#[cfg(test)]
mod tests;
