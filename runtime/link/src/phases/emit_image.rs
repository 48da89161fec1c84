//! `neverc.link.emit_image`: the static ELF64 executable, written through the bounded image writer whose
//! bound is the size the layout calls for (a write past it aborts staging).

use rustc_hash::FxHashMap;

use crate::address::symbol_address;
use crate::context::{LinkContext, PhaseError};
use crate::graph::{Binding, Definition, SymbolType, section_flags};
use crate::image::{
    COMPRESSED_ALIGNMENT, ImageLayout, SectionFlags, SectionKind, SectionLayout, SegmentLayout, SparseBytes,
    SymbolBinding, SymbolKind, SymbolLayout, compress_zlib, elf_file_size, write_elf,
};
use crate::phases::LinkPhase;
use crate::sections::OutputSectionId;

const PHASE: LinkPhase = LinkPhase::EmitImage;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let image_layout = image_layout(context)?;
    let bound = elf_file_size(&image_layout).map_err(|error| PhaseError::new(PHASE, error.to_string()))?;
    let mut bytes = write_elf(&image_layout, bound).map_err(|error| PhaseError::new(PHASE, error.to_string()))?;
    // The image's sections are the layout's, in the same order.
    let build_id = context.layout().and_then(|layout| {
        layout
            .sections
            .iter()
            .position(|section| section.id == Some(OutputSectionId::NoteGnuBuildId))
    });
    if let Some(note) = build_id.and_then(|index| image_layout.sections.get(index)) {
        crate::synth::build_id::fill(&mut bytes, note.file_offset).map_err(|error| PhaseError::new(PHASE, error))?;
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
    if context.options.compress_debug_sections {
        compress_debugging_sections(&mut sections)?;
    }
    Ok(ImageLayout {
        entry: layout.entry,
        output_kind: context.options.output_kind,
        machine,
        segments,
        program_headers: layout.program_headers.clone(),
        sections,
        symbols: symbol_table(context),
    })
}

/// Compresses the debugging sections that get smaller (as GNU ld does), then places the unallocated
/// sections, which follow everything loaded in the file, again after one another with their new sizes.
fn compress_debugging_sections(sections: &mut [SectionLayout]) -> Result<(), PhaseError> {
    let failed = |error: crate::image::SparseError| PhaseError::new(PHASE, error.to_string());
    let mut cursor = None;
    for section in sections.iter_mut().filter(|section| section.segment.is_none()) {
        // The unallocated sections start where the first of them does.
        let start = *cursor.get_or_insert(section.file_offset);
        if crate::sections::is_debugging(&section.name) && section.kind == SectionKind::ProgBits {
            let bytes = section.contents.to_vec().map_err(failed)?;
            if let Some(compressed) = compress_zlib(&bytes, section.alignment) {
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

/// The symbols written to `.symtab`: named functions, objects and untyped labels of the output, sorted by
/// address, then name (so that two links write the same table).
fn symbol_table(context: &LinkContext) -> Vec<SymbolLayout> {
    let Some(layout) = context.layout() else {
        return Vec::new();
    };
    // `-s`: no symbol table at all.
    if context.options.strip == crate::context::Strip::All {
        return Vec::new();
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
    let mut symbols: Vec<SymbolLayout> = Vec::new();
    for (index, symbol) in context.graph.symbols.iter().enumerate() {
        let id = crate::graph::SymbolId(index as u32);
        if symbol.name.is_empty()
            || symbol.name.starts_with(".L")
            || !matches!(
                symbol.symbol_type,
                SymbolType::Function | SymbolType::Object | SymbolType::None
            )
            || symbol.definition == Definition::Undefined
            || (symbol.binding != Binding::Local && context.graph.resolved(id) != id)
        {
            continue;
        }
        // `--retain-symbols-file`: only the symbols it names, as GNU ld keeps them.
        if retained
            .as_ref()
            .is_some_and(|names| !names.contains(symbol.name.as_str()))
        {
            continue;
        }
        // An absolute symbol an object or `--defsym` defines is kept, with no section (the names the linker
        // defines itself are hidden, and not listed).
        let absolute = symbol.definition == Definition::Absolute
            && symbol.atom.is_none()
            && symbol.visibility != crate::graph::Visibility::Hidden;
        let live = symbol
            .atom
            .is_some_and(|atom| context.graph.atoms[atom.index()].is_live());
        if !live && !absolute {
            continue;
        }
        let Some(value) = symbol_address(context, id) else {
            continue;
        };
        symbols.push(SymbolLayout {
            name: symbol.name.clone(),
            value,
            size: symbol.size,
            kind: match symbol.symbol_type {
                SymbolType::Function => SymbolKind::Function,
                SymbolType::Object => SymbolKind::Object,
                // Labels of assembly without `.type` (and the mapping symbols `$x`, `$d`), as GNU ld keeps them.
                _ => SymbolKind::NoType,
            },
            binding: match symbol.binding {
                Binding::Local => SymbolBinding::Local,
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
        });
    }
    symbols.sort_by(|a, b| {
        (a.binding != SymbolBinding::Local, a.value, &a.name).cmp(&(
            b.binding != SymbolBinding::Local,
            b.value,
            &b.name,
        ))
    });
    symbols
}
