//! A minimal, bounds-checked reader of the LLVM bitstream container: the bit-level encoding under every
//! bitcode file. The format is defined by LLVM's `docs/BitCodeFormat.rst` ("Bitstream Format") and
//! implemented by `llvm/Bitstream/BitstreamReader.h` and `lib/Bitstream/Reader/BitstreamReader.cpp`.
//!
//! A stream is a sequence of little-endian bit fields. Each entry starts with an abbreviation id of the
//! current block's width (2 bits at the top level): `END_BLOCK` (0), `ENTER_SUBBLOCK` (1, then the block id
//! as VBR-8, the new id width as VBR-4, alignment to 32 bits and the block's length in 32-bit words),
//! `DEFINE_ABBREV` (2, an abbreviation local to the block), `UNABBREV_RECORD` (3, a code and operands as
//! VBR-6) or an abbreviated record (4 and up) whose operands follow the abbreviation's literal, fixed, VBR,
//! array, char6 and blob operands.
//!
//! The reader does only what the symbol table reader needs: it walks entries, enters blocks (checking that
//! every block lies inside its parent and that `END_BLOCK` lands exactly on the length the block declared),
//! skips blocks by their length word, reads records with or without their operand values, and hands out a
//! blob as a byte range of the stream. `BLOCKINFO` blocks are skipped like any other block: LLVM defines
//! the abbreviations of the top-level blocks and of the module's own records inside those blocks, and its
//! readers of the same records (`getBitcodeFileContents`, `readTriple`) attach no block info either.
//!
//! Every read is checked against the end of the enclosing block; sizes read from the stream are compared
//! with the bits left before anything is allocated; blocks nest at most [`MAX_DEPTH`] deep and no code here
//! recurses.

use std::ops::Range;
use std::rc::Rc;

use super::BitcodeError;

/// The abbreviation id that ends the current block.
const END_BLOCK: u64 = 0;
/// The abbreviation id that opens a nested block.
const ENTER_SUBBLOCK: u64 = 1;
/// The abbreviation id that defines an abbreviation for the rest of the current block.
const DEFINE_ABBREV: u64 = 2;
/// The abbreviation id of a record whose code and operands are all VBR-6.
const UNABBREV_RECORD: u64 = 3;
/// The first abbreviation id that names a defined abbreviation.
const FIRST_APPLICATION_ABBREV: u64 = 4;

/// The abbreviation id width of the top level.
const TOP_LEVEL_WIDTH: u32 = 2;

/// How deep blocks may nest. LLVM's top-level blocks hold blocks two or three levels deep; the symbol table
/// reader enters only the top-level blocks it reads.
pub(crate) const MAX_DEPTH: usize = 16;

/// The most operands an abbreviation may have. LLVM's writer defines none with more than a dozen; the limit
/// keeps an abbreviation of many literal operands, used many times, from costing time quadratic in the
/// file's size.
pub(crate) const MAX_ABBREV_OPERANDS: u64 = 256;

/// One operand of an abbreviation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operand {
    /// A value that is not stored in the stream.
    Literal(u64),
    /// A fixed-width field of 1 to 64 bits.
    Fixed(u32),
    /// A variable-width field in chunks of 1 to 64 bits.
    Vbr(u32),
    /// A VBR-6 count, then that many elements encoded by the next (and last) operand.
    Array,
    /// A 6-bit character of `[a-zA-Z0-9._]`.
    Char6,
    /// A VBR-6 byte count, alignment to 32 bits, the bytes, and alignment to 32 bits again.
    Blob,
}

/// What [`Cursor::advance`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The current block ended (the cursor is back in its parent).
    EndBlock,
    /// A nested block with this id starts; enter it with [`Cursor::enter_block`] or skip it with
    /// [`Cursor::skip_block`].
    SubBlock(u64),
    /// A record with this abbreviation id starts; read it with [`Cursor::read_record`].
    Record(u64),
}

/// A record's code and, when the abbreviation has a blob operand, the blob's bytes as a range of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub code: u64,
    pub blob: Option<Range<usize>>,
}

/// A block being read: its abbreviation id width, the abbreviations defined in it so far and the bit where
/// its declared length ends it.
struct Scope {
    width: u32,
    abbrevs: Vec<Rc<[Operand]>>,
    end: u64,
}

/// The bit position within a stream and the reads of fixed and variable-width fields.
struct Bits<'a> {
    bytes: &'a [u8],
    /// Where the stream starts in the file, in bytes (errors give positions in the file).
    base: usize,
    bit: u64,
    /// The end of the innermost block (or of the stream) in bits: no read goes past it.
    limit: u64,
}

impl Bits<'_> {
    /// The position in the file, in bits, of stream bit `bit`.
    fn file_bit(&self, bit: u64) -> u64 {
        (self.base as u64).saturating_mul(8).saturating_add(bit)
    }

    /// The bits left before the limit.
    fn left(&self) -> u64 {
        self.limit.saturating_sub(self.bit)
    }

    fn truncated(&self, wanted: u64) -> BitcodeError {
        BitcodeError::Truncated {
            bit: self.file_bit(self.bit),
            wanted,
            left: self.left(),
        }
    }

    /// Reads a fixed-width field of `width` bits (at most 64; 0 reads nothing and gives 0).
    fn read(&mut self, width: u32) -> Result<u64, BitcodeError> {
        if u64::from(width) > self.left() || width > 64 {
            return Err(self.truncated(u64::from(width)));
        }
        let mut value = 0u64;
        let mut got = 0u32;
        while got < width {
            let byte = usize::try_from(self.bit / 8)
                .ok()
                .and_then(|index| self.bytes.get(index))
                .copied()
                .ok_or_else(|| self.truncated(u64::from(width - got)))?;
            let offset = (self.bit % 8) as u32;
            let take = (8 - offset).min(width - got);
            let bits = (u64::from(byte) >> offset) & ((1u64 << take) - 1);
            value |= bits << got;
            got += take;
            self.bit += u64::from(take);
        }
        Ok(value)
    }

    /// Reads a variable-width field in chunks of `width` bits (1 to 64), each chunk's top bit saying that
    /// another follows. A value that does not fit 64 bits is an error.
    fn read_vbr(&mut self, width: u32) -> Result<u64, BitcodeError> {
        let start = self.bit;
        if !(1..=64).contains(&width) {
            return Err(BitcodeError::InvalidWidth {
                bit: self.file_bit(start),
                width: u64::from(width),
            });
        }
        let more = 1u64 << (width - 1);
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let chunk = self.read(width)?;
            let payload = chunk & (more - 1);
            if payload != 0 {
                // The payload must fit at `shift` without losing high bits.
                if shift >= 64 || payload.leading_zeros() < shift {
                    return Err(BitcodeError::VbrOverflow {
                        bit: self.file_bit(start),
                    });
                }
                value |= payload << shift;
            }
            if chunk & more == 0 {
                return Ok(value);
            }
            shift = shift.saturating_add(width - 1);
        }
    }

    /// Moves to the next multiple of 32 bits (a no-op on one).
    fn align32(&mut self) -> Result<(), BitcodeError> {
        let aligned = self.bit.div_ceil(32).saturating_mul(32);
        if aligned > self.limit {
            return Err(self.truncated(aligned - self.bit));
        }
        self.bit = aligned;
        Ok(())
    }
}

/// A reader of one bitstream: the bytes after the magic number, positioned at the top level.
pub(crate) struct Cursor<'a> {
    bits: Bits<'a>,
    /// The top level, then every block entered and not yet ended.
    scopes: Vec<Scope>,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes` (a whole stream, magic number included), starting at bit `start`; `base` is
    /// where the stream starts in the file.
    pub(crate) fn new(bytes: &'a [u8], base: usize, start: u64) -> Cursor<'a> {
        let end = (bytes.len() as u64).saturating_mul(8);
        Cursor {
            bits: Bits {
                bytes,
                base,
                bit: start.min(end),
                limit: end,
            },
            scopes: vec![Scope {
                width: TOP_LEVEL_WIDTH,
                abbrevs: Vec::new(),
                end,
            }],
        }
    }

    /// The current position in the stream, in bits.
    pub(crate) fn bit(&self) -> u64 {
        self.bits.bit
    }

    /// The position in the file, in bits, of stream bit `bit`.
    pub(crate) fn file_bit(&self, bit: u64) -> u64 {
        self.bits.file_bit(bit)
    }

    /// Reads a fixed-width field (for the magic number).
    pub(crate) fn read(&mut self, width: u32) -> Result<u64, BitcodeError> {
        self.bits.read(width)
    }

    fn scope(&self) -> Result<&Scope, BitcodeError> {
        self.scopes.last().ok_or(BitcodeError::Internal {
            bit: self.bits.file_bit(self.bits.bit),
        })
    }

    /// Reads entries until one that is not an abbreviation definition (those are recorded for the rest of
    /// the current block).
    pub(crate) fn advance(&mut self) -> Result<Entry, BitcodeError> {
        loop {
            let at = self.bits.bit;
            let width = self.scope()?.width;
            match self.bits.read(width)? {
                END_BLOCK => {
                    self.end_block(at)?;
                    return Ok(Entry::EndBlock);
                }
                ENTER_SUBBLOCK => return Ok(Entry::SubBlock(self.bits.read_vbr(8)?)),
                DEFINE_ABBREV => self.define_abbrev()?,
                id => return Ok(Entry::Record(id)),
            }
        }
    }

    /// Leaves the current block at its `END_BLOCK` (which started at stream bit `at`): the stream is aligned
    /// to 32 bits and must then be exactly where the block's length word said the block ends.
    fn end_block(&mut self, at: u64) -> Result<(), BitcodeError> {
        if self.scopes.len() < 2 {
            return Err(BitcodeError::EndBlockAtTopLevel {
                bit: self.bits.file_bit(at),
            });
        }
        self.bits.align32()?;
        let end = self.scope()?.end;
        if self.bits.bit != end {
            return Err(BitcodeError::BlockLengthMismatch {
                bit: self.bits.file_bit(at),
                declared_end: self.bits.file_bit(end),
            });
        }
        self.scopes.pop();
        self.bits.limit = self.scope()?.end;
        Ok(())
    }

    /// Reads the header of a block after its id: the new abbreviation width, the alignment and the length
    /// word. Returns the width and the block's end in bits, checked to lie inside the enclosing block.
    fn block_header(&mut self, at: u64) -> Result<(u64, u64), BitcodeError> {
        let width = self.bits.read_vbr(4)?;
        self.bits.align32()?;
        let words = self.bits.read(32)?;
        let end = words
            .checked_mul(32)
            .and_then(|length| length.checked_add(self.bits.bit))
            .filter(|end| *end <= self.bits.limit)
            .ok_or(BitcodeError::BlockOutsideParent {
                bit: self.bits.file_bit(at),
                words,
            })?;
        Ok((width, end))
    }

    /// Enters the block whose [`Entry::SubBlock`] was just read (at stream bit `at`); its records are read
    /// until the [`Entry::EndBlock`] that ends it.
    pub(crate) fn enter_block(&mut self, at: u64) -> Result<(), BitcodeError> {
        let (width, end) = self.block_header(at)?;
        if width == 0 || width > 64 {
            return Err(BitcodeError::InvalidWidth {
                bit: self.bits.file_bit(at),
                width,
            });
        }
        if self.scopes.len() > MAX_DEPTH {
            return Err(BitcodeError::NestingTooDeep {
                bit: self.bits.file_bit(at),
            });
        }
        self.scopes.push(Scope {
            width: width as u32,
            abbrevs: Vec::new(),
            end,
        });
        self.bits.limit = end;
        Ok(())
    }

    /// Skips the block whose [`Entry::SubBlock`] was just read (at stream bit `at`) by its length word.
    pub(crate) fn skip_block(&mut self, at: u64) -> Result<(), BitcodeError> {
        let (_, end) = self.block_header(at)?;
        self.bits.bit = end;
        Ok(())
    }

    /// Reads a `DEFINE_ABBREV` body and adds the abbreviation to the current block.
    fn define_abbrev(&mut self) -> Result<(), BitcodeError> {
        let at = self.bits.bit;
        let count = self.bits.read_vbr(5)?;
        if count == 0 || count > MAX_ABBREV_OPERANDS {
            return Err(BitcodeError::InvalidAbbrev {
                bit: self.bits.file_bit(at),
                reason: "the operand count is 0 or above 256",
            });
        }
        let mut operands = Vec::new();
        for _ in 0..count {
            let literal = self.bits.read(1)? == 1;
            if literal {
                operands.push(Operand::Literal(self.bits.read_vbr(8)?));
                continue;
            }
            let encoding_at = self.bits.bit;
            let operand = match self.bits.read(3)? {
                encoding @ (1 | 2) => {
                    let width = self.bits.read_vbr(5)?;
                    match (encoding, width) {
                        // A field of no bits is the value 0, as LLVM reads it.
                        (_, 0) => Operand::Literal(0),
                        (_, 65..) => {
                            return Err(BitcodeError::InvalidAbbrev {
                                bit: self.bits.file_bit(encoding_at),
                                reason: "a fixed or VBR operand is wider than 64 bits",
                            });
                        }
                        (1, width) => Operand::Fixed(width as u32),
                        (_, width) => Operand::Vbr(width as u32),
                    }
                }
                3 => Operand::Array,
                4 => Operand::Char6,
                5 => Operand::Blob,
                _ => {
                    return Err(BitcodeError::InvalidAbbrev {
                        bit: self.bits.file_bit(encoding_at),
                        reason: "an operand encoding other than literal, fixed, VBR, array, char6 or blob",
                    });
                }
            };
            operands.push(operand);
        }
        let scope = self.scopes.last_mut().ok_or(BitcodeError::Internal {
            bit: self.bits.file_bit(at),
        })?;
        scope.abbrevs.push(operands.into());
        Ok(())
    }

    /// Reads the record whose [`Entry::Record`] (abbreviation id `abbrev`, read at stream bit `at`) was just
    /// returned. Operand values are appended to `values` when it is given (a blob's bytes are not: the record
    /// gives their range instead).
    pub(crate) fn read_record(
        &mut self,
        at: u64,
        abbrev: u64,
        mut values: Option<&mut Vec<u64>>,
    ) -> Result<Record, BitcodeError> {
        if abbrev == UNABBREV_RECORD {
            let code = self.bits.read_vbr(6)?;
            let count = self.bits.read_vbr(6)?;
            // Each operand takes at least 6 bits.
            if count > self.bits.left() / 6 {
                return Err(BitcodeError::RecordTooLong {
                    bit: self.bits.file_bit(at),
                    count,
                });
            }
            for _ in 0..count {
                let value = self.bits.read_vbr(6)?;
                if let Some(values) = values.as_deref_mut() {
                    values.push(value);
                }
            }
            return Ok(Record { code, blob: None });
        }
        let operands = abbrev
            .checked_sub(FIRST_APPLICATION_ABBREV)
            .and_then(|index| usize::try_from(index).ok())
            .and_then(|index| self.scope().ok()?.abbrevs.get(index))
            .cloned()
            .ok_or(BitcodeError::UnknownAbbrev {
                bit: self.bits.file_bit(at),
                id: abbrev,
            })?;
        self.read_abbreviated(at, &operands, values)
    }

    /// Reads one scalar operand (fixed, VBR or char6); `None` for the others.
    fn read_scalar(&mut self, operand: Operand) -> Result<Option<u64>, BitcodeError> {
        Ok(match operand {
            Operand::Literal(value) => Some(value),
            Operand::Fixed(width) => Some(self.bits.read(width)?),
            Operand::Vbr(width) => Some(self.bits.read_vbr(width)?),
            Operand::Char6 => Some(u64::from(char6(self.bits.read(6)?))),
            Operand::Array | Operand::Blob => None,
        })
    }

    fn read_abbreviated(
        &mut self,
        at: u64,
        operands: &[Operand],
        mut values: Option<&mut Vec<u64>>,
    ) -> Result<Record, BitcodeError> {
        let malformed = |cursor: &Cursor<'_>, reason| BitcodeError::InvalidAbbrev {
            bit: cursor.bits.file_bit(at),
            reason,
        };
        let (first, rest) = operands
            .split_first()
            .ok_or_else(|| malformed(self, "an abbreviation without operands"))?;
        let code = self
            .read_scalar(*first)?
            .ok_or_else(|| malformed(self, "an abbreviation starts with an array or a blob"))?;
        let mut blob = None;
        let mut index = 0;
        while let Some(operand) = rest.get(index).copied() {
            index += 1;
            match operand {
                Operand::Array => {
                    // The element encoding is the next operand, and the last one.
                    let element = match rest.get(index) {
                        Some(element) if index + 1 == rest.len() => *element,
                        _ => return Err(malformed(self, "an array operand is not second to last")),
                    };
                    index += 1;
                    let element_bits = match element {
                        Operand::Fixed(width) | Operand::Vbr(width) => u64::from(width),
                        Operand::Char6 => 6,
                        _ => return Err(malformed(self, "an array element is not fixed, VBR or char6")),
                    };
                    let count = self.bits.read_vbr(6)?;
                    if count > self.bits.left() / element_bits {
                        return Err(BitcodeError::RecordTooLong {
                            bit: self.bits.file_bit(at),
                            count,
                        });
                    }
                    for _ in 0..count {
                        if let Some(value) = self.read_scalar(element)?
                            && let Some(values) = values.as_deref_mut()
                        {
                            values.push(value);
                        }
                    }
                }
                Operand::Blob => {
                    let length = self.bits.read_vbr(6)?;
                    self.bits.align32()?;
                    let start = self.bits.bit;
                    let padded_bits = length
                        .div_ceil(4)
                        .checked_mul(32)
                        .filter(|bits| *bits <= self.bits.left())
                        .ok_or(BitcodeError::BlobOutsideBlock {
                            bit: self.bits.file_bit(start),
                            length,
                        })?;
                    // Both fit the stream, whose length is a `usize`.
                    let first_byte = (start / 8) as usize;
                    blob = Some(first_byte..first_byte + length as usize);
                    self.bits.bit = start + padded_bits;
                }
                scalar => {
                    if let Some(value) = self.read_scalar(scalar)?
                        && let Some(values) = values.as_deref_mut()
                    {
                        values.push(value);
                    }
                }
            }
        }
        Ok(Record { code, blob })
    }
}

/// The character a char6 value stands for.
fn char6(value: u64) -> u8 {
    match value {
        0..=25 => b'a' + value as u8,
        26..=51 => b'A' + (value - 26) as u8,
        52..=61 => b'0' + (value - 52) as u8,
        62 => b'.',
        _ => b'_',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes little-endian bit fields, as LLVM's `BitstreamWriter` does.
    #[derive(Default)]
    struct Writer {
        bytes: Vec<u8>,
        bit: u64,
    }

    impl Writer {
        fn emit(&mut self, value: u64, width: u32) {
            for index in 0..width {
                if self.bit % 8 == 0 {
                    self.bytes.push(0);
                }
                if (value >> index) & 1 == 1
                    && let Some(byte) = self.bytes.last_mut()
                {
                    *byte |= 1 << (self.bit % 8);
                }
                self.bit += 1;
            }
        }

        fn vbr(&mut self, mut value: u64, width: u32) {
            let more = 1u64 << (width - 1);
            while value >= more {
                self.emit((value & (more - 1)) | more, width);
                value >>= width - 1;
            }
            self.emit(value, width);
        }

        fn align32(&mut self) {
            while self.bit % 32 != 0 {
                self.emit(0, 1);
            }
        }

        /// Starts a block of id `id` and abbreviation width `width` at the top level; returns where its
        /// length word is.
        fn enter(&mut self, id: u64, width: u64) -> usize {
            self.emit(ENTER_SUBBLOCK, 2);
            self.vbr(id, 8);
            self.vbr(width, 4);
            self.align32();
            let length_at = self.bytes.len();
            self.emit(0, 32);
            length_at
        }
    }

    #[test]
    fn fixed_and_vbr_fields_read_back() {
        let mut writer = Writer::default();
        writer.emit(5, 3);
        writer.vbr(1_000_000, 6);
        writer.emit(u64::MAX, 64);
        writer.vbr(u64::MAX, 8);
        let mut bits = Bits {
            limit: writer.bit,
            bytes: &writer.bytes,
            base: 0,
            bit: 0,
        };
        assert_eq!(bits.read(3), Ok(5));
        assert_eq!(bits.read_vbr(6), Ok(1_000_000));
        assert_eq!(bits.read(64), Ok(u64::MAX));
        assert_eq!(bits.read_vbr(8), Ok(u64::MAX));
        assert!(matches!(bits.read(1), Err(BitcodeError::Truncated { .. })));
    }

    #[test]
    fn a_vbr_past_64_bits_is_an_error() {
        let mut writer = Writer::default();
        // Sixteen chunks of four payload bits fill 64 bits; the seventeenth has nowhere to go.
        for _ in 0..16 {
            writer.emit(0b11111, 5);
        }
        writer.emit(0b01111, 5);
        let mut bits = Bits {
            limit: writer.bit,
            bytes: &writer.bytes,
            base: 0,
            bit: 0,
        };
        assert_eq!(bits.read_vbr(5), Err(BitcodeError::VbrOverflow { bit: 0 }));
    }

    /// A block with an abbreviation of every operand kind, one record that uses it and an unabbreviated one.
    #[test]
    fn abbreviated_records_of_every_operand_kind() {
        let mut writer = Writer::default();
        let length_at = writer.enter(23, 4);
        let body = writer.bit;
        // [literal 7, fixed 3, vbr 4, char6, blob, array of fixed 8]
        writer.emit(DEFINE_ABBREV, 4);
        writer.vbr(7, 5);
        writer.emit(1, 1);
        writer.vbr(7, 8);
        for (encoding, width) in [
            (1, Some(3)),
            (2, Some(4)),
            (4, None),
            (5, None),
            (3, None),
            (1, Some(8)),
        ] {
            writer.emit(0, 1);
            writer.emit(encoding, 3);
            if let Some(width) = width {
                writer.vbr(width, 5);
            }
        }
        writer.emit(4, 4);
        writer.emit(6, 3);
        writer.vbr(300, 4);
        writer.emit(62, 6);
        writer.vbr(3, 6);
        writer.align32();
        for byte in b"abc\0" {
            writer.emit(u64::from(*byte), 8);
        }
        writer.vbr(2, 6);
        writer.emit(0x41, 8);
        writer.emit(0x42, 8);
        writer.emit(UNABBREV_RECORD, 4);
        writer.vbr(9, 6);
        writer.vbr(1, 6);
        writer.vbr(77, 6);
        writer.emit(END_BLOCK, 4);
        writer.align32();
        let words = ((writer.bit - body) / 32) as u32;
        writer.bytes[length_at..length_at + 4].copy_from_slice(&words.to_le_bytes());

        let mut cursor = Cursor::new(&writer.bytes, 0, 0);
        let at = cursor.bit();
        assert_eq!(cursor.advance(), Ok(Entry::SubBlock(23)));
        cursor.enter_block(at).unwrap();
        let at = cursor.bit();
        let Ok(Entry::Record(abbrev)) = cursor.advance() else {
            panic!("no record")
        };
        let mut values = Vec::new();
        let record = cursor.read_record(at, abbrev, Some(&mut values)).unwrap();
        assert_eq!(record.code, 7);
        assert_eq!(values, [6, 300, u64::from(b'.'), 0x41, 0x42]);
        let blob = record.blob.unwrap();
        assert_eq!(&writer.bytes[blob], b"abc");
        let at = cursor.bit();
        assert_eq!(cursor.advance(), Ok(Entry::Record(UNABBREV_RECORD)));
        values.clear();
        let record = cursor.read_record(at, UNABBREV_RECORD, Some(&mut values)).unwrap();
        assert_eq!((record.code, values.as_slice()), (9, &[77][..]));
        assert_eq!(cursor.advance(), Ok(Entry::EndBlock));
        assert_eq!(cursor.bit(), writer.bit);
    }

    #[test]
    fn a_block_longer_than_its_parent_is_an_error() {
        let mut writer = Writer::default();
        let length_at = writer.enter(8, 3);
        writer.bytes[length_at] = 100;
        let mut cursor = Cursor::new(&writer.bytes, 0, 0);
        assert_eq!(cursor.advance(), Ok(Entry::SubBlock(8)));
        assert_eq!(
            cursor.skip_block(0),
            Err(BitcodeError::BlockOutsideParent { bit: 0, words: 100 })
        );
    }
}
