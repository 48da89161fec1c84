//! Reads one relocatable object (ELF, COFF or Mach-O, through the `object` crate's format-independent view)
//! into the link graph: sections become sections with one atom each, symbols become symbols, relocations
//! become edges, section groups become COMDATs and `.eh_frame` records become unwind records.

use object::{
    Object, ObjectComdat, ObjectSection, ObjectSymbol, RelocationFlags, RelocationKind, RelocationTarget, SectionFlags,
    SymbolFlags, SymbolSection,
};

use crate::graph::{
    Atom, AtomId, Binding, Comdat, ComdatId, ComdatSelection, Content, Definition, Edge, EdgeKind, InputId, LinkGraph,
    LinkTarget, Machine, MemberId, ObjectFormat, Origin, RelocationType, Section, SectionId, SectionKind, Symbol,
    SymbolId, SymbolType, Unwind, Visibility, atom_flags, section_flags,
};
use neverc_tables::{RelocationFormat, TargetRecord, target_by_elf};
use rustc_hash::FxHashMap;
use std::ops::Range;

use crate::read::ReadError;

/// Reads the object held by input `input` into `graph`; `phase` is the reading phase's index (recorded in
/// origins).
pub(crate) fn read_object(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<(), ReadError> {
    let entry = &graph.inputs[input.index()];
    let data = entry.data.clone();
    let range = entry.object_range.clone();
    let name = entry.logical_name.clone();
    let member = entry.member;
    let bytes = data
        .get(range.clone())
        .ok_or_else(|| ReadError::new(&name, "object range outside the file"))?;
    // The `object` crate skips a relocation section whose links it cannot follow (and refuses some with a
    // message naming no section), so the section headers are checked first.
    check_relocation_sections(&name, bytes)?;
    let file = object::File::parse(bytes).map_err(|error| ReadError::new(&name, format!("not an object: {error}")))?;
    let format = match file.format() {
        object::BinaryFormat::Elf => ObjectFormat::Elf,
        object::BinaryFormat::Coff => ObjectFormat::Coff,
        object::BinaryFormat::MachO => ObjectFormat::MachO,
        other => return Err(ReadError::new(&name, format!("unsupported object format {other:?}"))),
    };
    let machine = match format {
        ObjectFormat::Elf => ElfIdentity::read(bytes).map_or(Machine(0), |identity| Machine(identity.machine)),
        ObjectFormat::Coff | ObjectFormat::MachO => machine_of(file.architecture()),
    };
    if file.kind() != object::ObjectKind::Relocatable {
        return Err(ReadError::new(&name, "not a relocatable object"));
    }
    let declared = relocation_table(graph, &name, format, bytes)?;
    {
        let entry = &mut graph.inputs[input.index()];
        entry.format = Some(format);
        entry.machine = Some(machine);
    }
    let mut reader = ObjectReader {
        graph,
        input,
        phase,
        member,
        name,
        range,
        format,
        declared,
        section_ids: Vec::new(),
        symbol_ids: Vec::new(),
    };
    reader.read_sections(&file)?;
    reader.read_symbols(&file)?;
    let first_edge = reader.graph.edges.len();
    reader.read_relocations(&file)?;
    reader.read_comdats(&file);
    read_eh_frame_records(reader.graph, input, &reader.section_ids, phase, member, first_edge);
    Ok(())
}

/// One object being read: where it comes from, what it is, and the graph ids its sections and symbols got,
/// indexed by their index in the object.
struct ObjectReader<'g> {
    graph: &'g mut LinkGraph,
    input: InputId,
    /// The reading phase's index, recorded in origins.
    phase: u16,
    member: Option<MemberId>,
    /// The input's logical name, for errors.
    name: String,
    /// The object's bytes within the input's data.
    range: Range<usize>,
    format: ObjectFormat,
    /// The target whose declared relocations the object's must be (see [`relocation_table`]).
    declared: Option<&'static TargetRecord>,
    section_ids: Vec<Option<SectionId>>,
    symbol_ids: Vec<Option<SymbolId>>,
}

impl ObjectReader<'_> {
    /// The origin of the object's entity `object_entity` (a section or symbol index, or a relocation's
    /// offset).
    fn origin(&self, object_entity: usize) -> Origin {
        Origin::made(Some(self.input), self.member, object_entity as u32, Some(self.phase))
    }

    /// The graph section of the object's section `index`, if it was placed.
    fn section(&self, index: object::SectionIndex) -> Option<SectionId> {
        self.section_ids.get(index.0).copied().flatten()
    }

    /// Sections, one atom each, indexed by the object's section index.
    fn read_sections(&mut self, file: &object::File<'_>) -> Result<(), ReadError> {
        let section_count = file
            .sections()
            .map(|section| section.index().0)
            .max()
            .map_or(0, |max| max + 1);
        self.section_ids = vec![None; section_count];
        for section in file.sections() {
            let (kind, flags) = classify_section(&section);
            if kind == SectionKind::Metadata && flags & section_flags::ALLOCATED == 0 {
                // Symbol tables, string tables, relocation and group sections are structure, not content.
                continue;
            }
            let section_name = section.name().unwrap_or("").to_string();
            // `sh_addralign` 0 means no constraint; any other value must be a power of two. ld.bfd reads an
            // odd value as its lowest set bit, ld.lld refuses the object: so do we, since such an object is
            // broken and no reading of it is the one its producer meant.
            let raw_alignment = section.align();
            if raw_alignment > 1 && !raw_alignment.is_power_of_two() {
                return Err(ReadError::new(
                    &self.name,
                    format!("section `{section_name}`: sh_addralign {raw_alignment} is not a power of 2"),
                ));
            }
            let alignment = crate::graph::effective_alignment(raw_alignment);
            let size = section.size();
            let content = if matches!(kind, SectionKind::UninitializedData | SectionKind::UninitializedTls) {
                Content::ZeroFill
            } else {
                match section.file_range() {
                    Some((offset, length)) => self.content(offset, length, &section_name)?,
                    None => Content::ZeroFill,
                }
            };
            let section_id = SectionId(self.graph.sections.len() as u32);
            let atom_id = AtomId(self.graph.atoms.len() as u32);
            let mut atom_bits = 0;
            if flags & section_flags::TLS != 0 {
                atom_bits |= atom_flags::TLS;
            }
            if kind == SectionKind::Unwind {
                atom_bits |= atom_flags::UNWIND;
            }
            let origin = self.origin(section.index().0);
            let graph = &mut *self.graph;
            graph.atoms.push(Atom {
                section: Some(section_id),
                name: section_name.clone(),
                flags: atom_bits,
                alignment,
                address: 0,
                file_offset: 0,
                zero_fill: if content == Content::ZeroFill { size } else { 0 },
                content,
                comdat: None,
                fold_leader: None,
                origin,
            });
            graph.sections.push(Section {
                input: self.input,
                name: section_name,
                kind,
                flags,
                alignment,
                address: 0,
                file_offset: 0,
                size,
                comdat: None,
                entry_size: elf_entry_size(file, section.index()),
                atom: atom_id,
                origin,
            });
            self.section_ids[section.index().0] = Some(section_id);
        }
        Ok(())
    }

    /// The content of a section at `offset`, `length` bytes long, within the object: a range of the input's
    /// data, checked to lie within the object.
    fn content(&self, offset: u64, length: u64, section_name: &str) -> Result<Content, ReadError> {
        let bounds = usize::try_from(offset)
            .ok()
            .and_then(|offset| self.range.start.checked_add(offset))
            .and_then(|start| Some((start, start.checked_add(usize::try_from(length).ok()?)?)));
        let Some((start, end)) = bounds.filter(|(_, end)| *end <= self.range.end) else {
            return Err(ReadError::new(
                &self.name,
                format!("section `{section_name}` extends past the end of the object"),
            ));
        };
        Ok(Content::Input {
            input: self.input,
            range: start..end,
        })
    }

    /// Symbols, indexed by the object's symbol index. A GCC slim LTO object (its `__gnu_lto_slim` symbol says
    /// so) is refused: it holds only GIMPLE (`.gnu.lto_*` sections) and no code; a fat one holds code too and
    /// links as an ordinary object, its LTO sections being unallocated metadata.
    fn read_symbols(&mut self, file: &object::File<'_>) -> Result<(), ReadError> {
        let symbol_count = file
            .symbols()
            .map(|symbol| symbol.index().0)
            .max()
            .map_or(0, |max| max + 1);
        self.symbol_ids = vec![None; symbol_count];
        for symbol in file.symbols() {
            let name_bytes = symbol.name_bytes().unwrap_or(b"");
            if name_bytes == b"__gnu_lto_slim" {
                return Err(ReadError::new(
                    &self.name,
                    "a GCC LTO object (GIMPLE only, no machine code): GCC's LTO is not supported; compile it \
                     without -flto, with -ffat-lto-objects, or with clang-14 -flto (LLVM bitcode is linked natively)",
                ));
            }
            let symbol_name = crate::symbol_name::from_bytes(name_bytes).into_owned();
            // Mach-O symbols hold addresses within the object; ELF and COFF ones offsets within their section,
            // whatever address the section header gives it (a relocatable ELF object's `sh_addr` is normally
            // 0, but `ld -r` with a script or a patched object may set it: ld.bfd and ld.lld ignore it, and so
            // do we). The graph keeps offsets within the defining atom.
            let section_address = match self.format {
                ObjectFormat::MachO => symbol
                    .section_index()
                    .and_then(|index| file.section_by_index(index).ok())
                    .map_or(0, |section| section.address()),
                ObjectFormat::Elf | ObjectFormat::Coff => 0,
            };
            let (definition, atom) = match symbol.section() {
                SymbolSection::Undefined => (Definition::Undefined, None),
                SymbolSection::Absolute => (Definition::Absolute, None),
                SymbolSection::Common => (Definition::Common, None),
                SymbolSection::Section(index) => match self.section(index) {
                    Some(section) => (Definition::Defined, Some(self.graph.sections[section.index()].atom)),
                    // A symbol in a section we do not place (a group or a symbol table) is not linkable.
                    None => (Definition::Absolute, None),
                },
                SymbolSection::None | SymbolSection::Unknown => (Definition::Absolute, None),
                _ => (Definition::Absolute, None),
            };
            let (binding, visibility) = binding_and_visibility(&symbol, definition);
            let is_ifunc = matches!(
                symbol.flags(),
                object::SymbolFlags::Elf { st_info, .. } if st_info & 0xf == object::elf::STT_GNU_IFUNC
            );
            let symbol_type = match symbol.kind() {
                _ if is_ifunc => SymbolType::Ifunc,
                object::SymbolKind::Text => SymbolType::Function,
                object::SymbolKind::Data => SymbolType::Object,
                object::SymbolKind::Section => SymbolType::Section,
                object::SymbolKind::File => SymbolType::File,
                object::SymbolKind::Tls => SymbolType::Tls,
                object::SymbolKind::Unknown => SymbolType::None,
                _ => SymbolType::Other,
            };
            let origin = self.origin(symbol.index().0);
            let id = SymbolId(self.graph.symbols.len() as u32);
            self.graph.symbols.push(Symbol {
                name: symbol_name,
                version: None,
                binding,
                visibility,
                definition,
                symbol_type,
                atom,
                value: if atom.is_some() {
                    symbol.address().wrapping_sub(section_address)
                } else {
                    symbol.address()
                },
                size: symbol.size(),
                prevailing: false,
                exported: false,
                imported: false,
                root: false,
                resolution: None,
                origin,
            });
            if let Some(slot) = self.symbol_ids.get_mut(symbol.index().0) {
                *slot = Some(id);
            }
        }
        Ok(())
    }

    /// Relocations become edges from the atom of the section they patch; a relocation type the target
    /// does not declare is refused.
    fn read_relocations(&mut self, file: &object::File<'_>) -> Result<(), ReadError> {
        for section in file.sections() {
            let Some(section_id) = self.section(section.index()) else {
                continue;
            };
            let entry = &self.graph.sections[section_id.index()];
            if self.graph.skip_debug_relocations
                && entry.flags & crate::graph::section_flags::ALLOCATED == 0
                && crate::sections::is_debugging(&entry.name)
            {
                continue;
            }
            let source = entry.atom;
            for (offset, relocation) in section.relocations() {
                let (target_symbol, target_atom) = match relocation.target() {
                    RelocationTarget::Symbol(index) => (self.symbol_ids.get(index.0).copied().flatten(), None),
                    RelocationTarget::Section(index) => (
                        None,
                        self.section(index)
                            .map(|section| self.graph.sections[section.index()].atom),
                    ),
                    _ => (None, None),
                };
                let raw = match relocation.flags() {
                    RelocationFlags::Elf { r_type } => r_type,
                    RelocationFlags::Coff { typ } => u32::from(typ),
                    RelocationFlags::MachO { r_type, .. } => u32::from(r_type),
                    _ => 0,
                };
                if let Some(target) = self.declared
                    && target.relocation(RelocationFormat::Elf, raw).is_none()
                {
                    return Err(ReadError::new(
                        &self.name,
                        format!(
                            "section `{}`: unknown relocation type {raw} at offset {offset:#x} (target {} declares \
                             no ELF relocation {raw})",
                            section.name().unwrap_or("?"),
                            target.name
                        ),
                    ));
                }
                // For an edge, the object entity is the relocation's offset within its section.
                let origin = self.origin(offset as usize);
                self.graph.edges.push(Edge {
                    kind: EdgeKind::Relocation,
                    source,
                    offset,
                    relocation: RelocationType {
                        format: self.format,
                        raw,
                    },
                    width: relocation.size(),
                    addend: relocation.addend(),
                    pc_relative: matches!(
                        relocation.kind(),
                        RelocationKind::Relative | RelocationKind::PltRelative | RelocationKind::GotRelative
                    ),
                    signed: matches!(relocation.encoding(), object::RelocationEncoding::X86Signed),
                    target_symbol: target_symbol.into(),
                    target_atom: target_atom.into(),
                    origin,
                });
            }
        }
        Ok(())
    }

    /// Section groups become COMDATs, their member sections and atoms marked.
    fn read_comdats(&mut self, file: &object::File<'_>) {
        for comdat in file.comdats() {
            let comdat_id = ComdatId(self.graph.comdats.len() as u32);
            let comdat_name = crate::symbol_name::from_bytes(comdat.name_bytes().unwrap_or(b"")).into_owned();
            let mut members = Vec::new();
            for index in comdat.sections() {
                if let Some(section) = self.section(index) {
                    let graph = &mut *self.graph;
                    graph.sections[section.index()].comdat = Some(comdat_id);
                    let atom = graph.sections[section.index()].atom;
                    graph.atoms[atom.index()].comdat = Some(comdat_id);
                    members.push(section);
                }
            }
            let origin = self.origin(0);
            self.graph.comdats.push(Comdat {
                name: comdat_name,
                selection: match comdat.kind() {
                    object::ComdatKind::ExactMatch => ComdatSelection::ExactMatch,
                    object::ComdatKind::SameSize => ComdatSelection::SameSize,
                    object::ComdatKind::Largest => ComdatSelection::Largest,
                    object::ComdatKind::Newest => ComdatSelection::Newest,
                    object::ComdatKind::NoDuplicates => ComdatSelection::NoDuplicates,
                    _ => ComdatSelection::Any,
                },
                input: self.input,
                sections: members,
                selected: None,
                origin,
            });
        }
    }
}

/// The machine of a COFF or Mach-O object's architecture: the declared `[elf] machine` of the bundled target
/// whose triple names that architecture (`x86_64-...`, `aarch64-...`), or `EM_NONE` (0).
fn machine_of(architecture: object::Architecture) -> Machine {
    // The triple's name of each architecture the `object` crate reads and a target may declare.
    let name = match architecture {
        object::Architecture::X86_64 => "x86_64",
        object::Architecture::Aarch64 => "aarch64",
        object::Architecture::Riscv64 => "riscv64",
        _ => return Machine(0),
    };
    neverc_tables::generated::targets::TARGETS
        .iter()
        .find(|target| target.triple.split('-').next() == Some(name))
        .and_then(|target| target.elf)
        .map_or(Machine(0), |elf| Machine(elf.machine))
}

/// What an ELF header says: `e_machine`, the class in bits and whether the file is little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ElfIdentity {
    machine: u16,
    class: u32,
    little_endian: bool,
}

impl ElfIdentity {
    /// The identity of the ELF object `bytes` (which the `object` crate parsed, so its header is complete).
    fn read(bytes: &[u8]) -> Option<ElfIdentity> {
        let class = match bytes.get(4)? {
            1 => 32,
            2 => 64,
            _ => return None,
        };
        let little_endian = match bytes.get(5)? {
            1 => true,
            2 => false,
            _ => return None,
        };
        let machine = [*bytes.get(18)?, *bytes.get(19)?];
        let machine = if little_endian {
            u16::from_le_bytes(machine)
        } else {
            u16::from_be_bytes(machine)
        };
        Some(ElfIdentity {
            machine,
            class,
            little_endian,
        })
    }

    /// The bundled target of this machine, class and byte order.
    fn target(self) -> Option<&'static TargetRecord> {
        target_by_elf(self.machine, self.class, self.little_endian)
    }

    /// `ELF machine 62, 64-bit, little-endian`.
    fn facts(self) -> String {
        let order = if self.little_endian {
            "little-endian"
        } else {
            "big-endian"
        };
        format!("ELF machine {}, {}-bit, {order}", self.machine, self.class)
    }

    /// `an object for x86_64 (ELF machine 62, 64-bit, little-endian)`.
    fn describe(self) -> String {
        let target = self
            .target()
            .map_or_else(String::new, |target| format!(" for {}", target.name));
        format!("an object{target} ({})", self.facts())
    }
}

/// The ELF identity of a target.
fn identity_of(target: &TargetRecord) -> Option<ElfIdentity> {
    target.elf.map(|elf| ElfIdentity {
        machine: elf.machine,
        class: elf.class,
        little_endian: target.little_endian,
    })
}

/// The bundled target an object's bytes name in their ELF header, if they are an ELF object of one.
pub(crate) fn target_named_by(bytes: &[u8]) -> Option<&'static TargetRecord> {
    if !bytes.starts_with(b"\x7fELF") {
        return None;
    }
    ElfIdentity::read(bytes)?.target()
}

/// Checks an ELF file (a shared library) against the graph's target, setting the target if no object set it.
pub(crate) fn check_target(graph: &mut LinkGraph, name: &str, bytes: &[u8]) -> Result<(), ReadError> {
    relocation_table(graph, name, ObjectFormat::Elf, bytes).map(|_| ())
}

/// Checks an object against the graph's target (setting the target from the first object) and returns the
/// target whose declared relocations its relocations must be: `None` when nothing is checked (a non-ELF
/// object, or an ELF object of a machine no bundled target declares, read for inspection only).
fn relocation_table(
    graph: &mut LinkGraph,
    name: &str,
    format: ObjectFormat,
    bytes: &[u8],
) -> Result<Option<&'static TargetRecord>, ReadError> {
    let identity = if format == ObjectFormat::Elf {
        ElfIdentity::read(bytes)
    } else {
        None
    };
    let format_name = match format {
        ObjectFormat::Elf => "ELF",
        ObjectFormat::Coff => "COFF",
        ObjectFormat::MachO => "Mach-O",
    };
    match &graph.target {
        LinkTarget::AnyMachine => Ok(identity.and_then(ElfIdentity::target)),
        LinkTarget::Fixed { target, set_by } => {
            let target = *target;
            let wanted = identity_of(target);
            if identity.is_some() && identity == wanted {
                return Ok(Some(target));
            }
            let found = match identity {
                Some(identity) => identity.describe(),
                None => format!("a {format_name} object"),
            };
            let wanted = wanted.map_or_else(|| "which declares no ELF facts".to_string(), ElfIdentity::facts);
            let chosen = set_by
                .as_ref()
                .map_or_else(String::new, |input| format!(", set by `{input}`"));
            Err(ReadError::new(
                name,
                format!(
                    "{found} cannot be linked: the link's target is {} ({wanted}){chosen}",
                    target.name
                ),
            ))
        }
        LinkTarget::FromFirstObject => {
            let Some(identity) = identity else {
                return Err(ReadError::new(
                    name,
                    format!("a {format_name} object cannot be linked: the linker links ELF objects"),
                ));
            };
            let target = identity.target().ok_or_else(|| {
                ReadError::new(
                    name,
                    format!(
                        "{} cannot be linked: no target declares its machine",
                        identity.describe()
                    ),
                )
            })?;
            graph.target = LinkTarget::Fixed {
                target,
                set_by: Some(name.to_string()),
            };
            Ok(Some(target))
        }
    }
}

/// Refuses a relocatable ELF object with a relocation section whose links are broken: an `sh_link` that is
/// not the object's symbol table (the relocations' symbol indices would index some other table), an
/// `sh_info` that is 0 or names no section, or one that names another relocation section (no section to
/// patch). Such relocations cannot be applied as their producer meant, and dropping them (as the `object`
/// crate's reader would, and ld.bfd does) makes a program that crashes; ld.lld refuses the `sh_info` cases
/// with the same words. Other files (not ELF, not relocatable, or too malformed to have section headers) are
/// left to the object reader.
fn check_relocation_sections(name: &str, bytes: &[u8]) -> Result<(), ReadError> {
    match (bytes.get(..4), bytes.get(4)) {
        (Some(b"\x7fELF"), Some(&object::elf::ELFCLASS64)) => {
            check_relocation_sections_of::<object::elf::FileHeader64<object::Endianness>>(name, bytes)
        }
        (Some(b"\x7fELF"), Some(&object::elf::ELFCLASS32)) => {
            check_relocation_sections_of::<object::elf::FileHeader32<object::Endianness>>(name, bytes)
        }
        _ => Ok(()),
    }
}

/// [`check_relocation_sections`] for one ELF class.
fn check_relocation_sections_of<Elf>(name: &str, bytes: &[u8]) -> Result<(), ReadError>
where
    Elf: object::read::elf::FileHeader<Endian = object::Endianness>,
{
    use object::read::elf::SectionHeader as _;
    let Ok(header) = Elf::parse(bytes) else {
        return Ok(());
    };
    let Ok(endian) = header.endian() else {
        return Ok(());
    };
    if header.e_type(endian) != object::elf::ET_REL {
        return Ok(());
    }
    let Ok(sections) = header.sections(endian, bytes) else {
        return Ok(());
    };
    let is_relocations = |sh_type: u32| {
        matches!(
            sh_type,
            object::elf::SHT_REL | object::elf::SHT_RELA | object::elf::SHT_CREL
        )
    };
    let symbol_table = sections
        .iter()
        .position(|section| section.sh_type(endian) == object::elf::SHT_SYMTAB);
    for (index, section) in sections.iter().enumerate() {
        if !is_relocations(section.sh_type(endian)) {
            continue;
        }
        // Named only in an error (most objects have many relocation sections and none is wrong).
        let what = || {
            let section_name = sections
                .section_name(endian, section)
                .map_or_else(|_| "?".into(), String::from_utf8_lossy);
            format!("relocation section `{section_name}` (index {index})")
        };
        let link = section.sh_link(endian) as usize;
        if Some(link) != symbol_table {
            let table = symbol_table.map_or_else(
                || "the object has no symbol table".to_string(),
                |table| format!("the symbol table is section {table}"),
            );
            return Err(ReadError::new(
                name,
                format!("{} has invalid sh_link ({link}): {table}", what()),
            ));
        }
        let info = section.sh_info(endian) as usize;
        let target = sections.section(object::SectionIndex(info)).ok().filter(|_| info != 0);
        let Some(target) = target else {
            return Err(ReadError::new(name, format!("{} has invalid sh_info ({info})", what())));
        };
        if is_relocations(target.sh_type(endian)) {
            return Err(ReadError::new(
                name,
                format!(
                    "{} has invalid sh_info ({info}): section {info} is itself a relocation section",
                    what()
                ),
            ));
        }
    }
    Ok(())
}

/// The normalized kind and flags of a section.
fn classify_section(section: &object::Section<'_, '_>) -> (SectionKind, u64) {
    let mut flags = 0;
    let kind = match section.kind() {
        object::SectionKind::Text => SectionKind::Text,
        object::SectionKind::Data => SectionKind::Data,
        object::SectionKind::ReadOnlyData | object::SectionKind::ReadOnlyDataWithRel => SectionKind::ReadOnlyData,
        object::SectionKind::ReadOnlyString => SectionKind::ReadOnlyString,
        object::SectionKind::UninitializedData | object::SectionKind::Common => SectionKind::UninitializedData,
        object::SectionKind::Tls => SectionKind::Tls,
        object::SectionKind::UninitializedTls => SectionKind::UninitializedTls,
        object::SectionKind::Note => SectionKind::Note,
        object::SectionKind::Debug | object::SectionKind::DebugString => SectionKind::Debug,
        object::SectionKind::Metadata | object::SectionKind::Linker => SectionKind::Metadata,
        object::SectionKind::Elf(_) if section.name().is_ok_and(|name| name == ".eh_frame") => SectionKind::Unwind,
        object::SectionKind::Elf(
            object::elf::SHT_INIT_ARRAY | object::elf::SHT_FINI_ARRAY | object::elf::SHT_PREINIT_ARRAY,
        ) => SectionKind::Data,
        _ => SectionKind::Other,
    };
    let name = section.name().unwrap_or("");
    let kind = if name == ".eh_frame" || name == "__compact_unwind" || name == ".pdata" || name == ".xdata" {
        SectionKind::Unwind
    } else {
        kind
    };
    match section.flags() {
        SectionFlags::Elf { sh_flags } => {
            use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHF_GNU_RETAIN, SHF_MERGE, SHF_STRINGS, SHF_TLS, SHF_WRITE};
            let bits = [
                (SHF_ALLOC, section_flags::ALLOCATED),
                (SHF_EXECINSTR, section_flags::EXECUTABLE),
                (SHF_WRITE, section_flags::WRITABLE),
                (SHF_MERGE, section_flags::MERGEABLE),
                (SHF_STRINGS, section_flags::STRINGS),
                (SHF_TLS, section_flags::TLS),
                (SHF_GNU_RETAIN, section_flags::RETAIN),
            ];
            for (elf, ours) in bits {
                if sh_flags & u64::from(elf) != 0 {
                    flags |= ours;
                }
            }
        }
        _ => {
            // COFF and Mach-O: derive from the kind.
            if !matches!(kind, SectionKind::Debug | SectionKind::Metadata | SectionKind::Other) {
                flags |= section_flags::ALLOCATED;
            }
            match kind {
                SectionKind::Text => flags |= section_flags::EXECUTABLE,
                SectionKind::Data
                | SectionKind::UninitializedData
                | SectionKind::Tls
                | SectionKind::UninitializedTls => flags |= section_flags::WRITABLE,
                _ => {}
            }
        }
    }
    match kind {
        SectionKind::Debug => flags |= section_flags::DEBUG,
        SectionKind::Unwind => flags |= section_flags::UNWIND,
        _ => {}
    }
    (kind, flags)
}

/// `sh_entsize` of an ELF section (0 for other formats).
fn elf_entry_size(file: &object::File<'_>, index: object::SectionIndex) -> u64 {
    use object::read::elf::SectionHeader as _;
    match file {
        object::File::Elf64(elf) => elf
            .elf_section_table()
            .section(index)
            .map_or(0, |header| header.sh_entsize(elf.endian())),
        object::File::Elf32(elf) => elf
            .elf_section_table()
            .section(index)
            .map_or(0, |header| u64::from(header.sh_entsize(elf.endian()))),
        _ => 0,
    }
}

fn binding_and_visibility(symbol: &object::Symbol<'_, '_>, definition: Definition) -> (Binding, Visibility) {
    let mut visibility = Visibility::Default;
    let binding = match symbol.flags() {
        SymbolFlags::Elf { st_info, st_other } => {
            visibility = match st_other & 0x3 {
                object::elf::STV_HIDDEN => Visibility::Hidden,
                object::elf::STV_PROTECTED => Visibility::Protected,
                object::elf::STV_INTERNAL => Visibility::Internal,
                _ => Visibility::Default,
            };
            match st_info >> 4 {
                object::elf::STB_LOCAL => Binding::Local,
                object::elf::STB_WEAK => Binding::Weak,
                // STB_GLOBAL and STB_GNU_UNIQUE (one definition per name, as for globals).
                _ if definition == Definition::Common => Binding::Common,
                _ => Binding::Global,
            }
        }
        _ if definition == Definition::Common => Binding::Common,
        _ if symbol.is_weak() => Binding::Weak,
        _ if symbol.is_local() => Binding::Local,
        _ => Binding::Global,
    };
    (binding, visibility)
}

/// Splits `.eh_frame` atoms into records: each FDE becomes an unwind record pointing at the function its
/// initial-location relocation names.
fn read_eh_frame_records(
    graph: &mut LinkGraph,
    input: InputId,
    section_ids: &[Option<SectionId>],
    phase: u16,
    member: Option<MemberId>,
    first_edge: usize,
) {
    let tables: Vec<AtomId> = section_ids
        .iter()
        .flatten()
        .filter(|section| graph.sections[section.index()].name == ".eh_frame")
        .map(|section| graph.sections[section.index()].atom)
        .collect();
    if tables.is_empty() {
        return;
    }
    // This object's edges out of its unwind tables, by (table, offset); the graph's edge index is rebuilt
    // once after all inputs are read, not per object.
    let mut pc_begins: FxHashMap<(AtomId, u64), &crate::graph::Edge> = FxHashMap::default();
    for edge in &graph.edges[first_edge..] {
        if tables.contains(&edge.source) {
            pc_begins.entry((edge.source, edge.offset)).or_insert(edge);
        }
    }
    let mut records = Vec::new();
    for table in tables {
        let bytes = graph.atom_bytes(&graph.atoms[table.index()]).to_vec();
        let mut offset = 0usize;
        while offset + 8 <= bytes.len() {
            let length = u32::from_le_bytes([bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3]]);
            if length == 0 || length == u32::MAX {
                break;
            }
            let end = offset + 4 + length as usize;
            if end > bytes.len() {
                break;
            }
            let id = u32::from_le_bytes([
                bytes[offset + 4],
                bytes[offset + 5],
                bytes[offset + 6],
                bytes[offset + 7],
            ]);
            if id != 0 {
                // An FDE: its initial location is patched by the relocation at offset + 8.
                let pc_begin = (offset + 8) as u64;
                let atom = pc_begins
                    .get(&(table, pc_begin))
                    .and_then(|edge| graph.edge_target_atom(edge));
                records.push(Unwind {
                    atom,
                    table,
                    range: offset as u64..end as u64,
                    personality: None,
                    origin: Origin::made(Some(input), member, offset as u32, Some(phase)),
                });
            }
            offset = end;
        }
    }
    drop(pc_begins);
    graph.unwinds.extend(records);
}
