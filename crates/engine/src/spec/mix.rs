//! The spec's URL mix checked: its weights, per-URL lengths and size classes, each refusal one
//! line.

use super::{LoadSpec, Order, MOST_SIZE_CLASSES};
use crate::http::coding::Coding;
use crate::Error;

impl LoadSpec {
    /// The weights, the per-URL lengths and the size classes: one line each for what is wrong.
    pub(super) fn check_mix(&self) -> Result<(), Error> {
        let urls = self.urls.len();
        let parallel = |field: &'static str, given: usize| {
            if given == urls {
                Ok(())
            } else {
                Err(Error::spec(
                    field,
                    format!("{field} has {given} entries for {urls} URLs; give one per URL, in the order of urls"),
                ))
            }
        };
        if let Some(weights) = &self.weights {
            parallel("weights", weights.len())?;
            if let Some((i, w)) = weights
                .iter()
                .enumerate()
                .find(|(_, w)| !w.is_finite() || **w < 0.0)
            {
                return Err(Error::spec(
                    "weights",
                    format!(
                        "weight {w} of {} is no weight; give a number of 0 or more",
                        self.urls[i]
                    ),
                ));
            }
            if weights.iter().sum::<f64>() <= 0.0 || !weights.iter().sum::<f64>().is_finite() {
                return Err(Error::spec(
                    "weights",
                    "the weights add up to 0 (or overflow); give at least one URL a weight above 0"
                        .into(),
                ));
            }
        }
        self.check_order()?;
        if let Some(lengths) = &self.expect_lengths {
            parallel("expect_lengths", lengths.len())?;
        }
        if let Some(lengths) = &self.decoded_lengths {
            parallel("decoded_lengths", lengths.len())?;
        }
        if let Some(codings) = &self.expect_encodings {
            parallel("expect_encodings", codings.len())?;
            if let Some(name) = codings.iter().find(|c| Coding::named(c).is_none()) {
                return Err(Error::spec(
                    "expect_encodings",
                    format!("{name:?} is no content coding; give one of identity, gzip, deflate, br, zstd, compress"),
                ));
            }
        }
        let bounds = &self.size_classes;
        if bounds.len() >= MOST_SIZE_CLASSES {
            return Err(Error::spec(
                "size_classes",
                format!(
                    "size_classes has {} bounds; give at most {} (the class above the last bound makes {MOST_SIZE_CLASSES})",
                    bounds.len(),
                    MOST_SIZE_CLASSES - 1
                ),
            ));
        }
        if bounds.last() == Some(&u64::MAX) {
            return Err(Error::spec(
                "size_classes",
                format!("size_classes bound {} leaves no class above it; give bounds below it (the class above the last bound is open)", u64::MAX),
            ));
        }
        if let Some(w) = bounds.windows(2).find(|w| w[0] >= w[1]) {
            return Err(Error::spec(
                "size_classes",
                format!("size_classes must ascend ({} then {}); list the upper bounds from the smallest", w[0], w[1]),
            ));
        }
        Ok(())
    }

    /// `order` with what it needs: a sequence of URL indexes, and for "timed" their offsets.
    fn check_order(&self) -> Result<(), Error> {
        let name = match self.order {
            Order::Weighted => {
                for (field, set) in [
                    ("sequence", self.sequence.is_some()),
                    ("offsets", self.offsets.is_some()),
                ] {
                    if set {
                        return Err(Error::spec(field, format!("{field} is sent only with order \"replay\" or \"timed\"; set order, or leave {field} out")));
                    }
                }
                return Ok(());
            }
            Order::Replay => "replay",
            Order::Timed => "timed",
        };
        if self.weights.is_some() {
            return Err(Error::spec(
                "weights",
                format!("order \"{name}\" follows sequence, not weights; leave weights out"),
            ));
        }
        let Some(sequence) = self.sequence.as_ref().filter(|s| !s.is_empty()) else {
            return Err(Error::spec("sequence", format!("order \"{name}\" needs sequence: the indexes of the URLs in the order they are sent")));
        };
        if let Some(i) = sequence.iter().find(|&&i| i as usize >= self.urls.len()) {
            return Err(Error::spec(
                "sequence",
                format!(
                    "sequence names URL {i}, but there are {} URLs (indexes from 0)",
                    self.urls.len()
                ),
            ));
        }
        if self.order == Order::Replay {
            return Ok(());
        }
        if self.rate.is_some() {
            return Err(Error::spec("rate", "order \"timed\" sends at the log's own times (offsets / speed); leave rate out, or use order \"replay\"".into()));
        }
        if !self.speed.is_finite() || self.speed <= 0.0 {
            return Err(Error::spec(
                "speed",
                format!("speed must be more than 0, got {}", self.speed),
            ));
        }
        let Some(offsets) = &self.offsets else {
            return Err(Error::spec("offsets", "order \"timed\" needs offsets: the seconds from the first request to each of sequence's".into()));
        };
        if offsets.len() != sequence.len() {
            return Err(Error::spec(
                "offsets",
                format!(
                    "offsets has {} entries for {} in sequence; give one per entry",
                    offsets.len(),
                    sequence.len()
                ),
            ));
        }
        if let Some(o) = offsets.iter().find(|o| !o.is_finite() || **o < 0.0) {
            return Err(Error::spec(
                "offsets",
                format!("offset {o} is no time; give seconds of 0 or more"),
            ));
        }
        if let Some(w) = offsets.windows(2).find(|w| w[0] > w[1]) {
            return Err(Error::spec(
                "offsets",
                format!(
                    "offsets must not go back ({} then {}); give them in the log's order",
                    w[0], w[1]
                ),
            ));
        }
        if let Some(first) = offsets.first().filter(|o| **o != 0.0) {
            return Err(Error::spec(
                "offsets",
                format!("offsets must start at 0, the log's first request, not {first}; subtract the first from each"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two URLs changed by `f`, checked: what `resolve` says of them, if anything.
    fn checked(f: &dyn Fn(&mut LoadSpec)) -> Result<(), String> {
        let mut s = LoadSpec {
            urls: vec!["http://127.0.0.1:1/a".into(), "http://127.0.0.1:1/b".into()],
            ..Default::default()
        };
        f(&mut s);
        s.resolve().map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn refuses_a_bad_mix_in_one_line() {
        assert!(checked(&|s| {
            s.weights = Some(vec![0.0, 2.5]);
            s.expect_lengths = Some(vec![1, 2]);
            s.size_classes = vec![1, 2, 3, 4, 5, 6, 7];
        })
        .is_ok());
        for (bad, says) in [
            (
                &(|s: &mut LoadSpec| s.weights = Some(vec![1.0])) as &dyn Fn(&mut LoadSpec),
                "weights has 1 entries for 2 URLs",
            ),
            (
                &|s| s.weights = Some(vec![1.0, -1.0]),
                "weight -1 of http://127.0.0.1:1/b",
            ),
            (&|s| s.weights = Some(vec![1.0, f64::NAN]), "weight NaN"),
            (&|s| s.weights = Some(vec![0.0, 0.0]), "add up to 0"),
            (
                &|s| s.expect_lengths = Some(vec![1, 2, 3]),
                "expect_lengths has 3 entries",
            ),
            (
                &|s| s.expect_encodings = Some(vec!["br".into()]),
                "expect_encodings has 1 entries",
            ),
            (
                &|s| s.expect_encodings = Some(vec!["br".into(), "brotli".into()]),
                "\"brotli\" is no content coding",
            ),
            (&|s| s.size_classes = (1..=8).collect(), "at most 7"),
            (
                &|s| s.size_classes = vec![10, 10],
                "must ascend (10 then 10)",
            ),
            // The class above u64::MAX bytes would start past any u64 (`ranges` adds one).
            (
                &|s| s.size_classes = vec![10, u64::MAX],
                "size_classes bound 18446744073709551615 leaves no class above it",
            ),
        ] {
            let said = checked(bad).unwrap_err();
            assert!(said.contains(says) && !said.contains('\n'), "{said}");
        }
    }

    #[test]
    fn refuses_a_bad_order_in_one_line() {
        let timed = |s: &mut LoadSpec| {
            s.order = Order::Timed;
            s.sequence = Some(vec![0, 1]);
            s.offsets = Some(vec![0.0, 1.0]);
        };
        assert!(checked(&timed).is_ok());
        for (bad, says) in [
            (
                &(|s: &mut LoadSpec| s.sequence = Some(vec![0])) as &dyn Fn(&mut LoadSpec),
                "sequence is sent only with order",
            ),
            (&|s| s.order = Order::Replay, "needs sequence"),
            (
                &|s| {
                    s.order = Order::Replay;
                    s.sequence = Some(vec![0, 2]);
                },
                "names URL 2, but there are 2 URLs",
            ),
            (
                &|s| {
                    timed(s);
                    s.rate = Some(10.0);
                },
                "leave rate out",
            ),
            (
                &|s| {
                    timed(s);
                    s.offsets = Some(vec![1.0, 0.5]);
                },
                "must not go back",
            ),
            (
                &|s| {
                    timed(s);
                    s.offsets = None;
                },
                "needs offsets",
            ),
            (
                // Timed::new paces from the first entry at 0: a first of 5 s waited 5 s, paced
                // its loops by the wrong mean gap, and one such entry divided by zero.
                &|s| {
                    timed(s);
                    s.offsets = Some(vec![5.0, 6.0]);
                },
                "must start at 0",
            ),
            (
                &|s| {
                    timed(s);
                    s.speed = 0.0;
                },
                "speed must be more than 0",
            ),
        ] {
            let said = checked(bad).unwrap_err();
            assert!(said.contains(says) && !said.contains('\n'), "{said}");
        }
    }
}
