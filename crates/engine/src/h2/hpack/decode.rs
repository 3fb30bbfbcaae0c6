//! Header block decoding (RFC 7541 §3, §6).

use super::table::{self, DynamicTable, STATIC};
use super::{huffman, integer, HpackError};

/// Decodes the header blocks of one connection, keeping its dynamic table. Fields are handed out as
/// slices of the block, the tables or two scratch buffers the decoder keeps, so once its buffers
/// have grown to the connection's largest field and table, decoding allocates nothing.
pub struct Decoder {
    table: DynamicTable,
    /// Our SETTINGS_HEADER_TABLE_SIZE: the encoder's size updates may not exceed it.
    bound: usize,
    /// Set when `bound` fell below the table's size: the next block must begin with a size update.
    update_required: bool,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder for a connection whose SETTINGS_HEADER_TABLE_SIZE is `max_table_size`. The table
    /// starts at that size: exact for the protocol's default of 4096, harmless above it (an encoder
    /// with a smaller table only refers to a newest-first prefix of ours), and below it a conforming
    /// encoder opens its first block with a size update.
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            bound: max_table_size,
            update_required: false,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Changes our SETTINGS_HEADER_TABLE_SIZE; call it once the server has acknowledged the
    /// SETTINGS carrying it. A lower bound shrinks the table at once and, as RFC 7541 §4.2 requires,
    /// the next block must open with a size update.
    pub fn set_max_table_size(&mut self, n: usize) {
        self.bound = n;
        if self.table.max_size() > n {
            self.table.set_max_size(n);
            self.update_required = true;
        }
    }

    /// Decodes one complete header block (HEADERS plus its CONTINUATIONs, joined), calling
    /// `on_field(name, value)` for each field in order. After an error the dynamic table may be out
    /// of step with the encoder's: the connection must end with COMPRESSION_ERROR.
    pub fn decode(
        &mut self,
        block: &[u8],
        on_field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        if self.update_required && block.first().is_none_or(|&b| b & 0xe0 != 0x20) {
            return Err(HpackError::TableSizeUpdateMissing);
        }
        let mut pos = 0;
        let mut at_start = true;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // §6.1 indexed field.
                let index = integer::decode(block, &mut pos, 7)?;
                let (name, value) = table::field(&self.table, index)?;
                on_field(name, value);
            } else if first & 0xc0 == 0x40 {
                // §6.2.1 literal with incremental indexing: the name is copied out of the table
                // first, since adding the entry may evict the one it names (§4.4).
                let index = integer::decode(block, &mut pos, 6)?;
                let name: &[u8] = match index {
                    0 => read_string(block, &mut pos, &mut self.name)?,
                    1..=61 => STATIC[index - 1].0,
                    _ => {
                        let (name, _) = table::field(&self.table, index)?;
                        self.name.clear();
                        self.name.extend_from_slice(name);
                        &self.name
                    }
                };
                let value = read_string(block, &mut pos, &mut self.value)?;
                self.table.insert(name, value);
                on_field(name, value);
            } else if first & 0xe0 == 0x20 {
                // §6.3 dynamic table size update, allowed only before the block's first field.
                if !at_start {
                    return Err(HpackError::TableSizeUpdateNotAtStart);
                }
                let size = integer::decode(block, &mut pos, 5)?;
                if size > self.bound {
                    return Err(HpackError::TableSizeAboveBound {
                        size,
                        bound: self.bound,
                    });
                }
                self.table.set_max_size(size);
                self.update_required = false;
                continue;
            } else {
                // §6.2.2 without indexing and §6.2.3 never indexed: the same to a decoder.
                let index = integer::decode(block, &mut pos, 4)?;
                let name = match index {
                    0 => read_string(block, &mut pos, &mut self.name)?,
                    _ => table::field(&self.table, index)?.0,
                };
                let value = read_string(block, &mut pos, &mut self.value)?;
                on_field(name, value);
            }
            at_start = false;
        }
        Ok(())
    }
}

/// Reads a string literal (§5.2): a slice of the block, or its Huffman decoding in `scratch`.
fn read_string<'a>(
    block: &'a [u8],
    pos: &mut usize,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], HpackError> {
    let huffman = block.get(*pos).is_some_and(|&b| b & 0x80 != 0);
    let len = integer::decode(block, pos, 7)?;
    if block.len() - *pos < len {
        return Err(HpackError::Truncated);
    }
    let raw = &block[*pos..*pos + len];
    *pos += len;
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    huffman::decode(raw, scratch)?;
    Ok(scratch)
}

#[cfg(test)]
impl Decoder {
    /// The dynamic table newest first, and its RFC size.
    pub(super) fn table_contents(&self) -> (table::Fields, usize) {
        self.table.contents()
    }

    /// Capacities of every buffer the decoder owns.
    fn capacities(&self) -> [usize; 4] {
        let (bytes, entries) = self.table.capacities();
        [bytes, entries, self.name.capacity(), self.value.capacity()]
    }
}

#[cfg(test)]
mod tests;
