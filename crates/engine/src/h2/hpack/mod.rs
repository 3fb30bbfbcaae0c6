//! HPACK header compression (RFC 7541).

mod decode;
mod encode;
mod huffman;
mod table;

pub use decode::Decoder;
pub use encode::encode_request;

use std::fmt;

/// Why a header block could not be decoded; every variant is a COMPRESSION_ERROR (RFC 9113 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a field.
    Truncated,
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::Truncated => f.write_str("header block ends inside a field"),
        }
    }
}

impl std::error::Error for HpackError {}
