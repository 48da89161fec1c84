//! Layout's assignment: output sections, segments and addresses, as a pure function of the graph and the
//! context's synthesized atoms and thunks ([`lay_out`]), which the layout phase runs once and thunk placement
//! runs for its provisional layouts. Live atoms go to output sections by the table of `crate::sections`
//! (`.text.*` into `.text`, `.rodata.*` into `.rodata`, `.init_array.N` sorted by priority before plain
//! `.init_array`, ...); the output sections form page-aligned segments by permission, R (with the headers),
//! R+X, R, RELRO and R+W, with `.bss` last; layout constraints (`order`) put the atoms they name first in their
//! section, and thunks go right after their callers. Names the linker defines get their values.

use rustc_hash::FxHashMap;

use crate::context::{Layout, LinkContext, OutputSection, OutputSegment, PhaseError, Thunk, TlsTemplate, TlsVariant};
use crate::graph::{Atom, AtomId, Content, Definition, LinkGraph, atom_flags, effective_alignment, section_flags};
use crate::image::{
    FILE_HEADER_SIZE, ProgramHeaderKind, ProgramHeaderLayout, SectionKind, SegmentFlags, elf_headers_size,
};
use crate::linker_defined::{LinkerDefined, linker_defined};
use crate::phases::LinkPhase;
use crate::sections::{CodeKind, OTHER_RANK, OutputSectionId};

/// Layout's errors are the layout phase's, whoever asks for a layout.
const PHASE: LinkPhase = LinkPhase::Layout;

/// The permission groups, in address order, as ld.bfd lays out a static executable (`-z separate-code`):
/// the headers with the notes (R), code (R+X), read-only data (R), then the writable data that is
/// read-only after start-up (RELRO) and the rest of the writable data, each R+W. As lld does, the RELRO
/// part is a `PT_LOAD` of its own, padded in memory to the end of its page, so that the `PT_GNU_RELRO` over
/// it can end on a page boundary inside mapped memory without padding the file.
const SEGMENT_FLAGS: [SegmentFlags; 5] = [
    SegmentFlags::READ,
    SegmentFlags::READ.union(SegmentFlags::EXECUTE),
    SegmentFlags::READ,
    SegmentFlags::READ.union(SegmentFlags::WRITE),
    SegmentFlags::READ.union(SegmentFlags::WRITE),
];

/// The permissions of each group's `PT_LOAD`s: with `-z noseparate-code` the first group holds the code too.
fn segment_flags(separate_code: bool) -> [SegmentFlags; 5] {
    let mut flags = SEGMENT_FLAGS;
    if !separate_code {
        flags[0] = SegmentFlags::READ.union(SegmentFlags::EXECUTE);
    }
    flags
}

/// The name of the input section an atom is (a synthetic atom's own name).
fn input_section_name(graph: &LinkGraph, atom: AtomId) -> &str {
    let atom = &graph.atoms[atom.index()];
    match atom.section {
        Some(section) => graph.sections[section.index()].name.as_str(),
        None => atom.name.as_str(),
    }
}

/// The group of the data that is read-only after start-up.
const RELRO_GROUP: usize = 3;

/// The priority of `.init_array.NNNNN` (plain `.init_array` sorts after every priority).
fn init_priority(name: &str) -> u32 {
    name.rsplit('.')
        .next()
        .and_then(|suffix| suffix.parse().ok())
        .unwrap_or(u32::MAX)
}

/// Lays the live atoms out (see the module documentation): the layout, with the atoms' and input sections'
/// addresses assigned in the graph and the names the linker defines given their values.
pub(crate) fn lay_out(context: &mut LinkContext) -> Result<Layout, PhaseError> {
    let graph = &mut context.graph;

    // Output sections by name, in first-seen order; atoms in graph order (link order).
    let mut by_name: FxHashMap<String, usize> = FxHashMap::default();
    let mut sections: Vec<(OutputSection, u32)> = Vec::new();
    let mut unallocated: Vec<OutputSection> = Vec::new();
    // Link order is command-line order: an archive member's sections go where its archive was named (so that
    // crtend.o's `.eh_frame` terminator ends the unwind tables, as with ld.bfd), not where it was extracted.
    // Output sections are made in that order too, so that sections no rule ranks (`neverc_items`,
    // `__libc_atexit`) come in the order their first inputs do, as with ld.bfd.
    let order = graph.command_line_order();
    let atom_order = |index: usize| {
        let input = graph.atoms[index].origin.input();
        input.map_or((u32::MAX, 0), |input| order[input.index()])
    };
    let mut atom_indices: Vec<usize> = (0..graph.atoms.len()).collect();
    atom_indices.sort_by_key(|index| (atom_order(*index), *index));
    for index in atom_indices {
        let atom = &graph.atoms[index];
        if !atom.is_live()
            || atom.flags & atom_flags::FOLDED != 0
            || context
                .synthesized
                .merged_strings
                .target
                .contains_key(&AtomId(index as u32))
        {
            continue;
        }
        // An input section goes where the table says; an atom the linker made, where its name says, with the
        // permissions of what it holds.
        let (input_name, input_kind, flags) = match atom.section {
            Some(section) => {
                let section = &graph.sections[section.index()];
                (section.name.as_str(), Some(section.kind), section.flags)
            }
            None => {
                let made = OutputSectionId::for_input(&atom.name).map_or(0, |id| id.kind().made_flags);
                (atom.name.as_str(), None, section_flags::ALLOCATED | made)
            }
        };
        // Sections that are not loaded (debugging information, `.comment`) go after the loaded ones in the
        // file, by their inputs' names.
        if flags & section_flags::ALLOCATED == 0 {
            add_unallocated(&mut unallocated, input_name, input_kind, flags, atom, index);
            continue;
        }
        let id = OutputSectionId::for_input(input_name);
        // `-z keep-text-section-prefix`: the special kinds of code keep their prefix as an output section of
        // their own (which no rule ranks, so they follow `.fini` in first-seen order, as with ld.lld).
        let kept_prefix = (context.options.keep_text_section_prefix && id == Some(OutputSectionId::Text))
            .then(|| CodeKind::of(input_name).and_then(CodeKind::kept_prefix))
            .flatten();
        let (id, name) = match (kept_prefix, id) {
            (Some(prefix), _) => (None, prefix),
            (None, Some(id)) => (Some(id), id.name()),
            (None, None) => (None, input_name),
        };
        let slot = match by_name.get(name) {
            Some(slot) => *slot,
            None => {
                // A section no rule names keeps its first input's type: a note stays a note.
                let sh_type = match (id, input_kind) {
                    (Some(id), _) => id.kind().sh_type,
                    (None, Some(crate::graph::SectionKind::Note)) => SectionKind::Note,
                    (None, _) => SectionKind::ProgBits,
                };
                sections.push((
                    OutputSection::empty(name, id, sh_type, 0),
                    id.map_or(OTHER_RANK, |id| id.kind().rank),
                ));
                by_name.insert(name.to_string(), sections.len() - 1);
                sections.len() - 1
            }
        };
        let output = &mut sections[slot].0;
        output.flags |= flags
            & (section_flags::ALLOCATED | section_flags::WRITABLE | section_flags::EXECUTABLE | section_flags::TLS);
        output.alignment = output.alignment.max(effective_alignment(atom.alignment));
        output.atoms.push(AtomId(index as u32));
    }
    for (section, _) in &mut sections {
        section.atoms.sort_by_key(|atom| atom_order(atom.index()));
        if section.id == Some(OutputSectionId::Text) {
            // As ld.bfd's default script orders `.text`: unlikely, exit, start-up and hot code first (each in
            // link order), then the sections to sort by name, then the rest in link order. The sort is stable.
            section.atoms.sort_by_cached_key(|atom| {
                let name = input_section_name(graph, *atom);
                let kind = CodeKind::of(name);
                let sorted_name = if kind == Some(CodeKind::Sorted) {
                    name.to_string()
                } else {
                    String::new()
                };
                (kind.is_none(), kind, sorted_name)
            });
        }
    }
    // Init and fini arrays: priorities first, ascending, then the plain sections in link order.
    for (section, _) in &mut sections {
        if matches!(
            section.id,
            Some(OutputSectionId::InitArray | OutputSectionId::FiniArray | OutputSectionId::PreinitArray)
        ) {
            section.atoms.sort_by_key(|atom| {
                let name = graph.atoms[atom.index()].name.as_str();
                init_priority(name)
            });
        }
        apply_order_constraints(graph, &mut section.atoms);
        place_after_callers(&mut section.atoms, &context.thunks);
    }
    // With `-z noseparate-code` the headers, the code and the read-only data share the first group, in the
    // order the groups would have had.
    let separate_code = context.options.separate_code;
    let merged_group = |group: usize| if !separate_code && group <= 2 { 0 } else { group };
    // With `-z now` the loader fills the PLT's slots before it protects the RELRO data, so `.got.plt`
    // joins it (full RELRO, as GNU ld places it).
    let full_relro = context.options.bind_now && context.options.output_kind.is_dynamic();
    for (section, _) in &mut sections {
        section.segment = group_of(section, context.options.relro, full_relro);
    }
    // `.bss` is the last section of the writable segment (it takes no file bytes).
    sections.sort_by_key(|(section, rank)| (merged_group(section.segment), section.segment, *rank));
    for (section, _) in &mut sections {
        section.segment = merged_group(section.segment);
    }
    // The TLS template (`.tdata` then `.tbss`) starts aligned as strictly as its most strictly aligned
    // section, `PT_TLS`'s `p_align` (ld.bfd raises the first TLS section's alignment so): the thread pointer
    // offsets and the C library's copies of the template count from an aligned start.
    let is_tls = |section: &OutputSection| section.flags & section_flags::TLS != 0;
    let tls_alignment = sections
        .iter()
        .filter(|(section, _)| is_tls(section))
        .map(|(section, _)| section.alignment)
        .max();
    if let (Some(alignment), Some((first, _))) =
        (tls_alignment, sections.iter_mut().find(|(section, _)| is_tls(section)))
    {
        first.alignment = alignment;
    }

    // The ELF header and the program headers are mapped by the first `PT_LOAD` (the kernel passes their
    // address as `AT_PHDR`, which a static libc reads to find its TLS segment), so their size must be known
    // before anything is placed. It depends on how many `PT_LOAD`s there are; one is expected per permission
    // group in use, and in the rare case that an alignment gap splits a group the layout is done again with
    // the count it found.
    let groups = 1
        + (1..SEGMENT_FLAGS.len())
            .filter(|group| sections.iter().any(|(section, _)| section.segment == *group))
            .count();
    // Decided by permission group, before placing turns each section's group into its PT_LOAD's index.
    let others = other_program_headers(sections.iter().map(|(section, _)| section));
    // Placing turns each section's group into the index of its `PT_LOAD`; a second try starts again from
    // the groups.
    let group_of_section: Vec<usize> = sections.iter().map(|(section, _)| section.segment).collect();
    let mut loads = groups;
    let layout = loop {
        for ((section, _), group) in sections.iter_mut().zip(&group_of_section) {
            section.segment = *group;
        }
        let layout = place(context, &mut sections, loads + others.len())?;
        if layout.segments.len() <= loads {
            break layout;
        }
        loads = layout.segments.len();
    };
    let mut layout = layout;
    layout.sections = sections.into_iter().map(|(section, _)| section).collect();
    let variant = TlsVariant::of(context.graph.target_record());
    let (program_headers, tls) = describe_program_headers(&layout.sections, &layout.segments, others, variant);
    layout.program_headers = program_headers;
    layout.tls = tls;
    let graph = &mut context.graph;
    let page = context.options.page_size.max(1);
    layout.file_size = layout
        .segments
        .iter()
        .filter(|segment| segment.file_size > 0)
        .map(|segment| segment.file_offset + segment.file_size)
        .max()
        .unwrap_or(page);
    // A segment with no file bytes (only `.bss`) points at the end of the file, congruent with its address.
    for segment in &mut layout.segments {
        if segment.file_size == 0 {
            segment.file_offset = (layout.file_size / page) * page + segment.address % page;
            for index in &segment.sections {
                layout.sections[*index].file_offset = segment.file_offset;
            }
        }
    }
    place_unallocated(graph, &mut layout, unallocated, context.options.max_output_size)?;
    // Input sections follow their atoms.
    for section in &mut graph.sections {
        let atom = &graph.atoms[section.atom.index()];
        section.address = atom.address;
        section.file_offset = atom.file_offset;
    }
    define_linker_symbol_values(context, &layout);
    // Without its entry symbol the program starts where its code does, as GNU ld has it (with a warning, which
    // the layout phase gives).
    // A shared library without one has an entry of 0.
    layout.entry = match entry_symbol_address(context) {
        Some(entry) => entry,
        None if context.options.output_kind.is_shared_library() => 0,
        None => code_start(&layout),
    };
    Ok(layout)
}

/// The address of the entry symbol (`-e`, `_start` by default), if it is defined.
pub(crate) fn entry_symbol_address(context: &LinkContext) -> Option<u64> {
    context
        .global_symbols
        .get(&context.options.entry)
        .and_then(|symbol| crate::address::symbol_address(context, *symbol))
}

/// Where the code starts: `.text`, else the first executable section, else 0.
pub(crate) fn code_start(layout: &Layout) -> u64 {
    let executable = |section: &&OutputSection| section.flags & section_flags::EXECUTABLE != 0;
    layout
        .sections
        .iter()
        .find(|section| section.id == Some(OutputSectionId::Text))
        .or_else(|| layout.sections.iter().find(executable))
        .map_or(0, |section| section.address)
}

/// Adds the atom at `index` of an unallocated input section named `name` to its output section (made on
/// first use, in first-seen order): debugging information and notes for tools, which no segment loads.
fn add_unallocated(
    unallocated: &mut Vec<OutputSection>,
    name: &str,
    kind: Option<crate::graph::SectionKind>,
    flags: u64,
    atom: &Atom,
    index: usize,
) {
    let slot = match unallocated.iter().position(|section| section.name == name) {
        Some(slot) => slot,
        None => {
            let sh_type = if kind == Some(crate::graph::SectionKind::Note) {
                SectionKind::Note
            } else {
                SectionKind::ProgBits
            };
            let strings = flags & (section_flags::MERGEABLE | section_flags::STRINGS);
            unallocated.push(OutputSection::empty(name, None, sh_type, strings));
            unallocated.len() - 1
        }
    };
    let output = &mut unallocated[slot];
    // Strings stay mergeable only when every input is.
    output.flags &= flags;
    output.alignment = output.alignment.max(effective_alignment(atom.alignment));
    output.atoms.push(AtomId(index as u32));
}

/// Places the unallocated output sections after everything loaded, in the file only: their addresses are
/// 0, their atoms' addresses offsets within them (what a relocation of debugging information that names
/// one of them, such as an offset into `.debug_str`, needs), and the layout's file size grows past them.
fn place_unallocated(
    graph: &mut LinkGraph,
    layout: &mut Layout,
    mut unallocated: Vec<OutputSection>,
    limit: u64,
) -> Result<(), PhaseError> {
    // In GNU ld's order of the names it knows; the atoms are in link order already: they were added in it.
    unallocated.sort_by_key(|section| crate::sections::unallocated_rank(&section.name));
    for mut section in unallocated {
        let mut offset: u64 = 0;
        for atom in &section.atoms {
            let entry = &mut graph.atoms[atom.index()];
            let placed = offset
                .checked_next_multiple_of(effective_alignment(entry.alignment))
                .filter(|placed| placed.checked_add(entry.size()).is_some_and(|end| end <= limit));
            let Some(placed) = placed else {
                return Err(PhaseError::new(
                    PHASE,
                    format!(
                        "{}: output section `{}` would pass the limit of {limit:#x} bytes",
                        describe(graph, &graph.atoms[atom.index()]),
                        section.name
                    ),
                ));
            };
            entry.address = placed;
            offset = placed + entry.size();
        }
        // Held to the output limit, which an alignment or a size read from an input could pass.
        let file_offset = layout
            .file_size
            .checked_next_multiple_of(effective_alignment(section.alignment))
            .filter(|start| start.checked_add(offset).is_some_and(|end| end <= limit))
            .ok_or_else(|| {
                PhaseError::new(
                    PHASE,
                    format!(
                        "output section `{}` ({offset:#x} bytes aligned to {:#x}) would pass the limit of {limit:#x} \
                         bytes",
                        section.name,
                        effective_alignment(section.alignment)
                    ),
                )
            })?;
        for atom in &section.atoms {
            let entry = &mut graph.atoms[atom.index()];
            entry.file_offset = file_offset + entry.address;
        }
        section.file_offset = file_offset;
        section.size = offset;
        section.file_size = offset;
        layout.file_size = file_offset + offset;
        layout.sections.push(section);
    }
    Ok(())
}

/// The permission group (an index into [`SEGMENT_FLAGS`]) of an output section; `relro` is `-z relro`,
/// `full_relro` whether `.got.plt` is read-only after start-up too.
fn group_of(section: &OutputSection, relro: bool, full_relro: bool) -> usize {
    let kind = section.id.map(OutputSectionId::kind);
    if section.flags & section_flags::EXECUTABLE != 0 {
        1
    } else if section.flags & section_flags::WRITABLE != 0 {
        // TLS templates and the table's RELRO sections are written only by the start-up code.
        let read_only_after_start_up = section.flags & section_flags::TLS != 0
            || kind.is_some_and(|kind| kind.relro)
            || (full_relro && section.id == Some(OutputSectionId::IgotPlt));
        if relro && read_only_after_start_up {
            RELRO_GROUP
        } else {
            4
        }
    } else if kind.map_or(section.sh_type == SectionKind::Note, |kind| kind.with_headers) {
        0
    } else {
        2
    }
}

/// The program headers other than loads that the sorted output sections call for, each with the sections
/// it covers: one `PT_NOTE` per run of notes with the same alignment (as ld.bfd makes them), then `PT_TLS`
/// over `.tdata` and `.tbss`.
fn other_program_headers<'s>(
    sections: impl Iterator<Item = &'s OutputSection>,
) -> Vec<(ProgramHeaderKind, Vec<usize>)> {
    let mut headers: Vec<(ProgramHeaderKind, Vec<usize>)> = Vec::new();
    let mut tls = Vec::new();
    let mut frame_header = None;
    let mut property = None;
    let mut relro = Vec::new();
    let mut note_alignment = None;
    for (index, section) in sections.enumerate() {
        // `PT_PHDR` and `PT_INTERP` come before the loads (`PT_PHDR` covers no section: the header table).
        if section.id == Some(OutputSectionId::Interp) {
            headers.insert(0, (ProgramHeaderKind::Interp, vec![index]));
            headers.insert(0, (ProgramHeaderKind::Phdr, Vec::new()));
        }
        // `PT_DYNAMIC` comes first after the loads, as ld.bfd orders them.
        if section.id == Some(OutputSectionId::Dynamic) {
            headers.insert(0, (ProgramHeaderKind::Dynamic, vec![index]));
        }
        if section.id == Some(OutputSectionId::EhFrameHdr) {
            frame_header = Some(index);
        }
        if section.id == Some(OutputSectionId::NoteGnuProperty) {
            property = Some(index);
        }
        if section.segment == RELRO_GROUP {
            relro.push(index);
        }
        if section.segment == 0 && section.sh_type == SectionKind::Note {
            match headers.last_mut() {
                Some((ProgramHeaderKind::Note, members)) if note_alignment == Some(section.alignment) => {
                    members.push(index);
                }
                _ => headers.push((ProgramHeaderKind::Note, vec![index])),
            }
            note_alignment = Some(section.alignment);
        } else {
            note_alignment = None;
        }
        if section.flags & section_flags::TLS != 0 {
            tls.push(index);
        }
    }
    if !tls.is_empty() {
        headers.push((ProgramHeaderKind::Tls, tls));
    }
    if let Some(property) = property {
        headers.push((ProgramHeaderKind::GnuProperty, vec![property]));
    }
    if let Some(header) = frame_header {
        headers.push((ProgramHeaderKind::GnuEhFrame, vec![header]));
    }
    if !relro.is_empty() {
        headers.push((ProgramHeaderKind::GnuRelro, relro));
    }
    headers
}

/// The program headers other than loads over the placed sections and `PT_LOAD`s, and the TLS template.
/// `PT_GNU_RELRO` ends where the memory of its sections' `PT_LOAD`s does: at the end of a page (see
/// [`place`]), the next `PT_LOAD` starting on a page of its own.
fn describe_program_headers(
    sections: &[OutputSection],
    segments: &[OutputSegment],
    others: Vec<(ProgramHeaderKind, Vec<usize>)>,
    variant: TlsVariant,
) -> (Vec<ProgramHeaderLayout>, Option<TlsTemplate>) {
    let mut tls = None;
    let count = segments.len() + others.len();
    let headers = others
        .into_iter()
        .map(|(kind, members)| {
            if members.is_empty() {
                // `PT_PHDR`: the table after the ELF header, at the start of the first load.
                let (address, offset) = segments
                    .first()
                    .map_or((0, 0), |segment| (segment.address, segment.file_offset));
                let size = elf_headers_size(count) - FILE_HEADER_SIZE;
                return ProgramHeaderLayout {
                    kind,
                    flags: SegmentFlags::READ,
                    virtual_address: address + FILE_HEADER_SIZE,
                    file_offset: offset + FILE_HEADER_SIZE,
                    file_size: size,
                    memory_size: size,
                    alignment: 8,
                };
            }
            let covered = || members.iter().map(|index| &sections[*index]);
            let first = &sections[members[0]];
            let start = first.address;
            let end = covered()
                .map(|section| section.address + section.size)
                .max()
                .unwrap_or(start);
            let file_end = covered()
                .filter(|section| section.file_size > 0)
                .map(|section| section.address + section.file_size)
                .max()
                .unwrap_or(start);
            let mut alignment = covered().map(|section| section.alignment).max().unwrap_or(1);
            let (mut end, mut file_end) = (end, file_end);
            if kind == ProgramHeaderKind::GnuRelro {
                end = covered()
                    .filter_map(|section| segments.get(section.segment))
                    .map(|segment| segment.address + segment.memory_size)
                    .max()
                    .unwrap_or(end);
                file_end = end;
                alignment = 1;
            }
            if kind == ProgramHeaderKind::Tls {
                tls = Some(TlsTemplate {
                    address: start,
                    memory_size: end - start,
                    alignment,
                    variant,
                });
            }
            let flags = match kind {
                ProgramHeaderKind::Dynamic => SegmentFlags::READ.union(SegmentFlags::WRITE),
                _ => SegmentFlags::READ,
            };
            ProgramHeaderLayout {
                kind,
                flags,
                virtual_address: start,
                file_offset: first.file_offset,
                file_size: file_end - start,
                memory_size: end - start,
                alignment,
            }
        })
        .collect();
    (headers, tls)
}

/// Places the sorted output sections and their atoms, making one `PT_LOAD` per permission group (more
/// where an alignment gap splits one), with room at the image base for `headers` program headers besides
/// `PT_GNU_STACK`.
fn place(
    context: &mut LinkContext,
    sections: &mut [(OutputSection, u32)],
    headers: usize,
) -> Result<Layout, PhaseError> {
    let graph = &mut context.graph;
    let page = context.options.page_size.max(1);
    let base = context.options.image_base;
    let limit = Limit {
        base,
        max: context.options.max_output_size,
    };
    let mut layout = Layout::default();
    let headers = elf_headers_size(headers);
    let mut address = limit.check(base.checked_add(headers), || "the image headers".to_string())?;
    // Where the next segment's file bytes may start: after each segment's file bytes. A segment's file offset
    // only has to be congruent with its address modulo the page size (and its group's strictest alignment,
    // below), so the gap an aligned first section leaves in the address space costs little in the file.
    let mut file_cursor = 0;
    let section_starts = &context.options.section_starts;
    // Each group's sections, read before placing turns groups into `PT_LOAD` indices: a group split into
    // several `PT_LOAD`s would otherwise number a section as a later group.
    let flags_of_groups = segment_flags(context.options.separate_code);
    let members_of_groups: Vec<Vec<usize>> = (0..flags_of_groups.len())
        .map(|group| {
            (0..sections.len())
                .filter(|index| sections[*index].0.segment == group)
                .collect()
        })
        .collect();
    for ((group, flags), members) in flags_of_groups.into_iter().enumerate().zip(members_of_groups) {
        // The run of sections placed since the current `PT_LOAD` began: its start address, file offset and the
        // end of its file bytes. The first begins at the image base with the headers.
        let mut run: Option<(u64, u64, u64, Vec<usize>)> = (group == 0).then(|| (base, 0, address, Vec::new()));
        // A segment's file offset is congruent with its address modulo the page size, and modulo the strictest
        // alignment of the group's thread-local sections too, so that a `.tdata` aligned beyond the page keeps
        // `PT_TLS`'s alignment in the file as in memory.
        // Only thread-local sections count: an alignment gap elsewhere would otherwise cost up to the
        // alignment in the file (a `.text` aligned to 4 GiB would make a 4 GiB file, as ld.bfd's is).
        let modulus = members
            .iter()
            .filter(|index| sections[**index].0.flags & section_flags::TLS != 0)
            .map(|index| effective_alignment(sections[*index].0.alignment))
            .fold(effective_alignment(page), u64::max);
        for index in members {
            // The output section is aligned as strictly as its most strictly aligned input section, which is
            // the one to blame when the alignment does not fit.
            let blame = |section: &OutputSection| {
                section
                    .atoms
                    .iter()
                    .map(|atom| &graph.atoms[atom.index()])
                    .max_by_key(|atom| atom.alignment)
                    .map_or_else(
                        || format!("output section `{}`", section.name),
                        |atom| describe(graph, atom),
                    )
            };
            let alignment = sections[index].0.alignment;
            // A section given a fixed address (`--section-start`) is placed there; the sections after it follow
            // it. The last address given for the name counts, as with GNU ld.
            let fixed = section_starts
                .iter()
                .rev()
                .find(|(name, _)| *name == sections[index].0.name)
                .map(|(_, start)| *start);
            let aligned = match fixed {
                Some(start) => fixed_start(&limit, &sections[index].0, start, address)?,
                None => limit.check(align(address, alignment), || blame(&sections[index].0))?,
            };
            // A section that would leave more than a page of zeros after the one before starts a `PT_LOAD` of
            // its own (as does the first of each permission, and a section at a fixed address that does not
            // follow on): its file offset is then only congruent with its address modulo the page size and the
            // group's strictest alignment, so the gap costs at most that in the file.
            let starts_segment = run.is_none() || aligned - address > page || (fixed.is_some() && aligned != address);
            if starts_segment {
                let next = match fixed {
                    Some(_) => aligned,
                    None => limit.check(align(address, alignment.max(page)), || blame(&sections[index].0))?,
                };
                if let Some(finished) = run.take() {
                    // The RELRO part is made read-only as one range, which must be mapped throughout: its
                    // `PT_LOAD`s reach each other in memory.
                    let end = if group == RELRO_GROUP { next } else { address };
                    file_cursor = push_segment(&mut layout, sections, flags, finished, end);
                }
                address = next;
                // The file is held to the output limit as the address space is: a thread-local section
                // aligned far beyond the page would otherwise move its segment's bytes that far into the file.
                let file_start = align(file_cursor, modulus)
                    .and_then(|start| start.checked_add(address % modulus))
                    .filter(|start| *start <= limit.max)
                    .ok_or_else(|| {
                        PhaseError::new(
                            PHASE,
                            format!(
                                "{}: the segment's file offset (congruent with its address modulo the alignment \
                                 {modulus:#x}) would pass the limit of {:#x} bytes",
                                blame(&sections[index].0),
                                limit.max
                            ),
                        )
                    })?;
                run = Some((address, file_start, address, Vec::new()));
            } else {
                address = aligned;
            }
            let section = &mut sections[index].0;
            let Some((start, file_start, file_end, run_members)) = run.as_mut() else {
                continue;
            };
            section.address = address;
            // Unwind tables are a sequence of records that a reader walks up to a zero terminator: padding
            // between the inputs' tables would read as one. Records are 4-byte multiples, so the tables are
            // packed at 4 whatever their sections' alignment says (as ld.bfd and lld write them).
            let packed = section.name == ".eh_frame";
            for atom in &section.atoms {
                let entry = &graph.atoms[atom.index()];
                let alignment = if packed {
                    effective_alignment(entry.alignment).min(4)
                } else {
                    entry.alignment
                };
                let placed = limit.check(align(address, alignment), || describe(graph, entry))?;
                let end = limit.check(placed.checked_add(entry.size()), || describe(graph, entry))?;
                let entry = &mut graph.atoms[atom.index()];
                entry.address = placed;
                entry.file_offset = *file_start + (placed - *start);
                address = end;
            }
            section.size = address - section.address;
            section.file_offset = *file_start + (section.address - *start);
            let is_bss = section
                .atoms
                .iter()
                .all(|atom| graph.atoms[atom.index()].content == Content::ZeroFill);
            section.file_size = if is_bss { 0 } else { section.size };
            if !is_bss {
                *file_end = address;
            } else if section.flags & section_flags::TLS != 0 {
                // `.tbss` takes no room in the address space of the sections after it (its template lives
                // only in each thread's block), but its alignment padding does, as ld.bfd places it: its start
                // then lies in its segment.
                address = section.address;
            }
            run_members.push(index);
        }
        if let Some(finished) = run.take() {
            // As lld pads it, the RELRO part's last `PT_LOAD` reaches the end of its page in memory, so that
            // `PT_GNU_RELRO` can end on a page boundary (which `mprotect` needs) inside mapped memory whatever
            // the page size of the system that runs the program, up to the maximum page size.
            if group == RELRO_GROUP {
                address = limit.check(align(address, page), || "the RELRO segment".to_string())?;
            }
            file_cursor = push_segment(&mut layout, sections, flags, finished, address);
        }
    }
    Ok(layout)
}

/// The address of `section`, given the fixed address `start`, when the sections before it end at `address`:
/// `start` itself, which must not lie below them (sections are laid out in ascending address order), must
/// honour the section's alignment, and must lie within the output limit.
fn fixed_start(limit: &Limit, section: &OutputSection, start: u64, address: u64) -> Result<u64, PhaseError> {
    let what = || format!("--section-start {}={start:#x}", section.name);
    if start < address {
        return Err(PhaseError::new(
            PHASE,
            format!(
                "{}: the address lies below the end of the sections placed before it ({address:#x}); neverc-spec \
                 places output sections in ascending address order",
                what()
            ),
        ));
    }
    if start % effective_alignment(section.alignment) != 0 {
        return Err(PhaseError::new(
            PHASE,
            format!(
                "{}: the address is not a multiple of the section's alignment {:#x}",
                what(),
                effective_alignment(section.alignment)
            ),
        ));
    }
    limit.check(Some(start), what)
}

/// `value` rounded up to a multiple of `alignment` (read as ld.bfd reads an input alignment, so a power of
/// two), or `None` when that overflows.
fn align(value: u64, alignment: u64) -> Option<u64> {
    let mask = effective_alignment(alignment) - 1;
    value.checked_add(mask).map(|value| value & !mask)
}

/// Closes a `PT_LOAD`: the run of sections from `start` (file offset `file_start`, file bytes up to
/// `file_end`) to `end` in memory. Returns where the next segment's file bytes may start.
fn push_segment(
    layout: &mut Layout,
    sections: &mut [(OutputSection, u32)],
    flags: SegmentFlags,
    (start, file_start, file_end, members): (u64, u64, u64, Vec<usize>),
    end: u64,
) -> u64 {
    let segment = layout.segments.len();
    for index in &members {
        sections[*index].0.segment = segment;
    }
    layout.segments.push(OutputSegment {
        flags,
        address: start,
        file_offset: file_start,
        file_size: file_end - start,
        memory_size: end - start,
        sections: members,
    });
    file_start + (file_end - start)
}

/// The output limit: every address laid out lies at most `max` bytes past `base`.
struct Limit {
    base: u64,
    max: u64,
}

impl Limit {
    /// `address` if it exists (no overflow) and lies within the limit; otherwise an error naming `what`.
    fn check(&self, address: Option<u64>, what: impl FnOnce() -> String) -> Result<u64, PhaseError> {
        match address {
            Some(address) if address.checked_sub(self.base).is_some_and(|offset| offset <= self.max) => Ok(address),
            Some(address) => Err(PhaseError::new(
                PHASE,
                format!(
                    "{}: the output would extend to address {address:#x}, past the limit of {:#x} bytes from the image base {:#x}",
                    what(),
                    self.max,
                    self.base
                ),
            )),
            None => Err(PhaseError::new(
                PHASE,
                format!(
                    "{}: the output address overflows 64 bits (the limit is {:#x} bytes from the image base {:#x})",
                    what(),
                    self.max,
                    self.base
                ),
            )),
        }
    }
}

/// An input section (an atom) for an error: its input, name, alignment and size.
fn describe(graph: &LinkGraph, atom: &Atom) -> String {
    format!(
        "{}: section `{}` (alignment {:#x}, size {:#x})",
        graph.input_name(atom.origin.input()),
        atom.name,
        atom.alignment,
        atom.size()
    )
}

/// Atoms named by `order` constraints come first, by the constraint's value; the rest keep their order.
fn apply_order_constraints(graph: &LinkGraph, atoms: &mut [AtomId]) {
    if graph.constraints.is_empty() {
        return;
    }
    let mut positions: FxHashMap<u32, u64> = FxHashMap::default();
    for constraint in &graph.constraints {
        if constraint.kind == "order"
            && let Ok(atom) = u32::try_from(constraint.subject)
        {
            positions.entry(atom).or_insert(constraint.value);
        }
    }
    atoms.sort_by_key(|atom| positions.get(&atom.0).copied().unwrap_or(u64::MAX));
}

/// Values of the names the linker defines, from the layout.
fn define_linker_symbol_values(context: &mut LinkContext, layout: &Layout) {
    let span = |section: &OutputSection| (section.address, section.address + section.size);
    let bounds = |name: &str| layout.sections.iter().find(|section| section.name == name).map(span);
    let bounds_of = |id: OutputSectionId| layout.sections.iter().find(|section| section.id == Some(id)).map(span);
    let writable: Vec<&OutputSegment> = layout
        .segments
        .iter()
        .filter(|segment| segment.flags.contains(SegmentFlags::WRITE))
        .collect();
    let first_writable = writable.first().copied();
    // The data's file bytes end with the last writable segment's that has any (RELRO data has a segment of
    // its own, and a `.bss` aligned beyond the page may have one without file bytes).
    let last_writable = writable
        .iter()
        .rev()
        .find(|segment| segment.file_size > 0)
        .or(writable.last())
        .copied();
    let data_start = first_writable.map_or(context.options.image_base, |segment| segment.address);
    let data_file_end = last_writable.map_or(data_start, |segment| segment.address + segment.file_size);
    let memory_end = layout
        .segments
        .iter()
        .map(|segment| segment.address + segment.memory_size)
        .max()
        .unwrap_or(context.options.image_base);
    let text_end = bounds_of(OutputSectionId::Text).map_or(context.options.image_base, |(_, end)| end);
    let names: Vec<(String, crate::graph::SymbolId)> = context
        .global_symbols
        .iter()
        .filter(|(_, symbol)| {
            let symbol = &context.graph.symbols[symbol.index()];
            symbol.definition == Definition::Absolute && symbol.atom.is_none() && symbol.origin.input().is_none()
        })
        .map(|(name, symbol)| (name.clone(), *symbol))
        .collect();
    for (name, symbol) in names {
        let array = |section: OutputSectionId, end: bool| {
            bounds_of(section).map_or(data_start, |(start, stop)| if end { stop } else { start })
        };
        // Names defined for sections that were all discarded keep the value 0.
        let dynamic = context.options.output_kind.has_dynamic_section();
        let Some(meaning) = linker_defined(&name, |_| true, dynamic, context.graph.arch()) else {
            continue;
        };
        let value = match meaning {
            LinkerDefined::ArrayBound { section, end } => array(section, end),
            LinkerDefined::BssStart => bounds_of(OutputSectionId::Bss).map_or(data_file_end, |(start, _)| start),
            LinkerDefined::DataEnd => data_file_end,
            LinkerDefined::End => memory_end,
            LinkerDefined::TextEnd => text_end,
            LinkerDefined::ImageBase => context.options.image_base,
            LinkerDefined::GlobalOffsetTable => bounds_of(OutputSectionId::Got).map_or(0, |(start, _)| start),
            LinkerDefined::SectionBound { section, end: false } => bounds(section).map_or(0, |(start, _)| start),
            LinkerDefined::SectionBound { section, end: true } => bounds(section).map_or(0, |(_, end)| end),
            LinkerDefined::Dynamic => bounds_of(OutputSectionId::Dynamic).map_or(0, |(start, _)| start),
            LinkerDefined::GlobalPointer => {
                // GNU ld: MIN(__SDATA_BEGIN__ + 0x800, MAX(__DATA_BEGIN__ + 0x800, __BSS_END__ - 0x800)), where
                // the small data begins after `.got` (at the end of the data's file bytes without any).
                let small_data = bounds(".sdata").map_or(data_file_end, |(start, _)| start);
                let data = bounds_of(OutputSectionId::Data).map_or(data_start, |(start, _)| start);
                let bss_end = bounds_of(OutputSectionId::Bss).map_or(memory_end, |(_, end)| end);
                (small_data + 0x800).min((data + 0x800).max(bss_end.saturating_sub(0x800)))
            }
        };
        context.graph.symbols[symbol.index()].value = value;
    }
}

/// `atoms` (of one output section, in order) with every thunk moved right after the atom whose branches
/// it serves (a thunk whose caller is elsewhere stays where it is).
fn place_after_callers(atoms: &mut Vec<AtomId>, thunks: &[Thunk]) {
    if thunks.is_empty() {
        return;
    }
    let mut after: FxHashMap<AtomId, Vec<AtomId>> = FxHashMap::default();
    for thunk in thunks {
        after.entry(thunk.anchor).or_default().push(thunk.atom);
    }
    let present: rustc_hash::FxHashSet<AtomId> = atoms.iter().copied().collect();
    let placed: rustc_hash::FxHashSet<AtomId> = thunks
        .iter()
        .filter(|thunk| present.contains(&thunk.anchor))
        .map(|thunk| thunk.atom)
        .collect();
    let mut ordered = Vec::with_capacity(atoms.len());
    for atom in atoms.iter() {
        if placed.contains(atom) {
            continue;
        }
        ordered.push(*atom);
        if let Some(thunks) = after.get(atom) {
            ordered.extend(thunks.iter().filter(|thunk| present.contains(thunk)));
        }
    }
    *atoms = ordered;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thunks_go_right_after_their_callers() {
        let thunk = |atom, anchor| Thunk {
            atom: AtomId(atom),
            anchor: AtomId(anchor),
            destination: (None, Some(AtomId(0)), 0),
        };
        // Atoms 1, 2, 3 in a section, thunks 10 and 11 (for 1) and 12 (for 3) appended at its end as layout
        // first collects them, and 13 for an atom of another section.
        let mut atoms: Vec<AtomId> = [1, 2, 3, 10, 11, 12, 13].into_iter().map(AtomId).collect();
        let thunks = [thunk(10, 1), thunk(11, 1), thunk(12, 3), thunk(13, 7)];
        place_after_callers(&mut atoms, &thunks);
        let order: Vec<u32> = atoms.iter().map(|atom| atom.0).collect();
        assert_eq!(order, [1, 10, 11, 2, 3, 12, 13]);
        let mut unchanged = vec![AtomId(4), AtomId(5)];
        place_after_callers(&mut unchanged, &[]);
        assert_eq!(unchanged, [AtomId(4), AtomId(5)]);
    }
}
