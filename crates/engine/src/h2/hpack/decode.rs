use super::HpackError;

/// Decodes the header blocks of one connection, keeping its dynamic table.
pub struct Decoder {
    max_table_size: usize,
}

impl Decoder {
    /// A decoder whose dynamic table may hold `max_table_size` bytes (our SETTINGS_HEADER_TABLE_SIZE).
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder { max_table_size }
    }

    /// Changes the bound the encoder's size updates are checked against.
    pub fn set_max_table_size(&mut self, n: usize) {
        self.max_table_size = n;
    }

    /// Decodes one complete header block, calling `on_field(name, value)` for each field in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        on_field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let _ = (block, on_field, self.max_table_size);
        todo!()
    }
}
