//! A run's HTTP/2 requests, each URL's header block encoded once and reused on every stream of
//! every connection (HPACK without indexing leaves no state behind).

use super::hpack::encode_request;
use crate::spec::{LoadSpec, Target};

/// Header fields HTTP/2 forbids in requests (RFC 9113 section 8.2.2): the connection's business,
/// not the request's. `host` gives way to `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

pub struct RequestBlocks {
    blocks: Vec<Vec<u8>>,
    body: Option<Vec<u8>>,
}

impl RequestBlocks {
    pub fn build(spec: &LoadSpec, targets: &[Target]) -> RequestBlocks {
        let blocks = targets.iter().map(|t| encode(spec, t)).collect();
        let body = spec.body.as_ref().map(|b| b.as_bytes().to_vec());
        RequestBlocks { blocks, body }
    }

    /// The header block of the `i`th URL of the cycle.
    pub fn block(&self, i: usize) -> &[u8] {
        &self.blocks[i]
    }

    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }
}

fn encode(spec: &LoadSpec, target: &Target) -> Vec<u8> {
    let scheme = if target.tls { "https" } else { "http" };
    let user_agent = concat!("httpbench/", env!("CARGO_PKG_VERSION"));
    let headers: Vec<(String, &str)> = spec
        .headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim()))
        .filter(|(name, _)| !CONNECTION_SPECIFIC.contains(&name.as_str()))
        .collect();
    let given = |name: &str| headers.iter().any(|(n, _)| n == name);
    let length = spec.body.as_ref().map(|b| b.len().to_string());
    let mut fields: Vec<(&[u8], &[u8])> = vec![
        (b":method", spec.method.as_bytes()),
        (b":scheme", scheme.as_bytes()),
        (b":authority", target.authority.as_bytes()),
        (b":path", target.path.as_bytes()),
    ];
    if !given("user-agent") {
        fields.push((b"user-agent", user_agent.as_bytes()));
    }
    if !given("accept") {
        fields.push((b"accept", b"*/*"));
    }
    if let Some(length) = &length {
        if !given("content-length") {
            fields.push((b"content-length", length.as_bytes()));
        }
    }
    fields.extend(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
    let mut out = Vec::new();
    encode_request(&fields, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::Decoder;

    #[test]
    fn a_block_has_the_pseudo_headers_first_and_no_connection_headers() {
        let spec = LoadSpec {
            urls: vec!["https://h:8443/p?q".into()],
            headers: vec![
                "Connection: close".into(),
                "X-A: 1".into(),
                "Host: x".into(),
            ],
            ..Default::default()
        };
        let target = Target::parse(&spec.urls[0]).unwrap();
        let blocks = RequestBlocks::build(&spec, &[target]);
        let mut fields = Vec::new();
        Decoder::new(4096)
            .decode(blocks.block(0), &mut |n, v| {
                fields.push(format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                ))
            })
            .unwrap();
        assert_eq!(
            fields[..4],
            [
                ":method: GET",
                ":scheme: https",
                ":authority: h:8443",
                ":path: /p?q"
            ]
        );
        assert!(fields.contains(&"x-a: 1".to_string()));
        assert!(!fields
            .iter()
            .any(|f| f.starts_with("connection") || f.starts_with("host")));
    }
}
