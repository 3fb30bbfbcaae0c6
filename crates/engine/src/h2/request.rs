//! A run's HTTP/2 requests, each URL's header blocks encoded once and reused on every stream of
//! every connection.
//!
//! A connection's first request adds the fields every request repeats (`:authority`,
//! `user-agent`, `accept`, the spec's headers) to the server's dynamic table, and the requests
//! after it name them by index, as browsers' and h2load's do: a server decodes a few bytes per
//! request rather than the same Huffman-coded strings each time, and h2load's requests cost
//! nginx and h2o 6-11 % less (bench/RESULTS.md). Where the server's table cannot hold them, every
//! request is a stateless block instead (HPACK without indexing leaves no state behind).

use super::connection::DEFAULT_TABLE_SIZE;
use super::hpack::{encode_request, encode_request_pair};
use super::Connection;
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

/// Each URL's request header block, in its three encodings.
struct Blocks {
    stateless: Vec<u8>,
    priming: Vec<u8>,
    primed: Vec<u8>,
}

pub struct RequestBlocks {
    blocks: Vec<Blocks>,
    /// The dynamic-table size the priming blocks' entries take (the same for every URL).
    table_size: usize,
    body: Option<Vec<u8>>,
}

impl RequestBlocks {
    pub fn build(spec: &LoadSpec, targets: &[Target]) -> RequestBlocks {
        let mut table_size = 0;
        let blocks = targets
            .iter()
            .map(|t| {
                let (blocks, size) = encode(spec, t);
                table_size = size; // the same for every URL: only `:path` differs
                blocks
            })
            .collect();
        let body = spec.body.as_ref().map(|b| b.as_bytes().to_vec());
        RequestBlocks {
            blocks,
            table_size,
            body,
        }
    }

    /// The header block of the `i`th URL of the cycle for the next request on `h2`: priming its
    /// server's dynamic table first, naming what that added after, or stateless where its table
    /// cannot hold the entries.
    pub fn block(&self, i: usize, h2: &mut Connection) -> &[u8] {
        let blocks = &self.blocks[i];
        // The encoder keeps to the default table: with a smaller one it would have to announce
        // the change in its next block (RFC 7541 §4.2), so it sends stateless blocks there.
        if h2.peer_table_size() != DEFAULT_TABLE_SIZE
            || self.table_size > DEFAULT_TABLE_SIZE as usize
        {
            &blocks.stateless
        } else if h2.prime_table() {
            &blocks.primed
        } else {
            &blocks.priming
        }
    }

    /// The `i`th URL's block that leaves no state behind, for a connection of one request.
    pub fn stateless(&self, i: usize) -> &[u8] {
        &self.blocks[i].stateless
    }

    pub fn body(&self) -> Option<&[u8]> {
        self.body.as_deref()
    }
}

/// The request's three blocks, and the table size its priming block's entries take.
fn encode(spec: &LoadSpec, target: &Target) -> (Blocks, usize) {
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
    let mut blocks = Blocks {
        stateless: Vec::new(),
        priming: Vec::new(),
        primed: Vec::new(),
    };
    encode_request(&fields, &mut blocks.stateless);
    // Every request of the run repeats each field but `:path`: those are worth indexing.
    let marked: Vec<_> = fields.iter().map(|&(n, v)| (n, v, n != b":path")).collect();
    let size = encode_request_pair(&marked, &mut blocks.priming, &mut blocks.primed);
    (blocks, size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::frame::{self, setting};
    use crate::h2::hpack::Decoder;
    use crate::h2::{Limits, StreamSink};
    use crate::http::response::Response;

    struct Nothing;

    impl StreamSink for Nothing {
        fn first_byte(&mut self, _: u32) {}
        fn complete(&mut self, _: u32, _: &Response) {}
        fn reset(&mut self, _: u32, _: u32) {}
        fn goaway(&mut self, _: u32, _: u32) {}
    }

    /// A connection that has the server's SETTINGS, with these in it.
    fn connection(settings: &[(u16, u32)]) -> Connection {
        let mut h2 = Connection::new(&Limits::default());
        let mut server = Vec::new();
        frame::write_settings(&mut server, settings);
        h2.receive(&server, &mut Nothing).unwrap();
        h2
    }

    fn blocks(headers: Vec<String>) -> RequestBlocks {
        let spec = LoadSpec {
            urls: vec!["http://h:8080/a".into(), "http://h:8080/b".into()],
            headers,
            ..Default::default()
        };
        let targets: Vec<_> = spec
            .urls
            .iter()
            .map(|u| Target::parse(u).unwrap())
            .collect();
        RequestBlocks::build(&spec, &targets)
    }

    #[test]
    fn a_connections_first_request_primes_the_servers_table_and_the_rest_name_it() {
        let requests = blocks(vec![]);
        let mut h2 = connection(&[]);
        let mut decoder = Decoder::new(4096);
        let mut paths = Vec::new();
        for i in [0, 1, 0, 1] {
            let block = requests.block(i, &mut h2).to_vec();
            assert_eq!(block == requests.blocks[i].priming, paths.is_empty());
            decoder
                .decode(&block, &mut |n, v| {
                    if n == b":path" {
                        paths.push(String::from_utf8_lossy(v).into_owned());
                    }
                })
                .unwrap();
        }
        assert_eq!(paths, ["/a", "/b", "/a", "/b"]);
        // A server that shrinks its table, or entries too large for the default one: stateless.
        let mut small = connection(&[(setting::HEADER_TABLE_SIZE, 0)]);
        assert_eq!(requests.block(0, &mut small), requests.stateless(0));
        let large = blocks(vec![format!("x-big: {}", "v".repeat(5000))]);
        assert_eq!(large.block(1, &mut connection(&[])), large.stateless(1));
    }

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
            .decode(blocks.stateless(0), &mut |n, v| {
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
