//! HPACK header compression (RFC 7541): a [`Decoder`] per connection for response header blocks,
//! and [`encode_request`] for request blocks encoded once and sent on every connection.
//!
//! Written here rather than taken from a crate because none decodes without allocating per field:
//! `hpack`/`loona-hpack` (`fluke-hpack`) return Huffman-decoded strings as owned `Cow`s and keep
//! each dynamic-table entry in its own `Vec`, `httlib-hpack` decodes into a
//! `Vec<(Vec<u8>, Vec<u8>, u8)>`, and `h2` keeps its HPACK private.
//!
//! Limits the connection relies on: a string or integer is at most `u32::MAX`, and no string can
//! be longer than the block holding it, so the block size the connection accepts (its
//! SETTINGS_MAX_HEADER_LIST_SIZE, roughly) bounds the decoder's memory together with the table size;
//! the scratch buffers grow to the longest Huffman-decoded name and value seen (at most 8/5 of
//! their encoded length) and stay there.

mod decode;
mod encode;
mod huffman;
mod integer;
mod table;

pub use decode::Decoder;
pub use encode::{encode_request, encode_request_pair};

use std::fmt;

/// Why a header block could not be decoded. Every variant is a connection error of type
/// COMPRESSION_ERROR (RFC 9113 §4.3): the dynamic table can no longer be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ends inside a field (an integer or string cut short).
    Truncated,
    /// An integer above `u32::MAX` or with too many continuation bytes.
    IntegerOverflow,
    /// Index 0, which RFC 7541 §6.1 reserves.
    IndexZero,
    /// An index past the static table and the dynamic table's entries.
    IndexOutOfRange(usize),
    /// A Huffman string containing the EOS symbol.
    HuffmanEos,
    /// A Huffman string ending in more than 7 bits of padding, or padding that is not all ones.
    HuffmanPadding,
    /// A dynamic table size update above our SETTINGS_HEADER_TABLE_SIZE.
    TableSizeAboveBound { size: usize, bound: usize },
    /// A dynamic table size update after the block's first field.
    TableSizeUpdateNotAtStart,
    /// A block that does not open with the size update our lowered table size calls for.
    TableSizeUpdateMissing,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::Truncated => f.write_str("HPACK block ends inside a field"),
            HpackError::IntegerOverflow => f.write_str("HPACK integer too large"),
            HpackError::IndexZero => f.write_str("HPACK index 0"),
            HpackError::IndexOutOfRange(index) => {
                write!(
                    f,
                    "HPACK index {index} is beyond the static and dynamic tables"
                )
            }
            HpackError::HuffmanEos => f.write_str("HPACK Huffman string contains EOS"),
            HpackError::HuffmanPadding => {
                f.write_str("HPACK Huffman string padding is longer than 7 bits or not all ones")
            }
            HpackError::TableSizeAboveBound { size, bound } => write!(
                f,
                "HPACK dynamic table size update to {size} exceeds our SETTINGS_HEADER_TABLE_SIZE \
                 {bound}"
            ),
            HpackError::TableSizeUpdateNotAtStart => {
                f.write_str("HPACK dynamic table size update after the first field of a block")
            }
            HpackError::TableSizeUpdateMissing => f.write_str(
                "HPACK block does not start with the dynamic table size update our lowered \
                 SETTINGS_HEADER_TABLE_SIZE requires",
            ),
        }
    }
}

impl std::error::Error for HpackError {}
