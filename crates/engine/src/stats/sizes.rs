//! What each answer is checked against (its URL's expected length), and the size classes its
//! body's length counts it in: requests, bytes and a latency histogram of each class's own, added
//! up over threads as every other histogram is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;

use super::{histogram, record_ns};
use crate::http::coding::Coding;
use crate::spec::LoadSpec;

/// A URL whose length no answer has taught yet.
const UNKNOWN: u64 = u64::MAX;

/// The run's expectations of every answer's body, and its size classes' bounds.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    /// One length for every URL (the spec's `expect_length`).
    length: Option<u64>,
    /// One length per URL (`expect_lengths`), which replaces `length`; empty: none.
    lengths: Vec<u64>,
    /// One coding per URL (`expect_encodings`); empty: any.
    codings: Vec<Coding>,
    /// One decoded body length per URL (`decoded_lengths`); empty: not known.
    decoded: Vec<u64>,
    /// `learn_lengths`: each URL's first succeeded answer's length (`UNKNOWN` until then),
    /// shared by the threads; empty: none learned.
    learned: Arc<Vec<AtomicU64>>,
    /// The upper bounds of the size classes, ascending; empty: no classes.
    pub bounds: Vec<u64>,
}

impl Answers {
    pub fn of(spec: &LoadSpec) -> Answers {
        Answers {
            length: spec.expect_length,
            lengths: spec.expect_lengths.clone().unwrap_or_default(),
            // A spec that resolved names known codings only.
            codings: (spec.expect_encodings.iter().flatten())
                .filter_map(|c| Coding::named(c))
                .collect(),
            decoded: spec.decoded_lengths.clone().unwrap_or_default(),
            learned: Arc::new(if spec.learn_lengths {
                (0..spec.urls.len())
                    .map(|_| AtomicU64::new(UNKNOWN))
                    .collect()
            } else {
                Vec::new()
            }),
            bounds: spec.size_classes.clone(),
        }
    }

    /// Whether an answer to URL `url` of `got` bytes has the length it must: the expected one,
    /// or, learning, the first `succeeded` answer's (which this one is, when it is the first).
    #[inline]
    pub fn fits(&self, url: u32, got: u64, succeeded: bool) -> bool {
        if let Some(l) = self.length(url) {
            return l == got;
        }
        let Some(first) = self.learned.get(url as usize).filter(|_| succeeded) else {
            return true;
        };
        // A load, not a compare-and-swap, once known: no cache line taken from other threads.
        match first.load(Ordering::Relaxed) {
            UNKNOWN => {
                match first.compare_exchange(UNKNOWN, got, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => true,
                    Err(l) => l == got,
                }
            }
            l => l == got,
        }
    }

    /// The body length an answer to URL `url` must have, if one is expected.
    #[inline]
    pub fn length(&self, url: u32) -> Option<u64> {
        match self.lengths.get(url as usize) {
            Some(&l) => Some(l),
            None => self.length,
        }
    }

    /// The decoded length of URL `url`'s body, if known.
    #[inline]
    pub fn decoded(&self, url: u32) -> Option<u64> {
        self.decoded.get(url as usize).copied()
    }

    /// Whether an answer to URL `url` with `body` bytes in `coding` is as expected: its coding,
    /// and its length as `fits` says (`succeeded`: its status is one the run expects).
    #[inline]
    pub fn expected(&self, url: u32, coding: Coding, body: u64, succeeded: bool) -> bool {
        self.codings.get(url as usize).is_none_or(|&c| c == coding)
            && self.fits(url, body, succeeded)
    }
}

/// One size class's completed answers.
#[derive(Debug, Clone)]
pub struct SizeClass {
    pub requests: u64,
    /// Their bodies' bytes.
    pub bytes: u64,
    /// Their latencies as `Latencies::total` times them.
    pub latency: Histogram<u64>,
}

/// A thread's (or a run's) answers by size class: empty until the first is counted, so that a
/// run without classes carries no histograms.
#[derive(Debug, Clone, Default)]
pub struct SizeClasses(pub Vec<SizeClass>);

impl SizeClasses {
    /// Count a completed answer of `body` bytes that took `ns`, in the class `bounds` put it in.
    #[inline]
    pub fn record(&mut self, bounds: &[u64], body: u64, ns: u64) {
        if bounds.is_empty() {
            return;
        }
        if self.0.is_empty() {
            self.0 = (0..=bounds.len())
                .map(|_| SizeClass {
                    requests: 0,
                    bytes: 0,
                    latency: histogram(),
                })
                .collect();
        }
        let class = &mut self.0[bounds.partition_point(|&b| b < body)];
        class.requests += 1;
        class.bytes += body;
        record_ns(&mut class.latency, ns);
    }

    pub fn add(&mut self, o: &SizeClasses) {
        if self.0.is_empty() {
            self.0 = o.0.clone();
            return;
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            a.requests += b.requests;
            a.bytes += b.bytes;
            a.latency.add(&b.latency).expect("histograms share bounds");
        }
    }
}

/// The byte range of each class of `bounds`: from one more than the bound below (0 for the
/// first) to its own bound, the last class open above (None).
pub fn ranges(bounds: &[u64]) -> Vec<(u64, Option<u64>)> {
    if bounds.is_empty() {
        return Vec::new();
    }
    let from = std::iter::once(0).chain(bounds.iter().map(|b| b + 1));
    let to = bounds.iter().map(|&b| Some(b)).chain(std::iter::once(None));
    from.zip(to).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_learned_length_is_the_first_succeeded_answers() {
        let spec = LoadSpec {
            urls: vec!["http://h/a".into(), "http://h/b".into()],
            learn_lengths: true,
            ..LoadSpec::default()
        };
        let answers = Answers::of(&spec);
        // A failed answer teaches nothing; the first that succeeded does, per URL.
        assert!(answers.fits(0, 9, false) && answers.fits(0, 5, true));
        assert!(answers.fits(0, 5, true) && !answers.fits(0, 6, true));
        assert!(answers.fits(1, 6, true) && !answers.fits(1, 5, true));
        // Without learning, nothing is checked.
        assert!(Answers::of(&LoadSpec::default()).fits(0, 1, true));
    }

    #[test]
    fn answers_fall_in_the_class_their_length_is_in() {
        let bounds = [100, 1000];
        assert_eq!(
            ranges(&bounds),
            [(0, Some(100)), (101, Some(1000)), (1001, None)]
        );
        let mut a = SizeClasses::default();
        a.record(&[], 5, 1_000);
        assert!(a.0.is_empty());
        for body in [0, 100, 101, 1000, 1001, 5_000_000] {
            a.record(&bounds, body, 2_000_000);
        }
        let per: Vec<(u64, u64)> = a.0.iter().map(|c| (c.requests, c.bytes)).collect();
        assert_eq!(per, [(2, 100), (2, 1101), (2, 5_001_001)]);
        // Threads add up class by class, a thread that counted nothing included.
        let mut sum = SizeClasses::default();
        sum.add(&SizeClasses::default());
        sum.add(&a);
        sum.add(&a);
        assert_eq!(sum.0[2].requests, 4);
        assert_eq!(sum.0[2].latency.len(), 4);
    }

    #[test]
    fn a_url_length_replaces_the_one_length() {
        let spec = LoadSpec {
            urls: vec!["http://h/a".into(), "http://h/b".into()],
            expect_length: Some(7),
            ..Default::default()
        };
        assert_eq!(Answers::of(&spec).length(1), Some(7));
        let spec = LoadSpec {
            expect_lengths: Some(vec![3, 4]),
            ..spec
        };
        let answers = Answers::of(&spec);
        assert_eq!((answers.length(0), answers.length(1)), (Some(3), Some(4)));
        assert!(answers.expected(1, Coding::Br, 4, true));
        // A coding per URL: the length is then the coded body's, and another coding fails.
        let answers = Answers::of(&LoadSpec {
            expect_encodings: Some(vec!["identity".into(), "br".into()]),
            ..spec
        });
        assert!(answers.expected(0, Coding::Identity, 3, true));
        assert!(answers.expected(1, Coding::Br, 4, true));
        assert!(!answers.expected(1, Coding::Identity, 4, true));
        assert!(!answers.expected(1, Coding::Br, 5, true));
    }
}
