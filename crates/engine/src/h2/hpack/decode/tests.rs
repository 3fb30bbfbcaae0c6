use super::super::encode_request;
use super::*;
use table::Fields;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

fn owned(fields: &[(&str, &str)]) -> Fields {
    fields
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

fn decoded(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, HpackError> {
    let mut fields = Vec::new();
    decoder.decode(block, &mut |n, v| fields.push((n.to_vec(), v.to_vec())))?;
    Ok(fields)
}

/// One header block of RFC 7541 Appendix C: its wire bytes, the fields it decodes to, and the
/// dynamic table afterwards (newest first) with the table's size.
struct Example {
    wire: &'static str,
    fields: &'static [(&'static str, &'static str)],
    table: &'static [(&'static str, &'static str)],
    size: usize,
}

fn run(table_size: usize, examples: &[Example]) {
    let mut decoder = Decoder::new(table_size);
    for (i, example) in examples.iter().enumerate() {
        let fields = decoded(&mut decoder, &hex(example.wire)).unwrap();
        assert_eq!(fields, owned(example.fields), "block {i}");
        assert_eq!(
            decoder.table_contents(),
            (owned(example.table), example.size),
            "block {i}"
        );
    }
}

const AUTHORITY: (&str, &str) = (":authority", "www.example.com");
const NO_CACHE: (&str, &str) = ("cache-control", "no-cache");
const CUSTOM: (&str, &str) = ("custom-key", "custom-value");
const GET_HTTP: [(&str, &str); 3] = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
const REQUEST_1: [(&str, &str); 4] = [GET_HTTP[0], GET_HTTP[1], GET_HTTP[2], AUTHORITY];
const REQUEST_2: [(&str, &str); 5] = [GET_HTTP[0], GET_HTTP[1], GET_HTTP[2], AUTHORITY, NO_CACHE];
const REQUEST_3: [(&str, &str); 5] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    AUTHORITY,
    CUSTOM,
];

fn requests(wires: [&'static str; 3]) -> [Example; 3] {
    [
        Example {
            wire: wires[0],
            fields: &REQUEST_1,
            table: &[AUTHORITY],
            size: 57,
        },
        Example {
            wire: wires[1],
            fields: &REQUEST_2,
            table: &[NO_CACHE, AUTHORITY],
            size: 110,
        },
        Example {
            wire: wires[2],
            fields: &REQUEST_3,
            table: &[CUSTOM, NO_CACHE, AUTHORITY],
            size: 164,
        },
    ]
}

#[test]
fn rfc_7541_c2_field_representations() {
    let mut decoder = Decoder::new(4096);
    let block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
    assert_eq!(
        decoded(&mut decoder, &block).unwrap(),
        owned(&[("custom-key", "custom-header")])
    );
    assert_eq!(
        decoder.table_contents(),
        (owned(&[("custom-key", "custom-header")]), 55)
    );

    let mut decoder = Decoder::new(4096);
    let block = hex("040c 2f73 616d 706c 652f 7061 7468");
    assert_eq!(
        decoded(&mut decoder, &block).unwrap(),
        owned(&[(":path", "/sample/path")])
    );
    let block = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
    assert_eq!(
        decoded(&mut decoder, &block).unwrap(),
        owned(&[("password", "secret")])
    );
    assert_eq!(
        decoded(&mut decoder, &[0x82]).unwrap(),
        owned(&[(":method", "GET")])
    );
    assert_eq!(decoder.table_contents(), (vec![], 0));
}

#[test]
fn rfc_7541_c3_requests_without_huffman() {
    run(
        4096,
        &requests([
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ]),
    );
}

#[test]
fn rfc_7541_c4_requests_with_huffman() {
    run(
        4096,
        &requests([
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ]),
    );
}

const STATUS_302: (&str, &str) = (":status", "302");
const STATUS_307: (&str, &str) = (":status", "307");
const PRIVATE: (&str, &str) = ("cache-control", "private");
const DATE_21: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
const DATE_22: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
const LOCATION: (&str, &str) = ("location", "https://www.example.com");
const GZIP: (&str, &str) = ("content-encoding", "gzip");
const COOKIE: (&str, &str) = (
    "set-cookie",
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
);

/// C.5 and C.6 use a 256-byte table, so each response evicts the oldest entries.
fn responses(wires: [&'static str; 3]) -> [Example; 3] {
    [
        Example {
            wire: wires[0],
            fields: &[STATUS_302, PRIVATE, DATE_21, LOCATION],
            table: &[LOCATION, DATE_21, PRIVATE, STATUS_302],
            size: 222,
        },
        Example {
            wire: wires[1],
            fields: &[STATUS_307, PRIVATE, DATE_21, LOCATION],
            table: &[STATUS_307, LOCATION, DATE_21, PRIVATE],
            size: 222,
        },
        Example {
            wire: wires[2],
            fields: &[(":status", "200"), PRIVATE, DATE_22, LOCATION, GZIP, COOKIE],
            table: &[COOKIE, GZIP, DATE_22],
            size: 215,
        },
    ]
}

#[test]
fn rfc_7541_c5_responses_without_huffman_with_evictions() {
    run(
        256,
        &responses([
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
             6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
             54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
             5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
             3d31",
        ]),
    );
}

/// RFC 7541 C.6: the responses of C.5 with Huffman-coded strings.
const C6: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
     2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
     77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
     9587 3160 65c0 03ed 4ee5 b106 3d50 07",
];

#[test]
fn rfc_7541_c6_responses_with_huffman_with_evictions() {
    run(256, &responses(C6));
}

#[test]
fn decoding_stops_allocating_once_warmed() {
    let blocks: Vec<Vec<u8>> = C6.map(hex).into();
    // A server that keeps sending these responses: every round inserts and evicts, and the
    // ring's write position drifts round after round, so it wraps at ever different places.
    let mut decoder = Decoder::new(256);
    let round = |decoder: &mut Decoder| {
        for block in &blocks {
            decoder.decode(block, &mut |_, _| ()).unwrap();
        }
    };
    for _ in 0..10 {
        round(&mut decoder);
    }
    let warmed = decoder.capacities();
    for _ in 0..1000 {
        round(&mut decoder);
    }
    assert_eq!(decoder.capacities(), warmed);
}

#[test]
fn index_zero_and_out_of_range_are_refused() {
    let mut decoder = Decoder::new(4096);
    assert_eq!(decoded(&mut decoder, &[0x80]), Err(HpackError::IndexZero));
    assert_eq!(
        decoded(&mut decoder, &[0xbe]),
        Err(HpackError::IndexOutOfRange(62))
    );
    // A literal's name index is checked the same way, with and without indexing.
    assert_eq!(
        decoded(&mut decoder, &[0x7e, 0x00]),
        Err(HpackError::IndexOutOfRange(62))
    );
    assert_eq!(
        decoded(&mut decoder, &[0x0f, 0x2f, 0x00]),
        Err(HpackError::IndexOutOfRange(62))
    );
    assert_eq!(
        decoded(&mut decoder, &[0xbd]).unwrap(),
        owned(&[("www-authenticate", "")])
    );
}

#[test]
fn size_update_above_the_bound_is_refused() {
    let mut decoder = Decoder::new(4096);
    // 001 11111 then 4097 - 31 = 4066 = 0x0fe2.
    assert_eq!(
        decoded(&mut decoder, &[0x3f, 0xe2, 0x1f]),
        Err(HpackError::TableSizeAboveBound {
            size: 4097,
            bound: 4096
        })
    );
    assert_eq!(
        decoded(&mut decoder, &[0x3f, 0xe1, 0x1f, 0x82]).unwrap(),
        owned(&[GET_HTTP[0]])
    );
}

#[test]
fn size_updates_only_at_the_start_of_a_block() {
    let mut decoder = Decoder::new(4096);
    // Two updates at the start are allowed (§4.2): to 0, which empties the table, then back.
    decoder
        .decode(&hex("4003 6162 6301 78"), &mut |_, _| ())
        .unwrap();
    assert_eq!(decoder.table_contents().1, 36);
    assert_eq!(
        decoded(&mut decoder, &[0x20, 0x3f, 0x21, 0x82]).unwrap(),
        owned(&[GET_HTTP[0]])
    );
    assert_eq!(decoder.table_contents(), (vec![], 0));
    assert_eq!(
        decoded(&mut decoder, &[0x82, 0x20]),
        Err(HpackError::TableSizeUpdateNotAtStart)
    );
}

#[test]
fn a_lowered_bound_requires_a_size_update() {
    let mut decoder = Decoder::new(4096);
    decoder
        .decode(&hex("4003 6162 6301 78"), &mut |_, _| ())
        .unwrap();
    decoder.set_max_table_size(0);
    assert_eq!(decoder.table_contents(), (vec![], 0));
    assert_eq!(
        decoded(&mut decoder, &[0x82]),
        Err(HpackError::TableSizeUpdateMissing)
    );
    assert_eq!(
        decoded(&mut decoder, &[0x20, 0x82]).unwrap(),
        owned(&[GET_HTTP[0]])
    );
    assert_eq!(
        decoded(&mut decoder, &[0x82]).unwrap(),
        owned(&[GET_HTTP[0]])
    );
    // Raising the bound asks for nothing: the encoder may grow its table or not.
    decoder.set_max_table_size(8192);
    assert_eq!(
        decoded(&mut decoder, &[0x82]).unwrap(),
        owned(&[GET_HTTP[0]])
    );
}

#[test]
fn a_block_cut_anywhere_inside_a_field_is_truncated() {
    let block = hex("4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf");
    for cut in 1..block.len() {
        let mut decoder = Decoder::new(4096);
        assert_eq!(
            decoded(&mut decoder, &block[..cut]),
            Err(HpackError::Truncated),
            "cut {cut}"
        );
    }
    let mut decoder = Decoder::new(4096);
    assert_eq!(decoded(&mut decoder, &block).unwrap(), owned(&[CUSTOM]));
}

#[test]
fn bad_huffman_in_a_block_is_refused() {
    let mut decoder = Decoder::new(4096);
    // Literal without indexing, name :path (4), a 4-byte Huffman value that is EOS.
    assert_eq!(
        decoded(&mut decoder, &[0x04, 0x84, 0xff, 0xff, 0xff, 0xff]),
        Err(HpackError::HuffmanEos)
    );
    // A one-byte Huffman value of eight ones: padding longer than 7 bits.
    assert_eq!(
        decoded(&mut decoder, &[0x04, 0x81, 0xff]),
        Err(HpackError::HuffmanPadding)
    );
}

#[test]
fn an_empty_block_has_no_fields() {
    let mut decoder = Decoder::new(4096);
    assert_eq!(decoded(&mut decoder, &[]).unwrap(), vec![]);
}

#[test]
fn a_request_block_decodes_on_any_connection() {
    let mut block = Vec::new();
    encode_request(&[(b":method", b"GET"), (b"x-a", b"b")], &mut block);
    let mut warm = Decoder::new(256);
    run_c6_first(&mut warm);
    assert_eq!(
        decoded(&mut warm, &block).unwrap(),
        owned(&[GET_HTTP[0], ("x-a", "b")])
    );
}

fn run_c6_first(decoder: &mut Decoder) {
    decoder.decode(&hex(C6[0]), &mut |_, _| ()).unwrap();
}
