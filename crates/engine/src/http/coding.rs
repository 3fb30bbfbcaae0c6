//! The content coding of an answer (its `Content-Encoding`), from a fixed set so that counting
//! one is an array index: no allocation per answer, whatever the server sends.

use super::response::trim;

/// A content coding (RFC 9110, section 8.4.1), or `Other` for anything else a server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Coding {
    /// No `Content-Encoding`, or `identity`.
    #[default]
    Identity,
    Gzip,
    Deflate,
    Br,
    Zstd,
    Compress,
    /// A coding outside this set, or several applied one after another.
    Other,
}

impl Coding {
    pub const ALL: [Coding; 7] = [
        Coding::Identity,
        Coding::Gzip,
        Coding::Deflate,
        Coding::Br,
        Coding::Zstd,
        Coding::Compress,
        Coding::Other,
    ];

    /// The name a report and a spec give it (`Content-Encoding`'s token, lower case).
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Compress => "compress",
            Coding::Other => "other",
        }
    }

    /// The coding a spec names (`other` is no coding one can expect).
    pub fn named(name: &str) -> Option<Coding> {
        Coding::ALL
            .into_iter()
            .find(|c| *c != Coding::Other && c.name() == name)
    }

    /// The coding a `Content-Encoding` value says was applied: `identity` tokens and empty list
    /// items are no coding, `x-gzip` is gzip (RFC 9110, section 8.4.1.3), two codings are `Other`.
    pub fn of_header(value: &[u8]) -> Coding {
        let mut found = Coding::Identity;
        for token in value.split(|&b| b == b',') {
            let token = trim(token);
            let coding = if token.is_empty() || token.eq_ignore_ascii_case(b"identity") {
                continue;
            } else if token.eq_ignore_ascii_case(b"gzip") || token.eq_ignore_ascii_case(b"x-gzip") {
                Coding::Gzip
            } else if token.eq_ignore_ascii_case(b"br") {
                Coding::Br
            } else if token.eq_ignore_ascii_case(b"deflate") {
                Coding::Deflate
            } else if token.eq_ignore_ascii_case(b"zstd") {
                Coding::Zstd
            } else if token.eq_ignore_ascii_case(b"compress")
                || token.eq_ignore_ascii_case(b"x-compress")
            {
                Coding::Compress
            } else {
                Coding::Other
            };
            if found != Coding::Identity {
                return Coding::Other;
            }
            found = coding;
        }
        found
    }
}

/// Answers and their body bytes (de-chunked, still coded: what came on the wire) per coding,
/// and what those bodies hold decoded where that is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodingTally {
    pub answers: [u64; Coding::ALL.len()],
    pub bytes: [u64; Coding::ALL.len()],
    /// The decoded lengths of the answers whose decoded length is known.
    pub decoded: [u64; Coding::ALL.len()],
    /// Answers whose decoded length is not known (a coded answer to a URL of no known length).
    pub undecoded: [u64; Coding::ALL.len()],
}

/// One coding's tally, as `CodingTally::seen` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub coding: Coding,
    pub answers: u64,
    pub bytes: u64,
    /// None when some answer's decoded length is not known.
    pub decoded: Option<u64>,
}

impl CodingTally {
    /// An answer of `body` bytes in `coding`, whose URL's body is `decoded` bytes long decoded
    /// (an identity answer's own length when not given).
    #[inline]
    pub fn record(&mut self, coding: Coding, body: u64, decoded: Option<u64>) {
        let i = coding as usize;
        self.answers[i] += 1;
        self.bytes[i] += body;
        match decoded.or((coding == Coding::Identity).then_some(body)) {
            Some(d) => self.decoded[i] += d,
            None => self.undecoded[i] += 1,
        }
    }

    pub fn add(&mut self, o: &CodingTally) {
        for i in 0..Coding::ALL.len() {
            self.answers[i] += o.answers[i];
            self.bytes[i] += o.bytes[i];
            self.decoded[i] += o.decoded[i];
            self.undecoded[i] += o.undecoded[i];
        }
    }

    /// The codings seen.
    pub fn seen(&self) -> impl Iterator<Item = Seen> + '_ {
        Coding::ALL
            .into_iter()
            .map(|coding| {
                let i = coding as usize;
                Seen {
                    coding,
                    answers: self.answers[i],
                    bytes: self.bytes[i],
                    decoded: (self.undecoded[i] == 0).then_some(self.decoded[i]),
                }
            })
            .filter(|s| s.answers > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_name_their_coding() {
        for (value, coding) in [
            (&b""[..], Coding::Identity),
            (b"identity", Coding::Identity),
            (b"gzip", Coding::Gzip),
            (b"X-GZIP", Coding::Gzip),
            (b" br ", Coding::Br),
            (b"deflate", Coding::Deflate),
            (b"zstd", Coding::Zstd),
            (b"x-compress", Coding::Compress),
            (b"identity, gzip", Coding::Gzip),
            (b"gzip, br", Coding::Other),
            (b"aes128gcm", Coding::Other),
        ] {
            assert_eq!(Coding::of_header(value), coding, "{value:?}");
        }
        assert_eq!(Coding::named("br"), Some(Coding::Br));
        assert_eq!(Coding::named("other"), None);
        assert_eq!(Coding::named("BR"), None);
    }

    #[test]
    fn tallies_add_up_per_coding() {
        let mut a = CodingTally::default();
        a.record(Coding::Identity, 100, None);
        a.record(Coding::Br, 30, Some(90));
        a.record(Coding::Br, 20, Some(80));
        a.record(Coding::Gzip, 20, None);
        let mut sum = CodingTally::default();
        sum.add(&a);
        sum.add(&a);
        let seen: Vec<_> = (sum.seen())
            .map(|s| (s.coding, s.answers, s.bytes, s.decoded))
            .collect();
        // A gzip answer of no known decoded length leaves its coding's decoded bytes unknown.
        assert_eq!(
            seen,
            [
                (Coding::Identity, 2, 200, Some(200)),
                (Coding::Gzip, 2, 40, None),
                (Coding::Br, 4, 100, Some(340)),
            ]
        );
    }
}
