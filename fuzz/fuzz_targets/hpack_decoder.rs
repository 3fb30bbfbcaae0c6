//! Fuzzes the HPACK decoder with arbitrary header blocks decoded in sequence on one connection.
//!
//! Input layout: byte 0 sets the table size (its value times 32, so small tables that evict all
//! the time are as likely as large ones), byte 1 the number of block boundaries (mod 8), then one
//! byte per boundary (the distance to the next, minus one); the rest are the blocks. Decoding must
//! never panic, a field can be no longer than its block allows, a decoder must agree with itself
//! on a second run, and every block that decodes must survive `encode_request` and decoding by a
//! fresh decoder unchanged.
#![no_main]

use httpbench_engine::h2::hpack::{encode_request, Decoder, HpackError};
use libfuzzer_sys::fuzz_target;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn decode_all(table_size: usize, blocks: &[&[u8]]) -> Vec<Result<Fields, HpackError>> {
    let mut decoder = Decoder::new(table_size);
    let mut outcomes = Vec::new();
    for block in blocks {
        let mut fields = Vec::new();
        let outcome = decoder.decode(block, &mut |name, value| {
            // A name or value comes from the static table, the dynamic table (never above its
            // size) or the block's own bytes (which Huffman expands at most 8/5).
            assert!(name.len() + value.len() <= 64 + table_size + 2 * block.len());
            fields.push((name.to_vec(), value.to_vec()));
        });
        let failed = outcome.is_err();
        outcomes.push(outcome.map(|()| fields));
        if failed {
            // The table is out of step with the encoder's: the connection ends here.
            break;
        }
    }
    outcomes
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let table_size = usize::from(data[0]) * 32;
    let boundaries = usize::from(data[1] % 8);
    let Some(steps) = data.get(2..2 + boundaries) else {
        return;
    };
    let stream = &data[2 + boundaries..];
    let mut cuts = vec![0];
    for &step in steps {
        let next = cuts[cuts.len() - 1] + usize::from(step) + 1;
        if next >= stream.len() {
            break;
        }
        cuts.push(next);
    }
    cuts.push(stream.len());
    let blocks: Vec<&[u8]> = cuts.windows(2).map(|w| &stream[w[0]..w[1]]).collect();

    let outcomes = decode_all(table_size, &blocks);
    assert_eq!(outcomes, decode_all(table_size, &blocks));

    let mut fresh = Decoder::new(0);
    for fields in outcomes.iter().flatten() {
        let pairs: Vec<(&[u8], &[u8])> = fields.iter().map(|(n, v)| (&n[..], &v[..])).collect();
        let mut block = Vec::new();
        encode_request(&pairs, &mut block);
        let mut again = Vec::new();
        fresh
            .decode(&block, &mut |n, v| again.push((n.to_vec(), v.to_vec())))
            .expect("encode_request wrote a block its decoder refuses");
        assert_eq!(&again, fields);
    }
});
