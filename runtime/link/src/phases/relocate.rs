//! `neverc.link.relocate`: copy every placed atom into its output section's bytes and patch each edge:
//! absolute (`64`, `32`, `32S`), PC-relative (`PC32`, `PLT32`, `PC64`), GOT loads (`GOTPCREL`, and
//! `GOTPCRELX`/`REX_GOTPCRELX` relaxed to direct addresses where the instruction allows, unless
//! `--no-relax`), and on AArch64
//! the instruction fields (`ADR_PREL_PG_HI21`, `ADD_ABS_LO12_NC`, `LDSTn_ABS_LO12_NC`, `CALL26`, ...), every
//! one by its declared kind, base and field. TLS sequences of other models are relaxed to local-exec, by
//! per-architecture code (`x86_64_tls.rs`, `aarch64_tls.rs`). A value that does not fit its field is an error
//! naming the input, the section, the offset and the symbol (a branch that does not reach went through a
//! range-extension thunk, made by `relax_thunks`).

use crate::address::{Addresses, plt_entry, target_value};
use crate::arch::{ErratumSequence, TlsAccess, TlsRelaxed, TlsToInitialExec, UndefinedWeak};
use crate::context::{ErratumSite, Layout, LinkContext, LinkOptions, OutputSection, PhaseError};
use crate::graph::{AtomId, Binding, Definition, Edge, LinkGraph, SymbolId};
use crate::image::{HOLE, SparseBytes};
use crate::phases::LinkPhase;
use crate::sections::OutputSectionId;
use crate::synth::tls::TlsEntry;
use crate::synth::{LateValue, Synthesized, eh_frame, got};
use neverc_tables::{RelocationBase, RelocationKind, RelocationRecord};

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const PHASE: LinkPhase = LinkPhase::Relocate;

/// What patching edges reads of the link context, shared by the relocating threads (the context itself
/// holds plugin state that stays on the link's thread).
#[derive(Clone, Copy)]
struct Relocator<'a> {
    graph: &'a LinkGraph,
    synthesized: &'a Synthesized,
    options: &'a LinkOptions,
    erratum_sites: &'a [ErratumSite],
    layout: &'a Layout,
    /// The address of the architecture's global pointer, if it has one and the output defines it.
    global_pointer: Option<u64>,
}

impl<'a> Relocator<'a> {
    fn new(context: &'a LinkContext, layout: &'a Layout) -> Relocator<'a> {
        Relocator {
            layout,
            graph: &context.graph,
            synthesized: &context.synthesized,
            options: &context.options,
            erratum_sites: &context.erratum_sites,
            global_pointer: context
                .graph
                .arch()
                .global_pointer
                .and_then(|name| context.global_symbols.get(name))
                .and_then(|symbol| crate::address::symbol_address(context, *symbol)),
        }
    }

    fn got_slot_of(&self, symbol: SymbolId) -> Option<usize> {
        self.synthesized.got_slots.get(&symbol).copied()
    }

    fn got_atom(&self) -> Option<AtomId> {
        self.synthesized.got_atom
    }

    /// The erratum sites in `atom`, by offset.
    fn erratum_sites_of(&self, atom: AtomId) -> &'a [ErratumSite] {
        let start = self.erratum_sites.partition_point(|site| site.atom < atom);
        let end = self.erratum_sites.partition_point(|site| site.atom <= atom);
        &self.erratum_sites[start..end]
    }
}

impl Addresses for Relocator<'_> {
    fn graph(&self) -> &LinkGraph {
        self.graph
    }

    fn synthesized(&self) -> &Synthesized {
        self.synthesized
    }
}

/// Whether an edge refers to a weak symbol that nothing defines.
fn is_undefined_weak(context: &Relocator<'_>, edge: &Edge) -> bool {
    edge.target_symbol.get().is_some_and(|symbol| {
        let symbol = &context.graph.symbols[context.graph.resolved(symbol).index()];
        symbol.definition == Definition::Undefined && symbol.binding == Binding::Weak
    })
}

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let layout = context.required_layout(PHASE)?;
    let relocator = Relocator::new(context, layout);
    // Layout bounded every section by the output limit. A section's bytes are sparse: an alignment gap of
    // a hole or more between two atoms is never allocated (nor written to the file), and what is stored
    // is allocated fallibly, so that a layout a plugin made cannot abort the link.
    let mut buffers: Vec<SparseBytes> = Vec::with_capacity(layout.sections.len());
    for section in &layout.sections {
        if section.file_size > context.options.max_output_size {
            return Err(PhaseError::new(
                PHASE,
                format!(
                    "output section `{}`: {:#x} bytes exceed the output limit of {:#x} bytes",
                    section.name, section.file_size, context.options.max_output_size
                ),
            ));
        }
        buffers.push(section_buffer(&relocator, section)?);
    }
    // A section stored in one piece whose atoms lie in address order is cut into pieces at atom boundaries,
    // placed by the threads side by side; any other section is placed here, atom by atom. Errors are keyed
    // by (section, piece), so they are reported in the same order however many threads there are.
    let threads = context.options.threads.max(1);
    let target = piece_weight(&relocator, layout, threads);
    let mut errors: Vec<((usize, usize), String)> = Vec::new();
    let mut pieces = Vec::new();
    for (index, (section, buffer)) in layout.sections.iter().zip(&mut buffers).enumerate() {
        if section.file_size == 0 {
            continue;
        }
        if buffer.is_dense() && atoms_in_order(&relocator, section) {
            if let Some(bytes) = buffer.dense_mut() {
                cut_into_pieces(&relocator, index, section, bytes, target, &mut pieces);
            }
            continue;
        }
        for atom in &section.atoms {
            if let Err(error) = place_atom(&relocator, *atom, section, buffer) {
                errors.push(((index, 0), error));
            }
        }
    }
    errors.extend(place_pieces(&relocator, pieces, threads));
    if !errors.is_empty() {
        errors.sort_by_key(|(key, _)| *key);
        let messages: Vec<String> = errors.into_iter().map(|(_, message)| message).collect();
        return Err(PhaseError::new(PHASE, messages.join("\n")));
    }
    fill_eh_frame_header(layout, &mut buffers)?;
    fill_late_values(context, layout, &mut buffers)?;
    context.set_section_bytes(buffers);
    Ok(())
}

/// A run of atoms of one section and the bytes of the section they lie in (alignment gaps included).
struct Piece<'a> {
    section_index: usize,
    /// Its position among the pieces of its section.
    sequence: usize,
    section: &'a OutputSection,
    atoms: &'a [AtomId],
    /// The offset in the section of `bytes[0]`.
    start: u64,
    bytes: &'a mut [u8],
}

/// What placing an atom costs, roughly: its bytes copied and its edges patched.
fn atom_weight(context: &Relocator<'_>, atom: AtomId) -> u64 {
    let entry = &context.graph.atoms[atom.index()];
    let edges = context
        .graph
        .edges_by_atom
        .get(atom.index())
        .map_or(0, |range| u64::from(range.end - range.start));
    let fills = context
        .synthesized
        .rela_dyn
        .as_ref()
        .filter(|rela| rela.atom == atom)
        .map_or(0, |rela| rela.fills.len() as u64);
    context.graph.atom_bytes(entry).len() as u64 + 64 * (edges + fills)
}

/// The weight of a piece: the link's whole weight shared out as four pieces a thread (one piece a section
/// with one thread), so that the threads finish close together.
fn piece_weight(context: &Relocator<'_>, layout: &Layout, threads: usize) -> u64 {
    if threads <= 1 {
        return u64::MAX;
    }
    let total: u64 = layout
        .sections
        .iter()
        .flat_map(|section| &section.atoms)
        .map(|atom| atom_weight(context, *atom))
        .sum();
    (total / (4 * threads as u64)).max(16 * 1024)
}

/// Whether `section`'s atoms lie one after another in address order, each inside the section's file bytes
/// (what placing them in pieces needs; a section that breaks this is placed atom by atom, which reports
/// the atom that does not fit).
fn atoms_in_order(context: &Relocator<'_>, section: &OutputSection) -> bool {
    let mut end = 0u64;
    section.atoms.iter().all(|atom| {
        let entry = &context.graph.atoms[atom.index()];
        let length = context.graph.atom_bytes(entry).len() as u64;
        let fits = entry
            .address
            .checked_sub(section.address)
            .filter(|start| *start >= end)
            .and_then(|start| start.checked_add(length))
            .filter(|stop| *stop <= section.file_size);
        fits.inspect(|stop| end = *stop).is_some()
    })
}

/// Cuts the bytes of `section` (whose atoms are in order) into pieces of about `target` weight, at the
/// starts of atoms.
fn cut_into_pieces<'a>(
    context: &Relocator<'_>,
    section_index: usize,
    section: &'a OutputSection,
    bytes: &'a mut [u8],
    target: u64,
    pieces: &mut Vec<Piece<'a>>,
) {
    let offset_of = |atom: AtomId| context.graph.atoms[atom.index()].address - section.address;
    let mut rest = bytes;
    let mut start = 0u64;
    let mut first = 0;
    let mut weight = 0u64;
    let mut sequence = 0;
    for (index, atom) in section.atoms.iter().enumerate() {
        if weight >= target && index > first {
            let cut = offset_of(*atom);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut((cut - start) as usize);
            pieces.push(Piece {
                section_index,
                sequence,
                section,
                atoms: &section.atoms[first..index],
                start,
                bytes: head,
            });
            rest = tail;
            start = cut;
            first = index;
            weight = 0;
            sequence += 1;
        }
        weight = weight.saturating_add(atom_weight(context, *atom));
    }
    pieces.push(Piece {
        section_index,
        sequence,
        section,
        atoms: &section.atoms[first..],
        start,
        bytes: rest,
    });
}

/// Places the pieces on up to `threads` threads (the calling one among them), each taking the next piece
/// not taken yet; returns the errors, keyed by (section, piece).
fn place_pieces(context: &Relocator<'_>, pieces: Vec<Piece<'_>>, threads: usize) -> Vec<((usize, usize), String)> {
    let threads = threads.min(pieces.len()).max(1);
    let queue: Vec<Mutex<Option<Piece<'_>>>> = pieces.into_iter().map(|piece| Mutex::new(Some(piece))).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut errors = Vec::new();
        while let Some(slot) = queue.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Each slot is taken once: a poisoned lock (a panic while it was held) cannot happen.
            if let Some(piece) = slot.lock().ok().and_then(|mut piece| piece.take()) {
                let key = (piece.section_index, piece.sequence);
                errors.extend(place_piece(context, piece).into_iter().map(|error| (key, error)));
            }
        }
        errors
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut errors = work();
        for other in others {
            match other.join() {
                Ok(found) => errors.extend(found),
                Err(_) => errors.push(((usize::MAX, 0), "a relocating thread panicked".to_string())),
            }
        }
        errors
    })
}

/// Copies a piece's atoms into its bytes and patches their edges.
fn place_piece(context: &Relocator<'_>, piece: Piece<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    for atom in piece.atoms {
        let entry = &context.graph.atoms[atom.index()];
        let bytes = context.graph.atom_bytes(entry);
        // `atoms_in_order` checked that every atom lies inside the section, after the piece's start.
        let at = (entry.address - piece.section.address - piece.start) as usize;
        let stored = &mut piece.bytes[at..at + bytes.len()];
        stored.copy_from_slice(bytes);
        if let Err(error) = patch_atom(context, *atom, stored) {
            errors.push(error);
        }
    }
    errors
}

/// The buffer `section`'s atoms are copied into: allocated whole, once, when its alignment gaps come to
/// less than a hole (nearly every section), so that no copy grows it; sparse otherwise.
fn section_buffer(context: &Relocator<'_>, section: &OutputSection) -> Result<SparseBytes, PhaseError> {
    let stored: u64 = section
        .atoms
        .iter()
        .map(|atom| context.graph.atom_bytes(&context.graph.atoms[atom.index()]).len() as u64)
        .sum();
    if section.file_size.saturating_sub(stored) >= HOLE {
        return Ok(SparseBytes::zeroed(section.file_size));
    }
    SparseBytes::stored_zeroed(section.file_size)
        .map_err(|error| PhaseError::new(PHASE, format!("output section `{}`: {error}", section.name)))
}

/// Writes `.eh_frame_hdr` from the relocated `.eh_frame`: the pointer to it and the sorted table of
/// (function, FDE) pairs the unwinder searches.
fn fill_eh_frame_header(layout: &Layout, buffers: &mut [SparseBytes]) -> Result<(), PhaseError> {
    let position = |id: OutputSectionId| layout.sections.iter().position(|section| section.id == Some(id));
    let (Some(header), Some(frames)) = (
        position(OutputSectionId::EhFrameHdr),
        position(OutputSectionId::EhFrame),
    ) else {
        return Ok(());
    };
    let failed = |what: &str| PhaseError::new(PHASE, format!("{}: {what}", OutputSectionId::EhFrameHdr.name()));
    let frames_section = &layout.sections[frames];
    let bytes = buffers[frames]
        .read(0, frames_section.file_size)
        .ok()
        .flatten()
        .ok_or_else(|| failed("cannot read the unwind tables"))?;
    let locations = eh_frame::fde_locations(&bytes, frames_section.address);
    let header_section = &layout.sections[header];
    let table = eh_frame::header_table(
        header_section.address,
        frames_section.address,
        locations.as_deref(),
        header_section.file_size,
    )
    .ok_or_else(|| failed("the unwind tables lie too far from their search table"))?;
    buffers[header]
        .write_at(0, &table)
        .map_err(|error| failed(&error.to_string()))
}

/// Writes what only the final layout gives into the linker's own tables (`.dynamic`'s array addresses and
/// sizes, the section indices of `.dynsym`'s definitions).
fn fill_late_values(context: &LinkContext, layout: &Layout, buffers: &mut [SparseBytes]) -> Result<(), PhaseError> {
    if context.synthesized.late_fills.is_empty() {
        return Ok(());
    }
    let sections: rustc_hash::FxHashMap<AtomId, usize> = layout
        .sections
        .iter()
        .enumerate()
        .flat_map(|(index, section)| section.atoms.iter().map(move |atom| (*atom, index)))
        .collect();
    let section_of = |atom: AtomId| sections.get(&atom).copied();
    let by_id = |id: OutputSectionId| layout.sections.iter().find(|section| section.id == Some(id));
    for fill in &context.synthesized.late_fills {
        let failed = |what: &str| {
            PhaseError::new(
                PHASE,
                format!("`{}`: {what}", context.graph.atoms[fill.atom.index()].name),
            )
        };
        let Some(index) = section_of(fill.atom) else {
            continue;
        };
        let section = &layout.sections[index];
        let atom = &context.graph.atoms[fill.atom.index()];
        let at = atom
            .address
            .checked_sub(section.address)
            .and_then(|start| start.checked_add(fill.offset))
            .ok_or_else(|| failed("a filled value lies outside its section"))?;
        let bytes: Vec<u8> = match fill.value {
            LateValue::Start(id) => by_id(id).map_or(0, |found| found.address).to_le_bytes().to_vec(),
            LateValue::Size(id) => by_id(id).map_or(0, |found| found.size).to_le_bytes().to_vec(),
            LateValue::SectionIndex(target) => {
                let target = crate::address::placed_atom(context, target).unwrap_or(target);
                let index = section_of(target).ok_or_else(|| failed("a symbol's atom is in no output section"))?;
                u16::try_from(index + 1)
                    .map_err(|_| failed("more output sections than a 16-bit section index holds"))?
                    .to_le_bytes()
                    .to_vec()
            }
            LateValue::TlsOffset(symbol) => {
                let start = layout.tls.map_or(0, |tls| tls.address);
                crate::address::symbol_address(context, symbol)
                    .unwrap_or(start)
                    .wrapping_sub(start)
                    .to_le_bytes()
                    .to_vec()
            }
        };
        buffers[index]
            .write_at(at, &bytes)
            .map_err(|error| failed(&error.to_string()))?;
    }
    Ok(())
}

/// Copies one atom into its section's bytes and patches its edges; the message of the first failure.
fn place_atom(
    context: &Relocator<'_>,
    atom: AtomId,
    section: &OutputSection,
    buffer: &mut SparseBytes,
) -> Result<(), String> {
    let entry = &context.graph.atoms[atom.index()];
    let bytes = context.graph.atom_bytes(entry);
    let misfit = || format!("atom `{}` does not fit its output section", entry.name);
    let start = entry.address.checked_sub(section.address).ok_or_else(misfit)?;
    let length = bytes.len() as u64;
    if start.checked_add(length).is_none_or(|end| end > buffer.len()) {
        return Err(misfit());
    }
    buffer
        .write_at(start, bytes)
        .map_err(|error| format!("output section `{}`: atom `{}`: {error}", section.name, entry.name))?;
    // An empty atom stores nothing (and an edge of it lies past it).
    let mut nothing = [];
    let (stored, at) = match buffer.stored_mut(start, length) {
        Some(found) => found,
        None if length == 0 => (&mut nothing[..], 0),
        None => return Err(misfit()),
    };
    patch_atom(context, atom, &mut stored[at..at + bytes.len()])
}

/// Patches the edges of `atom` in its placed bytes, `stored` (and fixes the sequences a core erratum
/// affects). An edge reaches no byte outside its atom: one that would is an error, whatever lies next to it.
fn patch_atom(context: &Relocator<'_>, atom: AtomId, stored: &mut [u8]) -> Result<(), String> {
    let entry = &context.graph.atoms[atom.index()];
    let at = 0;
    let mut messages = Vec::new();
    // A TLS relaxation rewrites a whole code sequence; the relocations inside it (the call of
    // `__tls_get_addr`) go with it.
    let arch = context.graph.arch();
    let sequence_of = |edge: &Edge| {
        context
            .graph
            .relocation_kind(edge)
            .and_then(|kind| (arch.rewritten_sequence)(kind, edge.offset))
    };
    // A shared library keeps its TLS sequences as they are (`synth::tls`).
    let rewritten: Vec<std::ops::Range<u64>> = if context.options.output_kind.is_shared_library() {
        Vec::new()
    } else {
        context
            .graph
            .edges_of(atom)
            .filter_map(|(_, edge)| sequence_of(edge))
            .collect()
    };
    for (_, edge) in context.graph.edges_of(atom) {
        if !rewritten.is_empty()
            && rewritten.iter().any(|range| range.contains(&edge.offset))
            && sequence_of(edge).is_none()
        {
            continue;
        }
        if let Err(message) = apply(context, edge, entry.address, stored, at) {
            let input = context.graph.input_name(entry.origin.input());
            messages.push(format!("{input}:{}+{:#x}: {message}", entry.name, edge.offset));
        }
    }
    // The words of `.rela.dyn` are patched as the edges they stand for.
    if let Some(rela) = context.synthesized.rela_dyn.as_ref().filter(|rela| rela.atom == atom) {
        for fill in &rela.fills {
            let edge = fill.edge(atom, rela.origin);
            if let Err(message) = apply(context, &edge, entry.address, stored, at) {
                messages.push(format!("{}+{:#x}: {message}", entry.name, edge.offset));
            }
        }
    }
    // Sequences a core erratum affects are made safe in the relocated code.
    if let Some(fix) = arch.erratum {
        for site in context.erratum_sites_of(atom) {
            let sequence = ErratumSequence {
                first_at: at + site.first as usize,
                first_place: entry.address + site.first,
                moved_at: at + site.moved as usize,
                moved_place: entry.address + site.moved,
                veneer: context.graph.atoms[site.veneer.index()].address,
            };
            if let Err(message) = (fix.apply)(stored, sequence) {
                let input = context.graph.input_name(entry.origin.input());
                messages.push(format!("{input}:{}+{:#x}: {message}", entry.name, site.first));
            }
        }
    }
    if messages.is_empty() {
        Ok(())
    } else {
        Err(messages.join("\n"))
    }
}

/// Patches one edge of an atom placed at `atom_address`, whose bytes start at `start` of `buffer`: what
/// the value is made of comes from the relocation's declared kind, what is subtracted from its declared
/// base, and how it is checked and written from its declared field and overflow rule. Only the instruction
/// rewrites of relaxations are per-architecture code.
fn apply(
    context: &Relocator<'_>,
    edge: &Edge,
    atom_address: u64,
    buffer: &mut [u8],
    start: usize,
) -> Result<(), String> {
    let graph = &context.graph;
    let record = graph
        .relocation(edge)
        .ok_or_else(|| format!("relocation type {} is not declared for the target", edge.relocation.raw))?;
    let at = usize::try_from(edge.offset)
        .ok()
        .and_then(|offset| start.checked_add(offset))
        .ok_or_else(|| format!("{} at offset {:#x} lies past its section", record.name, edge.offset))?;
    let place = i128::from(atom_address) + i128::from(edge.offset);
    let name = || {
        edge.target_symbol
            .get()
            .map(|symbol| graph.symbols[symbol.index()].name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "<section>".into())
    };
    let what = || format!("{} against `{}`", record.name, name());
    // An address of an import that only the loader knows is left for the dynamic relocation that names it
    // (its addend is in the relocation). A shared library's interposable definition has its link-time
    // address written (the loader replaces it where a dynamic relocation names the symbol; the library's own
    // tables, such as `.dynsym`'s values, keep it).
    if record.kind == RelocationKind::Symbol
        && record.relative_to == RelocationBase::Nothing
        && record.size == 64
        && let (Some(symbol), Some(imports)) = (edge.target_symbol.get(), &context.synthesized.dynamic_symbols)
        && imports.is_imported(graph.resolved(symbol))
    {
        return Ok(());
    }
    // S + A.
    let value = || target_value(context, edge).ok_or_else(|| format!("{}: no address", what()));
    // GOT + G + A.
    let got_entry = || got_entry_of(context, edge);
    // The offset of S + A from the thread pointer.
    let tp_offset = || -> Result<i128, String> {
        let tls = context
            .layout
            .tls
            .ok_or_else(|| format!("{}: the output has no TLS segment", what()))?;
        // A weak undefined TLS symbol (glibc has some) is the start of the block, as lld has it.
        let undefined = edge
            .target_symbol
            .get()
            .is_some_and(|symbol| graph.symbols[graph.resolved(symbol).index()].definition == Definition::Undefined);
        let address = if undefined {
            i128::from(tls.address)
        } else {
            value()? - i128::from(edge.addend)
        };
        let address = u64::try_from(address).map_err(|_| format!("`{}` has no TLS address", name()))?;
        Ok(tls.tp_offset(address) + i128::from(edge.addend))
    };
    // A total (`S + A`, `GOT + G + A`, ...) relative to the relocation's declared base.
    let relative_to_base = |total: i128| -> Result<i128, String> {
        Ok(match record.relative_to {
            RelocationBase::Nothing => total,
            RelocationBase::Place => total - place,
            RelocationBase::Page => (total & !0xfff) - (place & !0xfff),
            RelocationBase::Got => total - got_address(context)?,
            RelocationBase::GotPage => total - (got_address(context)? & !0xfff),
            RelocationBase::GlobalPointer => {
                total - i128::from(context.global_pointer.ok_or("the output has no global pointer")?)
            }
        })
    };
    let arch = graph.arch();
    // A static executable has no undefined symbols but weak ones, which are 0, unless the architecture says
    // otherwise (on AArch64 a call of one becomes a `nop` and a PC-relative reference resolves to the place,
    // as ld.bfd has it).
    if is_undefined_weak(context, edge)
        && let Some(weak) = (arch.undefined_weak)(record.kind, record.relative_to, place)
    {
        match weak {
            UndefinedWeak::Instruction(instruction) => {
                let field = at
                    .checked_add(4)
                    .and_then(|end| buffer.get_mut(at..end))
                    .ok_or_else(|| format!("{}: an instruction lies past the end of its section", what()))?;
                field.copy_from_slice(&instruction.to_le_bytes());
                return Ok(());
            }
            UndefinedWeak::Value(value) => {
                let relative = match record.relative_to {
                    RelocationBase::Page => (value & !0xfff) - (place & !0xfff),
                    _ => value - place,
                };
                return patch(buffer, at, record, relative, &what);
            }
        }
    }
    // What is left to write after an architecture rewrote a TLS sequence.
    let write_relaxed = |buffer: &mut [u8], relaxed: Result<TlsRelaxed, String>| -> Result<(), String> {
        match relaxed.map_err(|message| format!("{}: {message}", what()))? {
            TlsRelaxed::Done => Ok(()),
            TlsRelaxed::Signed32 { at, value } => write_signed32(buffer, at, value, &what),
            TlsRelaxed::Declared { total } => patch(buffer, at, record, relative_to_base(total)?, &what),
        }
    };
    // Sequences of the other TLS models are relaxed to local-exec by the architecture's rewrites.
    let relax_tls = |buffer: &mut [u8]| -> Result<(), String> {
        let access = TlsAccess {
            kind: record.kind,
            at,
            tp_offset: tp_offset()?,
            addend: edge.addend,
        };
        let relaxed = (arch.relax_tls)(buffer, access);
        write_relaxed(buffer, relaxed)
    };
    // Whether the edge reaches a thread-local variable a shared library defines (asked of TLS edges only).
    let imported_tls = || {
        edge.target_symbol.get().is_some_and(|symbol| {
            context
                .synthesized
                .dynamic_symbols
                .as_ref()
                .is_some_and(|imports| imports.is_run_time(graph.resolved(symbol)))
        })
    };
    // The offset of S + A in its module's TLS block.
    let dtp_offset = || -> Result<i128, String> {
        let tls = context
            .layout
            .tls
            .ok_or_else(|| format!("{}: the output has no TLS segment", what()))?;
        // `__tls_get_addr` adds the target's `dtv_offset` back.
        let dtv_offset = graph
            .target_record()
            .and_then(|target| target.elf)
            .map_or(0, |elf| elf.dtv_offset);
        Ok(value()? - i128::from(tls.address) - i128::from(dtv_offset))
    };
    let library = context.options.output_kind.is_shared_library();
    let total = match record.kind {
        RelocationKind::None | RelocationKind::Align | RelocationKind::Relax | RelocationKind::TlsLeAdd => {
            return Ok(());
        }
        // The low part of the high-part relocation it is paired with, at the place that relocation patches.
        RelocationKind::PairedLow => {
            paired_high_value(context, edge).map_err(|message| format!("{}: {message}", what()))?
        }
        // What the place holds plus or minus S + A (the two ends of a difference of labels).
        RelocationKind::Add | RelocationKind::Subtract => {
            let width = (record.size / 8) as usize;
            let field = at
                .checked_add(width)
                .and_then(|end| buffer.get(at..end))
                .ok_or_else(|| format!("{} patches past the end of its section", what()))?;
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(field);
            let held = i128::from(record.extract(u64::from_le_bytes(bytes)));
            match record.kind {
                RelocationKind::Add => held + value()?,
                _ => held - value()?,
            }
        }
        // A shared library's TLS accesses read the entries `synth::tls` made, and so do an executable's where
        // the architecture keeps the models.
        RelocationKind::TlsGd | RelocationKind::TlsLd | RelocationKind::TlsIe | RelocationKind::TlsDesc
            if library || arch.keeps_tls_models =>
        {
            tls_entry_of(context, edge, record.kind).map_err(|message| format!("{}: {message}", what()))?
        }
        // The call a descriptor access makes is left as it is.
        RelocationKind::TlsDescCall if library => return Ok(()),
        RelocationKind::TlsDtpOffset if library || arch.keeps_tls_models => dtp_offset()?,
        // A shared library calls its own interposable functions through their PLT entries.
        RelocationKind::Branch
            if let Some(entry) = edge
                .target_symbol
                .get()
                .map(|symbol| graph.resolved(symbol))
                .filter(|symbol| graph.is_preemptible(*symbol))
                .and_then(|symbol| plt_entry(context, symbol)) =>
        {
            i128::from(entry) + i128::from(edge.addend)
        }
        RelocationKind::Symbol | RelocationKind::Branch => value()?,
        RelocationKind::GotEntry => got_entry()?,
        RelocationKind::GotEntryRelaxable => match got::relaxation(context.options, graph, edge) {
            Some(relaxation) => {
                let (field, bias) = (arch.relax_got_load)(buffer, at, relaxation)?;
                return write_signed32(buffer, field, value()? + bias - place, &what);
            }
            None => got_entry()?,
        },
        RelocationKind::GotBase => got_address(context)? + i128::from(edge.addend),
        RelocationKind::Size => {
            let symbol = edge
                .target_symbol
                .get()
                .map(|symbol| &graph.symbols[graph.resolved(symbol).index()])
                .ok_or_else(|| format!("{}: no symbol", what()))?;
            i128::from(symbol.size) + i128::from(edge.addend)
        }
        // A static executable relaxes every local-dynamic sequence, after which the register holds the
        // thread pointer: offsets within the block are offsets from it.
        RelocationKind::TlsLe | RelocationKind::TlsDtpOffset => tp_offset()?,
        // An imported variable's offset is in the GOT slot the loader fills; where the architecture keeps
        // initial-exec accesses, a defined one's offset is in a slot the link fills.
        RelocationKind::TlsIe if imported_tls() => got_entry()?,
        // General-dynamic and descriptor accesses to an imported variable become initial-exec ones.
        RelocationKind::TlsGd | RelocationKind::TlsDesc | RelocationKind::TlsDescCall if imported_tls() => {
            let slot = if record.kind == RelocationKind::TlsDescCall {
                0
            } else {
                got_entry()? - i128::from(edge.addend)
            };
            let access = TlsToInitialExec {
                kind: record.kind,
                at,
                place,
                slot,
                addend: edge.addend,
            };
            let relaxed = (arch.relax_tls_to_ie)(buffer, access);
            return write_relaxed(buffer, relaxed);
        }
        RelocationKind::TlsIe
        | RelocationKind::TlsGd
        | RelocationKind::TlsLd
        | RelocationKind::TlsDesc
        | RelocationKind::TlsDescCall => return relax_tls(buffer),
        RelocationKind::TlsModule
        | RelocationKind::TlsDescriptor
        | RelocationKind::Irelative
        | RelocationKind::Relative
        | RelocationKind::GlobDat
        | RelocationKind::JumpSlot
        | RelocationKind::Copy => {
            return Err(format!("{}: a dynamic relocation in a relocatable input", what()));
        }
    };
    patch(buffer, at, record, relative_to_base(total)?, &what)
}

/// The address of `edge`'s GOT slot plus its addend (GOT + G + A).
fn got_entry_of(context: &Relocator<'_>, edge: &Edge) -> Result<i128, String> {
    let graph = context.graph;
    let symbol = edge
        .target_symbol
        .get()
        .map(|symbol| graph.resolved(symbol))
        .ok_or_else(|| "GOT load without a symbol".to_string())?;
    let slot = context
        .got_slot_of(symbol)
        .ok_or_else(|| format!("no GOT slot for `{}`", graph.symbols[symbol.index()].name))?;
    Ok(got_address(context)? + slot as i128 * 8 + i128::from(edge.addend))
}

/// The address of the TLS GOT entry (`synth::tls`) that `edge`, an access of TLS kind `kind`, reads, plus
/// its addend.
fn tls_entry_of(context: &Relocator<'_>, edge: &Edge, kind: RelocationKind) -> Result<i128, String> {
    let graph = context.graph;
    let entry = TlsEntry::of(kind).ok_or("not a TLS access")?;
    let tls = context
        .synthesized
        .tls_got
        .as_ref()
        .ok_or("no TLS GOT entries were made")?;
    let offset = tls
        .offset(edge.target_symbol.get().map(|symbol| graph.resolved(symbol)), entry)
        .ok_or("no TLS GOT entry")?;
    Ok(i128::from(graph.atoms[tls.atom.index()].address) + i128::from(offset) + i128::from(edge.addend))
}

/// The value of the high-part relocation a `paired_low` edge is paired with: the relocation relative to the
/// place that rounds its value (RISC-V `%pcrel_hi`, `%got_pcrel_hi`, `%tls_ie_pcrel_hi`) at the address the
/// edge's symbol labels, relative to that relocation's own place. The edge's addend is ignored, as ld.bfd and
/// ld.lld ignore it.
fn paired_high_value(context: &Relocator<'_>, edge: &Edge) -> Result<i128, String> {
    let graph = context.graph;
    let (atom, offset) = crate::address::label_location(graph, edge).ok_or("its label is not defined in a section")?;
    let atom = crate::address::placed_atom(context, atom).unwrap_or(atom);
    let (partner, record) = graph
        .edges_at(atom, offset)
        .find_map(|(_, partner)| {
            graph
                .relocation(partner)
                .filter(|record| record.round != 0 && record.relative_to == RelocationBase::Place)
                .map(|record| (partner, record))
        })
        .ok_or("no high-part relocation at its label")?;
    let place = i128::from(graph.atoms[atom.index()].address) + i128::from(offset);
    let total = match record.kind {
        RelocationKind::Symbol => target_value(context, partner).ok_or("the high part's symbol has no address")?,
        RelocationKind::TlsGd | RelocationKind::TlsIe if context.synthesized.tls_got.is_some() => {
            tls_entry_of(context, partner, record.kind)?
        }
        RelocationKind::GotEntry | RelocationKind::TlsIe => got_entry_of(context, partner)?,
        other => return Err(format!("a high part of kind `{}` is not supported yet", other.name())),
    };
    Ok(total - place)
}

/// The address of the global offset table (the start of `.got`, or of `.got.plt` when there is no `.got`).
fn got_address(context: &Relocator<'_>) -> Result<i128, String> {
    let got = context.got_atom().ok_or_else(|| "no GOT".to_string())?;
    Ok(i128::from(context.graph.atoms[got.index()].address))
}

/// Writes `value` into the field of `record` at `at` under its overflow rule.
fn patch(
    buffer: &mut [u8],
    at: usize,
    record: &RelocationRecord,
    value: i128,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    // Values are checked as signed 64-bit numbers; an unsigned 64-bit address is the same bits.
    let bits = i64::try_from(value)
        .ok()
        .or_else(|| u64::try_from(value).ok().map(|value| value as i64))
        .filter(|bits| record.fits(*bits))
        .ok_or_else(|| format!("{} out of range: {value:#x} does not fit", what()))?;
    let width = (record.size / 8) as usize;
    let field = at
        .checked_add(width)
        .and_then(|end| buffer.get_mut(at..end))
        .ok_or_else(|| format!("{} patches past the end of its section", what()))?;
    let mut place = [0u8; 8];
    place[..width].copy_from_slice(field);
    let patched = record.insert(u64::from_le_bytes(place), bits).to_le_bytes();
    field.copy_from_slice(&patched[..width]);
    Ok(())
}

/// Writes a 32-bit signed field that a relaxation rewrote (its meaning is the relaxed instruction's).
fn write_signed32(buffer: &mut [u8], at: usize, value: i128, what: &dyn Fn() -> String) -> Result<(), String> {
    let value = i32::try_from(value).map_err(|_| format!("{} out of range: {value:#x} does not fit", what()))?;
    let field = at
        .checked_add(4)
        .and_then(|end| buffer.get_mut(at..end))
        .ok_or_else(|| format!("{} patches past the end of its section", what()))?;
    field.copy_from_slice(&value.to_le_bytes());
    Ok(())
}
