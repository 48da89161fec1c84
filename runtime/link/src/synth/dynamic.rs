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
use rustc_hash::FxHashSet;

use super::imports::{DynamicSymbols, bucket_count, gnu_hash, sysv_hash};
use super::tls::TlsEntry;
use super::{LateFill, LateValue, PHASE, RelaDyn, WordFill, absolute_edge, declared, new_atom};
use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    AtomId, Binding, Definition, Edge, LinkGraph, Origin, SymbolId, SymbolType, Visibility, atom_flags, section_flags,
};
use crate::image::dynamic_tags::{
    DF_1_INITFIRST, DF_1_INTERPOSE, DF_1_NODELETE, DF_1_NOOPEN, DF_1_NOW, DF_1_ORIGIN, DF_1_PIE, DF_BIND_NOW,
    DF_ORIGIN, DF_STATIC_TLS, DF_SYMBOLIC, DF_TEXTREL, DT_DEBUG, DT_FINI, DT_FINI_ARRAY, DT_FINI_ARRAYSZ, DT_FLAGS,
    DT_FLAGS_1, DT_GNU_HASH, DT_HASH, DT_INIT, DT_INIT_ARRAY, DT_INIT_ARRAYSZ, DT_JMPREL, DT_NEEDED, DT_NULL,
    DT_PLTGOT, DT_PLTREL, DT_PLTRELSZ, DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, DT_RELA, DT_RELACOUNT, DT_RELAENT,
    DT_RELASZ, DT_RELR, DT_RELRENT, DT_RELRSZ, DT_RPATH, DT_RUNPATH, DT_SONAME, DT_STRSZ, DT_STRTAB, DT_SYMBOLIC,
    DT_SYMENT, DT_SYMTAB, DT_TEXTREL, DT_VERDEF, DT_VERDEFNUM, DT_VERNEED, DT_VERNEEDNUM, DT_VERSYM,
};
use crate::sections::OutputSectionId;

/// The size of an `Elf64_Rela` and of an `Elf64_Sym`.
const RELA_SIZE: u64 = 24;
const SYMBOL_SIZE: u64 = 24;

/// A value of a `.dynamic` entry: a number, the address of an atom the linker made or of a symbol, or what
/// the final layout says.
enum Value {
    Number(u64),
    Address(AtomId),
    Symbol(SymbolId),
    Late(LateValue),
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
    // The atoms whose addresses only the loader interprets: the PLT slots, which their `IRELATIVE` and
    // `JUMP_SLOT` relocations fill, and those relocations themselves.
    let iplt = context
        .synthesized
        .iplt
        .as_ref()
        .map(|iplt| (iplt.slots, iplt.relocations, iplt.entries.len() as u64));
    let symbols = context.synthesized.dynamic_symbols.take().unwrap_or_default();
    let import_plt = symbols
        .plt
        .as_ref()
        .map(|plt| (plt.slots, plt.relocations, plt.functions.len() as u64));
    let excluded: Vec<AtomId> = iplt
        .iter()
        .chain(import_plt.iter())
        .flat_map(|(slots, rela, _)| [*slots, *rela])
        .collect();
    // The loader moves the image by a multiple of its page size, so the bits of an address below it do not
    // change: a field holding only those (AArch64's `:lo12:` halves of `adrp` pairs) needs no relocation.
    context.resolve_page_size();
    let page_bits = context.options.page_size.max(1).trailing_zeros();
    let interpreter = interpreter(context)?;
    let got_atom = context.synthesized.got_atom;
    let output_kind = context.options.output_kind;
    let text_relocations = context.options.text_relocations;
    let init_fini: Vec<(u64, SymbolId)> = [(DT_INIT, "_init"), (DT_FINI, "_fini")]
        .into_iter()
        .filter_map(|(tag, name)| {
            let symbol = *context.global_symbols.get(name)?;
            let entry = &context.graph.symbols[symbol.index()];
            (!matches!(entry.definition, Definition::Undefined | Definition::Shared)).then_some((tag, symbol))
        })
        .collect();
    let definitions = version_definitions(&context.options);
    // A shared library's TLS entries, which the loader fills, and the indirect functions whose addresses are
    // their PLT entries. (An executable's entries, where the architecture keeps its TLS models, are the
    // link's, `tls.rs`, but for the variables of shared libraries.)
    let library = output_kind.is_shared_library();
    let tls = context.synthesized.tls_got.as_ref();
    let at_plt_entries = context.synthesized.iplt.as_ref().map(|iplt| &iplt.entries);
    let graph = &mut context.graph;
    if let Some(path) = interpreter {
        let mut bytes = path.into_bytes();
        bytes.push(0);
        new_atom(graph, None, OutputSectionId::Interp.name(), 1, bytes, origin);
    }
    let Sites { sites, in_text } = relative_sites(
        graph,
        &excluded,
        page_bits,
        &symbols,
        got_atom,
        SiteOutput {
            position_independent: output_kind.is_position_independent(),
            text_relocations,
            loaded: output_kind.is_dynamic(),
            library: output_kind.is_shared_library(),
        },
        context.options.threads,
    )?;
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let relative = u64::from(declared(graph, RelocationKind::Relative, RelocationBase::Nothing, 64)?);
    // `-z pack-relative-relocs`: the relative relocations of aligned words go to `.relr.dyn`.
    let mut sites = sites;
    let mut packed = Vec::new();
    if context.options.pack_relative_relocs {
        sites.retain(|site| match *site {
            Site::Relative { source, offset, .. }
                if graph.atoms[source.index()].alignment >= 8
                    && offset >= 0
                    && offset % 8 == 0
                    && !in_text.contains(&source) =>
            {
                packed.push((source, offset as u64));
                false
            }
            _ => true,
        });
    }
    let relr = (!packed.is_empty()).then(|| {
        let atom = new_atom(graph, None, OutputSectionId::RelrDyn.name(), 8, Vec::new(), origin);
        super::relr::Relr { atom, words: packed }
    });
    // glibc's loader wants an output with `DT_RELR` to need its `GLIBC_ABI_DT_RELR` version, which ld.bfd
    // adds for the library that defines it.
    let relr_version = relr.as_ref().and_then(|_| {
        graph
            .symbols
            .iter()
            .find(|symbol| {
                symbol.definition == Definition::Shared
                    && symbol.name == RELR_VERSION
                    && symbol.version.as_deref() == Some(RELR_VERSION)
            })
            .and_then(|symbol| symbol.origin.input())
            .and_then(|input| graph.shared_libraries.iter().find(|library| library.input == input))
            .map(|library| library.install_name.clone())
    });

    // `.dynstr`, `.dynsym`, `.gnu.version` and `.gnu.version_r`.
    // A string table starts with the empty string, even when nothing else is in it.
    let mut strings = Strings::default();
    strings.add(b"");
    let needed: Vec<u32> = symbols
        .needed
        .iter()
        .map(|library| strings.add(graph.shared_libraries[library.index()].install_name.as_bytes()))
        .collect();
    let options = &context.options;
    let soname = options.soname.as_ref().map(|name| strings.add(name.as_bytes()));
    let search_path = (!options.rpath.is_empty()).then(|| {
        let tag = if options.new_dtags { DT_RUNPATH } else { DT_RPATH };
        (tag, strings.add(options.rpath.join(":").as_bytes()))
    });
    // `-Bsymbolic`: the library says that its references bind to its own definitions (DT_SYMBOLIC, as ld.bfd
    // writes it).
    let symbolic = output_kind.is_shared_library() && options.symbolic == crate::context::SymbolicBinding::All;
    let flags = (u64::from(options.origin) * DF_ORIGIN)
        | (u64::from(symbolic) * DF_SYMBOLIC)
        | (u64::from(options.bind_now) * DF_BIND_NOW)
        | (u64::from(!in_text.is_empty()) * DF_TEXTREL)
        | (u64::from(tls.is_some_and(|tls| tls.needs_static_tls())) * DF_STATIC_TLS);
    let mut flags_1 = (u64::from(options.origin) * DF_1_ORIGIN) | (u64::from(options.bind_now) * DF_1_NOW);
    if output_kind.is_position_independent() && output_kind.is_executable() {
        flags_1 |= DF_1_PIE;
    }
    let requests = options.loader_requests;
    for (asked, flag) in [
        (requests.no_delete, DF_1_NODELETE),
        (requests.no_dlopen, DF_1_NOOPEN),
        (requests.init_first, DF_1_INITFIRST),
        (requests.interpose, DF_1_INTERPOSE),
    ] {
        if asked {
            flags_1 |= flag;
        }
    }
    let tables = symbol_tables(
        graph,
        &symbols,
        VersionFacts {
            relr_version,
            definitions: &definitions,
        },
        at_plt_entries,
        &mut strings,
    );
    let mut late_fills = Vec::new();
    let dynsym = new_atom(graph, None, OutputSectionId::DynSym.name(), 8, tables.symbols, origin);
    for (offset, symbol) in tables.values {
        // A thread-local variable's value is its offset in the module's TLS block.
        if graph.symbols[symbol.index()].symbol_type == SymbolType::Tls {
            late_fills.push(LateFill {
                atom: dynsym,
                offset: offset + 8,
                value: LateValue::TlsOffset(symbol),
            });
            continue;
        }
        graph.edges.push(absolute_edge(
            absolute,
            dynsym,
            offset + 8,
            (Some(symbol), None),
            0,
            origin,
        ));
    }
    for (offset, atom) in tables.section_indices {
        late_fills.push(LateFill {
            atom: dynsym,
            offset: offset + 6,
            value: LateValue::SectionIndex(atom),
        });
    }
    // `.gnu.version` when the output defines or needs versions, with `.gnu.version_d` and `.gnu.version_r`.
    let versions = (!tables.needs.is_empty() || !definitions.is_empty()).then(|| {
        new_atom(
            graph,
            None,
            OutputSectionId::GnuVersion.name(),
            2,
            tables.versions,
            origin,
        )
    });
    let verdef = (!definitions.is_empty()).then(|| {
        new_atom(
            graph,
            None,
            OutputSectionId::GnuVersionD.name(),
            8,
            tables.definitions,
            origin,
        )
    });
    let verneed = (!tables.needs.is_empty()).then(|| {
        new_atom(
            graph,
            None,
            OutputSectionId::GnuVersionR.name(),
            8,
            tables.needs,
            origin,
        )
    });
    let string_size = strings.bytes.len() as u64;
    let dynstr = new_atom(graph, None, OutputSectionId::DynStr.name(), 1, strings.bytes, origin);
    // The hash tables `--hash-style` asks for.
    let hash_style = context.options.hash_style;
    let sysv_hash = hash_style
        .sysv()
        .then(|| new_atom(graph, None, OutputSectionId::Hash.name(), 8, tables.sysv_hash, origin));
    let gnu_hash = hash_style
        .gnu()
        .then(|| new_atom(graph, None, OutputSectionId::GnuHash.name(), 8, tables.gnu_hash, origin));

    // `.rela.dyn`: (r_offset, r_info, r_addend) each, `RELATIVE` ones first (`DT_RELACOUNT` counts them),
    // then those naming symbols, then the copies; addresses and values are filled by relocation.
    let copy = symbols
        .copies
        .first()
        .map(|_| declared(graph, RelocationKind::Copy, RelocationBase::Nothing, 64))
        .transpose()?;
    let needs = |wanted: Symbolic| {
        sites
            .iter()
            .any(|site| matches!(site, Site::Symbolic { kind, .. } if *kind == wanted))
    };
    // A psABI without `GLOB_DAT` (RISC-V) fills GOT slots with its absolute 64-bit relocation.
    let glob_dat = needs(Symbolic::GotSlot)
        .then(|| graph.declared_relocation(RelocationKind::GlobDat, RelocationBase::Nothing, 64))
        .flatten();
    let tp_offset = needs(Symbolic::ThreadPointerOffset)
        .then(|| declared(graph, RelocationKind::TlsLe, RelocationBase::Nothing, 64))
        .transpose()?;
    let relatives = sites
        .iter()
        .filter(|site| matches!(site, Site::Relative { .. }))
        .count() as u64;
    let count = sites.len() as u64 + symbols.copies.len() as u64;
    let mut rela = Vec::with_capacity((count * RELA_SIZE) as usize);
    let mut fills = Vec::with_capacity(sites.len() * 2);
    let fill = |raw: u32, offset: u64, target: (Option<SymbolId>, Option<AtomId>), addend: i64| WordFill {
        offset,
        raw,
        target,
        addend,
    };
    let mut ordered: Vec<&Site> = sites
        .iter()
        .filter(|site| matches!(site, Site::Relative { .. }))
        .collect();
    ordered.extend(sites.iter().filter(|site| matches!(site, Site::Symbolic { .. })));
    for site in ordered {
        let at = rela.len() as u64;
        match *site {
            Site::Relative {
                source,
                offset,
                target,
                addend,
            } => {
                rela.extend_from_slice(&[0; 8]);
                rela.extend_from_slice(&relative.to_le_bytes());
                rela.extend_from_slice(&[0; 8]);
                fills.push(fill(absolute, at, (None, Some(source)), offset));
                fills.push(fill(absolute, at + 16, target, addend));
            }
            Site::Symbolic {
                source,
                offset,
                index,
                addend,
                kind,
            } => {
                let kind = u64::from(match kind {
                    Symbolic::GotSlot => glob_dat.unwrap_or(absolute),
                    Symbolic::ThreadPointerOffset => tp_offset.unwrap_or(absolute),
                    Symbolic::Address => absolute,
                });
                rela.extend_from_slice(&[0; 8]);
                rela.extend_from_slice(&(u64::from(index) << 32 | kind).to_le_bytes());
                rela.extend_from_slice(&addend.to_le_bytes());
                fills.push(fill(absolute, at, (None, Some(source)), offset));
            }
        }
    }
    // The TLS entries: module ids (`DTPMOD64`), the offsets of interposable or imported variables in their
    // modules' blocks (`DTPOFF64`), offsets from the thread pointer (`TPOFF64`) and descriptors, naming the
    // variable's `.dynsym` entry, or for the library's own variables the module (symbol 0) with the
    // variable's offset in its block as the addend.
    let mut tls_relocations = 0u64;
    if let Some(tls) = tls {
        let kind = |graph: &LinkGraph, kind: RelocationKind| declared(graph, kind, RelocationBase::Nothing, 64);
        let dtp_offset = kind(graph, RelocationKind::TlsDtpOffset)?;
        for (symbol, entry, offset) in &tls.entries {
            let run_time = symbol.filter(|symbol| symbols.is_run_time(*symbol));
            if !library && run_time.is_none() {
                continue;
            }
            let index = run_time.map_or(0, |symbol| symbols.index.get(&symbol).copied().unwrap_or(0));
            let mut words: Vec<(u64, u32, Option<SymbolId>)> = Vec::new();
            match entry {
                TlsEntry::Pair => {
                    words.push((0, kind(graph, RelocationKind::TlsModule)?, None));
                    if run_time.is_some() {
                        words.push((8, dtp_offset, None));
                    }
                }
                TlsEntry::Module => words.push((0, kind(graph, RelocationKind::TlsModule)?, None)),
                TlsEntry::Offset => words.push((0, kind(graph, RelocationKind::TlsLe)?, *symbol)),
                TlsEntry::Descriptor => words.push((0, kind(graph, RelocationKind::TlsDescriptor)?, *symbol)),
            }
            for (word, relocation, addend_of) in words {
                let at = rela.len() as u64;
                rela.extend_from_slice(&[0; 8]);
                rela.extend_from_slice(&(u64::from(index) << 32 | u64::from(relocation)).to_le_bytes());
                rela.extend_from_slice(&[0; 8]);
                let place = i64::try_from(offset + word).unwrap_or(i64::MAX);
                fills.push(fill(absolute, at, (None, Some(tls.atom)), place));
                if let Some(variable) = addend_of.filter(|_| run_time.is_none()) {
                    fills.push(fill(dtp_offset, at + 16, (Some(variable), None), 0));
                }
                tls_relocations += 1;
            }
        }
    }
    for (symbol, atom) in &symbols.copies {
        let at = rela.len() as u64;
        let index = u64::from(symbols.index.get(symbol).copied().unwrap_or(0));
        rela.extend_from_slice(&[0; 8]);
        rela.extend_from_slice(&(index << 32 | u64::from(copy.unwrap_or(absolute))).to_le_bytes());
        rela.extend_from_slice(&[0; 8]);
        fills.push(fill(absolute, at, (None, Some(*atom)), 0));
    }
    let count = count + tls_relocations;
    // With every relative relocation packed and no other, there is no `.rela.dyn`.
    let rela_dyn = (count > 0 || relr.is_none()).then(|| {
        let atom = new_atom(graph, None, OutputSectionId::RelaDyn.name(), 8, rela, origin);
        context.synthesized.rela_dyn = Some(RelaDyn { atom, fills, origin });
        atom
    });

    // The tags in ld.bfd's order.
    let mut entries: Vec<(u64, Value)> = needed
        .iter()
        .map(|name| (DT_NEEDED, Value::Number(u64::from(*name))))
        .collect();
    entries.extend(soname.map(|name| (DT_SONAME, Value::Number(u64::from(name)))));
    if symbolic {
        entries.push((DT_SYMBOLIC, Value::Number(0)));
    }
    entries.extend(search_path.map(|(tag, path)| (tag, Value::Number(u64::from(path)))));
    entries.extend(init_fini.into_iter().map(|(tag, symbol)| (tag, Value::Symbol(symbol))));
    for (section, start, size) in [
        (OutputSectionId::PreinitArray, DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ),
        (OutputSectionId::InitArray, DT_INIT_ARRAY, DT_INIT_ARRAYSZ),
        (OutputSectionId::FiniArray, DT_FINI_ARRAY, DT_FINI_ARRAYSZ),
    ] {
        if has_output_section(graph, section) {
            entries.extend([
                (start, Value::Late(LateValue::Start(section))),
                (size, Value::Late(LateValue::Size(section))),
            ]);
        }
    }
    entries.extend(
        [(DT_HASH, sysv_hash), (DT_GNU_HASH, gnu_hash)]
            .into_iter()
            .filter_map(|(tag, table)| Some((tag, Value::Address(table?)))),
    );
    entries.extend([
        (DT_STRTAB, Value::Address(dynstr)),
        (DT_SYMTAB, Value::Address(dynsym)),
        (DT_STRSZ, Value::Number(string_size)),
        (DT_SYMENT, Value::Number(SYMBOL_SIZE)),
    ]);
    // The debugger finds the loader's list of libraries through a program's `DT_DEBUG`; a library has none.
    if output_kind.is_executable() {
        entries.push((DT_DEBUG, Value::Number(0)));
    }
    // The PLT's slots start with the imports' (and the words the loader owns); their relocations come first.
    let jump_slots =
        import_plt.map_or(0, |(_, _, functions)| functions) + iplt.map_or(0, |(_, _, functions)| functions);
    if let Some((slots, relocations, _)) = import_plt.or(iplt) {
        entries.extend([
            (DT_PLTGOT, Value::Address(slots)),
            (DT_PLTRELSZ, Value::Number(jump_slots * RELA_SIZE)),
            (DT_PLTREL, Value::Number(DT_RELA)),
            (DT_JMPREL, Value::Address(relocations)),
        ]);
    }
    if let Some(rela_dyn) = rela_dyn {
        entries.extend([
            (DT_RELA, Value::Address(rela_dyn)),
            (DT_RELASZ, Value::Number(count * RELA_SIZE)),
            (DT_RELAENT, Value::Number(RELA_SIZE)),
        ]);
    }
    if !in_text.is_empty() {
        entries.push((DT_TEXTREL, Value::Number(0)));
    }
    if let Some(relr) = &relr {
        entries.extend([
            (DT_RELR, Value::Address(relr.atom)),
            (DT_RELRSZ, Value::Late(LateValue::Size(OutputSectionId::RelrDyn))),
            (DT_RELRENT, Value::Number(8)),
        ]);
    }
    if flags != 0 {
        entries.push((DT_FLAGS, Value::Number(flags)));
    }
    if flags_1 != 0 {
        entries.push((DT_FLAGS_1, Value::Number(flags_1)));
    }
    if let Some(verdef) = verdef {
        entries.extend([
            (DT_VERDEF, Value::Address(verdef)),
            (DT_VERDEFNUM, Value::Number(definitions.len() as u64)),
        ]);
    }
    if let Some(verneed) = verneed {
        entries.extend([
            (DT_VERNEED, Value::Address(verneed)),
            (DT_VERNEEDNUM, Value::Number(tables.need_count)),
        ]);
    }
    if let Some(versym) = versions {
        entries.push((DT_VERSYM, Value::Address(versym)));
    }
    if relatives > 0 {
        entries.push((DT_RELACOUNT, Value::Number(relatives)));
    }
    entries.push((DT_NULL, Value::Number(0)));
    let mut bytes = Vec::with_capacity(entries.len() * 16);
    let mut addresses = Vec::new();
    for (index, (tag, value)) in entries.into_iter().enumerate() {
        bytes.extend_from_slice(&tag.to_le_bytes());
        let at = index as u64 * 16 + 8;
        match value {
            Value::Number(number) => bytes.extend_from_slice(&number.to_le_bytes()),
            Value::Address(atom) => {
                bytes.extend_from_slice(&[0; 8]);
                addresses.push((at, (None, Some(atom))));
            }
            Value::Symbol(symbol) => {
                bytes.extend_from_slice(&[0; 8]);
                addresses.push((at, (Some(symbol), None)));
            }
            Value::Late(value) => {
                bytes.extend_from_slice(&[0; 8]);
                late_fills.push(LateFill {
                    atom: AtomId(u32::MAX),
                    offset: at,
                    value,
                });
            }
        }
    }
    let dynamic = new_atom(graph, None, OutputSectionId::Dynamic.name(), 8, bytes, origin);
    for fill in &mut late_fills {
        if fill.atom == AtomId(u32::MAX) {
            fill.atom = dynamic;
        }
    }
    for (offset, target) in addresses {
        graph
            .edges
            .push(absolute_edge(absolute, dynamic, offset, target, 0, origin));
    }
    // The first word of `.got.plt` is the address of `.dynamic`, where the psABI reserves it so.
    let dynamic_in_first_slot = graph.arch().lazy_plt.is_some_and(|plt| plt.dynamic_in_first_slot);
    if let Some((slots, _, _)) = import_plt.filter(|_| dynamic_in_first_slot) {
        graph
            .edges
            .push(absolute_edge(absolute, slots, 0, (None, Some(dynamic)), 0, origin));
    }
    context.synthesized.late_fills.extend(late_fills);
    context.synthesized.dynamic_symbols = Some(symbols);
    context.synthesized.dynamic = Some(dynamic);
    context.synthesized.relr = relr;
    Ok(())
}

/// Whether some live atom goes to the output section `id`.
fn has_output_section(graph: &LinkGraph, id: OutputSectionId) -> bool {
    graph.atoms.iter().any(|atom| {
        atom.is_live()
            && atom.flags & atom_flags::FOLDED == 0
            && atom.size() > 0
            && atom.section.map_or_else(
                || OutputSectionId::for_input(&atom.name),
                |section| OutputSectionId::for_input(&graph.sections[section.index()].name),
            ) == Some(id)
    })
}

/// `.dynstr` as it is built: each string once.
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
    offsets: rustc_hash::FxHashMap<Vec<u8>, u32>,
}

impl Strings {
    fn add(&mut self, text: &[u8]) -> u32 {
        if self.bytes.is_empty() {
            self.bytes.push(0);
        }
        if text.is_empty() {
            return 0;
        }
        if let Some(offset) = self.offsets.get(text) {
            return *offset;
        }
        let offset = self.bytes.len() as u32;
        self.bytes.extend_from_slice(text);
        self.bytes.push(0);
        self.offsets.insert(text.to_vec(), offset);
        offset
    }
}

/// The symbol tables of `.dynsym`'s entries, and what relocation and the final layout fill in.
struct SymbolTables {
    symbols: Vec<u8>,
    /// (offset of an entry, the symbol whose address is its `st_value`).
    values: Vec<(u64, SymbolId)>,
    /// (offset of an entry, the atom whose output section is its `st_shndx`).
    section_indices: Vec<(u64, AtomId)>,
    versions: Vec<u8>,
    definitions: Vec<u8>,
    needs: Vec<u8>,
    need_count: u64,
    sysv_hash: Vec<u8>,
    gnu_hash: Vec<u8>,
}

/// ELF symbol bindings, types and special section indices.
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const SHN_ABS: u16 = 0xfff1;
const STV_PROTECTED: u8 = 3;

/// The version of glibc an output with packed relative relocations needs.
const RELR_VERSION: &str = "GLIBC_ABI_DT_RELR";

/// The versions a dynamically linked output defines (`.gnu.version_d`), each with the versions it inherits
/// from, numbered from 1: the base version (its `-soname`, else its file name), then the named nodes of its
/// version script; none without such nodes.
fn version_definitions(options: &crate::context::LinkOptions) -> Vec<(String, Vec<String>)> {
    let Some(script) = &options.symbols.version_script else {
        return Vec::new();
    };
    let nodes: Vec<(String, Vec<String>)> = script
        .named_nodes()
        .filter_map(|node| Some((node.name.clone()?, node.parents.clone())))
        .collect();
    if nodes.is_empty() {
        return nodes;
    }
    let base = options.soname.clone().unwrap_or_else(|| {
        options
            .output
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
    });
    std::iter::once((base, Vec::new())).chain(nodes).collect()
}

/// What the version tables are made of: the library whose `GLIBC_ABI_DT_RELR` version the output needs, if
/// any, and the versions it defines.
struct VersionFacts<'a> {
    relr_version: Option<String>,
    definitions: &'a [(String, Vec<String>)],
}

/// `VER_FLG_BASE`: the version definition of the output itself. `VERSYM_HIDDEN`: a symbol's version is not
/// its default one.
const VER_FLG_BASE: u16 = 1;
const VERSYM_HIDDEN: u16 = 0x8000;

/// `.dynsym`, its versions, hash tables, `.gnu.version_d` of the versions `definitions` and `.gnu.version_r`,
/// with the version [`RELR_VERSION`] needed of the library `relr_version` names.
fn symbol_tables(
    graph: &LinkGraph,
    symbols: &DynamicSymbols,
    versions: VersionFacts<'_>,
    at_plt_entries: Option<&rustc_hash::FxHashMap<SymbolId, u32>>,
    strings: &mut Strings,
) -> SymbolTables {
    let VersionFacts {
        relr_version,
        definitions,
    } = versions;
    let count = symbols.entries.len() + 1;
    let mut table = vec![0u8; SYMBOL_SIZE as usize];
    let mut values = Vec::new();
    let mut section_indices = Vec::new();
    let mut versions: Vec<u16> = vec![0];
    // The versions needed, numbered after those defined in order of first use, grouped by library.
    let mut needs: Vec<(String, Vec<(String, u16)>)> = Vec::new();
    let mut next_version = (definitions.len() as u16 + 1).max(2);
    let mut names: Vec<Vec<u8>> = Vec::with_capacity(count);
    names.push(Vec::new());
    for (position, symbol) in symbols.entries.iter().enumerate() {
        let entry = &graph.symbols[symbol.index()];
        // A definition of a hidden version is named `name@VERSION` in the link (and an object's default one
        // `name@@VERSION`); `.dynsym` has the name, and `.gnu.version` the version.
        let (plain, hidden) = super::imports::unversioned_name(entry);
        let name = crate::symbol_name::to_bytes(plain).into_owned();
        let at = (position as u64 + 1) * SYMBOL_SIZE;
        let defined = position as u32 + 1 >= symbols.defined_from;
        let binding = if !defined && symbols.weak.contains(symbol) || defined && entry.binding == Binding::Weak {
            STB_WEAK
        } else {
            STB_GLOBAL
        };
        let unbound = symbols.unbound.contains(symbol);
        let kind = match entry.symbol_type {
            _ if unbound => 0,
            // An imported indirect function is a function to the output: the library runs its resolver.
            SymbolType::Ifunc if !defined => 2,
            // An indirect function the output calls through its own PLT entry is that entry, a function, to
            // everyone.
            SymbolType::Ifunc if at_plt_entries.is_some_and(|entries| entries.contains_key(symbol)) => 2,
            SymbolType::Function => 2,
            SymbolType::Object => 1,
            SymbolType::Tls => 6,
            SymbolType::Ifunc => 10,
            _ => 0,
        };
        // A definition's visibility; an import's entry is default (a library's protected definition is
        // protected there: an undefined protected entry would bind only inside the output).
        let other = if defined && entry.visibility == Visibility::Protected {
            STV_PROTECTED
        } else {
            0
        };
        table.extend_from_slice(&strings.add(&name).to_le_bytes());
        table.push(binding << 4 | kind);
        table.push(other);
        let shndx = if defined && entry.atom.is_none() { SHN_ABS } else { 0 };
        table.extend_from_slice(&shndx.to_le_bytes());
        table.extend_from_slice(&[0; 8]);
        let size = if defined { entry.size } else { 0 };
        table.extend_from_slice(&size.to_le_bytes());
        if defined {
            values.push((at, *symbol));
            if let Some(atom) = entry.atom {
                section_indices.push((at, atom));
            }
        } else if symbols.canonical.contains(symbol) {
            values.push((at, *symbol));
        }
        // The version: a definition of a shared library's names its version; anything else is global.
        let library = entry
            .origin
            .input()
            .filter(|_| entry.definition == Definition::Shared && !unbound)
            .and_then(|input| graph.shared_libraries.iter().find(|library| library.input == input));
        let version = match (library, &entry.version) {
            (Some(library), Some(version)) => {
                needed_version(&mut needs, &library.install_name, version, &mut next_version)
            }
            // A definition of the output's own in one of its versions.
            (None, Some(version)) if defined => definitions
                .iter()
                .skip(1)
                .position(|(name, _)| name == version)
                .map_or(1, |position| {
                    (position as u16 + 2) | if hidden { VERSYM_HIDDEN } else { 0 }
                }),
            _ => 1,
        };
        versions.push(version);
        names.push(name);
    }
    if let Some(library) = relr_version {
        needed_version(&mut needs, &library, RELR_VERSION, &mut next_version);
    }
    // `.gnu.version_d`: an `Elf64_Verdef` (20 bytes) per version, each followed by its `Elf64_Verdaux`
    // entries (8 bytes): its name, then the versions it inherits from.
    let mut definition_bytes = Vec::new();
    for (position, (name, parents)) in definitions.iter().enumerate() {
        let names = 1 + parents.len() as u32;
        let next = if position + 1 == definitions.len() {
            0
        } else {
            20 + 8 * names
        };
        let flags = if position == 0 { VER_FLG_BASE } else { 0 };
        definition_bytes.extend_from_slice(&1u16.to_le_bytes());
        definition_bytes.extend_from_slice(&flags.to_le_bytes());
        definition_bytes.extend_from_slice(&(position as u16 + 1).to_le_bytes());
        definition_bytes.extend_from_slice(&(names as u16).to_le_bytes());
        definition_bytes.extend_from_slice(&sysv_hash(name.as_bytes()).to_le_bytes());
        definition_bytes.extend_from_slice(&20u32.to_le_bytes());
        definition_bytes.extend_from_slice(&next.to_le_bytes());
        for (at, aux) in std::iter::once(name).chain(parents).enumerate() {
            definition_bytes.extend_from_slice(&strings.add(aux.as_bytes()).to_le_bytes());
            let next: u32 = if at as u32 + 1 == names { 0 } else { 8 };
            definition_bytes.extend_from_slice(&next.to_le_bytes());
        }
    }
    let mut need_bytes = Vec::new();
    for (index, (file, list)) in needs.iter().enumerate() {
        let last = index + 1 == needs.len();
        let file = strings.add(file.as_bytes());
        need_bytes.extend_from_slice(&1u16.to_le_bytes());
        need_bytes.extend_from_slice(&(list.len() as u16).to_le_bytes());
        need_bytes.extend_from_slice(&file.to_le_bytes());
        need_bytes.extend_from_slice(&16u32.to_le_bytes());
        let next = if last { 0 } else { 16 + 16 * list.len() as u32 };
        need_bytes.extend_from_slice(&next.to_le_bytes());
        for (position, (version, number)) in list.iter().enumerate() {
            let name = strings.add(version.as_bytes());
            need_bytes.extend_from_slice(&sysv_hash(version.as_bytes()).to_le_bytes());
            need_bytes.extend_from_slice(&0u16.to_le_bytes());
            need_bytes.extend_from_slice(&number.to_le_bytes());
            need_bytes.extend_from_slice(&name.to_le_bytes());
            let next: u32 = if position + 1 == list.len() { 0 } else { 16 };
            need_bytes.extend_from_slice(&next.to_le_bytes());
        }
    }
    SymbolTables {
        symbols: table,
        values,
        section_indices,
        versions: versions.iter().flat_map(|version| version.to_le_bytes()).collect(),
        definitions: definition_bytes,
        need_count: needs.len() as u64,
        needs: need_bytes,
        sysv_hash: sysv_table(&names),
        gnu_hash: gnu_table(&names, symbols.defined_from as usize, symbols.gnu_buckets),
    }
}

/// The number of `version` of `library` among the versions the output needs (grouped by library, numbered
/// from 2 in order of first use): the one it has, or `next`, which then moves on.
fn needed_version(needs: &mut Vec<(String, Vec<(String, u16)>)>, library: &str, version: &str, next: &mut u16) -> u16 {
    let position = match needs.iter().position(|(file, _)| file == library) {
        Some(position) => position,
        None => {
            needs.push((library.to_string(), Vec::new()));
            needs.len() - 1
        }
    };
    let list = &mut needs[position].1;
    if let Some((_, number)) = list.iter().find(|(name, _)| name == version) {
        return *number;
    }
    list.push((version.to_string(), *next));
    *next += 1;
    *next - 1
}

/// The System V hash table of the symbols named `names` (the null symbol's first): buckets and chains.
fn sysv_table(names: &[Vec<u8>]) -> Vec<u8> {
    let buckets = bucket_count(names.len().saturating_sub(1));
    let mut bucket = vec![0u32; buckets as usize];
    let mut chain = vec![0u32; names.len()];
    for (index, name) in names.iter().enumerate().skip(1) {
        let slot = (sysv_hash(name) % buckets) as usize;
        chain[index] = bucket[slot];
        bucket[slot] = index as u32;
    }
    [buckets, names.len() as u32]
        .into_iter()
        .chain(bucket)
        .chain(chain)
        .flat_map(u32::to_le_bytes)
        .collect()
}

/// GNU's hash table of the symbols named `names` (the null symbol's first) from `from` on, which are sorted
/// by bucket (`buckets` of them): a Bloom filter of 64-bit words sized as GNU ld sizes it, the buckets and
/// the chain of hash values.
fn gnu_table(names: &[Vec<u8>], from: usize, buckets: u32) -> Vec<u8> {
    // The null symbol is never hashed, and there is at least one bucket.
    let (from, buckets) = (from.max(1), buckets.max(1));
    let hashed: Vec<u32> = names.iter().skip(from).map(|name| gnu_hash(name)).collect();
    let count = hashed.len();
    if count == 0 {
        // One empty bucket, the symbols from past the last, and one Bloom word of zeros.
        let mut words: Vec<u8> = [1u32, names.len() as u32, 1, 0]
            .iter()
            .flat_map(|word| word.to_le_bytes())
            .collect();
        words.extend_from_slice(&[0; 12]);
        return words;
    }
    // GNU ld's sizes: `maskbitslog2` from the number of symbols, in 64-bit words.
    let log2 = usize::BITS - (count - 1).leading_zeros();
    let mut mask_bits_log2 = log2 + 1;
    if mask_bits_log2 < 3 {
        mask_bits_log2 = 5;
    } else if (1usize << (mask_bits_log2 - 2)) & count != 0 {
        mask_bits_log2 += 3;
    } else {
        mask_bits_log2 += 2;
    }
    mask_bits_log2 = mask_bits_log2.max(6);
    let shift2 = mask_bits_log2;
    let words = 1usize << (mask_bits_log2 - 6);
    let mut bloom = vec![0u64; words];
    for hash in &hashed {
        let word = (*hash as usize / 64) & (words - 1);
        bloom[word] |= 1u64 << (hash % 64) | 1u64 << ((hash >> shift2) % 64);
    }
    let mut bucket = vec![0u32; buckets as usize];
    let mut chain = vec![0u32; count];
    for (position, hash) in hashed.iter().enumerate() {
        let slot = (hash % buckets) as usize;
        if bucket[slot] == 0 {
            bucket[slot] = (from + position) as u32;
        }
        let last = hashed
            .get(position + 1)
            .is_none_or(|next| next % buckets != hash % buckets);
        chain[position] = (hash & !1) | u32::from(last);
    }
    let mut bytes: Vec<u8> = [buckets, from as u32, words as u32, shift2]
        .into_iter()
        .flat_map(u32::to_le_bytes)
        .collect();
    bytes.extend(bloom.iter().flat_map(|word| word.to_le_bytes()));
    bytes.extend(bucket.iter().chain(&chain).flat_map(|word| word.to_le_bytes()));
    bytes
}

/// A place that holds an absolute address: a `RELATIVE` relocation makes it the load address plus the
/// link-time one; one naming a symbol of `.dynsym` makes it what the loader finds for the symbol.
enum Site {
    Relative {
        source: AtomId,
        offset: i64,
        target: (Option<SymbolId>, Option<AtomId>),
        addend: i64,
    },
    Symbolic {
        source: AtomId,
        offset: i64,
        index: u32,
        addend: i64,
        kind: Symbolic,
    },
}

impl Site {
    /// The atom the relocated place is in.
    fn source(&self) -> AtomId {
        match self {
            Site::Relative { source, .. } | Site::Symbolic { source, .. } => *source,
        }
    }
}

/// What a dynamic relocation naming a symbol stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Symbolic {
    /// The symbol's address in a GOT slot (`GLOB_DAT`).
    GotSlot,
    /// The symbol's address plus the addend in data (the target's 64-bit absolute relocation).
    Address,
    /// The variable's offset from the thread pointer (`TPOFF64`), in the slot of an initial-exec access.
    ThreadPointerOffset,
}

/// The places that hold an absolute address, in link order: (atom, offset, target, addend). Each gets a
/// `RELATIVE` relocation. Addresses in atoms the loader interprets (`excluded`), fixed values (absolute
/// symbols of the inputs, undefined weak symbols, which stay 0) and fields holding only the bits of an address
/// below the page size (`page_bits`) need none; an address in an allocated section that is not writable, or in
/// a field narrower than an address, is an error.
fn relative_sites(
    graph: &LinkGraph,
    excluded: &[AtomId],
    page_bits: u32,
    symbols: &DynamicSymbols,
    got: Option<AtomId>,
    output: SiteOutput,
    threads: usize,
) -> Result<Sites, PhaseError> {
    let SiteOutput {
        position_independent,
        text_relocations,
        loaded,
        library,
    } = output;
    // Places where a value is subtracted: an address written there is one side of a difference of two
    // addresses (RISC-V's `SET` and `SUB` pairs in `.eh_frame` and DWARF), which does not move with the output.
    // (A target that declares no subtracting relocation has none: its edges are not scanned.)
    let subtracts = graph.target_record().is_some_and(|target| {
        target
            .relocations
            .iter()
            .any(|record| record.kind == RelocationKind::Subtract)
    });
    let differences: FxHashSet<(AtomId, u64)> = if subtracts {
        crate::scan::edges_where(graph, threads, |_, edge| {
            (graph.relocation_kind(edge) == Some(RelocationKind::Subtract)).then_some((edge.source, edge.offset))
        })
        .into_iter()
        .collect()
    } else {
        FxHashSet::default()
    };
    // What each edge asks for, looked at on the link's threads: (the site, whether its source is read-only)
    // or why it cannot be had.
    let answers = crate::scan::edges_where(graph, threads, |_, edge| {
        let source = &graph.atoms[edge.source.index()];
        if !source.is_live() || source.flags & atom_flags::FOLDED != 0 || excluded.contains(&edge.source) {
            return None;
        }
        let flags = match source.section {
            Some(section) => graph.sections[section.index()].flags,
            None => {
                section_flags::ALLOCATED | OutputSectionId::for_input(&source.name).map_or(0, |id| id.kind().made_flags)
            }
        };
        if flags & section_flags::ALLOCATED == 0 {
            return None;
        }
        let record = graph.relocation(edge)?;
        if record.kind != RelocationKind::Symbol || record.relative_to != RelocationBase::Nothing {
            return None;
        }
        if differences.contains(&(edge.source, edge.offset)) {
            return None;
        }
        let offset = i64::try_from(edge.offset).unwrap_or(i64::MAX);
        // An address of an import that only the loader knows: a relocation naming its `.dynsym` entry.
        let imported = edge
            .target_symbol
            .get()
            .map(|symbol| graph.resolved(symbol))
            .filter(|symbol| symbols.is_run_time(*symbol));
        // `-z notext`: a 64-bit word of a read-only section is relocated too, the loader making its pages
        // writable for the time it relocates them (`DT_TEXTREL`).
        let writable = flags & section_flags::WRITABLE != 0;
        let relocatable = record.size == 64 && (writable || (text_relocations && loaded));
        if let Some(symbol) = imported
            && relocatable
        {
            let thread_local = graph.symbols[symbol.index()].symbol_type == SymbolType::Tls;
            let site = Site::Symbolic {
                source: edge.source,
                offset,
                index: symbols.index.get(&symbol).copied().unwrap_or(0),
                addend: edge.addend,
                kind: match (thread_local, Some(edge.source) == got) {
                    (true, _) => Symbolic::ThreadPointerOffset,
                    (false, true) => Symbolic::GotSlot,
                    (false, false) => Symbolic::Address,
                },
            };
            return Some(Ok((site, !writable)));
        }
        // At a fixed address, every other address is final.
        if imported.is_none()
            && (!position_independent
                || holds_fixed_value(graph, edge)
                || record.shift + record.value_width() <= page_bits)
        {
            return None;
        }
        if relocatable {
            let site = Site::Relative {
                source: edge.source,
                offset,
                target: (edge.target_symbol.get(), edge.target_atom.get()),
                addend: edge.addend,
            };
            return Some(Ok((site, !writable)));
        }
        let input = graph.input_name(source.origin.input());
        let section = source.section.map_or(source.name.as_str(), |section| {
            graph.sections[section.index()].name.as_str()
        });
        let target = edge
            .target_symbol
            .get()
            .map(|symbol| crate::symbol_name::display(&graph.symbols[symbol.index()].name).into_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "a section".to_string());
        let why = if record.size == 64 && text_relocations {
            "an address in a section that is not writable (a text relocation, which a static PIE cannot have: it \
             relocates itself without making its pages writable)"
        } else if record.size == 64 {
            "an address in a section that is not writable (a text relocation, which `-z notext` allows)"
        } else {
            "an absolute address in a field narrower than an address"
        };
        let (making, flag) = if library {
            ("a shared library", "-fPIC")
        } else {
            ("a position-independent executable", "-fPIE")
        };
        Some(Err(format!(
            "{input}({section}+{:#x}): relocation {} against `{target}` cannot be used in {making}: {why}; \
             recompile with {flag}",
            edge.offset, record.name
        )))
    });
    let mut sites = Vec::with_capacity(answers.len());
    let mut in_text = FxHashSet::default();
    let mut refused = Vec::new();
    for answer in answers {
        match answer {
            Ok((site, read_only)) => {
                if read_only {
                    in_text.insert(site.source());
                }
                sites.push(site);
            }
            Err(message) => refused.push(message),
        }
    }
    if refused.is_empty() {
        Ok(Sites { sites, in_text })
    } else {
        Err(PhaseError::new(PHASE, refused.join("\n")))
    }
}

/// What kind of output the dynamic relocations are for.
#[derive(Clone, Copy)]
struct SiteOutput {
    position_independent: bool,
    /// `-z notext`: words of read-only sections may be relocated.
    text_relocations: bool,
    /// Whether a loader relocates the output (which makes read-only pages writable for text relocations);
    /// a static PIE relocates itself and cannot.
    loaded: bool,
    /// Whether the output is a shared library (for messages).
    library: bool,
}

/// The places the loader relocates, and the atoms of read-only sections among their sources (text
/// relocations: the output then has `DT_TEXTREL`).
struct Sites {
    sites: Vec<Site>,
    in_text: FxHashSet<AtomId>,
}

/// Whether the value `edge` writes is the same wherever the image is loaded: an absolute symbol of an input,
/// or an undefined weak symbol (0).
fn holds_fixed_value(graph: &LinkGraph, edge: &Edge) -> bool {
    let Some(symbol) = edge.target_symbol.get().map(|symbol| graph.resolved(symbol)) else {
        return false;
    };
    let symbol = &graph.symbols[symbol.index()];
    match symbol.definition {
        Definition::Undefined => symbol.binding == Binding::Weak,
        Definition::Absolute => symbol.origin.input().is_some(),
        _ => false,
    }
}
