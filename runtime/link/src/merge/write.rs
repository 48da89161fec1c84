//! The ELF relocatable object (`ET_REL`) of a `-r` link, written from its objects' own sections, symbols and
//! relocations as GNU ld's `-r` writes it, so that the output links later as its inputs would have:
//!
//! - Sections that are in no group are combined by name, type, flags and entry size, in input order, each
//!   input section at an offset aligned to its own alignment; the output section's alignment is the largest.
//!   `SHF_MERGE` sections are concatenated (their duplicate entries are merged by the final link). A section
//!   with `SHF_LINK_ORDER` is combined only with those linked to the same output section.
//! - COMDAT groups (`SHT_GROUP` with `GRP_COMDAT`) stay groups: each kept group's sections are output sections
//!   of their own, listed by an output `.group` with the same signature. A second group of a signature already
//!   kept is dropped with its sections, as ld drops it. A relocation elsewhere that refers to a section of the
//!   dropped group refers to the kept group's section of the same name and size instead (the DWARF of a
//!   dropped copy then describes the kept one), except in `.eh_frame`, as ld.bfd's `-r` does; one that cannot
//!   be moved so becomes `R_*_NONE` (type 0, as every ELF psABI numbers it), or in a debugging section is
//!   removed. Groups without `GRP_COMDAT` are always kept.
//! - `.eh_frame`, notes (`.note.GNU-stack`), `.comment` and debugging sections are kept like any section, with
//!   their relocations; `.note.gnu.property` notes are merged into one note, by the rules a link uses.
//! - Relocations (RELA) keep their types; their offsets move with their section, a relocation against a
//!   section symbol is made against the output section's symbol with the input section's offset added to its
//!   addend, and one against a named symbol refers to that symbol in the output.
//! - Local symbols are kept (file symbols too), moved with their sections; every output section has a section
//!   symbol. Global symbols are merged by name: a definition beats a common symbol, which beats a weak
//!   definition, which beats an undefined reference; two common symbols make one of the larger size and the
//!   stricter alignment (it stays common); two strong definitions are an error naming both files, unless both
//!   are in COMDAT groups (or `STB_GNU_UNIQUE`); an undefined name stays undefined, weak only if every
//!   reference is weak. The visibility is the most constraining one of every reference and definition.
//!
//! The output is built completely in memory, deterministically (input order only), and written by `commit`.

use std::collections::HashMap;

use object::elf;
use object::read::elf::{FileHeader as _, Rela as _, SectionHeader as _, SectionTable, Sym as _, SymbolTable};
use object::write::elf::{FileHeader, Rel, SectionHeader, SectionIndex as OutputIndex, Sym, Writer};
use object::{Endianness, SectionIndex, SymbolIndex};

type Header = elf::FileHeader64<Endianness>;

/// Why objects could not be merged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    #[error("{file}: {message}")]
    Malformed { file: String, message: String },
    #[error("{file}: {message}")]
    Unsupported { file: String, message: String },
    /// Strong definitions of one name in two objects, one line per name.
    #[error("{}", .0.join("\n"))]
    Duplicates(Vec<String>),
    #[error("the merged object would be larger than the output limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the merged object could not be written: {0}")]
    Write(String),
}

/// One object to merge: its name for messages (`lib.a(member.o)`) and its bytes.
pub(crate) struct MergeInput<'a> {
    pub(crate) name: &'a str,
    pub(crate) bytes: &'a [u8],
}

/// Where an input section went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// Not a section of content (symbol and string tables, relocations, groups), or not looked at yet.
    Unplaced,
    /// Linked to a dropped section, or the section of a dropped group.
    Discarded,
    /// A member of a dropped COMDAT group, whose signature kept group `0` has.
    DroppedCopy(usize),
    /// In output section `section` at `offset`.
    At { section: usize, offset: u64 },
    /// A `.note.gnu.property` note, merged into the output's one note.
    PropertyNote,
    /// The section of kept group `0` (the output has a `.group` of its own for it).
    Group(usize),
}

/// What a symbol of the output is, before symbols are numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SymbolRef {
    Null,
    /// The section symbol of an output section.
    Section(usize),
    Local(usize),
    Global(usize),
    /// A local symbol of a dropped section.
    Discarded,
}

/// Where a symbol is defined in the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Undefined,
    Absolute,
    Common,
    Section(usize),
    /// The output `.group` of a group (gcc defines some groups' signature symbols there).
    Group(usize),
    /// A special section index other than `SHN_ABS` and `SHN_COMMON`, kept as it is.
    Special(u16),
}

struct Relocation {
    offset: u64,
    symbol: SymbolRef,
    r_type: u32,
    addend: i64,
}

struct OutputSection<'a> {
    name: &'a [u8],
    sh_type: u32,
    /// The flags without `SHF_GROUP`, which members of a group get when written.
    flags: u64,
    entry_size: u64,
    alignment: u64,
    size: u64,
    /// The contents (none for `SHT_NOBITS`).
    data: Vec<u8>,
    /// The output section an `SHF_LINK_ORDER` section is linked to.
    link: Option<usize>,
    group: Option<usize>,
    relocations: Vec<Relocation>,
}

struct Group<'a> {
    comdat: bool,
    /// The object and symbol index of the signature symbol.
    signature: (usize, SymbolIndex),
    members: Vec<usize>,
    /// Each input section of the group: its name and size, and where it went (output section, offset).
    placed: Vec<(&'a [u8], u64, usize, u64)>,
}

struct Local<'a> {
    name: &'a [u8],
    info: u8,
    other: u8,
    place: Place,
    value: u64,
    size: u64,
}

struct Global<'a> {
    name: &'a [u8],
    place: Place,
    /// How strongly `place` defines the name (see [`rank`]).
    rank: u8,
    /// The object of the prevailing definition.
    defined_by: usize,
    in_group: bool,
    binding: u8,
    symbol_type: u8,
    /// `st_other` of the prevailing definition (or first reference), without the visibility.
    other: u8,
    visibility: u8,
    value: u64,
    size: u64,
    strong_reference: bool,
}

/// One parsed object.
struct Object<'a> {
    name: &'a str,
    data: &'a [u8],
    endian: Endianness,
    header: &'a Header,
    sections: SectionTable<'a, Header>,
    symbols: SymbolTable<'a, Header>,
    placement: Vec<Placement>,
    symbol_map: Vec<SymbolRef>,
}

impl<'a> Object<'a> {
    fn malformed(&self, message: impl std::fmt::Display) -> MergeError {
        MergeError::Malformed {
            file: self.name.to_string(),
            message: message.to_string(),
        }
    }

    fn unsupported(&self, message: impl Into<String>) -> MergeError {
        MergeError::Unsupported {
            file: self.name.to_string(),
            message: message.into(),
        }
    }

    fn section_name(&self, header: &elf::SectionHeader64<Endianness>) -> Result<&'a [u8], MergeError> {
        self.sections
            .section_name(self.endian, header)
            .map_err(|error| self.malformed(error))
    }

    fn placement_of(&self, section: SectionIndex) -> Placement {
        self.placement.get(section.0).copied().unwrap_or(Placement::Unplaced)
    }
}

/// The merge in progress.
struct Merge<'a> {
    objects: Vec<Object<'a>>,
    sections: Vec<OutputSection<'a>>,
    by_key: HashMap<SectionKey<'a>, usize>,
    groups: Vec<Group<'a>>,
    /// The kept group of each COMDAT signature.
    kept_signatures: HashMap<&'a [u8], usize>,
    locals: Vec<Local<'a>>,
    globals: Vec<Global<'a>>,
    global_by_name: HashMap<&'a [u8], usize>,
    duplicates: Vec<String>,
    /// Each object's `.note.gnu.property` bytes, if it has the note.
    property_notes: Vec<Option<&'a [u8]>>,
    /// The output section holding the merged property note, made where the first note was.
    property_section: Option<usize>,
    /// The output's size so far, held to `limit`.
    total: u64,
    limit: u64,
}

/// Sections with equal keys are combined: name, type, flags (without `SHF_GROUP`), entry size, the output
/// section an `SHF_LINK_ORDER` section is linked to, and the output group.
type SectionKey<'a> = (&'a [u8], u32, u64, u64, Option<usize>, Option<usize>);

/// Merges `inputs` (ELF64 relocatable objects of one machine, already checked by the link's readers) into
/// one relocatable object. `limit` bounds the output's size. With `allow_multiple_definition` the first of
/// two strong definitions is kept and the second is not an error (`--allow-multiple-definition`).
pub(crate) fn merge_objects(
    inputs: &[MergeInput<'_>],
    limit: u64,
    allow_multiple_definition: bool,
) -> Result<Vec<u8>, MergeError> {
    let mut merge = Merge {
        objects: Vec::with_capacity(inputs.len()),
        sections: Vec::new(),
        by_key: HashMap::new(),
        groups: Vec::new(),
        kept_signatures: HashMap::new(),
        locals: Vec::new(),
        globals: Vec::new(),
        global_by_name: HashMap::new(),
        duplicates: Vec::new(),
        property_notes: Vec::new(),
        property_section: None,
        total: 0,
        limit,
    };
    for input in inputs {
        merge.objects.push(parse(input)?);
    }
    if merge.objects.is_empty() {
        return Err(MergeError::Write("no objects to merge".into()));
    }
    for index in 0..merge.objects.len() {
        merge.place_sections(index)?;
    }
    for index in 0..merge.objects.len() {
        merge.map_symbols(index)?;
    }
    if !merge.duplicates.is_empty() && !allow_multiple_definition {
        return Err(MergeError::Duplicates(std::mem::take(&mut merge.duplicates)));
    }
    for index in 0..merge.objects.len() {
        merge.move_relocations(index)?;
    }
    if let Some(section) = merge.property_section {
        // Every object counts, an object without the note as one without properties.
        merge.property_notes.resize(merge.objects.len(), None);
        let note = crate::synth::gnu_property::merged_note(&merge.property_notes);
        let output = &mut merge.sections[section];
        output.size = note.as_ref().map_or(0, |note| note.len() as u64);
        output.data = note.unwrap_or_default();
    }
    merge.write()
}

fn parse<'a>(input: &MergeInput<'a>) -> Result<Object<'a>, MergeError> {
    let malformed = |message: String| MergeError::Malformed {
        file: input.name.to_string(),
        message,
    };
    let header = Header::parse(input.bytes)
        .map_err(|error| malformed(format!("not an ELF64 object a relocatable link can merge: {error}")))?;
    let endian = header.endian().map_err(|error| malformed(error.to_string()))?;
    if header.e_type(endian) != elf::ET_REL {
        return Err(MergeError::Unsupported {
            file: input.name.to_string(),
            message: "not a relocatable object (ET_REL); a relocatable link merges only those".into(),
        });
    }
    let sections = header
        .sections(endian, input.bytes)
        .map_err(|error| malformed(error.to_string()))?;
    let symbols = sections
        .symbols(endian, input.bytes, elf::SHT_SYMTAB)
        .map_err(|error| malformed(error.to_string()))?;
    Ok(Object {
        name: input.name,
        data: input.bytes,
        endian,
        header,
        placement: vec![Placement::Unplaced; sections.len()],
        symbol_map: vec![SymbolRef::Null; symbols.len()],
        sections,
        symbols,
    })
}

/// How strongly a symbol defines its name: 0 undefined, 1 a weak definition, 2 common, 3 a definition.
fn rank(place: Place, binding: u8) -> u8 {
    match (place, binding) {
        (Place::Undefined, _) => 0,
        (Place::Common, _) => 2,
        (_, elf::STB_WEAK) => 1,
        _ => 3,
    }
}

/// How constraining a visibility is: internal, then hidden, then protected, then default.
fn constraint(visibility: u8) -> u8 {
    match visibility {
        elf::STV_INTERNAL => 3,
        elf::STV_HIDDEN => 2,
        elf::STV_PROTECTED => 1,
        _ => 0,
    }
}

/// Whether relocations that refer to a dropped section are removed from this section (debugging
/// information), rather than turned into `R_*_NONE` (as ld.bfd's `-r` tells them apart).
fn is_debugging(name: &[u8]) -> bool {
    [&b".debug"[..], b".zdebug", b".stab", b".line", b".gnu.linkonce.wi."]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

const fn align_up(value: u64, alignment: u64) -> Option<u64> {
    match value.checked_add(alignment - 1) {
        Some(end) => Some(end & !(alignment - 1)),
        None => None,
    }
}

impl<'a> Merge<'a> {
    /// Decides where every section of object `index` goes: its groups first (a COMDAT group whose signature
    /// was kept already is dropped), then its sections of content, those linked to another section last.
    fn place_sections(&mut self, index: usize) -> Result<(), MergeError> {
        let object = &self.objects[index];
        let endian = object.endian;
        let mut group_of: Vec<Option<usize>> = vec![None; object.sections.len()];
        let mut dropped = Vec::new();
        let mut group_sections = Vec::new();
        for (section, header) in object.sections.enumerate() {
            let Some((flag, members)) = header
                .group(endian, object.data)
                .map_err(|error| object.malformed(error))?
            else {
                continue;
            };
            let signature_index = SymbolIndex(header.sh_info(endian) as usize);
            let symbol = object
                .symbols
                .symbol(signature_index)
                .map_err(|error| object.malformed(format!("group section {}: {error}", section.0)))?;
            let signature = if symbol.st_type() == elf::STT_SECTION {
                let named = object
                    .symbols
                    .symbol_section(endian, symbol, signature_index)
                    .map_err(|error| object.malformed(error))?
                    .ok_or_else(|| object.malformed(format!("group section {} has no signature", section.0)))?;
                let named = object
                    .sections
                    .section(named)
                    .map_err(|error| object.malformed(error))?;
                object.section_name(named)?
            } else {
                object
                    .symbols
                    .symbol_name(endian, symbol)
                    .map_err(|error| object.malformed(error))?
            };
            let comdat = flag & elf::GRP_COMDAT != 0;
            let members: Vec<usize> = members.iter().map(|member| member.get(endian) as usize).collect();
            if members
                .iter()
                .any(|member| *member == 0 || *member >= object.sections.len())
            {
                return Err(object.malformed(format!(
                    "group section {} names a section that does not exist",
                    section.0
                )));
            }
            if let Some(kept) = self.kept_signatures.get(signature).filter(|_| comdat) {
                dropped.extend(
                    members
                        .into_iter()
                        .map(|member| (member, Placement::DroppedCopy(*kept))),
                );
                dropped.push((section.0, Placement::Discarded));
                continue;
            }
            let group = self.groups.len();
            if comdat {
                self.kept_signatures.insert(signature, group);
            }
            group_sections.push((section.0, group));
            self.groups.push(Group {
                comdat,
                signature: (index, signature_index),
                members: Vec::new(),
                placed: Vec::new(),
            });
            for member in members {
                group_of[member] = Some(group);
            }
        }
        for (member, placement) in dropped {
            self.objects[index].placement[member] = placement;
        }
        for (section, group) in group_sections {
            self.objects[index].placement[section] = Placement::Group(group);
        }
        for linked in [false, true] {
            let object = &self.objects[index];
            let order: Vec<(SectionIndex, &'a elf::SectionHeader64<Endianness>)> = object
                .sections
                .enumerate()
                .filter(|(_, header)| (header.sh_flags(endian) & u64::from(elf::SHF_LINK_ORDER) != 0) == linked)
                .collect();
            for (section, header) in order {
                self.place_section(index, section, header, group_of[section.0])?;
            }
        }
        Ok(())
    }

    fn place_section(
        &mut self,
        index: usize,
        section: SectionIndex,
        header: &'a elf::SectionHeader64<Endianness>,
        group: Option<usize>,
    ) -> Result<(), MergeError> {
        let object = &self.objects[index];
        let endian = object.endian;
        if object.placement[section.0] != Placement::Unplaced || section.0 == 0 {
            return Ok(());
        }
        let sh_type = header.sh_type(endian);
        let is_table = section == object.symbols.string_section()
            || section.0 == usize::from(object.header.e_shstrndx(endian))
            || section == object.symbols.section();
        match sh_type {
            elf::SHT_NULL | elf::SHT_SYMTAB | elf::SHT_RELA | elf::SHT_GROUP | elf::SHT_SYMTAB_SHNDX => {
                return Ok(());
            }
            elf::SHT_STRTAB if is_table => return Ok(()),
            elf::SHT_REL => {
                return Err(object.unsupported(format!(
                    "section {} holds REL relocations; a relocatable link merges RELA relocations only",
                    section.0
                )));
            }
            _ => {}
        }
        let name = object.section_name(header)?;
        let flags = header.sh_flags(endian);
        if flags & u64::from(elf::SHF_COMPRESSED) != 0 {
            return Err(object.unsupported(format!(
                "section `{}` is compressed (SHF_COMPRESSED); a relocatable link cannot merge it",
                String::from_utf8_lossy(name)
            )));
        }
        if sh_type == elf::SHT_NOTE && name == b".note.gnu.property" {
            let bytes = header
                .data(endian, object.data)
                .map_err(|error| object.malformed(error))?;
            // An object's first note is its properties (a second one of the same object is not read).
            if self.property_notes.len() <= index {
                self.property_notes.resize(index, None);
                self.property_notes.push(Some(bytes));
            }
            self.objects[index].placement[section.0] = Placement::PropertyNote;
            if self.property_section.is_none() {
                self.property_section = Some(self.new_section(OutputSection {
                    name,
                    sh_type,
                    flags,
                    entry_size: 0,
                    alignment: header.sh_addralign(endian).max(1),
                    size: 0,
                    data: Vec::new(),
                    link: None,
                    group: None,
                    relocations: Vec::new(),
                }));
            }
            return Ok(());
        }
        let link = if flags & u64::from(elf::SHF_LINK_ORDER) != 0 {
            match object.placement_of(SectionIndex(header.sh_link(endian) as usize)) {
                Placement::At { section, .. } => Some(section),
                // Linked to a dropped section (metadata of a dropped function): dropped with it.
                Placement::Discarded | Placement::DroppedCopy(_) => {
                    self.objects[index].placement[section.0] = Placement::Discarded;
                    return Ok(());
                }
                _ => {
                    return Err(object.unsupported(format!(
                        "section `{}` (SHF_LINK_ORDER) is linked to section {}, which holds no content",
                        String::from_utf8_lossy(name),
                        header.sh_link(endian)
                    )));
                }
            }
        } else {
            None
        };
        let flags = flags & !u64::from(elf::SHF_GROUP);
        let entry_size = header.sh_entsize(endian);
        let alignment = header.sh_addralign(endian).max(1);
        let size = header.sh_size(endian);
        let bytes = if sh_type == elf::SHT_NOBITS {
            &[][..]
        } else {
            header
                .data(endian, object.data)
                .map_err(|error| object.malformed(error))?
        };
        let key = (name, sh_type, flags, entry_size, link, group);
        let output = match self.by_key.get(&key) {
            Some(output) => *output,
            None => {
                let output = self.new_section(OutputSection {
                    name,
                    sh_type,
                    flags,
                    entry_size,
                    alignment: 1,
                    size: 0,
                    data: Vec::new(),
                    link,
                    group,
                    relocations: Vec::new(),
                });
                self.by_key.insert(key, output);
                if let Some(group) = group {
                    self.groups[group].members.push(output);
                }
                output
            }
        };
        let limit = self.limit;
        let too_large = MergeError::TooLarge { limit };
        let target = &mut self.sections[output];
        let offset = align_up(target.size, alignment).ok_or(MergeError::TooLarge { limit })?;
        let end = offset.checked_add(size).ok_or(MergeError::TooLarge { limit })?;
        if sh_type != elf::SHT_NOBITS {
            let grown = self.total.saturating_add(end - target.size);
            if grown > limit {
                return Err(too_large);
            }
            self.total = grown;
            target.data.resize(offset as usize, 0);
            target.data.extend_from_slice(bytes);
        } else if end > limit {
            return Err(too_large);
        }
        target.size = end;
        target.alignment = target.alignment.max(alignment);
        if let Some(group) = group {
            self.groups[group].placed.push((name, size, output, offset));
        }
        self.objects[index].placement[section.0] = Placement::At {
            section: output,
            offset,
        };
        Ok(())
    }

    fn new_section(&mut self, section: OutputSection<'a>) -> usize {
        self.sections.push(section);
        self.sections.len() - 1
    }

    /// Maps every symbol of object `index` to its output symbol: locals are added (moved with their
    /// sections), globals merged by name.
    fn map_symbols(&mut self, index: usize) -> Result<(), MergeError> {
        let object = &self.objects[index];
        let endian = object.endian;
        let (symbols, sections) = (object.symbols, object.sections);
        let placement = object.placement.clone();
        let placement_of = |section: SectionIndex| placement.get(section.0).copied().unwrap_or(Placement::Unplaced);
        let file = object.name;
        let malformed = |message: &dyn std::fmt::Display| MergeError::Malformed {
            file: file.to_string(),
            message: message.to_string(),
        };
        let mut map = vec![SymbolRef::Null; symbols.len()];
        for (symbol_index, symbol) in symbols.enumerate() {
            if symbol_index.0 == 0 {
                continue;
            }
            let binding = symbol.st_bind();
            let symbol_type = symbol.st_type();
            let shndx = symbol.st_shndx(endian);
            let mut value = symbol.st_value(endian);
            let section = symbols
                .symbol_section(endian, symbol, symbol_index)
                .map_err(|error| malformed(&error))?;
            let placement = section.map(placement_of);
            let place = match (shndx, placement) {
                (_, Some(Placement::At { section, offset })) => {
                    value = value.wrapping_add(offset);
                    Some(Place::Section(section))
                }
                (_, Some(Placement::Discarded | Placement::DroppedCopy(_))) => None,
                (_, Some(Placement::Group(group))) => Some(Place::Group(group)),
                (_, Some(Placement::Unplaced | Placement::PropertyNote)) => {
                    // A symbol of a table or of the merged note: nothing in the output to define it in.
                    if binding == elf::STB_LOCAL {
                        continue;
                    }
                    None
                }
                (elf::SHN_UNDEF, None) => Some(Place::Undefined),
                (elf::SHN_ABS, None) => Some(Place::Absolute),
                (elf::SHN_COMMON, None) => Some(Place::Common),
                (special, None) => Some(Place::Special(special)),
            };
            let name = symbols.symbol_name(endian, symbol).map_err(|error| malformed(&error))?;
            if binding == elf::STB_LOCAL {
                map[symbol_index.0] = match place {
                    // Section symbols are remapped to the output section's symbol where relocations use them.
                    _ if symbol_type == elf::STT_SECTION => SymbolRef::Null,
                    None => SymbolRef::Discarded,
                    Some(place) => {
                        self.locals.push(Local {
                            name,
                            info: symbol.st_info(),
                            other: symbol.st_other(),
                            place,
                            value,
                            size: symbol.st_size(endian),
                        });
                        SymbolRef::Local(self.locals.len() - 1)
                    }
                };
                continue;
            }
            if name.is_empty() {
                return Err(malformed(&format!("global symbol {} has no name", symbol_index.0)));
            }
            let in_group = section
                .and_then(|section| sections.section(section).ok())
                .is_some_and(|header| header.sh_flags(endian) & u64::from(elf::SHF_GROUP) != 0);
            // A definition in a dropped section counts as a reference: the kept group defines the name.
            let place = place.unwrap_or(Place::Undefined);
            let global = self.merge_global(index, name, place, symbol, value, in_group);
            map[symbol_index.0] = SymbolRef::Global(global);
        }
        self.objects[index].symbol_map = map;
        Ok(())
    }

    fn merge_global(
        &mut self,
        index: usize,
        name: &'a [u8],
        place: Place,
        symbol: &elf::Sym64<Endianness>,
        value: u64,
        in_group: bool,
    ) -> usize {
        let endian = self.objects[index].endian;
        let binding = symbol.st_bind();
        let new_rank = rank(place, binding);
        let other = symbol.st_other() & !0x3;
        let visibility = symbol.st_visibility();
        let size = symbol.st_size(endian);
        let strong_reference = place == Place::Undefined && binding != elf::STB_WEAK;
        let Some(&global) = self.global_by_name.get(name) else {
            self.globals.push(Global {
                name,
                place,
                rank: new_rank,
                defined_by: index,
                in_group,
                binding,
                symbol_type: symbol.st_type(),
                other,
                visibility,
                value,
                size,
                strong_reference,
            });
            self.global_by_name.insert(name, self.globals.len() - 1);
            return self.globals.len() - 1;
        };
        let objects = &self.objects;
        let entry = &mut self.globals[global];
        entry.strong_reference |= strong_reference;
        if constraint(visibility) > constraint(entry.visibility) {
            entry.visibility = visibility;
        }
        let replace = match (entry.rank, new_rank) {
            (3, 3) => {
                let unique = binding == elf::STB_GNU_UNIQUE || entry.binding == elf::STB_GNU_UNIQUE;
                if !(unique || entry.in_group && in_group) {
                    // GNU ld's words: the later definition, then the first.
                    self.duplicates.push(format!(
                        "{}: multiple definition of `{}'; {}: first defined here",
                        objects[index].name,
                        String::from_utf8_lossy(name),
                        objects[entry.defined_by].name
                    ));
                }
                false
            }
            (2, 2) => {
                // Two commons: the larger size and the stricter alignment (a common symbol's value).
                entry.size = entry.size.max(size);
                entry.value = entry.value.max(value);
                false
            }
            (old, new) => new > old,
        };
        if replace {
            entry.place = place;
            entry.rank = new_rank;
            entry.defined_by = index;
            entry.in_group = in_group;
            entry.binding = binding;
            entry.symbol_type = symbol.st_type();
            entry.other = other;
            entry.value = value;
            entry.size = size;
        } else if entry.rank == 0 && entry.symbol_type == elf::STT_NOTYPE {
            // Undefined so far: a reference that says what the symbol is (a TLS reference) tells more.
            entry.symbol_type = symbol.st_type();
        }
        global
    }

    /// Moves the relocations of object `index` into the output sections their sections went to.
    fn move_relocations(&mut self, index: usize) -> Result<(), MergeError> {
        let object = &self.objects[index];
        let endian = object.endian;
        for (_, header) in object.sections.enumerate() {
            let Some((relocations, symtab)) = header
                .rela(endian, object.data)
                .map_err(|error| object.malformed(error))?
            else {
                continue;
            };
            let target = SectionIndex(header.sh_info(endian) as usize);
            let Placement::At {
                section: output,
                offset,
            } = object.placement_of(target)
            else {
                // The relocations of a dropped section go with it.
                continue;
            };
            if symtab != object.symbols.section() {
                return Err(object.malformed(format!(
                    "the relocations of section {} refer to section {}, not to the symbol table",
                    target.0, symtab.0
                )));
            }
            let debugging = is_debugging(self.sections[output].name);
            // As ld.bfd does, a relocation outside `.eh_frame` that refers to a section of a dropped group
            // refers to the kept group's section of the same name and size instead.
            let redirects = self.sections[output].name != b".eh_frame";
            let mut moved = Vec::with_capacity(relocations.len());
            for relocation in relocations {
                let symbol = relocation.r_sym(endian, false);
                let r_type = relocation.r_type(endian, false);
                let addend = relocation.r_addend(endian);
                let at = relocation.r_offset(endian).wrapping_add(offset);
                let referred = if symbol == 0 {
                    Some((SymbolRef::Null, addend))
                } else {
                    let index = SymbolIndex(symbol as usize);
                    let entry = object.symbols.symbol(index).map_err(|error| object.malformed(error))?;
                    if entry.st_bind() == elf::STB_LOCAL && entry.st_type() == elf::STT_SECTION {
                        let section = object
                            .symbols
                            .symbol_section(endian, entry, index)
                            .map_err(|error| object.malformed(error))?
                            .map(|section| object.placement_of(section));
                        match section {
                            Some(Placement::At { section, offset }) => {
                                Some((SymbolRef::Section(section), addend.wrapping_add(offset as i64)))
                            }
                            Some(Placement::DroppedCopy(kept)) if redirects => {
                                let header = object
                                    .symbols
                                    .symbol_section(endian, entry, index)
                                    .ok()
                                    .flatten()
                                    .and_then(|section| object.sections.section(section).ok());
                                let name = header.and_then(|header| object.section_name(header).ok());
                                let size = header.map(|header| header.sh_size(endian));
                                self.groups[kept]
                                    .placed
                                    .iter()
                                    .find(|(kept_name, kept_size, ..)| {
                                        Some(*kept_name) == name && Some(*kept_size) == size
                                    })
                                    .map(|(_, _, section, offset)| {
                                        (SymbolRef::Section(*section), addend.wrapping_add(*offset as i64))
                                    })
                            }
                            Some(Placement::Discarded | Placement::DroppedCopy(_)) => None,
                            _ => {
                                return Err(object.unsupported(format!(
                                    "a relocation of section {} refers to the symbol of a section that holds no content",
                                    target.0
                                )));
                            }
                        }
                    } else {
                        match object.symbol_map.get(symbol as usize).copied() {
                            Some(SymbolRef::Discarded) => None,
                            Some(SymbolRef::Null) | None => {
                                return Err(object.unsupported(format!(
                                    "a relocation of section {} refers to symbol {symbol}, which is not kept",
                                    target.0
                                )));
                            }
                            Some(kept) => Some((kept, addend)),
                        }
                    }
                };
                match referred {
                    Some((symbol, addend)) => moved.push(Relocation {
                        offset: at,
                        symbol,
                        r_type,
                        addend,
                    }),
                    None if debugging => {}
                    None => moved.push(Relocation {
                        offset: at,
                        symbol: SymbolRef::Null,
                        r_type: 0,
                        addend: 0,
                    }),
                }
            }
            self.sections[output].relocations.extend(moved);
        }
        Ok(())
    }

    /// Writes the object: the file header, the `.group` sections, every output section followed by its
    /// `.rela` section, the symbol table, its string table, the section names and the section headers.
    fn write(self) -> Result<Vec<u8>, MergeError> {
        let first = &self.objects[0];
        let endian = first.endian;
        let sections: Vec<usize> = (0..self.sections.len())
            .filter(|section| Some(*section) != self.property_section || self.sections[*section].size > 0)
            .collect();
        let relocation_names: Vec<Vec<u8>> = self
            .sections
            .iter()
            .map(|section| [&b".rela"[..], section.name].concat())
            .collect();
        let mut buffer = Vec::new();
        let mut writer = Writer::new(endian, true, &mut buffer);
        writer.reserve_file_header();

        // Section indices: the groups, each output section and its relocations, the tables.
        let group_name = writer.add_section_name(b".group");
        let group_index: Vec<OutputIndex> = self.groups.iter().map(|_| writer.reserve_section_index()).collect();
        let mut index_of = vec![OutputIndex(0); self.sections.len()];
        let mut name_of = Vec::with_capacity(self.sections.len());
        let mut relocation_index_of = vec![None; self.sections.len()];
        for (section, output) in self.sections.iter().enumerate() {
            name_of.push(writer.add_section_name(output.name));
            if !sections.contains(&section) {
                continue;
            }
            index_of[section] = writer.reserve_section_index();
            if !output.relocations.is_empty() {
                let name = writer.add_section_name(&relocation_names[section]);
                relocation_index_of[section] = Some((writer.reserve_section_index(), name));
            }
        }
        let symtab_index = writer.reserve_symtab_section_index();
        let extended = self.groups.len() + 2 * sections.len() + 4 >= usize::from(elf::SHN_LORESERVE);
        if extended {
            writer.reserve_symtab_shndx_section_index();
        }
        writer.reserve_strtab_section_index();
        writer.reserve_shstrtab_section_index();

        // Symbols: the null symbol, the section symbols, the locals, then the globals.
        writer.reserve_null_symbol_index();
        let mut section_symbol = vec![0u32; self.sections.len()];
        for &section in &sections {
            section_symbol[section] = writer.reserve_symbol_index(Some(index_of[section])).0;
        }
        let place_index = |place: Place| match place {
            Place::Section(section) => Some(index_of[section]),
            Place::Group(group) => Some(group_index[group]),
            _ => None,
        };
        let mut local_symbol = Vec::with_capacity(self.locals.len());
        let mut local_name = Vec::with_capacity(self.locals.len());
        for local in &self.locals {
            local_name.push((!local.name.is_empty()).then(|| writer.add_string(local.name)));
            local_symbol.push(writer.reserve_symbol_index(place_index(local.place)).0);
        }
        let locals_end = writer.symbol_count();
        let mut global_symbol = Vec::with_capacity(self.globals.len());
        let mut global_name = Vec::with_capacity(self.globals.len());
        for global in &self.globals {
            global_name.push(writer.add_string(global.name));
            global_symbol.push(writer.reserve_symbol_index(place_index(global.place)).0);
        }
        let symbol_index = |symbol: SymbolRef| match symbol {
            SymbolRef::Null | SymbolRef::Discarded => 0,
            SymbolRef::Section(section) => section_symbol[section],
            SymbolRef::Local(local) => local_symbol[local],
            SymbolRef::Global(global) => global_symbol[global],
        };
        // The symbol each group's signature is: a named symbol as relocations see it, or the symbol of the
        // output section a section symbol's section went to.
        let mut signatures = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let (object, signature) = group.signature;
            let object = &self.objects[object];
            let symbol = object
                .symbols
                .symbol(signature)
                .map_err(|error| object.malformed(error))?;
            let index = if symbol.st_type() == elf::STT_SECTION {
                let section = object
                    .symbols
                    .symbol_section(object.endian, symbol, signature)
                    .map_err(|error| object.malformed(error))?;
                match section.map(|section| object.placement_of(section)) {
                    Some(Placement::At { section, .. }) => section_symbol[section],
                    _ => 0,
                }
            } else {
                object
                    .symbol_map
                    .get(signature.0)
                    .map_or(0, |symbol| symbol_index(*symbol))
            };
            signatures.push(index);
        }

        // File ranges, in the order they are written.
        let word = |value: u32| match endian {
            Endianness::Little => value.to_le_bytes(),
            Endianness::Big => value.to_be_bytes(),
        };
        let mut group_data = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let mut data = Vec::with_capacity(4 + 8 * group.members.len());
            data.extend_from_slice(&word(if group.comdat { elf::GRP_COMDAT } else { 0 }));
            for &member in &group.members {
                data.extend_from_slice(&word(index_of[member].0));
                if let Some((relocations, _)) = relocation_index_of[member] {
                    data.extend_from_slice(&word(relocations.0));
                }
            }
            group_data.push(data);
        }
        let group_offsets: Vec<usize> = group_data.iter().map(|data| writer.reserve(data.len(), 4)).collect();
        let file_alignment = |section: &OutputSection<'_>| section.alignment.clamp(1, 4096) as usize;
        let mut data_offsets = vec![0usize; self.sections.len()];
        let mut relocation_offsets = vec![0usize; self.sections.len()];
        for &section in &sections {
            let output = &self.sections[section];
            data_offsets[section] = if output.sh_type == elf::SHT_NOBITS {
                writer.reserved_len()
            } else {
                writer.reserve(output.data.len(), file_alignment(output))
            };
            if !output.relocations.is_empty() {
                relocation_offsets[section] = writer.reserve_relocations(output.relocations.len(), true);
            }
        }
        writer.reserve_symtab();
        if extended {
            writer.reserve_symtab_shndx();
        }
        writer.reserve_strtab();
        writer.reserve_shstrtab();
        writer.reserve_section_headers();

        let (os_abi, abi_version) = self
            .objects
            .iter()
            .map(|object| (object.header.e_ident().os_abi, object.header.e_ident().abi_version))
            .find(|(os_abi, _)| *os_abi != elf::ELFOSABI_NONE)
            .unwrap_or((elf::ELFOSABI_NONE, 0));
        writer
            .write_file_header(&FileHeader {
                os_abi,
                abi_version,
                e_type: elf::ET_REL,
                e_machine: first.header.e_machine(endian),
                e_entry: 0,
                e_flags: first.header.e_flags(endian),
            })
            .map_err(|error| MergeError::Write(error.to_string()))?;
        for data in &group_data {
            writer.write_align(4);
            writer.write(data);
        }
        for &section in &sections {
            let output = &self.sections[section];
            if output.sh_type != elf::SHT_NOBITS {
                writer.write_align(file_alignment(output));
                writer.write(&output.data);
            }
            if !output.relocations.is_empty() {
                writer.write_align_relocation();
                for relocation in &output.relocations {
                    writer.write_relocation(
                        true,
                        &Rel {
                            r_offset: relocation.offset,
                            r_sym: symbol_index(relocation.symbol),
                            r_type: relocation.r_type,
                            r_addend: relocation.addend,
                        },
                    );
                }
            }
        }
        writer.write_null_symbol();
        for &section in &sections {
            writer.write_symbol(&Sym {
                name: None,
                section: Some(index_of[section]),
                st_info: (elf::STB_LOCAL << 4) | elf::STT_SECTION,
                st_other: 0,
                st_shndx: 0,
                st_value: 0,
                st_size: 0,
            });
        }
        let special = |place: Place| match place {
            Place::Undefined | Place::Section(_) | Place::Group(_) => elf::SHN_UNDEF,
            Place::Absolute => elf::SHN_ABS,
            Place::Common => elf::SHN_COMMON,
            Place::Special(shndx) => shndx,
        };
        for (local, name) in self.locals.iter().zip(&local_name) {
            writer.write_symbol(&Sym {
                name: *name,
                section: place_index(local.place),
                st_info: local.info,
                st_other: local.other,
                st_shndx: special(local.place),
                st_value: local.value,
                st_size: local.size,
            });
        }
        for (global, name) in self.globals.iter().zip(&global_name) {
            let binding = match global.place {
                Place::Undefined if global.strong_reference => elf::STB_GLOBAL,
                Place::Undefined => elf::STB_WEAK,
                Place::Common => elf::STB_GLOBAL,
                _ => global.binding,
            };
            writer.write_symbol(&Sym {
                name: Some(*name),
                section: place_index(global.place),
                st_info: (binding << 4) | (global.symbol_type & 0xf),
                st_other: global.other | global.visibility,
                st_shndx: special(global.place),
                st_value: if global.place == Place::Undefined {
                    0
                } else {
                    global.value
                },
                st_size: if global.place == Place::Undefined {
                    0
                } else {
                    global.size
                },
            });
        }
        if extended {
            writer.write_symtab_shndx();
        }
        writer.write_strtab();
        writer.write_shstrtab();

        writer.write_null_section_header();
        for ((data, offset), signature) in group_data.iter().zip(&group_offsets).zip(&signatures) {
            writer.write_section_header(&SectionHeader {
                name: Some(group_name),
                sh_type: elf::SHT_GROUP,
                sh_flags: 0,
                sh_addr: 0,
                sh_offset: *offset as u64,
                sh_size: data.len() as u64,
                sh_link: symtab_index.0,
                sh_info: *signature,
                sh_addralign: 4,
                sh_entsize: 4,
            });
        }
        for &section in &sections {
            let output = &self.sections[section];
            let group_flag = if output.group.is_some() {
                u64::from(elf::SHF_GROUP)
            } else {
                0
            };
            writer.write_section_header(&SectionHeader {
                name: Some(name_of[section]),
                sh_type: output.sh_type,
                sh_flags: output.flags | group_flag,
                sh_addr: 0,
                sh_offset: data_offsets[section] as u64,
                sh_size: output.size,
                sh_link: output.link.map_or(0, |link| index_of[link].0),
                sh_info: 0,
                sh_addralign: output.alignment,
                sh_entsize: output.entry_size,
            });
            if let Some((_, name)) = relocation_index_of[section] {
                writer.write_section_header(&SectionHeader {
                    name: Some(name),
                    sh_type: elf::SHT_RELA,
                    sh_flags: u64::from(elf::SHF_INFO_LINK) | group_flag,
                    sh_addr: 0,
                    sh_offset: relocation_offsets[section] as u64,
                    sh_size: (output.relocations.len() * size_of::<elf::Rela64<Endianness>>()) as u64,
                    sh_link: symtab_index.0,
                    sh_info: index_of[section].0,
                    sh_addralign: 8,
                    sh_entsize: size_of::<elf::Rela64<Endianness>>() as u64,
                });
            }
        }
        writer.write_symtab_section_header(locals_end);
        if extended {
            writer.write_symtab_shndx_section_header();
        }
        writer.write_strtab_section_header();
        writer.write_shstrtab_section_header();
        drop(writer);
        Ok(buffer)
    }
}
