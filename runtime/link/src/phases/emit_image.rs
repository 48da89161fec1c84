//! `neverc.link.emit_image`: the static ELF64 executable, written through the bounded image writer whose
//! bound is the size the layout calls for (a write past it aborts staging). With `--emit-relocs` it keeps
//! the relocations of its sections (`kept_relocations`), against its symbol table.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::address::{atom_address, symbol_address};
use crate::context::{LinkContext, PhaseError, Strip};
use crate::graph::{Binding, Definition, SymbolId, SymbolType, section_flags};
use crate::image::{
    COMPRESSED_ALIGNMENT, DebugCompression, ImageLayout, RelocationLayout, RelocationSectionLayout, SectionFlags,
    SectionKind, SectionLayout, SegmentLayout, SparseBytes, SymbolBinding, SymbolKind, SymbolLayout, compress_section,
    elf_file_size, write_elf_moving,
};
use crate::kept_relocations::{KeptRelocation, KeptTarget, nothing_addend};
use crate::phases::LinkPhase;
use crate::sections::OutputSectionId;

const PHASE: LinkPhase = LinkPhase::EmitImage;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let mut image_layout = image_layout(context)?;
    let bound = elf_file_size(&image_layout).map_err(|error| PhaseError::new(PHASE, error.to_string()))?;
    // The relocated sections' bytes move into the image: the image layout kept beside it describes where
    // they are, its contents are holes.
    let mut bytes =
        write_elf_moving(&mut image_layout, bound).map_err(|error| PhaseError::new(PHASE, error.to_string()))?;
    // The image's sections are the layout's, in the same order.
    let build_id = context.layout().and_then(|layout| {
        layout
            .sections
            .iter()
            .position(|section| section.id == Some(OutputSectionId::NoteGnuBuildId))
    });
    if let Some(note) = build_id.and_then(|index| image_layout.sections.get(index)) {
        crate::synth::build_id::fill(&mut bytes, note.file_offset, context.options.threads)
            .map_err(|error| PhaseError::new(PHASE, error))?;
    }
    context.set_image(bytes, Some(image_layout));
    Ok(())
}

fn image_layout(context: &mut LinkContext) -> Result<ImageLayout, PhaseError> {
    let mut buffers = context.take_section_bytes(PHASE)?;
    let layout = context.required_layout(PHASE)?;
    // The link's target, whatever its first input is (an archive, bitcode): its declared machine.
    let machine = context
        .graph
        .machine()
        .ok_or_else(|| PhaseError::new(PHASE, "the link's target is not known: no input named one"))?
        .0;
    let segments = layout
        .segments
        .iter()
        .map(|segment| SegmentLayout {
            name: segment.flags.to_string(),
            flags: segment.flags,
            virtual_address: segment.address,
            file_offset: segment.file_offset,
            file_size: segment.file_size,
            memory_size: segment.memory_size,
            alignment: context.options.page_size,
        })
        .collect();
    let mut sections: Vec<SectionLayout> = layout
        .sections
        .iter()
        .enumerate()
        .map(|(index, section)| {
            let kind = if section.file_size == 0 {
                SectionKind::NoBits
            } else {
                section.sh_type
            };
            let allocated = section.flags & section_flags::ALLOCATED != 0;
            let mut flags = if allocated {
                SectionFlags::ALLOC
            } else {
                SectionFlags::empty()
            };
            let strings = section_flags::MERGEABLE | section_flags::STRINGS;
            if !allocated && section.flags & strings == strings {
                flags = flags | SectionFlags::STRINGS;
            }
            if section.flags & crate::graph::section_flags::WRITABLE != 0 {
                flags = flags | SectionFlags::WRITE;
            }
            if section.flags & crate::graph::section_flags::EXECUTABLE != 0 {
                flags = flags | SectionFlags::EXECUTE;
            }
            if section.flags & crate::graph::section_flags::TLS != 0 {
                flags = flags | SectionFlags::TLS;
            }
            SectionLayout {
                name: section.name.clone(),
                segment: allocated.then_some(section.segment),
                kind,
                flags,
                address: section.address,
                file_offset: section.file_offset,
                size: section.size,
                alignment: section.alignment,
                contents: if kind == SectionKind::NoBits {
                    SparseBytes::new()
                } else {
                    buffers.get_mut(index).map(std::mem::take).unwrap_or_default()
                },
            }
        })
        .collect();
    if context.options.compress_debug_sections != DebugCompression::None {
        compress_debugging_sections(&mut sections, context.options.compress_debug_sections)?;
    }
    let (kept, referenced) = if context.options.emit_relocs {
        if context.options.strip == Strip::All {
            // ld.bfd fails such a link too ("final link failed: invalid operation").
            return Err(PhaseError::new(
                PHASE,
                "--emit-relocs needs the symbol table, which -s (--strip-all) removes",
            ));
        }
        crate::kept_relocations::collect(context, layout)
    } else {
        (Vec::new(), FxHashSet::default())
    };
    let sections_referenced: FxHashSet<usize> = kept
        .iter()
        .flatten()
        .filter_map(|relocation| match relocation.target {
            KeptTarget::Section(section) => Some(section),
            _ => None,
        })
        .collect();
    let table = symbol_table(context, &referenced, &sections_referenced);
    let relocations = kept
        .into_iter()
        .enumerate()
        .filter(|(_, relocations)| !relocations.is_empty())
        .map(|(index, relocations)| {
            let relocations = relocations
                .iter()
                .map(|relocation| table.relocation(relocation))
                .collect();
            RelocationSectionLayout::new(index, &layout.sections[index].name, relocations)
        })
        .collect();
    Ok(ImageLayout {
        entry: layout.entry,
        output_kind: context.options.output_kind,
        machine,
        flags: elf_flags(context)?,
        segments,
        program_headers: layout.program_headers.clone(),
        sections,
        symbols: table.symbols,
        relocations,
    })
}

/// The output's `e_flags`: the architecture's merge of the `e_flags` of the relocatable objects that went
/// into the link (0 for an architecture that has none to merge).
fn elf_flags(context: &LinkContext) -> Result<u32, PhaseError> {
    crate::arch::merged_elf_flags(&context.graph)
        .map_err(|(input, message)| PhaseError::new(PHASE, format!("{input}: {message}")))
}

/// Compresses the debugging sections that get smaller (as GNU ld does), then places the unallocated
/// sections, which follow everything loaded in the file, again after one another with their new sizes.
fn compress_debugging_sections(sections: &mut [SectionLayout], how: DebugCompression) -> Result<(), PhaseError> {
    let failed = |error: crate::image::SparseError| PhaseError::new(PHASE, error.to_string());
    let mut cursor = None;
    for section in sections.iter_mut().filter(|section| section.segment.is_none()) {
        // The unallocated sections start where the first of them does.
        let start = *cursor.get_or_insert(section.file_offset);
        if crate::sections::is_debugging(&section.name) && section.kind == SectionKind::ProgBits {
            let bytes = section.contents.to_vec().map_err(failed)?;
            if let Some(compressed) = compress_section(&bytes, section.alignment, how) {
                let mut contents = SparseBytes::zeroed(compressed.len() as u64);
                contents.write_at(0, &compressed).map_err(failed)?;
                section.contents = contents;
                section.size = compressed.len() as u64;
                section.flags = section.flags | SectionFlags::COMPRESSED;
                section.alignment = COMPRESSED_ALIGNMENT;
            }
        }
        section.file_offset = start.next_multiple_of(section.alignment.max(1));
        cursor = Some(section.file_offset + section.size);
    }
    Ok(())
}

/// The symbol table and where the symbols kept relocations name are in it.
#[derive(Default)]
struct SymbolTable {
    symbols: Vec<SymbolLayout>,
    /// The index in `symbols` of each listed symbol a kept relocation names.
    of_symbol: FxHashMap<SymbolId, usize>,
    /// The index in `symbols` of each output section's section symbol.
    of_section: FxHashMap<usize, usize>,
}

impl SymbolTable {
    /// A kept relocation with its symbol's index (symbol 0 and the value as the addend when the table does
    /// not list the symbol).
    fn relocation(&self, relocation: &KeptRelocation) -> RelocationLayout {
        let symbol = match relocation.target {
            KeptTarget::Symbol(symbol) => self.of_symbol.get(&symbol).copied(),
            KeptTarget::Section(section) => self.of_section.get(&section).copied(),
            KeptTarget::Nothing => None,
        };
        RelocationLayout {
            offset: relocation.offset,
            kind: relocation.kind,
            symbol,
            addend: match (symbol, relocation.target) {
                (None, KeptTarget::Symbol(_) | KeptTarget::Section(_)) => nothing_addend(relocation),
                _ => relocation.addend,
            },
        }
    }
}

/// Who a symbol of the table is.
#[derive(Clone, Copy)]
enum Listed {
    Symbol(SymbolId),
    Section(usize),
}

/// The symbols written to `.symtab`: named functions, objects and untyped labels of the output, and every
/// symbol a kept relocation names (`referenced`, whatever its name or type) and the section symbols of the
/// output sections kept relocations are against (`sections`), sorted by address, then name (so that two
/// links write the same table).
fn symbol_table(context: &LinkContext, referenced: &FxHashSet<SymbolId>, sections: &FxHashSet<usize>) -> SymbolTable {
    let Some(layout) = context.layout() else {
        return SymbolTable::default();
    };
    // `-s`: no symbol table at all.
    if context.options.strip == Strip::All {
        return SymbolTable::default();
    }
    // A symbol is in the output section its atom was placed in. (Looking it up by address is ambiguous: an
    // empty section such as `.tm_clone_table` can start where the next one does.)
    let mut section_of_atom: FxHashMap<crate::graph::AtomId, usize> = FxHashMap::default();
    for (index, section) in layout.sections.iter().enumerate() {
        for atom in &section.atoms {
            section_of_atom.insert(*atom, index);
        }
    }
    let options = &context.options.symbols;
    let retained: Option<rustc_hash::FxHashSet<&str>> = options
        .retain_symbols
        .as_ref()
        .map(|names| names.iter().map(String::as_str).collect());
    let mut symbols: Vec<(SymbolLayout, Listed)> = Vec::new();
    // In section order, which the (stable) sort keeps among section symbols at one address.
    let mut sections: Vec<usize> = sections.iter().copied().collect();
    sections.sort_unstable();
    for index in sections {
        let section = &layout.sections[index];
        let symbol = SymbolLayout {
            name: String::new(),
            value: section.address,
            size: 0,
            kind: SymbolKind::Section,
            binding: SymbolBinding::Local,
            section: Some(index),
            undefined: false,
        };
        symbols.push((symbol, Listed::Section(index)));
    }
    for (index, symbol) in context.graph.symbols.iter().enumerate() {
        let id = SymbolId(index as u32);
        // A symbol a kept relocation names is listed whenever it is in the output.
        let forced = referenced.contains(&id);
        let unlisted = symbol.name.is_empty()
            || symbol.name.starts_with(".L")
            || !matches!(
                symbol.symbol_type,
                SymbolType::Function | SymbolType::Object | SymbolType::None | SymbolType::Tls | SymbolType::Ifunc
            )
            || symbol.definition == Definition::Undefined
            || (symbol.binding != Binding::Local && context.graph.resolved(id) != id)
            // `--retain-symbols-file`: only the symbols it names, as GNU ld keeps them.
            || retained
                .as_ref()
                .is_some_and(|names| !names.contains(symbol.name.as_str()));
        if unlisted && !forced {
            continue;
        }
        // An absolute symbol an object or `--defsym` defines is kept, with no section (the names the linker
        // defines itself are hidden, and not listed unless a kept relocation names them).
        let absolute = symbol.definition == Definition::Absolute
            && symbol.atom.is_none()
            && (forced || symbol.visibility != crate::graph::Visibility::Hidden);
        let live = symbol
            .atom
            .is_some_and(|atom| context.graph.atoms[atom.index()].is_live());
        // A weak reference nothing defines is listed (undefined) only when a kept relocation names it.
        let undefined = symbol.definition == Definition::Undefined;
        if !live && !absolute && !undefined {
            continue;
        }
        let value = match (symbol.symbol_type, symbol.atom) {
            // A thread-local variable's value is its offset in the TLS template, an indirect function's its
            // resolver's address (not its PLT entry), as ld.bfd writes them.
            (SymbolType::Tls, _) => symbol_address(context, id)
                .zip(layout.tls)
                .and_then(|(address, tls)| address.checked_sub(tls.address)),
            (SymbolType::Ifunc, Some(atom)) => atom_address(context, atom).checked_add(symbol.value),
            _ => symbol_address(context, id),
        };
        let Some(value) = value else {
            continue;
        };
        let listed = SymbolLayout {
            name: symbol.name.clone(),
            value,
            size: symbol.size,
            kind: match symbol.symbol_type {
                SymbolType::Function => SymbolKind::Function,
                SymbolType::Object => SymbolKind::Object,
                SymbolType::Tls => SymbolKind::Tls,
                SymbolType::Ifunc => SymbolKind::Ifunc,
                // Labels of assembly without `.type` (and the mapping symbols `$x`, `$d`), as GNU ld keeps them.
                _ => SymbolKind::NoType,
            },
            binding: match symbol.binding {
                Binding::Local => SymbolBinding::Local,
                // A shared library's hidden or internal definition is local in it, as GNU ld writes it (an
                // executable's stays global, as in GNU ld's).
                _ if !undefined
                    && context.options.output_kind.is_shared_library()
                    && matches!(
                        symbol.visibility,
                        crate::graph::Visibility::Hidden | crate::graph::Visibility::Internal
                    ) =>
                {
                    SymbolBinding::Local
                }
                // `--version-script`'s `local:` makes a global symbol local, as in GNU ld's static links.
                _ if options
                    .version_script
                    .as_ref()
                    .is_some_and(|script| script.makes_local(&symbol.name)) =>
                {
                    SymbolBinding::Local
                }
                Binding::Weak => SymbolBinding::Weak,
                _ => SymbolBinding::Global,
            },
            section: symbol.atom.and_then(|atom| section_of_atom.get(&atom).copied()),
            undefined,
        };
        symbols.push((listed, Listed::Symbol(id)));
    }
    // Locals first, section symbols first among them.
    let key = |symbol: &SymbolLayout| {
        (
            symbol.binding != SymbolBinding::Local,
            symbol.kind != SymbolKind::Section,
            symbol.value,
        )
    };
    // The order is found by sorting indices (stable, as sorting the entries themselves would be), which moves
    // four bytes a step instead of a whole entry.
    let mut order: Vec<u32> = (0..symbols.len() as u32).collect();
    order.sort_by(|a, b| {
        let (a, b) = (&symbols[*a as usize].0, &symbols[*b as usize].0);
        key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
    });
    let mut entries: Vec<Option<(SymbolLayout, Listed)>> = symbols.into_iter().map(Some).collect();
    let sorted = order
        .iter()
        .filter_map(|index| entries.get_mut(*index as usize).and_then(Option::take));
    let mut table = SymbolTable::default();
    table.symbols.reserve(order.len());
    for (index, (symbol, listed)) in sorted.enumerate() {
        match listed {
            Listed::Symbol(id) if referenced.contains(&id) => {
                table.of_symbol.insert(id, index);
            }
            Listed::Section(section) => {
                table.of_section.insert(section, index);
            }
            Listed::Symbol(_) => {}
        }
        table.symbols.push(symbol);
    }
    table
}
