//! What a run counts: per-thread tallies, latency histograms and the per-second series, merged
//! exactly (counter sums, histogram addition) when the threads are done.

pub mod cpu;
pub mod series;
pub mod sizes;
pub mod ticks;

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::http::coding::CodingTally;

/// Why a request, or an attempt to connect, failed. Each request that was sent ends up exactly
/// once in `completed`, in one of these classes, or in flight at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    ConnectRefused,
    ConnectTimeout,
    /// No local port was free for a new connection (EADDRNOTAVAIL): the client host, not the
    /// server, ran out, typically in keep-alive-off runs. `--bind` with more addresses helps.
    SourcePortsExhausted,
    ConnectOther,
    Reset,
    /// The connection closed before a complete response head arrived.
    Eof,
    /// A request written to a reused keep-alive connection (one that had completed an answer)
    /// that then ended, EOF or reset, before any byte of the request's answer: what RFC 9110
    /// 9.2.2 lets a client retry, as a server closing an idle connection just as the client
    /// reuses it causes. Counted instead of `eof` or `reset`; with `retry_idempotent` such a
    /// request is retried once instead, and fails only as its retry does.
    Retryable,
    Protocol,
    /// The body ended before its declared length, or differs from the expected length.
    LengthMismatch,
    /// No complete response within the request timeout.
    Timeout,
    /// Any other socket error while sending or receiving.
    Io,
    /// The TLS handshake failed: an alert from the server, no common version, suite or group,
    /// something other than TLS in answer, or no handshake within the connect timeout.
    TlsHandshake,
    /// The server's certificate did not verify.
    TlsCertificate,
    /// After the handshake: a record that does not decrypt or parse, or the connection closed
    /// without close_notify inside a response.
    TlsProtocol,
    /// HTTP/2 broke on the connection (a connection error: a bad frame, header block or flow
    /// control, or a GOAWAY with an error code): every stream on it fails, but those above a
    /// GOAWAY's last stream id, never processed, which move to a new connection; or on one stream,
    /// which we reset (a header list over our limit, a bad `:status`, its window overrun).
    H2Protocol,
    /// In an open loop, the server refused a stream without processing it (RST_STREAM with
    /// REFUSED_STREAM), at its moment in the schedule: sending it later would be another request.
    /// Elsewhere a refused stream is sent again, and no error.
    H2RefusedStream,
    /// The server reset a stream (RST_STREAM) with any other error code.
    H2StreamReset,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 17] = [
        ErrorClass::ConnectRefused,
        ErrorClass::ConnectTimeout,
        ErrorClass::SourcePortsExhausted,
        ErrorClass::ConnectOther,
        ErrorClass::Reset,
        ErrorClass::Eof,
        ErrorClass::Retryable,
        ErrorClass::Protocol,
        ErrorClass::LengthMismatch,
        ErrorClass::Timeout,
        ErrorClass::Io,
        ErrorClass::TlsHandshake,
        ErrorClass::TlsCertificate,
        ErrorClass::TlsProtocol,
        ErrorClass::H2Protocol,
        ErrorClass::H2RefusedStream,
        ErrorClass::H2StreamReset,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::ConnectRefused => "connect_refused",
            ErrorClass::ConnectTimeout => "connect_timeout",
            ErrorClass::SourcePortsExhausted => "source_ports_exhausted",
            ErrorClass::ConnectOther => "connect_other",
            ErrorClass::Reset => "reset",
            ErrorClass::Eof => "eof",
            ErrorClass::Retryable => "retryable",
            ErrorClass::Protocol => "protocol",
            ErrorClass::LengthMismatch => "length_mismatch",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Io => "io",
            ErrorClass::TlsHandshake => "tls_handshake",
            ErrorClass::TlsCertificate => "tls_certificate",
            ErrorClass::TlsProtocol => "tls_protocol",
            ErrorClass::H2Protocol => "h2_protocol",
            ErrorClass::H2RefusedStream => "h2_refused_stream",
            ErrorClass::H2StreamReset => "h2_stream_reset",
        }
    }

    /// A connection that failed before it could carry a request (a connect, or a TLS
    /// handshake): it counts an attempt, not a request.
    pub fn is_connect(self) -> bool {
        matches!(
            self,
            ErrorClass::ConnectRefused
                | ErrorClass::ConnectTimeout
                | ErrorClass::SourcePortsExhausted
                | ErrorClass::ConnectOther
                | ErrorClass::TlsHandshake
                | ErrorClass::TlsCertificate
        )
    }

    /// The class of a failed connect(2).
    pub fn of_connect(errno: i32) -> ErrorClass {
        match errno {
            libc::ECONNREFUSED => ErrorClass::ConnectRefused,
            libc::ETIMEDOUT | libc::ECANCELED | libc::ETIME => ErrorClass::ConnectTimeout,
            libc::EADDRNOTAVAIL | libc::EADDRINUSE => ErrorClass::SourcePortsExhausted,
            _ => ErrorClass::ConnectOther,
        }
    }

    /// The class of a failed send or receive.
    pub fn of_transfer(errno: i32) -> ErrorClass {
        match errno {
            libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED => ErrorClass::Reset,
            _ => ErrorClass::Io,
        }
    }
}

/// Plain tallies of one thread, added up at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub sent: u64,
    pub completed: u64,
    /// Complete responses that arrived during measurement, whenever their requests were sent
    /// (warm-up's included): what the server carried in the window.
    pub answered: u64,
    /// Responses by status class: index 1 for 1xx .. 5 for 5xx, 0 for anything else.
    pub status: [u64; 6],
    /// Of `completed`, those with an expected status (the spec's `expect_status`).
    pub succeeded: u64,
    /// The others, by status.
    pub unexpected: BTreeMap<u16, u64>,
    pub errors: [u64; ErrorClass::ALL.len()],
    pub head_bytes: u64,
    pub body_bytes: u64,
    /// The answers `body_bytes` counts, by their `Content-Encoding`.
    pub encodings: CodingTally,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub connects: u64,
    /// Connections the server closed (or announced it would) while we still had work for them.
    pub server_closes: u64,
    /// Connections the server ended however it did (EOF, reset, `Connection: close`, GOAWAY),
    /// with requests on them or not: what the fine series counts per point.
    pub closed_by_server: u64,
    /// Retryable requests sent again on a new connection (`retry_idempotent`).
    pub retried: u64,
    /// TLS handshakes completed during measurement, full and resumed.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Interim 1xx responses seen before final ones.
    pub interim: u64,
    /// Sum over completed responses of the time from their arrival in the kernel to the
    /// engine handling them, in ns: the client's part of each request's cycle.
    pub handling_delay_ns: u64,
    /// HTTP/2: what the server said on its connections during measurement.
    pub h2: H2Counters,
    /// Of `errors`, those of a request's class counted for a connection that carried no request
    /// (an HTTP/2 connection that failed before its first stream): attempts, not requests.
    pub connection_errors: u64,
}

/// Error codes with a name in RFC 9113 (0x0 to 0xd); the others are counted together.
pub const H2_NAMED_CODES: usize = 14;

/// An HTTP/2 run's tallies of the server's side of its connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct H2Counters {
    /// The smallest SETTINGS_MAX_CONCURRENT_STREAMS the server sent; None: it set no limit.
    pub streams_granted: Option<u32>,
    pub goaways: u64,
    /// RST_STREAM frames by error code: index = code for the named ones, the last for any other.
    pub resets: [u64; H2_NAMED_CODES + 1],
    /// Streams the server refused unprocessed (REFUSED_STREAM, or above a GOAWAY's last stream
    /// id), whose requests went again.
    pub refused_streams: u64,
    /// Of those, the streams above a GOAWAY's last stream id: never processed (RFC 9113 6.8),
    /// moved to a new connection.
    pub goaway_streams_moved: u64,
    /// Bytes of framing received: frame headers, padding, and frames other than DATA and HEADERS.
    pub frame_bytes: u64,
}

impl H2Counters {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS on one connection (u32::MAX: no limit).
    pub fn granted(&mut self, streams: u32) {
        if streams != u32::MAX {
            self.streams_granted = Some(self.streams_granted.map_or(streams, |s| s.min(streams)));
        }
    }

    /// An RST_STREAM from the server with error `code`.
    pub fn reset(&mut self, code: u32) {
        self.resets[(code as usize).min(H2_NAMED_CODES)] += 1;
    }

    pub fn add(&mut self, o: &H2Counters) {
        if let Some(s) = o.streams_granted {
            self.granted(s);
        }
        self.goaways += o.goaways;
        for (a, b) in self.resets.iter_mut().zip(o.resets) {
            *a += b;
        }
        self.refused_streams += o.refused_streams;
        self.goaway_streams_moved += o.goaway_streams_moved;
        self.frame_bytes += o.frame_bytes;
    }
}

impl Counters {
    pub fn error(&mut self, class: ErrorClass, n: u64) {
        self.errors[class as usize] += n;
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Requests that were sent and then failed (connect failures send nothing).
    pub fn failed_requests(&self) -> u64 {
        let errors: u64 = ErrorClass::ALL
            .iter()
            .filter(|c| !c.is_connect())
            .map(|&c| self.errors[c as usize])
            .sum();
        errors - self.connection_errors
    }

    pub fn add(&mut self, o: &Counters) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.answered += o.answered;
        for (a, b) in self.status.iter_mut().zip(o.status) {
            *a += b;
        }
        self.succeeded += o.succeeded;
        for (status, n) in &o.unexpected {
            *self.unexpected.entry(*status).or_insert(0) += n;
        }
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        self.head_bytes += o.head_bytes;
        self.body_bytes += o.body_bytes;
        self.encodings.add(&o.encodings);
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.connects += o.connects;
        self.connection_errors += o.connection_errors;
        self.server_closes += o.server_closes;
        self.closed_by_server += o.closed_by_server;
        self.retried += o.retried;
        self.handshakes_full += o.handshakes_full;
        self.handshakes_resumed += o.handshakes_resumed;
        self.interim += o.interim;
        self.handling_delay_ns += o.handling_delay_ns;
        self.h2.add(&o.h2);
    }
}

/// Latency histograms in microseconds, 1 us to 60 s at 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("constant bounds are valid")
}

/// Record a duration given in nanoseconds; past the top it counts as the top, never dropped.
#[inline]
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    h.saturating_record((ns / 1_000).max(1));
}

/// Every latency a thread measures.
#[derive(Debug, Clone)]
pub struct Latencies {
    /// From when each request was meant to be sent (open loop) or was sent (closed loop) to its
    /// complete response.
    pub total: Histogram<u64>,
    /// From the send to the first byte of the response.
    pub first_byte: Histogram<u64>,
    pub connect: Histogram<u64>,
    /// From the TCP connection's establishment to the end of the TLS handshake.
    pub tls_handshake: Histogram<u64>,
    /// From the actual send to the complete response: the uncorrected figure, which equals
    /// `total` in closed loop.
    pub service: Histogram<u64>,
    /// `total` again, by the size class of the answer's body.
    pub sizes: sizes::SizeClasses,
    /// How long each request still unanswered when the run ended had waited, from when it was
    /// due (a run that drains, until its answer or failure in the drain, or the drain's end): a
    /// floor under its `total`, which the window did not see.
    pub in_flight: Histogram<u64>,
    /// The same ages' exact sum and largest, in ns: the histogram keeps 3 digits and stops at
    /// 60 s, the report's mean and oldest age do not.
    pub in_flight_age_sum_ns: u64,
    pub in_flight_age_max_ns: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            total: histogram(),
            first_byte: histogram(),
            connect: histogram(),
            tls_handshake: histogram(),
            service: histogram(),
            sizes: sizes::SizeClasses::default(),
            in_flight: histogram(),
            in_flight_age_sum_ns: 0,
            in_flight_age_max_ns: 0,
        }
    }
}

impl Latencies {
    pub fn add(&mut self, o: &Latencies) {
        for (a, b) in [
            (&mut self.total, &o.total),
            (&mut self.first_byte, &o.first_byte),
            (&mut self.connect, &o.connect),
            (&mut self.tls_handshake, &o.tls_handshake),
            (&mut self.service, &o.service),
            (&mut self.in_flight, &o.in_flight),
        ] {
            a.add(b).expect("histograms share bounds");
        }
        self.sizes.add(&o.sizes);
        self.in_flight_age_sum_ns += o.in_flight_age_sum_ns;
        self.in_flight_age_max_ns = self.in_flight_age_max_ns.max(o.in_flight_age_max_ns);
    }

    /// A request still unanswered when the run ended, `age_ns` after it was due.
    pub fn record_in_flight(&mut self, age_ns: u64) {
        record_ns(&mut self.in_flight, age_ns);
        self.in_flight_age_sum_ns += age_ns;
        self.in_flight_age_max_ns = self.in_flight_age_max_ns.max(age_ns);
    }

    /// The in-flight requests' ages, summed and the largest, in us: the report's `Tally`.
    pub fn in_flight_ages_us(&self) -> (f64, f64) {
        (
            self.in_flight_age_sum_ns as f64 / 1e3,
            self.in_flight_age_max_ns as f64 / 1e3,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Latencies;

    #[test]
    fn in_flight_ages_are_exact_past_the_histograms_range_and_digits() {
        let (mut a, mut b) = (Latencies::default(), Latencies::default());
        a.record_in_flight(90_000_000_000);
        b.record_in_flight(1_234_567);
        a.add(&b);
        assert_eq!(a.in_flight.len(), 2);
        assert_eq!(a.in_flight_ages_us(), (90_001_234.567, 90_000_000.0));
    }
}
