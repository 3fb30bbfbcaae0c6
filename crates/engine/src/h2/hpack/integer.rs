//! Integers with an N-bit prefix (RFC 7541 §5.1).

use super::HpackError;

/// The largest integer accepted: no length, index or table size we accept comes near it, and it
/// keeps a hostile run of continuation bytes from overflowing.
const MAX: u64 = u32::MAX as u64;

/// Reads an integer whose prefix is the low `prefix_bits` of `block[*pos]`, advancing `pos` past it.
pub(super) fn decode(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<usize, HpackError> {
    let mask = (1u8 << prefix_bits) - 1;
    let first = block.get(*pos).ok_or(HpackError::Truncated)? & mask;
    *pos += 1;
    if first < mask {
        return Ok(usize::from(first));
    }
    let mut value = u64::from(mask);
    let mut shift = 0;
    loop {
        let byte = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        value += u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
    }
    if value > MAX {
        return Err(HpackError::IntegerOverflow);
    }
    Ok(value as usize)
}

/// Appends `value` with an N-bit prefix, `flags` holding the bits above the prefix.
pub(super) fn encode(value: usize, prefix_bits: u32, flags: u8, out: &mut Vec<u8>) {
    let mask = (1usize << prefix_bits) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(bytes: &[u8], prefix_bits: u32) -> Result<(usize, usize), HpackError> {
        let mut pos = 0;
        decode(bytes, &mut pos, prefix_bits).map(|v| (v, pos))
    }

    #[test]
    fn rfc_7541_c1_examples() {
        let mut out = Vec::new();
        encode(10, 5, 0, &mut out);
        assert_eq!(out, [0x0a]);
        out.clear();
        encode(1337, 5, 0, &mut out);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        out.clear();
        encode(42, 8, 0, &mut out);
        assert_eq!(out, [0x2a]);
        assert_eq!(
            decoded(&[0xea], 5),
            Ok((10, 1)),
            "bits above the prefix are ignored"
        );
        assert_eq!(decoded(&[0x1f, 0x9a, 0x0a], 5), Ok((1337, 3)));
    }

    #[test]
    fn prefix_boundaries_round_trip() {
        for prefix_bits in 1..=7 {
            let mask = (1usize << prefix_bits) - 1;
            for value in [0, mask - 1, mask, mask + 1, mask + 127, mask + 128, 1 << 20] {
                let mut out = Vec::new();
                encode(value, prefix_bits, 0, &mut out);
                assert_eq!(
                    out.len() == 1,
                    value < mask,
                    "{value} with {prefix_bits} bits"
                );
                assert_eq!(decoded(&out, prefix_bits), Ok((value, out.len())));
            }
        }
    }

    #[test]
    fn the_largest_accepted_integer_and_one_more() {
        let mut out = Vec::new();
        encode(u32::MAX as usize, 7, 0, &mut out);
        assert_eq!(decoded(&out, 7), Ok((u32::MAX as usize, out.len())));
        out.clear();
        encode(u32::MAX as usize + 1, 7, 0, &mut out);
        assert_eq!(decoded(&out, 7), Err(HpackError::IntegerOverflow));
    }

    #[test]
    fn endless_continuation_is_refused() {
        let mut bytes = vec![0x7f];
        bytes.extend([0x80; 6]);
        bytes.push(0);
        assert_eq!(decoded(&bytes, 7), Err(HpackError::IntegerOverflow));
    }

    #[test]
    fn a_cut_integer_is_truncated() {
        assert_eq!(decoded(&[], 7), Err(HpackError::Truncated));
        assert_eq!(decoded(&[0x7f], 7), Err(HpackError::Truncated));
        assert_eq!(decoded(&[0x7f, 0x80], 7), Err(HpackError::Truncated));
    }
}
