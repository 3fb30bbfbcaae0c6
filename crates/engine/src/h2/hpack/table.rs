//! The static table (RFC 7541 Appendix A), the dynamic table (§2.3.2, §4) and the index space that
//! joins them (§2.3.3).

use std::collections::VecDeque;

use super::HpackError;

/// RFC 7541 Appendix A; index `i` is `STATIC[i - 1]`.
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What the static table holds for a field: its index, or the first index with its name.
pub(super) enum StaticMatch {
    Field(usize),
    Name(usize),
    None,
}

pub(super) fn static_match(name: &[u8], value: &[u8]) -> StaticMatch {
    let mut by_name = None;
    for (i, &(n, v)) in STATIC.iter().enumerate() {
        if n == name {
            if v == value {
                return StaticMatch::Field(i + 1);
            }
            by_name.get_or_insert(i + 1);
        }
    }
    by_name.map_or(StaticMatch::None, StaticMatch::Name)
}

/// The field at `index` in the joint index space: the static table, then the dynamic table newest
/// first.
pub(super) fn field(dynamic: &DynamicTable, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
    match index {
        0 => Err(HpackError::IndexZero),
        1..=61 => Ok(STATIC[index - 1]),
        _ => dynamic
            .get(index - STATIC.len() - 1)
            .ok_or(HpackError::IndexOutOfRange(index)),
    }
}

/// RFC 7541 §4.1: an entry's size counts 32 bytes of overhead beside its name and value.
pub(super) const ENTRY_OVERHEAD: usize = 32;

#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    name_len: usize,
    value_len: usize,
}

impl Entry {
    fn end(&self) -> usize {
        self.start + self.name_len + self.value_len
    }
}

/// The dynamic table: entries' bytes in one ring buffer where an entry never wraps (one that does
/// not fit before the end starts again at 0), so a field is always two plain slices. The buffer
/// grows only when an entry finds no room, which cannot happen once it holds twice the table's
/// maximum size, so a connection stops allocating once its table has filled.
pub(super) struct DynamicTable {
    bytes: Vec<u8>,
    /// Oldest at the front.
    entries: VecDeque<Entry>,
    /// RFC 7541 size: names, values and 32 per entry.
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    pub(super) fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            bytes: Vec::new(),
            entries: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    pub(super) fn max_size(&self) -> usize {
        self.max_size
    }

    /// `(name, value)` of the entry `age` insertions old (0 the newest).
    pub(super) fn get(&self, age: usize) -> Option<(&[u8], &[u8])> {
        let entry = *self.entries.get(self.entries.len().checked_sub(age + 1)?)?;
        let name_end = entry.start + entry.name_len;
        Some((
            &self.bytes[entry.start..name_end],
            &self.bytes[name_end..entry.end()],
        ))
    }

    pub(super) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds a field as the newest entry, evicting the oldest ones to make room (§4.4); a field larger
    /// than the whole table empties it and is not added.
    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let entry_size = name.len() + value.len() + ENTRY_OVERHEAD;
        if entry_size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - entry_size);
        let len = name.len() + value.len();
        let start = match self.room_for(len) {
            Some(start) => start,
            None => {
                self.grow(len);
                self.entries.back().map_or(0, Entry::end)
            }
        };
        let name_end = start + name.len();
        self.bytes[start..name_end].copy_from_slice(name);
        self.bytes[name_end..name_end + value.len()].copy_from_slice(value);
        self.entries.push_back(Entry {
            start,
            name_len: name.len(),
            value_len: value.len(),
        });
        self.size += entry_size;
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let Some(oldest) = self.entries.pop_front() else {
                break;
            };
            self.size -= oldest.name_len + oldest.value_len + ENTRY_OVERHEAD;
        }
    }

    /// Where `len` contiguous bytes fit without touching a live entry, if anywhere.
    fn room_for(&self, len: usize) -> Option<usize> {
        let (Some(oldest), Some(newest)) = (self.entries.front(), self.entries.back()) else {
            return (len <= self.bytes.len()).then_some(0);
        };
        let (head, tail) = (oldest.start, newest.end());
        if newest.start >= head {
            // Live bytes are head..tail: room after them, or before them from 0.
            if tail + len <= self.bytes.len() {
                Some(tail)
            } else {
                (len <= head).then_some(0)
            }
        } else {
            // Live bytes are head..(an old end) and 0..tail: room between tail and head, kept
            // strictly short of head so that the newest entry (even an empty one) starts below the
            // oldest, which is how the wrap is told apart.
            (tail + len < head).then_some(tail)
        }
    }

    /// Reallocates the buffer with room for the live entries and `len` more, twice over, and lays
    /// the entries out from 0.
    fn grow(&mut self, len: usize) {
        let live = self.size - self.entries.len() * ENTRY_OVERHEAD;
        let mut bytes = vec![0; (2 * (live + len)).max(2 * self.bytes.len()).max(256)];
        let mut at = 0;
        for entry in &mut self.entries {
            let end = at + entry.name_len + entry.value_len;
            bytes[at..end].copy_from_slice(&self.bytes[entry.start..entry.end()]);
            entry.start = at;
            at = end;
        }
        self.bytes = bytes;
    }
}

/// Fields as owned `(name, value)` pairs, for tests to compare.
#[cfg(test)]
pub(super) type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[cfg(test)]
impl DynamicTable {
    /// `(name, value)` newest first, and the RFC size.
    pub(super) fn contents(&self) -> (Fields, usize) {
        let fields = (0..self.entries.len())
            .map(|age| {
                self.get(age)
                    .map(|(n, v)| (n.to_vec(), v.to_vec()))
                    .unwrap()
            })
            .collect();
        (fields, self.size)
    }

    pub(super) fn capacities(&self) -> (usize, usize) {
        (self.bytes.capacity(), self.entries.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_counts_32_bytes_per_entry() {
        let mut table = DynamicTable::new(100);
        table.insert(b"a", b"b"); // 34
        table.insert(b"cc", b"dd"); // 36
        assert_eq!(table.contents().1, 70);
        table.insert(b"e", b"ffff"); // 37: 107 > 100, the oldest goes
        let (fields, size) = table.contents();
        assert_eq!(size, 73);
        assert_eq!(
            fields,
            [
                (b"e".to_vec(), b"ffff".to_vec()),
                (b"cc".to_vec(), b"dd".to_vec())
            ]
        );
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut table = DynamicTable::new(64);
        table.insert(b"a", b"b");
        table.insert(b"name", &[b'v'; 40]);
        assert_eq!(table.contents(), (vec![], 0));
    }

    #[test]
    fn shrinking_evicts_and_zero_empties() {
        let mut table = DynamicTable::new(4096);
        table.insert(b"a", b"b");
        table.insert(b"c", b"d");
        table.set_max_size(40);
        assert_eq!(table.contents(), (vec![(b"c".to_vec(), b"d".to_vec())], 34));
        table.set_max_size(0);
        assert_eq!(table.contents(), (vec![], 0));
    }

    #[test]
    fn the_ring_wraps_without_corrupting_entries_and_stops_growing() {
        let mut table = DynamicTable::new(300);
        let mut capacities = None;
        for i in 0..2000usize {
            let value = vec![b'a' + (i % 26) as u8; i % 50];
            let name = format!("n{i}");
            table.insert(name.as_bytes(), &value);
            assert_eq!(table.get(0), Some((name.as_bytes(), &value[..])));
            let (fields, size) = table.contents();
            assert!(size <= 300);
            for (age, (n, v)) in fields.iter().enumerate() {
                let j = i - age;
                assert_eq!(n, format!("n{j}").as_bytes());
                assert_eq!(v, &vec![b'a' + (j % 26) as u8; j % 50]);
            }
            if i == 1000 {
                capacities = Some(table.capacities());
            }
        }
        assert_eq!(Some(table.capacities()), capacities);
    }

    #[test]
    fn the_ring_matches_a_plain_model_with_empty_and_large_entries() {
        // Lengths from a fixed pseudo-random sequence, a third of them empty fields, which can
        // end exactly where the oldest entry starts.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound) as usize
        };
        let mut table = DynamicTable::new(200);
        let mut model: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
        for i in 0..5_000usize {
            let (name_len, value_len) = match next(3) {
                0 => (0, 0),
                1 => (next(8), next(40)),
                _ => (next(100), next(120)),
            };
            let name = vec![(i % 251) as u8; name_len];
            let value = vec![(i % 241) as u8; value_len];
            table.insert(&name, &value);
            model.push_front((name, value));
            let mut size: usize = model.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
            while size > 200 {
                let (n, v) = model.pop_back().unwrap();
                size -= n.len() + v.len() + 32;
            }
            assert_eq!(
                table.contents(),
                (model.iter().cloned().collect(), size),
                "insert {i}"
            );
        }
    }

    #[test]
    fn an_empty_entry_where_the_wrapped_ring_is_full_is_not_mistaken_for_no_wrap() {
        let mut table = DynamicTable::new(459);
        let value = |b: u8| vec![b; 60];
        for b in b'1'..=b'4' {
            table.insert(b"", &value(b)); // 92 each; the buffer is 256 bytes
        }
        // Evicts "1" and wraps to 0, ending exactly where "2" starts.
        table.insert(b"", &value(b'5'));
        table.insert(b"", b"");
        table.insert(b"x", &[b'6'; 19]);
        let (fields, size) = table.contents();
        assert_eq!(size, 452);
        let mut expected: Fields = vec![(b"x".to_vec(), vec![b'6'; 19]), (vec![], vec![])];
        expected.extend([b'5', b'4', b'3', b'2'].map(|b| (vec![], value(b))));
        assert_eq!(fields, expected);
    }

    #[test]
    fn index_space_joins_static_and_dynamic() {
        let mut table = DynamicTable::new(4096);
        table.insert(b"old", b"1");
        table.insert(b"new", b"2");
        assert_eq!(field(&table, 2).unwrap(), (&b":method"[..], &b"GET"[..]));
        assert_eq!(
            field(&table, 61).unwrap(),
            (&b"www-authenticate"[..], &b""[..])
        );
        assert_eq!(field(&table, 62).unwrap(), (&b"new"[..], &b"2"[..]));
        assert_eq!(field(&table, 63).unwrap(), (&b"old"[..], &b"1"[..]));
        assert_eq!(field(&table, 0), Err(HpackError::IndexZero));
        assert_eq!(field(&table, 64), Err(HpackError::IndexOutOfRange(64)));
    }
}
