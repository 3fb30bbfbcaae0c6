//! HTTP/2 (RFC 9113) for the load engine's client side.
//!
//! - [`hpack`]: header compression (RFC 7541).
//! - [`frame`]: the 9-byte frame header, frame types and flags, error codes with their names, and
//!   writers for the frames a client sends.
//! - [`connection`]: the sans-io client [`Connection`]: bytes in
//!   ([`Connection::receive`](connection::Connection::receive)), bytes out
//!   ([`Connection::take_output`](connection::Connection::take_output)), events to a
//!   [`StreamSink`]. No sockets, no clocks: the worker owns both.
//!
//! A connection is created with [`Limits`] (our SETTINGS), queues the preface
//! at once, and opens streams only once the server's SETTINGS arrived
//! ([`Connection::ready`](connection::Connection::ready)), so the server's stream limit is known.
//! Request header blocks are encoded once per URL (HPACK without indexing) and reused on every
//! connection and every stream: [`request`].
//!
//! - [`request`]: a run's [`RequestBlocks`](request::RequestBlocks).
//!
//! What the connection reports to its [`StreamSink`]: a stream's first
//! HEADERS (`first_byte`), its END_STREAM (`complete`, with status, HPACK-encoded head bytes,
//! DATA bytes without padding, interim 1xx responses), its reset (`reset`: by the server's
//! RST_STREAM, or by us for a fault confined to the stream, e.g. a header list above
//! `max_header_list_size`, CANCEL), and each GOAWAY (`goaway`: the streams above its last id are
//! forgotten, for the worker to send again). A connection error is `receive`'s `Err`, a GOAWAY
//! queued. The worker gives up on a stream with `cancel` (RST_STREAM CANCEL).

pub mod connection;
pub mod frame;
pub mod hpack;
pub mod request;

pub use connection::{Connection, H2Error, Limits, StreamSink};
