//! The irsymtab: the symbol table LLVM writes into every bitcode file for linkers, decoded from the blob of
//! the `SYMTAB_BLOCK` and the string table of the `STRTAB_BLOCK` after it.
//!
//! The layout is `llvm::irsymtab::storage` of `llvm/Object/IRSymtab.h`: little-endian 32-bit words, no
//! padding. A `Str` is a word offset and a word size into the string table; a `Range<T>` is a word offset
//! into the symbol table and a word count of `T`s. The `Header` (76 bytes) is the version, the producer
//! (`Str`), the ranges of modules (`Begin`, `End`, `UncBegin`: 12 bytes each), COMDATs (`Name`,
//! `SelectionKind`: 12 bytes), symbols (`Name`, `IRName`, `ComdatIndex`, `Flags`: 24 bytes) and uncommons,
//! then the target triple, the source file name, the COFF linker options (`Str`s) and the range of
//! dependent library specifiers (`Str`s).
//!
//! LLVM 14 writes format version 3 ([`IRSYMTAB_VERSION`]), whose `Uncommon` is `CommonSize` and
//! `CommonAlign` (words), `COFFWeakExternFallbackName` and `SectionName` (`Str`s): 24 bytes. Version 4
//! (later LLVM) widened `CommonSize` to 64 bits; any version but 3 is refused rather than guessed at.
//!
//! A symbol's `Flags` word holds the visibility in bits 0 and 1, then one bit each for `has_uncommon`,
//! `undefined`, `weak`, `common`, `indirect`, `used`, `tls`, `may_omit`, `global`, `format_specific`,
//! `unnamed_addr` and `executable` (bits 2 to 13). A symbol with `has_uncommon` takes the next uncommon
//! entry; a module's symbols are `Begin..End` and its first uncommon is `UncBegin`.
//!
//! Every offset, count and string is checked against the blob it points into before it is used, and no
//! table is allocated before its size is checked against the symbol table's.

use std::fmt;
use std::ops::Range;

use super::{BitcodeError, BitcodeSymbolTable, ProducerCheck};

/// The irsymtab format version LLVM 14 writes (`storage::Header::kCurrentVersion` in LLVM 14.0).
pub const IRSYMTAB_VERSION: u32 = 3;

/// The size of `storage::Header`.
const HEADER_SIZE: usize = 76;
/// The size of `storage::Str` and of `storage::Range<T>`.
const STR_SIZE: usize = 8;
/// The size of `storage::Module`.
const MODULE_SIZE: usize = 12;
/// The size of `storage::Comdat`.
const COMDAT_SIZE: usize = 12;
/// The size of `storage::Symbol`.
const SYMBOL_SIZE: usize = 24;
/// The size of `storage::Uncommon` in version 3.
const UNCOMMON_SIZE: usize = 24;

/// Where the header's fields are.
const HEADER_VERSION: usize = 0;
const HEADER_PRODUCER: usize = 4;
const HEADER_MODULES: usize = 12;
const HEADER_COMDATS: usize = 20;
const HEADER_SYMBOLS: usize = 28;
const HEADER_UNCOMMONS: usize = 36;
const HEADER_TARGET_TRIPLE: usize = 44;
const HEADER_SOURCE_FILE_NAME: usize = 52;
const HEADER_COFF_LINKER_OPTS: usize = 60;
const HEADER_DEPENDENT_LIBRARIES: usize = 68;

/// The bit of the `Flags` word that says a symbol has an uncommon entry.
const FB_HAS_UNCOMMON: u32 = 2;
/// The `Flags` bits LLVM 14 defines: the visibility (bits 0 and 1) and bits 2 to 13.
const DEFINED_FLAG_BITS: u32 = (1 << 14) - 1;
/// The `ComdatIndex` of a symbol in no COMDAT (-1).
const NO_COMDAT: u32 = u32::MAX;

/// A symbol's visibility (`GlobalValue::VisibilityTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Visibility {
    /// Visible to other components (`STV_DEFAULT`).
    Default,
    /// Not visible outside the component that defines it (`STV_HIDDEN`).
    Hidden,
    /// Visible to other components but not preemptible (`STV_PROTECTED`).
    Protected,
}

/// A COMDAT's selection kind (`Comdat::SelectionKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComdatSelection {
    /// The linker may keep any copy.
    Any,
    /// Every copy must have the same contents.
    ExactMatch,
    /// The largest copy is kept.
    Largest,
    /// Every copy is kept (no deduplication).
    NoDeduplicate,
    /// Every copy must have the same size.
    SameSize,
}

/// The flags of a symbol (`storage::Symbol::FlagBits` without the visibility and `has_uncommon`, which
/// [`BitcodeSymbol`] gives as [`Visibility`] and [`Uncommon`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SymbolFlags(u32);

/// Defines the flags of [`SymbolFlags`] (a constant and a test each) and their names, from one list of
/// `CONSTANT = bit, "name", test;`.
macro_rules! symbol_flags {
    ($($(#[$doc:meta])* $constant:ident = $bit:literal, $name:literal, $test:ident;)*) => {
        impl SymbolFlags {
            $(
                $(#[$doc])*
                pub const $constant: SymbolFlags = SymbolFlags(1 << $bit);
            )*

            /// Every flag and its name, in bit order.
            const NAMES: &[(SymbolFlags, &'static str)] = &[$((SymbolFlags::$constant, $name)),*];

            $(
                #[doc = concat!("Whether [`SymbolFlags::", stringify!($constant), "`] is set.")]
                pub const fn $test(self) -> bool {
                    self.contains(SymbolFlags::$constant)
                }
            )*
        }
    };
}

symbol_flags! {
    /// The symbol is referenced, not defined.
    UNDEFINED = 3, "undefined", is_undefined;
    /// Weak: linkonce, weak or extern_weak linkage.
    WEAK = 4, "weak", is_weak;
    /// Common linkage (its size and alignment are in [`Uncommon`]).
    COMMON = 5, "common", is_common;
    /// An alias (LLVM 14 does not mark ifuncs).
    INDIRECT = 6, "indirect", is_indirect;
    /// In `llvm.used` or `llvm.compiler.used` (or an undefined symbol of module asm).
    USED = 7, "used", is_used;
    /// A thread-local variable.
    TLS = 8, "tls", is_tls;
    /// May be left out of the output's symbol table (`canBeOmittedFromSymbolTable`).
    MAY_OMIT = 9, "may_omit", may_omit;
    /// Not of local linkage.
    GLOBAL = 10, "global", is_global;
    /// Private, or an `llvm.*` name, or in section `llvm.metadata`: no linker symbol.
    FORMAT_SPECIFIC = 11, "format_specific", is_format_specific;
    /// `unnamed_addr` (global, not merely local).
    UNNAMED_ADDR = 12, "unnamed_addr", is_unnamed_addr;
    /// A function, an ifunc, or an alias of one.
    EXECUTABLE = 13, "executable", is_executable;
}

impl SymbolFlags {
    /// The flags of a `Flags` word (its visibility and `has_uncommon` bits dropped).
    pub const fn from_word(word: u32) -> SymbolFlags {
        SymbolFlags(word & DEFINED_FLAG_BITS & !0b111)
    }

    /// The flags as `Flags` bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: SymbolFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags and those of `other`.
    pub const fn union(self, other: SymbolFlags) -> SymbolFlags {
        SymbolFlags(self.0 | other.0)
    }
}

impl fmt::Debug for SymbolFlags {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = SymbolFlags::NAMES
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| *name)
            .collect();
        write!(formatter, "SymbolFlags({})", names.join(" | "))
    }
}

/// The rarely used fields of a symbol (`storage::Uncommon`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uncommon<'a> {
    /// A common symbol's size in bytes.
    pub common_size: u64,
    /// A common symbol's alignment in bytes (0 when the IR gives none).
    pub common_align: u32,
    /// COFF only: the symbol a weak external resolves to when it stays undefined.
    pub coff_weak_external_fallback: &'a [u8],
    /// The section the IR places the symbol's object in (empty when none).
    pub section_name: &'a [u8],
}

/// One symbol of the irsymtab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitcodeSymbol<'a> {
    /// The mangled name: the linker's name of the symbol.
    pub name: &'a [u8],
    /// The IR name, or empty for a symbol of module asm.
    pub ir_name: &'a [u8],
    /// The visibility (bits 0 and 1 of the flags word).
    pub visibility: Visibility,
    /// The other flags.
    pub flags: SymbolFlags,
    /// The COMDAT, as an index into [`super::BitcodeSymbolTable::comdats`].
    pub comdat: Option<u32>,
    /// The uncommon fields, when the symbol has them.
    pub uncommon: Option<Uncommon<'a>>,
}

impl<'a> BitcodeSymbol<'a> {
    /// Whether the symbol takes part in symbol resolution: global and not format-specific, the symbols
    /// `lto::InputFile::create` keeps (and so the only ones lld turns into linker symbols).
    pub const fn is_linker_visible(&self) -> bool {
        self.flags.is_global() && !self.flags.is_format_specific()
    }

    /// The section name of the uncommon fields (empty when there are none).
    pub fn section_name(&self) -> &'a [u8] {
        self.uncommon.map(|uncommon| uncommon.section_name).unwrap_or_default()
    }
}

/// A COMDAT of the irsymtab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitcodeComdat<'a> {
    /// The COMDAT's name (for ELF, the name of its group).
    pub name: &'a [u8],
    /// How the linker chooses among copies.
    pub selection: ComdatSelection,
}

/// A blob and where it starts in the file.
#[derive(Clone, Copy)]
pub(crate) struct Blob<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

/// A table of the symbol table: where its entries start, how many there are, and where its `Range` is.
struct Table {
    offset: usize,
    count: usize,
    entry_size: usize,
}

impl Table {
    /// Where entry `index` starts in the symbol table.
    fn entry(&self, index: usize) -> usize {
        self.offset + index * self.entry_size
    }
}

/// The symbol table and the string table, read with checks.
struct Reader<'a> {
    symtab: Blob<'a>,
    strtab: Blob<'a>,
}

impl<'a> Reader<'a> {
    /// The word at byte `at` of the symbol table; a word past its end reads as an error naming `what`.
    fn word(&self, at: usize, what: &'static str) -> Result<u32, BitcodeError> {
        at.checked_add(4)
            .and_then(|end| self.symtab.bytes.get(at..end))
            .and_then(|word| <[u8; 4]>::try_from(word).ok())
            .map(u32::from_le_bytes)
            .ok_or(BitcodeError::WordOutOfBounds {
                what,
                at: self.symtab.at.saturating_add(at),
                size: self.symtab.bytes.len(),
            })
    }

    /// The string whose `Str` is at byte `at` of the symbol table.
    fn string(&self, at: usize, what: &'static str) -> Result<&'a [u8], BitcodeError> {
        let offset = self.word(at, what)?;
        let length = self.word(at + 4, what)?;
        let strtab = self.strtab.bytes;
        usize::try_from(offset)
            .ok()
            .zip(usize::try_from(length).ok())
            .and_then(|(start, length)| strtab.get(start..start.checked_add(length)?))
            .ok_or(BitcodeError::StringOutOfBounds {
                what,
                at: self.symtab.at.saturating_add(at),
                offset,
                length,
                size: strtab.len(),
            })
    }

    /// The table whose `Range` is at byte `at` of the header, checked to lie inside the symbol table.
    fn table(&self, at: usize, entry_size: usize, what: &'static str) -> Result<Table, BitcodeError> {
        let offset = self.word(at, what)?;
        let count = self.word(at + 4, what)?;
        let size = self.symtab.bytes.len();
        let fits = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(count).ok())
            .filter(|(start, count)| {
                count
                    .checked_mul(entry_size)
                    .and_then(|length| start.checked_add(length))
                    .is_some_and(|end| end <= size)
            });
        let Some((offset, count)) = fits else {
            return Err(BitcodeError::TableOutOfBounds {
                what,
                at: self.symtab.at.saturating_add(at),
                offset,
                count,
                size,
            });
        };
        Ok(Table {
            offset,
            count,
            entry_size,
        })
    }
}

/// Decodes the irsymtab `symtab` with its string table `strtab`, accepting the producers `producer`
/// accepts. The table's modules are left to the caller, which knows where they are in the file; the second
/// result is each module's symbols, as indices into the table's symbols.
pub(crate) fn decode<'a>(
    symtab: Blob<'a>,
    strtab: Blob<'a>,
    producer: ProducerCheck<'_>,
) -> Result<(BitcodeSymbolTable<'a>, Vec<Range<usize>>), BitcodeError> {
    if symtab.bytes.len() < HEADER_SIZE {
        return Err(BitcodeError::SymbolTableTooSmall {
            at: symtab.at,
            size: symtab.bytes.len(),
            header: HEADER_SIZE,
        });
    }
    let reader = Reader { symtab, strtab };
    let version = reader.word(HEADER_VERSION, "version")?;
    if version != IRSYMTAB_VERSION {
        return Err(BitcodeError::UnsupportedVersion { at: symtab.at, version });
    }
    let producer_name = reader.string(HEADER_PRODUCER, "producer")?;
    if !producer.accepts(producer_name) {
        return Err(BitcodeError::UnexpectedProducer {
            at: symtab.at + HEADER_PRODUCER,
            producer: String::from_utf8_lossy(producer_name).into_owned(),
            expected: producer.describe(),
        });
    }

    let comdats = read_comdats(&reader)?;
    let (symbols, module_symbols) = read_symbols(&reader, comdats.len())?;
    let libraries = reader.table(HEADER_DEPENDENT_LIBRARIES, STR_SIZE, "dependent library")?;
    let dependent_libraries = (0..libraries.count)
        .map(|index| reader.string(libraries.entry(index), "dependent library"))
        .collect::<Result<_, _>>()?;
    let table = BitcodeSymbolTable {
        version,
        producer: producer_name,
        target_triple: reader.string(HEADER_TARGET_TRIPLE, "target triple")?,
        source_file_name: reader.string(HEADER_SOURCE_FILE_NAME, "source file name")?,
        coff_linker_opts: reader.string(HEADER_COFF_LINKER_OPTS, "COFF linker options")?,
        dependent_libraries,
        modules: Vec::new(),
        comdats,
        symbols,
        symtab_range: symtab.at..symtab.at + symtab.bytes.len(),
        strtab_range: strtab.at..strtab.at + strtab.bytes.len(),
    };
    Ok((table, module_symbols))
}

fn read_comdats<'a>(reader: &Reader<'a>) -> Result<Vec<BitcodeComdat<'a>>, BitcodeError> {
    let table = reader.table(HEADER_COMDATS, COMDAT_SIZE, "COMDAT")?;
    let mut comdats = Vec::with_capacity(table.count);
    for comdat in 0..table.count {
        let at = table.entry(comdat);
        let kind = reader.word(at + STR_SIZE, "COMDAT")?;
        let selection = match kind {
            0 => ComdatSelection::Any,
            1 => ComdatSelection::ExactMatch,
            2 => ComdatSelection::Largest,
            3 => ComdatSelection::NoDeduplicate,
            4 => ComdatSelection::SameSize,
            _ => {
                return Err(BitcodeError::InvalidSelectionKind {
                    comdat,
                    at: reader.symtab.at + at,
                    kind,
                });
            }
        };
        comdats.push(BitcodeComdat {
            name: reader.string(at, "COMDAT name")?,
            selection,
        });
    }
    Ok(comdats)
}

/// Reads the modules' symbol ranges and every symbol. The modules must cover the symbols in order, one after
/// the other, and each module's first uncommon must be the one its first symbol takes.
fn read_symbols<'a>(
    reader: &Reader<'a>,
    comdats: usize,
) -> Result<(Vec<BitcodeSymbol<'a>>, Vec<Range<usize>>), BitcodeError> {
    let modules = reader.table(HEADER_MODULES, MODULE_SIZE, "module")?;
    let table = reader.table(HEADER_SYMBOLS, SYMBOL_SIZE, "symbol")?;
    let uncommons = reader.table(HEADER_UNCOMMONS, UNCOMMON_SIZE, "uncommon")?;
    let mut symbols = Vec::with_capacity(table.count);
    let mut module_symbols = Vec::with_capacity(modules.count);
    let mut next_uncommon = 0usize;
    for module in 0..modules.count {
        let at = modules.entry(module);
        let begin = reader.word(at, "module")?;
        let end = reader.word(at + 4, "module")?;
        let uncommon_begin = reader.word(at + 8, "module")?;
        let range = usize::try_from(begin)
            .ok()
            .zip(usize::try_from(end).ok())
            .filter(|(begin, end)| *begin == symbols.len() && begin <= end && *end <= table.count)
            .ok_or(BitcodeError::ModuleRange {
                module,
                at: reader.symtab.at + at,
                begin,
                end,
                symbols: table.count,
            })?;
        if usize::try_from(uncommon_begin).ok() != Some(next_uncommon) {
            return Err(BitcodeError::ModuleUncommons {
                module,
                at: reader.symtab.at + at + 8,
                found: uncommon_begin,
                expected: next_uncommon,
            });
        }
        for symbol in range.0..range.1 {
            let at = table.entry(symbol);
            let word = reader.word(at + 20, "symbol")?;
            let file_at = reader.symtab.at + at;
            if word & !DEFINED_FLAG_BITS != 0 {
                return Err(BitcodeError::UnknownFlags {
                    symbol,
                    at: file_at,
                    flags: word & !DEFINED_FLAG_BITS,
                });
            }
            let visibility = match word & 0b11 {
                0 => Visibility::Default,
                1 => Visibility::Hidden,
                2 => Visibility::Protected,
                _ => return Err(BitcodeError::InvalidVisibility { symbol, at: file_at }),
            };
            let comdat = match reader.word(at + 16, "symbol")? {
                NO_COMDAT => None,
                index if usize::try_from(index).is_ok_and(|index| index < comdats) => Some(index),
                index => {
                    return Err(BitcodeError::InvalidComdatIndex {
                        symbol,
                        at: file_at,
                        index,
                        comdats,
                    });
                }
            };
            let uncommon = if word & (1 << FB_HAS_UNCOMMON) != 0 {
                if next_uncommon >= uncommons.count {
                    return Err(BitcodeError::MissingUncommon {
                        symbol,
                        at: file_at,
                        uncommons: uncommons.count,
                    });
                }
                let at = uncommons.entry(next_uncommon);
                next_uncommon += 1;
                Some(Uncommon {
                    common_size: u64::from(reader.word(at, "uncommon")?),
                    common_align: reader.word(at + 4, "uncommon")?,
                    coff_weak_external_fallback: reader.string(at + 8, "COFF weak external fallback name")?,
                    section_name: reader.string(at + 16, "section name")?,
                })
            } else {
                None
            };
            symbols.push(BitcodeSymbol {
                name: reader.string(at, "symbol name")?,
                ir_name: reader.string(at + 8, "symbol IR name")?,
                visibility,
                flags: SymbolFlags::from_word(word),
                comdat,
                uncommon,
            });
        }
        module_symbols.push(range.0..range.1);
    }
    if symbols.len() != table.count {
        return Err(BitcodeError::SymbolsOutsideModules {
            at: reader.symtab.at + HEADER_MODULES,
            covered: symbols.len(),
            symbols: table.count,
        });
    }
    Ok((symbols, module_symbols))
}
