//! RFC 9113 section 4 and 6: frame header, types, flags, error codes, and client-side writers.

/// Bytes of every frame header.
pub const HEADER_LEN: usize = 9;
/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
