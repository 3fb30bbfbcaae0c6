//! HTTP/2 (RFC 9113) for the client engine: header compression, framing and the connection.

pub mod hpack;
