//! What the server was told to do: its mode and the settings of its modes, and the tally of
//! what it answered.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use clap::ValueEnum;

use crate::slots::Slots;

/// Requests answered so far, for `--count-file`.
pub static ANSWERED: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// 200 with --body-bytes of `x`, keep-alive unless the request closes.
    Ok,
    /// Like ok, but each request holds one of --slots K global slots for exactly --hold-ms D first
    /// (throughput K/D, latency D), or for D plus a uniform amount in [-S, S] with --spread-ms S
    /// (mean latency D).
    Slots,
    /// Like ok, but no response is written during --freeze-ms F out of every --every-ms E (first
    /// freeze at E after start).
    Freeze,
    /// Read a request, then close with RST.
    Reset,
    /// Read a request, never answer.
    Stall,
    /// Content-Length: 100 with only 50 bytes of body, then FIN.
    ShortBody,
    /// `this is not http\r\n\r\n`, then FIN.
    Garbage,
    /// Like ok with `Connection: close`, FIN after each response.
    CloseEach,
    /// Like ok, but keep-alive even when the request says close.
    IgnoreClose,
    /// Like ok, but each connection, once it has answered --close-after N requests, reads the
    /// next one and closes (FIN) without answering it, and without having said `Connection:
    /// close`: a server that ends a kept-alive connection as the client reuses it.
    CloseReused,
    /// --body-bytes in 3-byte chunks with extension `;x=1` and trailer `X-T: 1`.
    Chunked,
    /// Every response has status --status CODE (with --ok-every K, all but every K-th).
    Status,
    /// Like ok for the first connection, then never accepts again, with a listen backlog of 0:
    /// later connects hang (connect timeouts).
    Deaf,
    /// TLS: read the ClientHello, answer with a fatal handshake_failure alert, then FIN.
    TlsAlert,
    /// TLS: read the ClientHello, answer with bytes that are not a TLS record, then FIN.
    TlsGarbage,
    /// TLS: read the ClientHello, never answer; the connection stays open until the client closes.
    TlsStall,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, then Content-Length: 100 with only 50
    /// bytes of body, then FIN without close_notify: a truncation inside a body.
    TlsShortBody,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, a whole response with
    /// `Connection: close`, then FIN without close_notify: a common way for servers to end, which
    /// a client must not count as an error.
    TlsNoCloseNotify,
    /// TLS (needs --tls-cert/--tls-key): a whole handshake, a whole keep-alive response,
    /// close_notify, then the same response's bytes again on a connection kept open until the
    /// client closes: data after close_notify, which a client must ignore (RFC 8446 6.1).
    TlsDataAfterCloseNotify,
    /// HTTP/2 (h2c by prior knowledge, or TLS with ALPN h2 given --tls-cert/--tls-key; so all the
    /// h2-* modes), answering like ok, with GOAWAY (NO_ERROR) after --goaway-after N requests of
    /// a connection: its last stream id is the Nth request's, the streams up to it are answered,
    /// then the connection closes.
    H2Goaway,
    /// HTTP/2: apache2's mod_http2 in a graceful restart, when a request crosses its shutdown
    /// notice: --goaway-after N requests answered, then at the next one GOAWAY (last stream
    /// 2^31-1, NO_ERROR), at once GOAWAY (last stream the Nth request's, error code 0xfffffc7a:
    /// nghttp2's NGHTTP2_ERR_CALLBACK_FAILURE, -902, sent as a wire code), the request left
    /// unprocessed, and the close.
    H2GoawayUnprocessed,
    /// HTTP/2: like slots, each stream's answer holding one of --slots K global slots for --hold-ms
    /// D first (a connection's streams in turn): ground truth for h2c and h2 loads.
    H2Slots,
    /// HTTP/2: RST_STREAM INTERNAL_ERROR instead of every --every K-th stream's answer.
    H2RstStream,
    /// HTTP/2: RST_STREAM REFUSED_STREAM instead of every --every K-th stream's answer.
    H2RefuseStream,
    /// HTTP/2: SETTINGS_MAX_CONCURRENT_STREAMS 1; a stream beyond it is refused (REFUSED_STREAM).
    H2OneStream,
    /// HTTP/2: HEADERS without END_STREAM, and never the DATA.
    H2NoData,
    /// HTTP/2: SETTINGS_INITIAL_WINDOW_SIZE 0, never a WINDOW_UPDATE: a request body can never go
    /// (requests without one are answered).
    H2ZeroWindow,
    /// HTTP/2: HEADERS, then one byte of DATA more than the client's windows allow as far as the
    /// server has read them (a client that opens its windows while this is on its way may not
    /// see it).
    H2DataOverWindow,
    /// HTTP/2: a WINDOW_UPDATE that takes the client's connection send window past 2^31-1
    /// (FLOW_CONTROL_ERROR), then the answer.
    H2WindowOverflow,
    /// HTTP/2: response header blocks cut in three: HEADERS, then two CONTINUATION frames (nghttp2
    /// refuses more than 8 as a flood).
    H2Continuation,
    /// HTTP/2: HEADERS and DATA with padding.
    H2Padded,
    /// HTTP/2: a response header list one field over the client's SETTINGS_MAX_HEADER_LIST_SIZE
    /// (64 KiB if it set none).
    H2BigHeaders,
    /// HTTP/2: a frame of an unknown type before each answer's HEADERS and between its HEADERS and
    /// DATA (to be ignored).
    H2UnknownFrame,
    /// HTTP/2: GOAWAY PROTOCOL_ERROR at the first request, naming it as the last stream (cut off
    /// unanswered: the streams above it were never processed), then the close.
    H2GoawayError,
    /// HTTP/2: a PING before each answer, which waits for its ACK.
    H2Ping,
    /// HTTP/2: each answer's DATA one byte longer than the client's SETTINGS_MAX_FRAME_SIZE.
    H2BigFrame,
}

impl Mode {
    /// The modes that complete a TLS handshake, so need a certificate and its key.
    pub fn needs_certificate(self) -> bool {
        matches!(
            self,
            Mode::TlsShortBody | Mode::TlsNoCloseNotify | Mode::TlsDataAfterCloseNotify
        )
    }

    /// The modes that speak (some) TLS; the others are plain HTTP.
    pub fn is_tls(self) -> bool {
        self.needs_certificate()
            || matches!(self, Mode::TlsAlert | Mode::TlsGarbage | Mode::TlsStall)
    }

    /// The HTTP/2 modes, which speak TLS (with ALPN h2) when given a certificate, h2c otherwise.
    pub fn is_h2(self) -> bool {
        self.name().starts_with("h2-")
    }

    /// The name `--mode` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }
}

pub struct Config {
    pub mode: Mode,
    /// The response body: `--body-bytes` bytes of `x`.
    pub body: Vec<u8>,
    pub status: u16,
    /// Status mode: every this many-th answer of a connection is a 200 (None: none is).
    pub ok_every: Option<u64>,
    pub slots: Option<Slots>,
    pub freeze: Option<Freeze>,
    /// h2-rst-stream and h2-refuse-stream: every this many-th request of a connection.
    pub h2_every: u64,
    /// h2-goaway: the GOAWAY after this many requests of a connection.
    pub h2_goaway_after: u64,
    /// close-reused: the requests each connection answers before it closes on the next.
    pub close_after: u64,
    /// For the modes that complete a TLS handshake.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// `--mode freeze`: nothing is written during [k*every, k*every + length)
/// for k >= 1, measured from server start.
pub struct Freeze {
    pub start: Instant,
    pub every: Duration,
    pub length: Duration,
}

impl Freeze {
    pub fn wait_out(&self) {
        let t = self.start.elapsed();
        if t < self.every {
            return;
        }
        // `length < every` (checked at startup), so one sleep always lands
        // outside any freeze.
        let window_start = self.every * (t.as_nanos() / self.every.as_nanos()) as u32;
        let window_end = window_start + self.length;
        if t < window_end {
            thread::sleep(window_end - t);
        }
    }
}
