//! Request header blocks: stateless ones valid on any connection, and pairs that index a
//! connection's repeated fields in the server's dynamic table.

use super::table::{self, StaticMatch, ENTRY_OVERHEAD, STATIC};
use super::{huffman, integer};

/// Appends a header block for `fields` to `out`: a field the static table holds is indexed, one
/// whose name it holds is a literal with an indexed name, anything else a literal with a literal
/// name, all *without indexing* and each string Huffman-coded where that is shorter. Nothing
/// refers to or adds to a dynamic table, so the block is valid on every connection for every
/// request and can be encoded once. Names must be lowercase (RFC 9113 §8.2.1); that is not checked.
pub fn encode_request(fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    for &(name, value) in fields {
        write_field(name, value, Literal::WithoutIndexing, out);
    }
}

/// A request's header block in two forms for one connection, as a browser or h2load sends its
/// repeated requests: `priming`, its first request, adds each field `fields` marks (and the static
/// table does not hold whole) to the server's dynamic table, as a literal with incremental
/// indexing, in order; `primed`, every request after it, names those by their dynamic index. The
/// rest are encoded as [`encode_request`] does, in both. Returns the dynamic-table size the added
/// entries take (RFC 7541 §4.1): `primed` is valid only where the server's table holds that much
/// and nothing else was added, so a connection that uses the pair must send nothing else indexed.
pub fn encode_request_pair(
    fields: &[(&[u8], &[u8], bool)],
    priming: &mut Vec<u8>,
    primed: &mut Vec<u8>,
) -> usize {
    let added = |&(name, value, indexed): &(&[u8], &[u8], bool)| {
        indexed && !matches!(table::static_match(name, value), StaticMatch::Field(_))
    };
    let entries = fields.iter().filter(|f| added(f)).count();
    let (mut size, mut nth) = (0, 0);
    for field @ &(name, value, _) in fields {
        if added(field) {
            write_field(name, value, Literal::WithIndexing, priming);
            // The newest entry is the first after the static table's.
            integer::encode(STATIC.len() + entries - nth, 7, 0x80, primed);
            size += name.len() + value.len() + ENTRY_OVERHEAD;
            nth += 1;
        } else {
            write_field(name, value, Literal::WithoutIndexing, priming);
            write_field(name, value, Literal::WithoutIndexing, primed);
        }
    }
    size
}

/// How a field the static table does not hold whole is written (RFC 7541 §6.2).
#[derive(Clone, Copy)]
enum Literal {
    WithIndexing,
    WithoutIndexing,
}

fn write_field(name: &[u8], value: &[u8], literal: Literal, out: &mut Vec<u8>) {
    // The representation's first byte: its pattern and the bits of its name index.
    let (prefix, pattern) = match literal {
        Literal::WithIndexing => (6, 0x40),
        Literal::WithoutIndexing => (4, 0x00),
    };
    match table::static_match(name, value) {
        StaticMatch::Field(index) => integer::encode(index, 7, 0x80, out),
        StaticMatch::Name(index) => {
            integer::encode(index, prefix, pattern, out);
            write_string(value, out);
        }
        StaticMatch::None => {
            out.push(pattern);
            write_string(name, out);
            write_string(value, out);
        }
    }
}

fn write_string(s: &[u8], out: &mut Vec<u8>) {
    let huffman_len = huffman::encoded_len(s);
    if huffman_len < s.len() {
        integer::encode(huffman_len, 7, 0x80, out);
        huffman::encode(s, out);
    } else {
        integer::encode(s.len(), 7, 0x00, out);
        out.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Decoder;
    use super::*;
    use table::Fields;

    fn decoded(decoder: &mut Decoder, block: &[u8]) -> Fields {
        let mut fields = Vec::new();
        decoder
            .decode(block, &mut |n, v| fields.push((n.to_vec(), v.to_vec())))
            .unwrap();
        fields
    }

    #[test]
    fn a_primed_block_names_what_its_priming_block_added() {
        let fields: [(&[u8], &[u8], bool); 6] = [
            (b":method", b"GET", true),
            (b":scheme", b"https", true),
            (b":authority", b"127.0.0.1:8443", true),
            (b":path", b"/a", false),
            (b"user-agent", b"httpbench/0.1.0", true),
            (b"x-custom", b"1", true),
        ];
        let (mut priming, mut primed) = (Vec::new(), Vec::new());
        let size = encode_request_pair(&fields, &mut priming, &mut primed);
        assert_eq!(size, (10 + 14 + 32) + (10 + 15 + 32) + (8 + 1 + 32));
        // GET and https from the static table, the three added fields by dynamic index (the
        // oldest, :authority, the highest), :path as a literal each time.
        assert_eq!(primed[..3], [0x82, 0x87, 0x80 | 64]);
        assert_eq!(primed[primed.len() - 2..], [0x80 | 63, 0x80 | 62]);
        let want: Fields = fields
            .iter()
            .map(|(n, v, _)| (n.to_vec(), v.to_vec()))
            .collect();
        let mut decoder = Decoder::new(4096);
        assert_eq!(decoded(&mut decoder, &priming), want);
        for _ in 0..3 {
            assert_eq!(decoded(&mut decoder, &primed), want);
        }
        assert!(primed.len() < priming.len() / 2);
    }

    #[test]
    fn a_typical_request_uses_static_indexes() {
        let mut out = Vec::new();
        encode_request(
            &[
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":path", b"/"),
                (b":scheme", b"http"),
            ],
            &mut out,
        );
        assert_eq!(out, [0x82, 0x87, 0x84, 0x86]);
    }

    #[test]
    fn a_static_name_with_another_value_is_a_literal_without_indexing() {
        let mut out = Vec::new();
        encode_request(&[(b":authority", b"www.example.com")], &mut out);
        // §6.2.2 with name index 1, then the Huffman string of RFC 7541 C.4.1.
        let mut expected = vec![0x01, 0x8c];
        expected.extend([
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ]);
        assert_eq!(out, expected);
        out.clear();
        encode_request(&[(b":path", b"/x")], &mut out);
        assert_eq!(out[0], 0x04, "the first :path entry names it");
    }

    #[test]
    fn round_trips_and_never_touches_a_dynamic_table() {
        let long = vec![b'q'; 300];
        let fields: [(&[u8], &[u8]); 8] = [
            (b":method", b"POST"),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1:8443"),
            (b":path", b"/api/v1/items?id=42&x=%7E"),
            (b"user-agent", b"httpbench"),
            (b"x-custom-header", b"\x00\xff binary \x7f"),
            (b"accept-encoding", b"gzip, deflate"),
            (b"x-long", &long),
        ];
        let mut block = Vec::new();
        encode_request(&fields, &mut block);
        // An empty dynamic table refuses any reference into it, and stays empty only if nothing
        // was added to it.
        let mut decoder = Decoder::new(4096);
        let expected: Fields = fields
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        for _ in 0..3 {
            assert_eq!(decoded(&mut decoder, &block), expected);
            assert_eq!(decoder.table_contents(), (vec![], 0));
        }
    }

    #[test]
    fn strings_are_raw_when_huffman_is_not_shorter() {
        let mut out = Vec::new();
        encode_request(&[(b"x", b"\x00\x00")], &mut out);
        assert_eq!(out, [0x00, 0x01, b'x', 0x02, 0x00, 0x00]);
    }
}
