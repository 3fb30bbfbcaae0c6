//! Requests in, prebuilt answers out. A request is parsed from whatever bytes have arrived; a
//! partial one waits for more.

use std::borrow::Cow;

use crate::files::{Files, Resource};

/// Longest request head accepted; a longer one is answered 400 and the connection closed.
pub const MAX_HEAD: usize = 8192;
const MAX_HEADERS: usize = 32;

pub enum Parsed<'a> {
    /// Not a whole request yet.
    Partial,
    /// A request of `len` bytes, answered by `resource`.
    Complete {
        len: usize,
        resource: &'a Resource,
        head_only: bool,
        keep_alive: bool,
    },
}

/// Parse the request at the start of `buf`. Malformed requests, and requests with a body (never
/// read here), are answered and then the connection closes: simplest, and never out of sync.
pub fn parse<'a>(buf: &[u8], files: &'a Files) -> Parsed<'a> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Parsed::Partial,
        _ => return closing(buf.len(), &files.bad_request),
    };
    let (mut close, mut keep) = (false, false);
    let mut body = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            body |= h.value.trim_ascii() != b"0";
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            body = true;
        }
    }
    // HTTP/1.1 keeps the connection by default, HTTP/1.0 only when asked.
    let keep_alive = !close && !body && (req.version == Some(1) || keep);
    let head_only = match req.method {
        Some("GET") => false,
        Some("HEAD") => true,
        _ => return closing(len, &files.not_allowed),
    };
    let resource = files
        .get(&path_of(req.path.unwrap_or("/")))
        .unwrap_or(&files.not_found);
    Parsed::Complete {
        len,
        resource,
        head_only,
        keep_alive,
    }
}

fn closing(len: usize, resource: &Resource) -> Parsed<'_> {
    Parsed::Complete {
        len,
        resource,
        head_only: false,
        keep_alive: false,
    }
}

/// The path a request target names: without query or fragment, the authority of an
/// absolute-form target dropped, percent-escapes decoded.
fn path_of(target: &str) -> Cow<'_, [u8]> {
    let mut path = target.split(['?', '#']).next().unwrap_or("");
    if let Some(rest) = path
        .strip_prefix("http://")
        .or_else(|| path.strip_prefix("https://"))
    {
        path = rest.find('/').map_or("/", |i| &rest[i..]);
    }
    let path = path.as_bytes();
    if !path.contains(&b'%') {
        return Cow::Borrowed(path);
    }
    let mut decoded = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            path[i],
            path.get(i + 1).and_then(|&b| hex(b)),
            path.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                decoded.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    Cow::Owned(decoded)
}
