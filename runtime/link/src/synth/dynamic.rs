//! What a position-independent output needs to be loaded at any address: a `.rela.dyn` with a `RELATIVE`
//! relocation for every address the image holds in its writable data (a GOT slot included), and the
//! `.dynamic` section that tells the loader (or a static PIE's own start-up code, glibc's
//! `_dl_relocate_static_pie`, which finds it as `_DYNAMIC`) where those relocations are, with the `.dynsym`,
//! `.dynstr` and the hash tables `--hash-style` asks for (`.hash`, `.gnu.hash`) it names. A static PIE imports and exports nothing: its symbol table holds the
//! null symbol only, as ld.bfd writes it. The indirect functions' `IRELATIVE` relocations stay in `.rela.plt`
//! (`DT_JMPREL`), applied after the `RELATIVE` ones.
//!
//! An absolute address in a section that is not writable would need the loader to write to code or
//! read-only data (a text relocation), and a 32-bit absolute address cannot hold a load address at all:
//! both are refused, naming the input and the symbol, as GNU ld refuses them.

use neverc_tables::{RelocationBase, RelocationKind};

use super::{PHASE, absolute_edge, declared, new_atom};
use crate::context::{LinkContext, PhaseError};
use crate::graph::{AtomId, Binding, Definition, Edge, LinkGraph, Origin, atom_flags, section_flags};
use crate::image::dynamic_tags::{
    DF_1_PIE, DT_DEBUG, DT_FLAGS_1, DT_GNU_HASH, DT_HASH, DT_JMPREL, DT_NULL, DT_PLTGOT, DT_PLTREL, DT_PLTRELSZ,
    DT_RELA, DT_RELACOUNT, DT_RELAENT, DT_RELASZ, DT_STRSZ, DT_STRTAB, DT_SYMENT, DT_SYMTAB,
};
use crate::sections::OutputSectionId;

/// The size of an `Elf64_Rela` and of an `Elf64_Sym`.
const RELA_SIZE: u64 = 24;
const SYMBOL_SIZE: u64 = 24;

/// A value of a `.dynamic` entry: a number, or the address of an atom the linker made.
enum Value {
    Number(u64),
    Address(AtomId),
}

/// The program interpreter the output names, if it has one: `-dynamic-linker`'s, else the target's declared
/// one; an executable the dynamic loader must start without a declared or given interpreter is an error.
fn interpreter(context: &LinkContext) -> Result<Option<String>, PhaseError> {
    if !context.options.output_kind.has_interpreter() {
        return Ok(None);
    }
    let declared = context
        .graph
        .target_record()
        .and_then(|target| target.elf)
        .and_then(|elf| elf.interpreter);
    match (&context.options.interpreter, declared) {
        (Some(given), _) => Ok(Some(given.clone())),
        (None, Some(declared)) => Ok(Some(declared.to_string())),
        (None, None) => Err(PhaseError::new(
            PHASE,
            "the target declares no program interpreter (`[elf] interpreter`): name one with -dynamic-linker",
        )),
    }
}

pub(super) fn make(context: &mut LinkContext, origin: Origin) -> Result<(), PhaseError> {
    if context.synthesized.dynamic.is_some() {
        return Ok(());
    }
    // The atoms whose addresses only the loader interprets: the indirect functions' slots, which their
    // `IRELATIVE` relocations fill, and those relocations themselves.
    let iplt = context
        .synthesized
        .iplt
        .as_ref()
        .map(|iplt| (iplt.slots, iplt.relocations, iplt.entries.len() as u64));
    let excluded: Vec<AtomId> = iplt.iter().flat_map(|(slots, rela, _)| [*slots, *rela]).collect();
    // The loader moves the image by a multiple of its page size, so the bits of an address below it do not
    // change: a field holding only those (AArch64's `:lo12:` halves of `adrp` pairs) needs no relocation.
    context.resolve_page_size();
    let page_bits = context.options.page_size.max(1).trailing_zeros();
    let interpreter = interpreter(context)?;
    let graph = &mut context.graph;
    if let Some(path) = interpreter {
        let mut bytes = path.into_bytes();
        bytes.push(0);
        new_atom(graph, None, OutputSectionId::Interp.name(), 1, bytes, origin);
    }
    let sites = relative_sites(graph, &excluded, page_bits)?;
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let relative = u64::from(declared(graph, RelocationKind::Relative, RelocationBase::Nothing, 64)?);

    let dynsym = new_atom(
        graph,
        None,
        OutputSectionId::DynSym.name(),
        8,
        vec![0; SYMBOL_SIZE as usize],
        origin,
    );
    let dynstr = new_atom(graph, None, OutputSectionId::DynStr.name(), 1, vec![0], origin);
    // The hash tables `--hash-style` asks for, over a symbol table of the null symbol only. The System V one:
    // one bucket and one chain (the null symbol's), both 0 (the end of every chain).
    let hash_style = context.options.hash_style;
    let sysv_hash = hash_style.sysv().then(|| {
        let words: Vec<u8> = [1u32, 1, 0, 0].iter().flat_map(|word| word.to_le_bytes()).collect();
        new_atom(graph, None, OutputSectionId::Hash.name(), 8, words, origin)
    });
    // GNU's: one bucket (empty), symbols from index 1, one bloom word of zeros.
    let gnu_hash = hash_style.gnu().then(|| {
        let mut words: Vec<u8> = [1u32, 1, 1, 0].iter().flat_map(|word| word.to_le_bytes()).collect();
        words.extend_from_slice(&[0; 12]);
        new_atom(graph, None, OutputSectionId::GnuHash.name(), 8, words, origin)
    });

    // `.rela.dyn`: (r_offset, r_info, r_addend) each; the address and the value are filled by relocation.
    let count = sites.len() as u64;
    let mut rela = Vec::with_capacity((count * RELA_SIZE) as usize);
    for _ in 0..count {
        rela.extend_from_slice(&[0; 8]);
        rela.extend_from_slice(&relative.to_le_bytes());
        rela.extend_from_slice(&[0; 8]);
    }
    let rela_dyn = new_atom(graph, None, OutputSectionId::RelaDyn.name(), 8, rela, origin);
    for (index, (source, offset, target, addend)) in sites.into_iter().enumerate() {
        let at = index as u64 * RELA_SIZE;
        graph.edges.extend([
            absolute_edge(absolute, rela_dyn, at, (None, Some(source)), offset, origin),
            absolute_edge(absolute, rela_dyn, at + 16, target, addend, origin),
        ]);
    }

    // The tags in ld.bfd's order.
    let mut entries: Vec<(u64, Value)> = [(DT_HASH, sysv_hash), (DT_GNU_HASH, gnu_hash)]
        .into_iter()
        .filter_map(|(tag, table)| Some((tag, Value::Address(table?))))
        .collect();
    entries.extend([
        (DT_STRTAB, Value::Address(dynstr)),
        (DT_SYMTAB, Value::Address(dynsym)),
        (DT_STRSZ, Value::Number(1)),
        (DT_SYMENT, Value::Number(SYMBOL_SIZE)),
        (DT_DEBUG, Value::Number(0)),
    ]);
    if let Some((slots, relocations, functions)) = iplt {
        entries.extend([
            (DT_PLTGOT, Value::Address(slots)),
            (DT_PLTRELSZ, Value::Number(functions * RELA_SIZE)),
            (DT_PLTREL, Value::Number(DT_RELA)),
            (DT_JMPREL, Value::Address(relocations)),
        ]);
    }
    entries.extend([
        (DT_RELA, Value::Address(rela_dyn)),
        (DT_RELASZ, Value::Number(count * RELA_SIZE)),
        (DT_RELAENT, Value::Number(RELA_SIZE)),
        (DT_FLAGS_1, Value::Number(DF_1_PIE)),
    ]);
    if count > 0 {
        entries.push((DT_RELACOUNT, Value::Number(count)));
    }
    entries.push((DT_NULL, Value::Number(0)));
    let mut bytes = Vec::with_capacity(entries.len() * 16);
    let mut addresses = Vec::new();
    for (index, (tag, value)) in entries.into_iter().enumerate() {
        bytes.extend_from_slice(&tag.to_le_bytes());
        match value {
            Value::Number(number) => bytes.extend_from_slice(&number.to_le_bytes()),
            Value::Address(atom) => {
                bytes.extend_from_slice(&[0; 8]);
                addresses.push((index as u64 * 16 + 8, atom));
            }
        }
    }
    let dynamic = new_atom(graph, None, OutputSectionId::Dynamic.name(), 8, bytes, origin);
    for (offset, atom) in addresses {
        graph
            .edges
            .push(absolute_edge(absolute, dynamic, offset, (None, Some(atom)), 0, origin));
    }
    graph.index_edges();
    context.synthesized.dynamic = Some(dynamic);
    Ok(())
}

/// The places that hold an absolute address, in link order: (atom, offset, target, addend). Each gets a
/// `RELATIVE` relocation. Addresses in atoms the loader interprets (`excluded`), fixed values (absolute
/// symbols of the inputs, undefined weak symbols, which stay 0) and fields holding only the bits of an address
/// below the page size (`page_bits`) need none; an address in an allocated section that is not writable, or in
/// a field narrower than an address, is an error.
#[allow(clippy::type_complexity)]
fn relative_sites(
    graph: &LinkGraph,
    excluded: &[AtomId],
    page_bits: u32,
) -> Result<Vec<(AtomId, i64, (Option<crate::graph::SymbolId>, Option<AtomId>), i64)>, PhaseError> {
    let mut sites = Vec::new();
    let mut refused = Vec::new();
    for edge in &graph.edges {
        let source = &graph.atoms[edge.source.index()];
        if !source.is_live() || source.flags & atom_flags::FOLDED != 0 || excluded.contains(&edge.source) {
            continue;
        }
        let flags = match source.section {
            Some(section) => graph.sections[section.index()].flags,
            None => {
                section_flags::ALLOCATED | OutputSectionId::for_input(&source.name).map_or(0, |id| id.kind().made_flags)
            }
        };
        if flags & section_flags::ALLOCATED == 0 {
            continue;
        }
        let Some(record) = graph.relocation(edge) else {
            continue;
        };
        if record.kind != RelocationKind::Symbol || record.relative_to != RelocationBase::Nothing {
            continue;
        }
        if holds_fixed_value(graph, edge) || record.shift + record.value_width() <= page_bits {
            continue;
        }
        if record.size == 64 && flags & section_flags::WRITABLE != 0 {
            let offset = i64::try_from(edge.offset).unwrap_or(i64::MAX);
            sites.push((edge.source, offset, (edge.target_symbol, edge.target_atom), edge.addend));
            continue;
        }
        let input = graph.input_name(source.origin.input);
        let section = source.section.map_or(source.name.as_str(), |section| {
            graph.sections[section.index()].name.as_str()
        });
        let target = edge
            .target_symbol
            .map(|symbol| crate::symbol_name::display(&graph.symbols[symbol.index()].name).into_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "a section".to_string());
        let why = if record.size == 64 {
            "an address in a section that is not writable (a text relocation)"
        } else {
            "an absolute address in a field narrower than an address"
        };
        refused.push(format!(
            "{input}({section}+{:#x}): relocation {} against `{target}` cannot be used in a position-independent \
             executable: {why}; recompile with -fPIE",
            edge.offset, record.name
        ));
    }
    if refused.is_empty() {
        Ok(sites)
    } else {
        Err(PhaseError::new(PHASE, refused.join("\n")))
    }
}

/// Whether the value `edge` writes is the same wherever the image is loaded: an absolute symbol of an input,
/// or an undefined weak symbol (0).
fn holds_fixed_value(graph: &LinkGraph, edge: &Edge) -> bool {
    let Some(symbol) = edge.target_symbol.map(|symbol| graph.resolved(symbol)) else {
        return false;
    };
    let symbol = &graph.symbols[symbol.index()];
    match symbol.definition {
        Definition::Undefined => symbol.binding == Binding::Weak,
        Definition::Absolute => symbol.origin.input.is_some(),
        _ => false,
    }
}
