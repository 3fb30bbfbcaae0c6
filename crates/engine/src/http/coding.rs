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

/// Answers and their body bytes (de-chunked, still coded: what came on the wire) per coding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodingTally {
    pub answers: [u64; Coding::ALL.len()],
    pub bytes: [u64; Coding::ALL.len()],
}

impl CodingTally {
    #[inline]
    pub fn record(&mut self, coding: Coding, body: u64) {
        self.answers[coding as usize] += 1;
        self.bytes[coding as usize] += body;
    }

    pub fn add(&mut self, o: &CodingTally) {
        for i in 0..Coding::ALL.len() {
            self.answers[i] += o.answers[i];
            self.bytes[i] += o.bytes[i];
        }
    }

    /// The codings seen, with their answers and bytes.
    pub fn seen(&self) -> impl Iterator<Item = (Coding, u64, u64)> + '_ {
        Coding::ALL
            .into_iter()
            .map(|c| (c, self.answers[c as usize], self.bytes[c as usize]))
            .filter(|&(_, answers, _)| answers > 0)
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
        a.record(Coding::Identity, 100);
        a.record(Coding::Br, 30);
        a.record(Coding::Br, 20);
        let mut sum = CodingTally::default();
        sum.add(&a);
        sum.add(&a);
        let seen: Vec<_> = sum.seen().collect();
        assert_eq!(seen, [(Coding::Identity, 2, 200), (Coding::Br, 4, 100)]);
    }
}
