//! Which URL each request asks for: the spec's URLs round robin, drawn by their `weights`, or
//! in the order of an access log's `sequence` (at its own times when "timed").
//!
//! A weighted draw goes through an alias table (Vose's method): one random number picks a column
//! and decides between the column's URL and its alias, so a pick costs the same for 3 URLs or
//! 100,000 and allocates nothing. Each connection draws from its own generator, seeded from the
//! spec's `seed` and the connection's index in the run: its sequence of URLs is the same in every
//! run, whichever thread carries it and however its answers interleave with other connections'.

use std::sync::Arc;

use crate::spec::{LoadSpec, Order};

/// SplitMix64 (Steele, Lea and Flood, 2014): 8 bytes of state, one multiply-xorshift round per
/// number, and every seed a good one, so that consecutive connection indexes give unrelated
/// streams.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// Stream `index` of `seed` (a connection's, a thread's): unrelated to its neighbours'.
    pub fn stream(seed: u64, index: u64) -> SplitMix64 {
        SplitMix64::new(SplitMix64::new(seed ^ index.rotate_left(32)).next_u64())
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Vose's alias table over the URLs of positive weight only, so that a URL of weight 0 cannot be
/// drawn, whatever floating point leaves of the others' shares.
#[derive(Debug, Clone)]
pub struct AliasTable {
    /// A pick reads one column, 16 bytes: one cache line, however large the table.
    columns: Vec<Column>,
}

#[derive(Debug, Clone, Copy)]
struct Column {
    /// Below this threshold (a share of 2^64) the column's own URL, else its alias.
    keep: u64,
    own: u32,
    alias: u32,
}

impl AliasTable {
    /// The table of `weights` (finite, not negative, not all 0: the spec checks).
    pub fn new(weights: &[f64]) -> AliasTable {
        let own: Vec<u32> = (0..weights.len() as u32)
            .filter(|&i| weights[i as usize] > 0.0)
            .collect();
        let n = own.len();
        assert!(n > 0, "weights are checked by LoadSpec::resolve");
        let total: f64 = own.iter().map(|&i| weights[i as usize]).sum();
        // Each column's share scaled so that the mean is 1.
        let mut share: Vec<f64> = own
            .iter()
            .map(|&i| weights[i as usize] * n as f64 / total)
            .collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&c| share[c] < 1.0);
        let mut keep = vec![u64::MAX; n];
        let mut alias: Vec<u32> = own.clone();
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            keep[s] = threshold(share[s]);
            alias[s] = own[l];
            share[l] -= 1.0 - share[s];
            if share[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // What is left holds a share of 1 but for rounding: it keeps its own URL always.
        let columns = (0..n)
            .map(|c| Column {
                keep: keep[c],
                own: own[c],
                alias: alias[c],
            })
            .collect();
        AliasTable { columns }
    }

    /// The URL (its index in the spec) that the random number `r` draws.
    #[inline]
    pub fn pick(&self, r: u64) -> usize {
        // The high half of r * n is the column; the low half, uniform too, decides within it.
        let wide = r as u128 * self.columns.len() as u128;
        let (column, within) = (&self.columns[(wide >> 64) as usize], wide as u64);
        if within < column.keep {
            column.own as usize
        } else {
            column.alias as usize
        }
    }
}

fn threshold(share: f64) -> u64 {
    (share.clamp(0.0, 1.0) * 2f64.powi(64)) as u64
}

/// How a run chooses its URLs.
#[derive(Debug, Clone)]
pub enum Mix {
    /// Round robin over this many URLs, each connection starting at its own index.
    RoundRobin(usize),
    Weighted {
        table: AliasTable,
        seed: u64,
    },
    /// A log's URL indexes in its order, looping.
    ///
    /// One sequence shared by all threads, each taking every `stride`-th entry (stride: the
    /// run's threads) from its own index, and handing them out in turn to whichever of its
    /// connections sends next: thread 0 of 2 sends entries 0, 2, 4..., thread 1 entries 1, 3....
    /// While the threads keep pace with each other, the requests on the wire at any moment are
    /// the log's next ones, so the server sees the log's order as nearly as the requests in
    /// parallel allow, and nothing is shared between threads per request (a shared atomic
    /// position would order the sends no better, since the connections race anyway, and cost a
    /// contended cache line per request). A cursor per connection instead would tie each
    /// connection to a fixed subset of the entries, and a slower connection would skew the mix.
    Replay {
        sequence: Vec<u32>,
        stride: usize,
    },
    /// A log's URL indexes sent at its times: the schedule hands out the entries with their
    /// times ([`Timed`]) and a request asks for its entry's URL.
    Timed(Timed),
}

/// A timed log's entries: which URL each asks for, and when, in ns from the start of a loop.
#[derive(Debug, Clone)]
pub struct Timed {
    pub sequence: Arc<[u32]>,
    pub at: Arc<[u64]>,
    /// How long one loop of the log lasts: its last entry's time and one mean gap more, so that
    /// the next loop's first entry does not go with the last.
    pub span: u64,
}

impl Timed {
    /// `offsets` in seconds, sent `speed` times as fast.
    pub fn new(sequence: &[u32], offsets: &[f64], speed: f64) -> Timed {
        let at: Arc<[u64]> = offsets.iter().map(|o| (o * 1e9 / speed) as u64).collect();
        let last = *at.last().expect("checked by LoadSpec::resolve");
        // A log of one request, or of all at one instant, loops once a second (sped up).
        let gap = if last > 0 {
            last / (at.len() as u64 - 1)
        } else {
            (1e9 / speed) as u64
        };
        Timed {
            sequence: sequence.into(),
            at,
            span: (last + gap).max(1),
        }
    }

    /// When entry `entry` (counted over the loops) is due, in ns from the first loop's start.
    #[inline]
    pub fn time(&self, entry: u64) -> u64 {
        let n = self.at.len() as u64;
        (entry / n) * self.span + self.at[(entry % n) as usize]
    }

    #[inline]
    pub fn url(&self, entry: u64) -> usize {
        self.sequence[(entry % self.sequence.len() as u64) as usize] as usize
    }
}

/// A connection's place in the mix: the next URL of the round robin or of a replay, or its
/// generator.
#[derive(Debug, Clone)]
pub enum Cursor {
    Next(usize),
    Draw(SplitMix64),
}

impl Mix {
    /// The spec's mix, sent by `threads`.
    pub fn of(spec: &LoadSpec, threads: usize) -> Mix {
        match (spec.order, &spec.weights, &spec.sequence) {
            (Order::Replay, _, Some(sequence)) => Mix::Replay {
                sequence: sequence.clone(),
                stride: threads.max(1),
            },
            (Order::Timed, _, Some(sequence)) => Mix::Timed(Timed::new(
                sequence,
                spec.offsets
                    .as_deref()
                    .expect("checked by LoadSpec::resolve"),
                spec.speed,
            )),
            _ => Mix::new(spec.urls.len(), spec.weights.as_deref(), spec.seed),
        }
    }

    pub fn new(urls: usize, weights: Option<&[f64]>, seed: u64) -> Mix {
        match weights {
            Some(w) => Mix::Weighted {
                table: AliasTable::new(w),
                seed,
            },
            None => Mix::RoundRobin(urls),
        }
    }

    /// The cursor of connection `global` (its index over all threads); of a replay, of thread
    /// `global`, the one cursor its connections share.
    pub fn cursor(&self, global: usize) -> Cursor {
        match self {
            Mix::RoundRobin(cycle) => Cursor::Next(global % cycle),
            Mix::Weighted { seed, .. } => Cursor::Draw(SplitMix64::stream(*seed, global as u64)),
            Mix::Replay { sequence, .. } => Cursor::Next(global % sequence.len()),
            // Unused: a timed request's URL is its entry's.
            Mix::Timed(_) => Cursor::Next(0),
        }
    }

    /// The URL of a connection's next request (a timed request's is its entry's: [`Timed::url`]).
    #[inline]
    pub fn pick(&self, cursor: &mut Cursor) -> usize {
        match (self, cursor) {
            (Mix::RoundRobin(cycle), Cursor::Next(next)) => {
                let url = *next;
                *next = if url + 1 == *cycle { 0 } else { url + 1 };
                url
            }
            (Mix::Weighted { table, .. }, Cursor::Draw(rng)) => table.pick(rng.next_u64()),
            (Mix::Replay { sequence, stride }, Cursor::Next(next)) => {
                let url = sequence[*next];
                // The stride may exceed the sequence (more threads than entries).
                *next = (*next + stride) % sequence.len();
                url as usize
            }
            _ => unreachable!("a cursor comes from its mix"),
        }
    }

    pub fn is_round_robin(&self) -> bool {
        matches!(self, Mix::RoundRobin(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(weights: &[f64], picks: usize) -> Vec<usize> {
        let mix = Mix::new(weights.len(), Some(weights), 7);
        let mut cursor = mix.cursor(0);
        let mut n = vec![0; weights.len()];
        for _ in 0..picks {
            n[mix.pick(&mut cursor)] += 1;
        }
        n
    }

    #[test]
    fn generator_is_uniform_over_buckets_and_bits() {
        let mut rng = SplitMix64::new(1);
        let (draws, buckets) = (1_000_000, 16);
        let mut by_bucket = vec![0u64; buckets];
        let mut ones = [0u64; 64];
        for _ in 0..draws {
            let r = rng.next_u64();
            by_bucket[(r >> 60) as usize] += 1;
            for (bit, n) in ones.iter_mut().enumerate() {
                *n += (r >> bit) & 1;
            }
        }
        // Chi-square over 16 buckets, 15 degrees of freedom: 37.7 is its 0.999 quantile.
        let expected = draws as f64 / buckets as f64;
        let chi2: f64 = by_bucket
            .iter()
            .map(|&n| (n as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 37.7, "chi-square {chi2}");
        // Each bit is 1 half the time, within 5 standard deviations (500).
        assert!(
            ones.iter().all(|&n| n.abs_diff(draws / 2) < 2_500),
            "{ones:?}"
        );
    }

    #[test]
    fn picks_follow_the_weights() {
        let weights = [50.0, 25.0, 15.0, 9.0, 1.0];
        let picks = 1_000_000;
        let n = counts(&weights, picks);
        for (w, got) in weights.iter().zip(&n) {
            let share = *got as f64 / picks as f64;
            // The binomial's standard deviation is at most 0.0005 here.
            assert!((share - w / 100.0).abs() < 0.003, "{weights:?}: {n:?}");
        }
    }

    #[test]
    fn a_weight_of_zero_is_never_drawn() {
        let n = counts(&[0.0, 1.0, 0.0, 3.0, 0.0], 1_000_000);
        assert_eq!((n[0], n[2], n[4]), (0, 0, 0));
        assert!(n[1] > 200_000 && n[3] > 700_000, "{n:?}");
        // Shares that floating point cannot split exactly leave no column to a zero either.
        let n = counts(&[0.1, 0.0, 0.2, 1e-9, 0.0, 0.7], 200_000);
        assert_eq!((n[1], n[4]), (0, 0));
    }

    #[test]
    fn one_url_is_always_drawn() {
        assert_eq!(counts(&[3.0], 1000), [1000]);
        assert_eq!(counts(&[0.0, 2.0], 1000), [0, 1000]);
    }

    #[test]
    fn a_seed_gives_one_sequence_per_connection() {
        let mix = Mix::new(4, Some(&[1.0, 1.0, 1.0, 1.0]), 42);
        let sequence = |global| {
            let mut c = mix.cursor(global);
            (0..64).map(|_| mix.pick(&mut c)).collect::<Vec<_>>()
        };
        assert_eq!(sequence(3), sequence(3));
        assert_ne!(sequence(3), sequence(4));
        let other = Mix::new(4, Some(&[1.0, 1.0, 1.0, 1.0]), 43);
        let mut c = other.cursor(3);
        assert_ne!(
            (0..64).map(|_| other.pick(&mut c)).collect::<Vec<_>>(),
            sequence(3)
        );
    }

    #[test]
    fn a_replay_thread_takes_every_strideth_entry_looping() {
        let mix = Mix::Replay {
            sequence: vec![5, 6, 7, 8, 9],
            stride: 2,
        };
        let mut c = mix.cursor(1);
        let urls: Vec<usize> = (0..5).map(|_| mix.pick(&mut c)).collect();
        assert_eq!(urls, [6, 8, 5, 7, 9]);
    }

    #[test]
    fn a_timed_log_loops_every_span_and_one_mean_gap() {
        // 0, 1 and 4 s at speed 2: 0, 0.5 and 2 s, a mean gap of 1 s, a loop of 3 s.
        let t = Timed::new(&[2, 0, 1], &[0.0, 1.0, 4.0], 2.0);
        let times: Vec<u64> = (0..5).map(|e| t.time(e) / 1_000_000).collect();
        assert_eq!(times, [0, 500, 2000, 3000, 3500]);
        assert_eq!((t.url(3), t.url(5)), (2, 1));
        // One request, or all at one instant: a loop a second, sped up.
        assert_eq!(Timed::new(&[0], &[0.0], 4.0).span, 250_000_000);
    }

    #[test]
    fn round_robin_starts_at_the_connection() {
        let mix = Mix::new(3, None, 0);
        let mut c = mix.cursor(4);
        let urls: Vec<usize> = (0..5).map(|_| mix.pick(&mut c)).collect();
        assert_eq!(urls, [1, 2, 0, 1, 2]);
    }
}
