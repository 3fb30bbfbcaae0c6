//! The validation request: one request on a blocking connection of its own, made before the
//! load, over the run's protocol (`http1.rs`, `h2.rs`) and, for https, after a TLS handshake
//! (`tls.rs`) that refuses a certificate or a server with its reason. A wrong URL or a server
//! that does less than asked would otherwise be measured at full speed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use crate::h2::request::RequestBlocks;
use crate::http::request::RequestSet;
use crate::report;
use crate::spec::{LoadSpec, Resolved};
use crate::tls::TlsClient;
use crate::{Error, ErrorKind};

mod h2;
mod http1;
mod tls;

/// Send the validation request and check its answer: its status, and its body against what the
/// spec expects.
pub fn validate(
    spec: &LoadSpec,
    resolved: &Resolved,
    tls: Option<&TlsClient>,
    (requests, h2_requests): (&RequestSet, Option<&RequestBlocks>),
    expect_body: Option<&[u8]>,
) -> Result<report::Validation, Error> {
    let target = &resolved.targets[0];
    let url = &spec.urls[0];
    // Nothing to measure when the server cannot even be reached, whatever `allow_errors` says.
    let tcp =
        TcpStream::connect_timeout(&resolved.addr, resolved.connect_timeout).map_err(|e| {
            ErrorKind::Unreachable {
                addr: resolved.addr.to_string(),
                problem: e.to_string(),
            }
        })?;
    let set_up = tcp
        .set_nodelay(true)
        .and_then(|()| tcp.set_read_timeout(Some(resolved.request_timeout)));
    set_up.map_err(|e| ErrorKind::Unreachable {
        addr: resolved.addr.to_string(),
        problem: e.to_string(),
    })?;
    let mut stream: Box<dyn ReadWrite> = match tls {
        Some(client) => Box::new(tls::handshake(client, tcp, resolved)?),
        None => Box::new(tcp),
    };
    let deadline = Instant::now() + resolved.request_timeout;
    let read = |stream: &mut Box<dyn ReadWrite>, buf: &mut [u8]| loop {
        if Instant::now() > deadline {
            return Err(format!(
                "{url} did not answer within {:?}",
                resolved.request_timeout
            ));
        }
        return match stream.read(buf) {
            Ok(n) => Ok(n),
            // A close without close_notify: as many servers close, the parser judges it.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
            // A signal, or the task work of an io_uring this thread has closed.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(format!(
                    "{url} did not answer within {:?}",
                    resolved.request_timeout
                ))
            }
            Err(e) => Err(format!("reading the first response from {url} failed: {e}")),
        };
    };
    let answer = match h2_requests {
        Some(h2) => h2::exchange(&mut stream, h2.stateless(0), h2.body(), read)
            .map_err(|e| format!("{url}: {e}")),
        None => http1::exchange(
            &mut stream,
            requests.window(0, 1),
            spec.method.eq_ignore_ascii_case("HEAD"),
            url,
            read,
        ),
    };
    let (response, body) = match answer {
        Ok(a) => a,
        Err(problem) if spec.allow_errors => {
            return Ok(report::Validation {
                sent: true,
                status: 0,
                body_bytes: 0,
                ok: false,
                problem: Some(problem),
            })
        }
        Err(problem) => return Err(ErrorKind::ValidationFailed { status: 0, problem }.into()),
    };
    let mut problem = None;
    if !spec.expects(response.status) {
        problem = Some(format!(
            "the first request, {} {}, was answered with status {}{}; check the URL",
            spec.method,
            target.path,
            response.status,
            if spec.expect_status.is_empty() {
                String::new()
            } else {
                format!(
                    ", not one of the expected {}",
                    statuses(&spec.expect_status)
                )
            }
        ));
    } else if let Some(expected) = expect_body {
        if body != expected {
            let at = body
                .iter()
                .zip(expected)
                .position(|(a, b)| a != b)
                .unwrap_or(body.len().min(expected.len()));
            problem = Some(format!(
                "the first response's body ({} bytes) differs from the expected body ({} bytes) from byte {at} on",
                body.len(),
                expected.len()
            ));
        }
    } else if let Some(len) = crate::stats::sizes::Answers::of(spec).length(0) {
        if response.body_bytes != len {
            problem = Some(format!(
                "the first response's body has {} bytes, not the expected {len}",
                response.body_bytes
            ));
        }
    }
    if let Some(expected) = spec.expect_encodings.as_ref().and_then(|c| c.first()) {
        if problem.is_none() && response.coding.name() != expected {
            problem = Some(format!(
                "the first response came in {}, not the expected {expected}; check the Accept-Encoding header",
                response.coding.name()
            ));
        }
    }
    if let (Some(problem), false) = (&problem, spec.allow_errors) {
        return Err(ErrorKind::ValidationFailed {
            status: response.status,
            problem: problem.clone(),
        }
        .into());
    }
    Ok(report::Validation {
        sent: true,
        status: response.status,
        body_bytes: response.body_bytes,
        ok: problem.is_none(),
        problem,
    })
}

/// Both directions of the validation request's connection, plain or TLS.
trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Statuses as a list to read: "200, 304".
fn statuses(expected: &[u16]) -> String {
    let names: Vec<String> = expected.iter().map(u16::to_string).collect();
    names.join(", ")
}
