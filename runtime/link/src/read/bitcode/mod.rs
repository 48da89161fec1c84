//! The symbol table of an LLVM bitcode file (what `clang -flto` and `clang -flto=thin` write), read the way
//! lld reads it: from the irsymtab that LLVM stores next to the IR, never from the IR itself and never by
//! running a tool.
//!
//! A bitcode file is a bitstream (read by the `bitstream` module) after the magic `BC\xC0\xDE`, possibly
//! inside a wrapper whose header starts with `0x0B17C0DE` little-endian and gives the stream's offset and
//! size. Its top level holds, per module, an `IDENTIFICATION_BLOCK` (id 13) and a `MODULE_BLOCK` (id 8); then a
//! `SYMTAB_BLOCK` (id 25) whose `SYMTAB_BLOB` record is the irsymtab, and a `STRTAB_BLOCK` (id 23) whose
//! `STRTAB_BLOB` record is the string table the irsymtab's names point into. This module walks that top
//! level as LLVM's `getBitcodeFileContents` (`lib/Bitcode/Reader/BitcodeReader.cpp`) does, and the `irsymtab`
//! module decodes the table as `llvm/Object/IRSymtab.h` lays it out.
//!
//! Where LLVM would rebuild the table from the IR (no table, a table of another format version or producer,
//! a table that does not describe every module of the file, as after `llvm-cat -b`), this reader returns an
//! error that says so: rebuilding needs the IR reader of an LTO provider.
//!
//! Beyond what lld reads, each module's identification block (producer and epoch) and the module block's own
//! records (target triple and source file name) are read too, the IR blocks nested in the module being
//! skipped by their length. So a module block whose own records are malformed is an error here, where LLVM's
//! symbol table reader would skip the block unread (its IR reader would fail on it later).

mod bitstream;
mod irsymtab;

use std::ops::Range;

use bitstream::{Cursor, Entry};

pub use irsymtab::{
    BitcodeComdat, BitcodeSymbol, ComdatSelection, IRSYMTAB_VERSION, SymbolFlags, Uncommon, Visibility,
};

/// The magic number of a raw bitcode stream.
const RAW_MAGIC: [u8; 4] = *b"BC\xc0\xde";
/// The magic number of the bitcode wrapper header, `0x0B17C0DE` little-endian.
const WRAPPER_MAGIC: [u8; 4] = [0xde, 0xc0, 0x17, 0x0b];
/// Where the wrapper header holds the stream's offset and size (after the magic and a version word).
const WRAPPER_OFFSET_FIELD: usize = 8;
const WRAPPER_SIZE_FIELD: usize = 12;

/// The top-level block that names the producer of the module after it.
const IDENTIFICATION_BLOCK_ID: u64 = 13;
/// The top-level block of one module's IR.
const MODULE_BLOCK_ID: u64 = 8;
/// The top-level block of the string table.
const STRTAB_BLOCK_ID: u64 = 23;
/// The top-level block of the irsymtab.
const SYMTAB_BLOCK_ID: u64 = 25;
/// The record code of the string table's blob (in `STRTAB_BLOCK`).
const STRTAB_BLOB: u64 = 1;
/// The record code of the irsymtab's blob (in `SYMTAB_BLOCK`).
const SYMTAB_BLOB: u64 = 1;
/// `IDENTIFICATION_CODE_STRING`: the producer, as characters.
const IDENTIFICATION_CODE_STRING: u64 = 1;
/// `IDENTIFICATION_CODE_EPOCH`: the bitcode epoch.
const IDENTIFICATION_CODE_EPOCH: u64 = 2;
/// `MODULE_CODE_TRIPLE`: the module's target triple, as characters.
const MODULE_CODE_TRIPLE: u64 = 2;
/// `MODULE_CODE_SOURCE_FILENAME`: the module's source file name, as characters.
const MODULE_CODE_SOURCE_FILENAME: u64 = 16;

/// Why a bitcode file's symbol table could not be read. Positions are in the file (wrapper included):
/// `bit` counts bits from its first byte, `at` counts bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BitcodeError {
    /// The file has neither magic number.
    #[error("not LLVM bitcode: the file starts with neither `BC\\xC0\\xDE` nor the wrapper magic 0x0B17C0DE")]
    NotBitcode,
    /// LLVM reads only files whose size is a multiple of 4 bytes.
    #[error("the bitcode file's size {size} is not a multiple of 4")]
    SizeNotMultipleOf4 { size: usize },
    /// The wrapper header is cut before its size field.
    #[error("the bitcode wrapper header ends past the end of the file ({size} bytes)")]
    WrapperTruncated { size: usize },
    /// The wrapper header places the stream past the end of the file.
    #[error(
        "the bitcode wrapper places the stream at bytes {offset}..{offset}+{length}, past the end of the file ({size} bytes)"
    )]
    WrapperOutsideFile { offset: u32, length: u32, size: usize },
    /// The bytes the wrapper header points at are not a bitstream.
    #[error("the bitstream inside the wrapper does not start with `BC\\xC0\\xDE` (at byte {at})")]
    WrappedNotBitcode { at: usize },
    /// A read ran past the end of the enclosing block or of the stream.
    #[error("the bitstream ends at bit {bit} ({left} bits left in the block) while {wanted} more bits were needed")]
    Truncated { bit: u64, wanted: u64, left: u64 },
    /// A variable-width value needs more than 64 bits.
    #[error("a variable-width field at bit {bit} does not fit 64 bits")]
    VbrOverflow { bit: u64 },
    /// A block declares an abbreviation id width of 0 or above 64 bits.
    #[error("the block at bit {bit} has abbreviation id width {width} (1 to 64 allowed)")]
    InvalidWidth { bit: u64, width: u64 },
    /// A block's length word places its end past the end of the block or file around it.
    #[error("the block at bit {bit} declares {words} words, past the end of the block or file around it")]
    BlockOutsideParent { bit: u64, words: u64 },
    /// A block's `END_BLOCK` is not where its length word says the block ends.
    #[error("the END_BLOCK at bit {bit} does not end its block where the block's length says (bit {declared_end})")]
    BlockLengthMismatch { bit: u64, declared_end: u64 },
    /// An `END_BLOCK` outside every block.
    #[error("an END_BLOCK at bit {bit} outside every block")]
    EndBlockAtTopLevel { bit: u64 },
    /// Blocks nest deeper than the reader allows.
    #[error("the block at bit {bit} nests deeper than {} blocks", bitstream::MAX_DEPTH)]
    NestingTooDeep { bit: u64 },
    /// An abbreviation is malformed where it is defined or used.
    #[error("the abbreviation used or defined at bit {bit} is malformed: {reason}")]
    InvalidAbbrev { bit: u64, reason: &'static str },
    /// A record uses an abbreviation id its block has not defined.
    #[error("the record at bit {bit} uses abbreviation id {id}, which its block does not define")]
    UnknownAbbrev { bit: u64, id: u64 },
    /// A record or array claims more operands than there are bits left.
    #[error("the record at bit {bit} claims {count} operands, more than the bits left in its block")]
    RecordTooLong { bit: u64, count: u64 },
    /// A blob claims more bytes than its block holds.
    #[error("the blob at bit {bit} claims {length} bytes, past the end of its block")]
    BlobOutsideBlock { bit: u64, length: u64 },
    /// A string record holds a value that is not a byte.
    #[error("the record at bit {bit} holds a character value {value} above 255 in a string")]
    InvalidCharacter { bit: u64, value: u64 },
    /// An identification block is followed by something else than a module block.
    #[error("the identification block at bit {bit} is not followed by a module block")]
    IdentificationWithoutModule { bit: u64 },
    /// The file holds no module block.
    #[error("the bitcode file holds no module")]
    NoModules,
    /// The file has no irsymtab, or no string table after it: LLVM would rebuild the table from the IR.
    #[error(
        "the bitcode file has no irsymtab (no SYMTAB_BLOCK, or no STRTAB_BLOCK after it): LLVM would rebuild it from the IR"
    )]
    NoSymbolTable,
    /// The irsymtab is shorter than its header.
    #[error("the irsymtab at byte {at} has {size} bytes, fewer than its {header}-byte header")]
    SymbolTableTooSmall { at: usize, size: usize, header: usize },
    /// The irsymtab's format version is not the one LLVM 14 writes.
    #[error(
        "the irsymtab at byte {at} has format version {version}; this reader knows version {} (LLVM 14) only",
        IRSYMTAB_VERSION
    )]
    UnsupportedVersion { at: usize, version: u32 },
    /// The irsymtab's producer is not one the caller accepts.
    #[error("the irsymtab at byte {at} was written by producer `{producer}`, not by {expected}")]
    UnexpectedProducer {
        at: usize,
        producer: String,
        expected: String,
    },
    /// The irsymtab does not describe every module of the file (as after binary concatenation).
    #[error(
        "the irsymtab describes {in_table} modules but the file holds {in_file}: LLVM would rebuild it from the IR"
    )]
    ModuleCountMismatch { in_table: usize, in_file: usize },
    /// A word of the irsymtab lies past its end.
    #[error("a {what} word at byte {at} lies past the end of the irsymtab ({size} bytes)")]
    WordOutOfBounds { what: &'static str, at: usize, size: usize },
    /// A table the header names lies outside the irsymtab.
    #[error(
        "the {what} table named at byte {at} ({count} entries at offset {offset}) lies outside the irsymtab ({size} bytes)"
    )]
    TableOutOfBounds {
        what: &'static str,
        at: usize,
        offset: u32,
        count: u32,
        size: usize,
    },
    /// A string lies outside the string table.
    #[error(
        "the {what} named at byte {at} ({length} bytes at offset {offset}) lies outside the string table ({size} bytes)"
    )]
    StringOutOfBounds {
        what: &'static str,
        at: usize,
        offset: u32,
        length: u32,
        size: usize,
    },
    /// A module's symbols do not follow the previous module's, or lie past the symbol table.
    #[error(
        "module {module} of the irsymtab (at byte {at}) covers symbols {begin}..{end}, which do not follow the previous module's within the {symbols} symbols"
    )]
    ModuleRange {
        module: usize,
        at: usize,
        begin: u32,
        end: u32,
        symbols: usize,
    },
    /// The modules leave symbols at the end of the table to no module.
    #[error("the modules of the irsymtab (listed at byte {at}) cover {covered} of its {symbols} symbols")]
    SymbolsOutsideModules { at: usize, covered: usize, symbols: usize },
    /// A module's first uncommon entry is not the one its first symbol takes.
    #[error(
        "module {module} of the irsymtab (at byte {at}) starts at uncommon {found}, but its first symbol is preceded by {expected}"
    )]
    ModuleUncommons {
        module: usize,
        at: usize,
        found: u32,
        expected: usize,
    },
    /// A symbol has flag bits LLVM 14 does not define.
    #[error("symbol {symbol} of the irsymtab (at byte {at}) has flag bits {flags:#x}, which LLVM 14 does not define")]
    UnknownFlags { symbol: usize, at: usize, flags: u32 },
    /// A symbol has visibility 3.
    #[error(
        "symbol {symbol} of the irsymtab (at byte {at}) has visibility 3 (only default, hidden and protected exist)"
    )]
    InvalidVisibility { symbol: usize, at: usize },
    /// A symbol names a COMDAT past the COMDAT table.
    #[error("symbol {symbol} of the irsymtab (at byte {at}) names COMDAT {index}, but there are {comdats}")]
    InvalidComdatIndex {
        symbol: usize,
        at: usize,
        index: u32,
        comdats: usize,
    },
    /// A symbol has uncommon data, but the uncommon table has no entry left.
    #[error(
        "symbol {symbol} of the irsymtab (at byte {at}) has uncommon data, but the {uncommons} uncommon entries are used up"
    )]
    MissingUncommon { symbol: usize, at: usize, uncommons: usize },
    /// A COMDAT has a selection kind LLVM does not define.
    #[error("COMDAT {comdat} of the irsymtab (at byte {at}) has selection kind {kind} (0 to 4 exist)")]
    InvalidSelectionKind { comdat: usize, at: usize, kind: u32 },
    /// The reader lost track of its blocks (a bug, not a property of the input).
    #[error("internal error of the bitstream reader at bit {bit}")]
    Internal { bit: u64 },
}

/// Which producer of the irsymtab [`read_symbol_table_with`] accepts.
///
/// LLVM rebuilds the table from the IR when its producer string (`LLVM_VERSION_STRING`, then a space and
/// `LLVM_REVISION` when that is set) is not its own, since another release may enumerate symbols in
/// another order. An LTO provider that is LLVM 14 reads the table of any LLVM 14 as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProducerCheck<'p> {
    /// Any LLVM 14 release: the producer starts with `14.` (the default of [`read_symbol_table`]).
    Llvm14,
    /// Exactly this producer string.
    Exact(&'p str),
    /// Any producer (the table's format version is still checked).
    Any,
}

impl ProducerCheck<'_> {
    fn accepts(&self, producer: &[u8]) -> bool {
        match self {
            ProducerCheck::Llvm14 => producer.starts_with(b"14."),
            ProducerCheck::Exact(expected) => producer == expected.as_bytes(),
            ProducerCheck::Any => true,
        }
    }

    fn describe(&self) -> String {
        match self {
            ProducerCheck::Llvm14 => "LLVM 14 (`14.*`)".to_string(),
            ProducerCheck::Exact(expected) => format!("`{expected}`"),
            ProducerCheck::Any => "any producer".to_string(),
        }
    }
}

/// What a module's `IDENTIFICATION_BLOCK` says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identification {
    /// The producer, such as `LLVM14.0.6`.
    pub producer: Vec<u8>,
    /// The bitcode epoch (0 for every LLVM since 4.0).
    pub epoch: Option<u64>,
}

/// One module of a bitcode file: where it is in the file and which symbols of the irsymtab are its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitcodeModule {
    /// The module's bytes in the file, from its identification block (or its module block when it has
    /// none) to the end of its module block: what LLVM's `BitcodeModule` holds.
    pub range: Range<usize>,
    /// The position just past the identification block's id (where its abbreviation width follows), in bits
    /// from `range.start`: LLVM's `IdentificationBit`, where LLVM resumes reading to enter the block.
    pub identification_bit: Option<u64>,
    /// The position just past the module block's id, in bits from `range.start`: LLVM's `ModuleBit`.
    pub module_bit: u64,
    /// The module's identification block, when it has one.
    pub identification: Option<Identification>,
    /// The module's own `TRIPLE` record.
    pub triple: Option<Vec<u8>>,
    /// The module's own `SOURCE_FILENAME` record.
    pub source_file_name: Option<Vec<u8>>,
    /// The module's symbols, as indices into [`BitcodeSymbolTable::symbols`].
    pub symbols: Range<usize>,
}

/// The symbol table of a bitcode file: the irsymtab's header, its modules, COMDATs and symbols. Strings are
/// the string table's bytes, borrowed from the file (LLVM does not require them to be UTF-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitcodeSymbolTable<'a> {
    /// The irsymtab's format version ([`IRSYMTAB_VERSION`]).
    pub version: u32,
    /// The producer of the irsymtab, such as `14.0.6`.
    pub producer: &'a [u8],
    /// The target triple (the first module's).
    pub target_triple: &'a [u8],
    /// The source file name (the first module's).
    pub source_file_name: &'a [u8],
    /// COFF only: the linker directives of every module, each after a space.
    pub coff_linker_opts: &'a [u8],
    /// ELF only: the `llvm.dependent-libraries` specifiers, in order.
    pub dependent_libraries: Vec<&'a [u8]>,
    /// The modules, in file order.
    pub modules: Vec<BitcodeModule>,
    /// The COMDATs that symbols name by index.
    pub comdats: Vec<BitcodeComdat<'a>>,
    /// Every symbol of every module, in module order and, within a module, in the order of LLVM's
    /// `ModuleSymbolTable` (functions, variables, aliases, ifuncs, then module asm symbols: what
    /// `llvm-nm --no-sort` lists). Local and format-specific symbols are included;
    /// [`BitcodeSymbol::is_linker_visible`] picks the ones lld resolves.
    pub symbols: Vec<BitcodeSymbol<'a>>,
    /// The irsymtab's blob in the file.
    pub symtab_range: Range<usize>,
    /// The string table's blob in the file.
    pub strtab_range: Range<usize>,
}

/// Whether `bytes` start like LLVM bitcode: the raw magic `BC\xC0\xDE` or the wrapper magic.
pub fn is_bitcode(bytes: &[u8]) -> bool {
    bytes.starts_with(&RAW_MAGIC) || bytes.starts_with(&WRAPPER_MAGIC)
}

/// Reads the irsymtab of the bitcode file `bytes`, written by LLVM 14 (see [`ProducerCheck::Llvm14`]).
pub fn read_symbol_table(bytes: &[u8]) -> Result<BitcodeSymbolTable<'_>, BitcodeError> {
    read_symbol_table_with(bytes, ProducerCheck::Llvm14)
}

/// Reads the irsymtab of the bitcode file `bytes`, accepting the producers `producer` accepts.
pub fn read_symbol_table_with<'a>(
    bytes: &'a [u8],
    producer: ProducerCheck<'_>,
) -> Result<BitcodeSymbolTable<'a>, BitcodeError> {
    let (stream, base) = unwrap_stream(bytes)?;
    let contents = read_top_level(stream, base)?;
    if contents.modules.is_empty() {
        return Err(BitcodeError::NoModules);
    }
    let (Some(symtab), Some(strtab)) = (contents.symtab, contents.strtab_for_symtab) else {
        return Err(BitcodeError::NoSymbolTable);
    };
    let (mut table, module_symbols) = irsymtab::decode(
        irsymtab::Blob {
            bytes: stream.get(symtab.clone()).unwrap_or_default(),
            at: base + symtab.start,
        },
        irsymtab::Blob {
            bytes: stream.get(strtab.clone()).unwrap_or_default(),
            at: base + strtab.start,
        },
        producer,
    )?;
    if module_symbols.len() != contents.modules.len() {
        return Err(BitcodeError::ModuleCountMismatch {
            in_table: module_symbols.len(),
            in_file: contents.modules.len(),
        });
    }
    table.modules = contents
        .modules
        .into_iter()
        .zip(module_symbols)
        .map(|(module, symbols)| BitcodeModule { symbols, ..module })
        .collect();
    Ok(table)
}

/// The bitstream of a bitcode file (unwrapped when it has a wrapper header) and where it starts in the file,
/// checked as LLVM's `initStream` checks it.
fn unwrap_stream(bytes: &[u8]) -> Result<(&[u8], usize), BitcodeError> {
    if !is_bitcode(bytes) {
        return Err(BitcodeError::NotBitcode);
    }
    if bytes.len() % 4 != 0 {
        return Err(BitcodeError::SizeNotMultipleOf4 { size: bytes.len() });
    }
    if !bytes.starts_with(&WRAPPER_MAGIC) {
        return Ok((bytes, 0));
    }
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|word| <[u8; 4]>::try_from(word).ok())
            .map(u32::from_le_bytes)
    };
    let (Some(offset), Some(length)) = (word(WRAPPER_OFFSET_FIELD), word(WRAPPER_SIZE_FIELD)) else {
        return Err(BitcodeError::WrapperTruncated { size: bytes.len() });
    };
    let outside = BitcodeError::WrapperOutsideFile {
        offset,
        length,
        size: bytes.len(),
    };
    let start = usize::try_from(offset).map_err(|_| outside.clone())?;
    let end = start
        .checked_add(usize::try_from(length).map_err(|_| outside.clone())?)
        .ok_or(outside.clone())?;
    let stream = bytes.get(start..end).ok_or(outside)?;
    if !stream.starts_with(&RAW_MAGIC) {
        return Err(BitcodeError::WrappedNotBitcode { at: start });
    }
    Ok((stream, start))
}

/// What the top level of a bitstream holds: the modules (their symbol ranges still empty) and the blobs of
/// the first symbol table and of the string table after it, as byte ranges of the stream.
struct TopLevel {
    modules: Vec<BitcodeModule>,
    symtab: Option<Range<usize>>,
    strtab_for_symtab: Option<Range<usize>>,
}

/// Walks the top level of `stream` (which starts at byte `base` of the file) as LLVM's
/// `getBitcodeFileContents` does: an identification block must be followed by a module block; the first
/// non-empty symbol table is kept, with the first non-empty string table after it; other blocks are skipped;
/// fewer than 9 bytes left end the walk (LLVM tolerates such padding after the last block).
fn read_top_level(stream: &[u8], base: usize) -> Result<TopLevel, BitcodeError> {
    let mut cursor = Cursor::new(stream, base, 0);
    // The magic number, already checked by `unwrap_stream`.
    cursor.read(32)?;
    let mut top = TopLevel {
        modules: Vec::new(),
        symtab: None,
        strtab_for_symtab: None,
    };
    loop {
        let begin_bit = cursor.bit();
        let begin = (begin_bit / 8) as usize;
        if begin.saturating_add(8) >= stream.len() {
            return Ok(top);
        }
        // LLVM's module bit positions count from the module's first byte and point just past the block id.
        let relative = |cursor: &Cursor<'_>| cursor.bit() - (begin as u64) * 8;
        let mut at = begin_bit;
        let mut entry = cursor.advance()?;
        let mut identification = None;
        if entry == Entry::SubBlock(IDENTIFICATION_BLOCK_ID) {
            identification = Some((relative(&cursor), read_identification(&mut cursor, at)?));
            at = cursor.bit();
            entry = cursor.advance()?;
            if entry != Entry::SubBlock(MODULE_BLOCK_ID) {
                return Err(BitcodeError::IdentificationWithoutModule {
                    bit: cursor.file_bit(begin_bit),
                });
            }
        }
        match entry {
            Entry::SubBlock(MODULE_BLOCK_ID) => {
                let module_bit = relative(&cursor);
                let (triple, source_file_name) = read_module_strings(&mut cursor, at)?;
                let end = (cursor.bit() / 8) as usize;
                let (identification_bit, identification) = identification.unzip();
                top.modules.push(BitcodeModule {
                    range: base + begin..base + end,
                    identification_bit,
                    module_bit,
                    identification,
                    triple,
                    source_file_name,
                    symbols: 0..0,
                });
            }
            Entry::SubBlock(STRTAB_BLOCK_ID) => {
                let strtab = read_blob_block(&mut cursor, at, STRTAB_BLOB)?;
                if top.symtab.is_some() && top.strtab_for_symtab.is_none() && !strtab.is_empty() {
                    top.strtab_for_symtab = Some(strtab);
                }
            }
            Entry::SubBlock(SYMTAB_BLOCK_ID) => {
                let symtab = read_blob_block(&mut cursor, at, SYMTAB_BLOB)?;
                if top.symtab.is_none() && !symtab.is_empty() {
                    top.symtab = Some(symtab);
                }
            }
            Entry::SubBlock(_) => cursor.skip_block(at)?,
            Entry::Record(abbrev) => {
                cursor.read_record(at, abbrev, None)?;
            }
            Entry::EndBlock => {
                return Err(BitcodeError::Internal {
                    bit: cursor.file_bit(at),
                });
            }
        }
    }
}

/// Reads a block that holds a blob record (the string table or the irsymtab): the blob of its last record
/// with code `code` (empty when there is none, or when that record has no blob operand).
fn read_blob_block(cursor: &mut Cursor<'_>, at: u64, code: u64) -> Result<Range<usize>, BitcodeError> {
    cursor.enter_block(at)?;
    let mut blob = 0..0;
    loop {
        let at = cursor.bit();
        match cursor.advance()? {
            Entry::EndBlock => return Ok(blob),
            Entry::SubBlock(_) => cursor.skip_block(at)?,
            Entry::Record(abbrev) => {
                let record = cursor.read_record(at, abbrev, None)?;
                if record.code == code {
                    blob = record.blob.unwrap_or(0..0);
                }
            }
        }
    }
}

/// Reads the records of the block just entered at `at` with `read`, skipping nested blocks, until its end.
fn read_records(
    cursor: &mut Cursor<'_>,
    at: u64,
    mut read: impl FnMut(u64, u64, &[u64]) -> Result<(), BitcodeError>,
) -> Result<(), BitcodeError> {
    cursor.enter_block(at)?;
    let mut values = Vec::new();
    loop {
        let at = cursor.bit();
        match cursor.advance()? {
            Entry::EndBlock => return Ok(()),
            Entry::SubBlock(_) => cursor.skip_block(at)?,
            Entry::Record(abbrev) => {
                values.clear();
                let record = cursor.read_record(at, abbrev, Some(&mut values))?;
                read(cursor.file_bit(at), record.code, &values)?;
            }
        }
    }
}

/// A string record's characters as bytes.
fn string_of(bit: u64, values: &[u64]) -> Result<Vec<u8>, BitcodeError> {
    values
        .iter()
        .map(|value| u8::try_from(*value).map_err(|_| BitcodeError::InvalidCharacter { bit, value: *value }))
        .collect()
}

/// Reads an identification block: its producer string and epoch.
fn read_identification(cursor: &mut Cursor<'_>, at: u64) -> Result<Identification, BitcodeError> {
    let mut identification = Identification::default();
    read_records(cursor, at, |bit, code, values| {
        match code {
            IDENTIFICATION_CODE_STRING => identification.producer = string_of(bit, values)?,
            IDENTIFICATION_CODE_EPOCH => identification.epoch = values.first().copied(),
            _ => {}
        }
        Ok(())
    })?;
    Ok(identification)
}

/// The module's triple and source file name: the module block's own records (its nested blocks, which hold
/// the IR, are skipped by their length).
type ModuleStrings = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Reads the records of a module block for its [`ModuleStrings`].
fn read_module_strings(cursor: &mut Cursor<'_>, at: u64) -> Result<ModuleStrings, BitcodeError> {
    let (mut triple, mut source_file_name) = (None, None);
    read_records(cursor, at, |bit, code, values| {
        match code {
            MODULE_CODE_TRIPLE => triple = Some(string_of(bit, values)?),
            MODULE_CODE_SOURCE_FILENAME => source_file_name = Some(string_of(bit, values)?),
            _ => {}
        }
        Ok(())
    })?;
    Ok((triple, source_file_name))
}
