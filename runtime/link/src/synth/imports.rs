//! What a dynamically linked output takes from shared libraries and gives them: which symbols it imports
//! (a shared library's definition prevails for a name its live code refers to, or a weak undefined symbol is
//! loaded through the GOT, which the loader fills with 0 when nothing defines it), how each reference reaches
//! an import, and which of its own definitions it exports.
//!
//! By the kind of the reference, as GNU ld decides it for an executable:
//! - a GOT load gets a slot (`got.rs`) that a `GLOB_DAT` relocation fills, and an initial-exec access to a
//!   thread-local variable one that the variable's offset from the thread pointer fills (`TPOFF64`);
//! - a call or jump goes through the function's entry in the lazily bound PLT (the architecture's
//!   [`crate::arch::LazyPlt`]), whose `.got.plt` slot a `JUMP_SLOT` relocation in `.rela.plt` fills;
//! - a 64-bit absolute address in writable data gets a symbolic dynamic relocation (`dynamic.rs`);
//! - any other reference to a function means its PLT entry, which is then the function's address for the
//!   whole program (the *canonical* PLT entry, named by its `.dynsym` entry's value), and to data a *copy*:
//!   space in the output's
//!   `.bss` that a `COPY` relocation fills from the library at start-up, which then is the variable for
//!   everyone (the library's own references bind to it through the output's `.dynsym`).
//!
//! A definition of the output is exported when a shared library of the link refers to its name, or
//! `--dynamic-list`, `--export-dynamic-symbol` or `--export-dynamic-symbol-list` names it (or with
//! `--export-dynamic`, every global one of default or protected visibility). The `.dynsym` order is decided
//! here: the null symbol, the imports in the order of their first references, then the defined symbols
//! (copies, exports) sorted by their `.gnu.hash` bucket, as that table needs them. Shared libraries given
//! with `--as-needed` (or inside a script's `AS_NEEDED`) are needed only when an import resolves to them.

use neverc_tables::{RelocationBase, RelocationKind};
use rustc_hash::{FxHashMap, FxHashSet};

use super::code::DeclaredFields;
use super::{PHASE, absolute_edge, declared, new_atom};
use crate::arch::Unbound;
use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    Atom, AtomId, Binding, Content, Definition, Export, Import, LinkGraph, Origin, SharedLibraryId, Symbol, SymbolId,
    SymbolType, Visibility, atom_flags, section_flags,
};
use crate::sections::OutputSectionId;
use crate::symbol_options::glob_matches;

/// The size of an `Elf64_Rela`.
const RELA_SIZE: u64 = 24;

/// What a dynamically linked output imports and exports.
#[derive(Clone, Debug, Default)]
pub(crate) struct DynamicSymbols {
    /// The `.dynsym` entries after the null symbol, in order: the imports, then the defined symbols from
    /// index `defined_from`.
    pub(crate) entries: Vec<SymbolId>,
    /// The `.dynsym` index of each entry.
    pub(crate) index: FxHashMap<SymbolId, u32>,
    /// The index of the first defined entry (`symoffset` of `.gnu.hash`).
    pub(crate) defined_from: u32,
    /// The number of `.gnu.hash` buckets the defined entries are sorted by.
    pub(crate) gnu_buckets: u32,
    /// The imports that some reference in the output's code binds weakly only (`STB_WEAK` in `.dynsym`).
    pub(crate) weak: FxHashSet<SymbolId>,
    /// The imported functions whose address the output's code takes other than through the GOT: their PLT
    /// entries are their addresses for the whole program (`st_value` of their undefined `.dynsym` entries).
    pub(crate) canonical: FxHashSet<SymbolId>,
    /// The imported variables the output holds a copy of, each with its atom in `.bss` (one `COPY`
    /// relocation each).
    pub(crate) copies: Vec<(SymbolId, AtomId)>,
    /// The copied variables and their aliases (other names the library gives the same variable, such as
    /// `__environ` for `environ`), all defined by the copies.
    pub(crate) copied: FxHashSet<SymbolId>,
    /// The lazily bound PLT of the imported functions that are called.
    pub(crate) plt: Option<ImportPlt>,
    /// The libraries the output needs (`DT_NEEDED`), in link order.
    pub(crate) needed: Vec<SharedLibraryId>,
    /// The imports only weak references of the output reach, defined by libraries given as needed only
    /// (`--as-needed`) which nothing else makes needed: undefined weak names, in no version.
    pub(crate) unbound: FxHashSet<SymbolId>,
    /// A shared library's exported definitions that its own references reach through the loader (which may
    /// bind them to another definition): their calls go through PLT entries, their GOT slots and words
    /// hold what the loader binds.
    pub(crate) preemptible: FxHashSet<SymbolId>,
}

impl DynamicSymbols {
    /// Whether `symbol` (resolved) is imported (an undefined `.dynsym` entry, not one the output defines) and
    /// not at its PLT entry: its address is known at run time only.
    pub(crate) fn is_run_time(&self, symbol: SymbolId) -> bool {
        self.is_imported(symbol) || self.preemptible.contains(&symbol)
    }

    /// Whether `symbol` (resolved) is an import the output has no address for at all (not at its PLT entry,
    /// not copied, not defined by the output): what the loader writes is all there is.
    pub(crate) fn is_imported(&self, symbol: SymbolId) -> bool {
        self.index.get(&symbol).is_some_and(|index| *index < self.defined_from)
            && !self.copied.contains(&symbol)
            && !self.canonical.contains(&symbol)
    }
}

/// The PLT of imported functions: its atom (the header then one entry per function), the `.got.plt` slots
/// and the `.rela.plt` relocations.
#[derive(Clone, Debug)]
pub(crate) struct ImportPlt {
    pub(crate) atom: AtomId,
    pub(crate) slots: AtomId,
    pub(crate) relocations: AtomId,
    pub(crate) header_size: u64,
    pub(crate) entry_size: u64,
    /// The words at the start of `.got.plt` before the functions' slots (`LazyPlt::reserved_slots`).
    pub(crate) reserved_slots: u64,
    /// The entry of each function.
    pub(crate) entries: FxHashMap<SymbolId, u32>,
    /// The functions, in entry order (for their `JUMP_SLOT` relocations).
    pub(crate) functions: Vec<SymbolId>,
}

impl ImportPlt {
    /// The offset of `function`'s entry in the PLT atom.
    pub(crate) fn entry_offset(&self, function: SymbolId) -> Option<u64> {
        let entry = *self.entries.get(&function)?;
        Some(self.header_size + u64::from(entry) * self.entry_size)
    }
}

/// How the output's references reach an import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    /// Through a GOT slot, or a dynamic relocation at the reference.
    Loader,
    /// Through the function's PLT entry.
    Plt,
    /// At the function's PLT entry, which is then its address for everyone (its `.dynsym` entry says so).
    Address,
    /// Through a copy in the output.
    Copy,
}

pub(super) fn make(context: &mut LinkContext, origin: Origin) -> Result<(), PhaseError> {
    if context.synthesized.dynamic_symbols.is_some() || !context.options.output_kind.is_dynamic() {
        return Ok(());
    }
    let graph = &context.graph;
    // A shared library imports every name it leaves undefined, and reaches its own interposable
    // definitions as it reaches imports; it holds no copies and no canonical PLT entries.
    let shared_library = context.options.output_kind.is_shared_library();
    let order = graph.command_line_order();
    let text_relocations = context.options.text_relocations;
    // What each edge needs of an import, or why it cannot have it, looked at on the link's threads.
    let answers = crate::scan::edges_where(graph, context.options.threads, |position, edge| {
        let source = &graph.atoms[edge.source.index()];
        if !source.is_live() || source.flags & atom_flags::FOLDED != 0 {
            return None;
        }
        let (Some(symbol), Some(record)) = (
            edge.target_symbol.get().map(|symbol| graph.resolved(symbol)),
            graph.relocation(edge),
        ) else {
            return None;
        };
        let entry = &graph.symbols[symbol.index()];
        // A shared library's TLS accesses keep their models (`tls.rs`); a local-exec one (an offset from the
        // thread pointer fixed at link time) cannot be made in a library, which the loader places.
        if shared_library && record.kind == RelocationKind::TlsLe {
            let input = graph.input_name(source.origin.input());
            return Some(Err(format!(
                "{input}({}+{:#x}): relocation {} against `{}`: a local-exec access to a thread-local variable \
                 cannot be used when making a shared library; recompile with -fPIC",
                source.name,
                edge.offset,
                record.name,
                crate::symbol_name::display(&entry.name),
            )));
        }
        let through_got = matches!(
            record.kind,
            RelocationKind::GotEntry | RelocationKind::GotEntryRelaxable
        );
        let imported = match entry.definition {
            Definition::Shared => true,
            Definition::Undefined => shared_library || (entry.binding == Binding::Weak && through_got),
            _ => graph.is_preemptible(symbol),
        };
        if !imported {
            return None;
        }
        let function = matches!(entry.symbol_type, SymbolType::Function | SymbolType::Ifunc);
        if shared_library {
            let need = match record.kind {
                RelocationKind::GotEntry
                | RelocationKind::GotEntryRelaxable
                | RelocationKind::Size
                | RelocationKind::None => Some(Need::Loader),
                RelocationKind::Branch => Some(Need::Plt),
                // The TLS entries of an interposable or imported variable name its `.dynsym` entry.
                RelocationKind::TlsGd
                | RelocationKind::TlsIe
                | RelocationKind::TlsDesc
                | RelocationKind::TlsDescCall => Some(Need::Loader),
                // In a read-only section only with `-z notext` (a text relocation).
                RelocationKind::Symbol
                    if record.relative_to == RelocationBase::Nothing
                        && record.size == 64
                        && (writable(graph, edge.source) || text_relocations) =>
                {
                    Some(Need::Loader)
                }
                _ => None,
            };
            let Some(need) = need else {
                let input = graph.input_name(source.origin.input());
                let what = if entry.definition == Definition::Undefined {
                    "which the library leaves to the loader"
                } else {
                    "which the library exports (another definition may interpose)"
                };
                return Some(Err(format!(
                    "{input}({}+{:#x}): relocation {} against `{}`, {what}, cannot be used when making a shared \
                     library; recompile with -fPIC",
                    source.name,
                    edge.offset,
                    record.name,
                    crate::symbol_name::display(&entry.name),
                )));
            };
            let place = source
                .origin
                .input()
                .map_or((u32::MAX, 0), |input| order[input.index()]);
            return Some(Ok((place, position, symbol, need)));
        }
        let need = match record.kind {
            // An initial-exec access to an imported thread-local variable reads its offset from the thread
            // pointer from a GOT slot the loader fills (`got.rs`).
            RelocationKind::GotEntry
            | RelocationKind::GotEntryRelaxable
            | RelocationKind::Size
            | RelocationKind::None
            | RelocationKind::TlsIe => Need::Loader,
            // General-dynamic and descriptor accesses are relaxed to initial-exec ones, as in GNU ld's
            // executables (the architecture refuses those it cannot rewrite).
            RelocationKind::TlsGd | RelocationKind::TlsDesc | RelocationKind::TlsDescCall => Need::Loader,
            RelocationKind::Branch => Need::Plt,
            RelocationKind::Symbol
                if record.relative_to == RelocationBase::Nothing
                    && record.size == 64
                    && writable(graph, edge.source) =>
            {
                Need::Loader
            }
            RelocationKind::Symbol if function => Need::Address,
            RelocationKind::Symbol => Need::Copy,
            _ => {
                let input = graph.input_name(source.origin.input());
                return Some(Err(format!(
                    "{input}({}+{:#x}): relocation {} against `{}`, which the shared library {} defines: a \
                     variable of a shared library is reached by the initial-exec, general-dynamic or descriptor \
                     model, not this relocation's (compile with -fPIE or -fPIC)",
                    source.name,
                    edge.offset,
                    record.name,
                    crate::symbol_name::display(&entry.name),
                    graph.input_name(entry.origin.input())
                )));
            }
        };
        let place = source
            .origin
            .input()
            .map_or((u32::MAX, 0), |input| order[input.index()]);
        Some(Ok((place, position, symbol, need)))
    });
    let mut uses: Vec<((u32, u32), usize, SymbolId, Need)> = Vec::with_capacity(answers.len());
    let mut refused = Vec::new();
    for answer in answers {
        match answer {
            Ok(used) => uses.push(used),
            Err(message) => refused.push(message),
        }
    }
    if !refused.is_empty() {
        refused.sort();
        refused.dedup();
        return Err(PhaseError::new(PHASE, refused.join("\n")));
    }
    uses.sort_unstable();

    // The imports in the order of their first references, and what each needs.
    let mut imports: Vec<SymbolId> = Vec::new();
    let mut needs: FxHashMap<SymbolId, (bool, bool)> = FxHashMap::default();
    let mut canonical: FxHashSet<SymbolId> = FxHashSet::default();
    let mut preempted_calls: Vec<SymbolId> = Vec::new();
    let mut called: FxHashSet<SymbolId> = FxHashSet::default();
    for (_, _, symbol, need) in &uses {
        if context.graph.is_preemptible(*symbol) {
            if *need == Need::Plt && called.insert(*symbol) {
                preempted_calls.push(*symbol);
            }
            continue;
        }
        let entry = needs.entry(*symbol).or_insert_with(|| {
            imports.push(*symbol);
            (false, false)
        });
        match need {
            Need::Plt => entry.0 = true,
            Need::Address => {
                entry.0 = true;
                canonical.insert(*symbol);
            }
            Need::Copy => entry.1 = true,
            Need::Loader => {}
        }
    }
    let mut functions: Vec<SymbolId> = imports.iter().copied().filter(|symbol| needs[symbol].0).collect();
    functions.extend(preempted_calls.iter().copied());
    let copied: Vec<SymbolId> = imports
        .iter()
        .copied()
        .filter(|symbol| !needs[symbol].0 && needs[symbol].1)
        .collect();

    // An import is weak in `.dynsym` when every reference of the output's own objects to it is weak.
    let strong: FxHashSet<SymbolId> = graph
        .symbols
        .iter()
        .filter(|symbol| {
            symbol.definition == Definition::Undefined
                && symbol.binding == Binding::Global
                && symbol
                    .origin
                    .input()
                    .is_some_and(|input| !is_shared_input(graph, input.index()))
        })
        .filter_map(|symbol| symbol.resolution)
        .collect();
    let weak: FxHashSet<SymbolId> = imports
        .iter()
        .copied()
        .filter(|symbol| !strong.contains(symbol))
        .collect();

    // The global names of imported weak definitions come along, as GNU ld takes them: defined by the copy
    // when the weak one is copied, imported beside it otherwise.
    let aliased = aliases(context, &imports);
    let copies = make_copies(context, &copied, origin)?;
    let mut aliases = Vec::with_capacity(aliased.len());
    for (alias, of) in aliased {
        if needs.contains_key(&alias) {
            continue;
        }
        match copies.iter().find(|(copied, _)| *copied == of) {
            Some((_, atom)) => {
                let entry = &mut context.graph.symbols[alias.index()];
                entry.atom = Some(*atom);
                entry.value = 0;
                aliases.push(alias);
            }
            None => {
                needs.insert(alias, (false, false));
                imports.push(alias);
            }
        }
    }
    let exports = exports(context);
    let preemptible: FxHashSet<SymbolId> = exports
        .iter()
        .copied()
        .filter(|symbol| context.graph.is_preemptible(*symbol))
        .collect();
    let graph = &mut context.graph;
    let plt = if functions.is_empty() {
        None
    } else {
        Some(make_plt(graph, &functions, origin)?)
    };

    // `.dynsym`: the imports that stay undefined, then the defined symbols by `.gnu.hash` bucket.
    let mut copied_set: FxHashSet<SymbolId> = copied.iter().copied().collect();
    copied_set.extend(aliases.iter().copied());
    let mut entries: Vec<SymbolId> = imports
        .iter()
        .copied()
        .filter(|symbol| !copied_set.contains(symbol))
        .collect();
    let defined_from = entries.len() as u32 + 1;
    let mut defined: Vec<SymbolId> = copied.clone();
    defined.extend(aliases.iter().copied());
    defined.extend(exports.iter().copied().filter(|symbol| !copied_set.contains(symbol)));
    let gnu_buckets = bucket_count(defined.len());
    defined.sort_by_key(|symbol| {
        gnu_hash(&crate::symbol_name::to_bytes(
            unversioned_name(&graph.symbols[symbol.index()]).0,
        )) % gnu_buckets
    });
    entries.extend(defined);
    let index: FxHashMap<SymbolId, u32> = entries
        .iter()
        .enumerate()
        .map(|(position, symbol)| (*symbol, position as u32 + 1))
        .collect();

    // The `JUMP_SLOT` relocations name their functions' `.dynsym` entries.
    if let Some(plt) = &plt {
        let jump_slot = u64::from(declared(graph, RelocationKind::JumpSlot, RelocationBase::Nothing, 64)?);
        let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
        let mut rela = Vec::with_capacity(plt.functions.len() * RELA_SIZE as usize);
        for (entry, function) in plt.functions.iter().enumerate() {
            let symbol = index.get(function).copied().map(u64::from).ok_or_else(|| {
                PhaseError::new(
                    PHASE,
                    format!(
                        "`{}` has a PLT entry but no .dynsym entry",
                        crate::symbol_name::display(&graph.symbols[function.index()].name)
                    ),
                )
            })?;
            rela.extend_from_slice(&[0; 8]);
            rela.extend_from_slice(&(symbol << 32 | jump_slot).to_le_bytes());
            rela.extend_from_slice(&[0; 8]);
            let slot = (plt.reserved_slots + entry as u64) * 8;
            graph.edges.push(absolute_edge(
                absolute,
                plt.relocations,
                entry as u64 * RELA_SIZE,
                (None, Some(plt.slots)),
                slot as i64,
                origin,
            ));
        }
        if let Some(atom) = graph.atoms.get_mut(plt.relocations.index()) {
            atom.content = Content::Owned(std::sync::Arc::from(rela));
        }
    }

    // The plugin-visible entities: what is imported, from which library, and what is exported.
    let library_of = |graph: &LinkGraph, symbol: SymbolId| {
        let input = graph.symbols[symbol.index()].origin.input()?;
        graph
            .shared_libraries
            .iter()
            .position(|library| library.input == input)
            .map(|position| SharedLibraryId(position as u32))
    };
    for symbol in &imports {
        let library = library_of(graph, *symbol);
        graph.imports.push(Import {
            name: graph.symbols[symbol.index()].name.clone(),
            library,
            symbol: *symbol,
            origin,
        });
        graph.symbols[symbol.index()].imported = true;
    }
    for symbol in &exports {
        graph.exports.push(Export {
            name: graph.symbols[symbol.index()].name.clone(),
            symbol: *symbol,
            origin,
        });
        graph.symbols[symbol.index()].exported = true;
    }

    // The libraries the output needs: every one not given as needed only, and those whose definitions it
    // imports by a reference that is not weak (a weak one does not make a library needed, as in GNU ld).
    let used: FxHashSet<SharedLibraryId> = imports
        .iter()
        .filter(|symbol| !weak.contains(symbol))
        .filter_map(|symbol| library_of(graph, *symbol))
        .collect();
    let mut needed_set: FxHashSet<SharedLibraryId> = (0..graph.shared_libraries.len())
        .map(|position| SharedLibraryId(position as u32))
        .filter(|library| {
            let input = graph.shared_libraries[library.index()].input.index();
            used.contains(library) || !context.options.as_needed.contains(&input)
        })
        .collect();
    // A library given as needed only is needed too when it defines what a needed library leaves undefined
    // (not weakly), unless that library names it among its own needed libraries, as GNU ld decides it. Each
    // needed library's references are looked at once.
    let mut unscanned: Vec<SharedLibraryId> = needed_set.iter().copied().collect();
    while let Some(library) = unscanned.pop() {
        let entry = &graph.shared_libraries[library.index()];
        for name in &entry.references {
            let Some(definition) = context.global_symbols.get(name) else {
                continue;
            };
            if graph.symbols[definition.index()].definition != Definition::Shared {
                continue;
            }
            if let Some(defining) = library_of(graph, *definition)
                && !needed_set.contains(&defining)
                && !entry
                    .needed
                    .contains(&graph.shared_libraries[defining.index()].install_name)
            {
                needed_set.insert(defining);
                unscanned.push(defining);
            }
        }
    }
    let needed: Vec<SharedLibraryId> = (0..graph.shared_libraries.len())
        .map(|position| SharedLibraryId(position as u32))
        .filter(|library| needed_set.contains(library))
        .collect();
    // The imports of the libraries left out are bound to nothing the output names: weak undefined names.
    let unbound: FxHashSet<SymbolId> = imports
        .iter()
        .filter(|symbol| library_of(graph, **symbol).is_some_and(|library| !needed_set.contains(&library)))
        .copied()
        .collect();
    let mut seen = FxHashSet::default();
    let needed = needed
        .into_iter()
        .filter(|library| seen.insert(graph.shared_libraries[library.index()].install_name.clone()))
        .collect();

    context.synthesized.dynamic_symbols = Some(DynamicSymbols {
        entries,
        index,
        defined_from,
        gnu_buckets,
        weak,
        canonical,
        copies,
        copied: copied_set,
        plt,
        needed,
        unbound,
        preemptible,
    });
    Ok(())
}

/// The name of `symbol` in `.dynsym`, without the version a definition of a hidden version (`name@VERSION`)
/// or an object's default one (`name@@VERSION`) is named with in the link, and whether its version is a
/// hidden one.
pub(crate) fn unversioned_name(symbol: &Symbol) -> (&str, bool) {
    let without = symbol.version.as_ref().and_then(|version| {
        symbol
            .name
            .strip_suffix(version.as_str())
            .and_then(|name| name.strip_suffix('@'))
    });
    match without {
        Some(name) => match name.strip_suffix('@') {
            Some(name) => (name, false),
            None => (name, true),
        },
        None => (symbol.name.as_str(), false),
    }
}

/// Whether input `index` is a shared library.
fn is_shared_input(graph: &LinkGraph, index: usize) -> bool {
    graph
        .shared_libraries
        .iter()
        .any(|library| library.input.index() == index)
}

/// Whether the atom lies in a writable allocated section (its input section's, or what the linker makes).
fn writable(graph: &LinkGraph, atom: AtomId) -> bool {
    let atom = &graph.atoms[atom.index()];
    let flags = match atom.section {
        Some(section) => graph.sections[section.index()].flags,
        None => section_flags::ALLOCATED | OutputSectionId::for_input(&atom.name).map_or(0, |id| id.kind().made_flags),
    };
    flags & section_flags::ALLOCATED != 0 && flags & section_flags::WRITABLE != 0
}

/// Reserves space in `.bss` for each copied variable, which from then on is the variable's definition in
/// the output. Its alignment is the largest power of two (up to 64) its address in the library has, which
/// is at least what it needs.
fn make_copies(
    context: &mut LinkContext,
    copied: &[SymbolId],
    origin: Origin,
) -> Result<Vec<(SymbolId, AtomId)>, PhaseError> {
    let graph = &mut context.graph;
    let mut copies = Vec::with_capacity(copied.len());
    for symbol in copied {
        let entry = &graph.symbols[symbol.index()];
        if entry.size == 0 {
            return Err(PhaseError::new(
                PHASE,
                format!(
                    "`{}` of the shared library {} is referred to directly, which needs a copy in the \
                     executable, but its size is 0; recompile with -fPIE",
                    crate::symbol_name::display(&entry.name),
                    graph.input_name(entry.origin.input())
                ),
            ));
        }
        let alignment = 1u64 << entry.value.trailing_zeros().min(6);
        let atom = AtomId(graph.atoms.len() as u32);
        graph.atoms.push(Atom {
            section: None,
            name: "COMMON".into(),
            flags: atom_flags::SYNTHETIC | atom_flags::LIVE,
            alignment,
            address: 0,
            file_offset: 0,
            content: Content::ZeroFill,
            zero_fill: entry.size,
            comdat: None,
            fold_leader: None,
            origin,
        });
        let entry = &mut graph.symbols[symbol.index()];
        entry.atom = Some(atom);
        entry.value = 0;
        copies.push((*symbol, atom));
    }
    graph.edges_by_atom.resize(graph.atoms.len(), 0..0);
    Ok(copies)
}

/// The other names of imported weak definitions, as GNU ld finds them: their global definitions in the
/// same library at the same address (`__environ` for a weak `environ`). A copy defines them too, so that the
/// library's code, which uses the global name, reads and writes the copy. Each prevails for its name.
/// (alias, the imported weak symbol) pairs.
fn aliases(context: &LinkContext, imports: &[SymbolId]) -> Vec<(SymbolId, SymbolId)> {
    let graph = &context.graph;
    let wanted: FxHashMap<(u32, u64), SymbolId> = imports
        .iter()
        .filter(|symbol| {
            let entry = &graph.symbols[symbol.index()];
            entry.definition == Definition::Shared
                && entry.binding == Binding::Weak
                && matches!(entry.symbol_type, SymbolType::Object | SymbolType::None)
        })
        .filter_map(|symbol| {
            let entry = &graph.symbols[symbol.index()];
            Some(((entry.origin.input()?.0, entry.value), *symbol))
        })
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let imported: FxHashSet<SymbolId> = imports.iter().copied().collect();
    let mut found = Vec::new();
    for (position, symbol) in graph.symbols.iter().enumerate() {
        let id = SymbolId(position as u32);
        // Not a definition of a hidden version (`name@VERSION`), which nothing refers to by its plain name.
        if symbol.definition != Definition::Shared
            || symbol.binding != Binding::Global
            || imported.contains(&id)
            || symbol.name.contains('@')
        {
            continue;
        }
        let Some(input) = symbol.origin.input() else {
            continue;
        };
        let Some(of) = wanted.get(&(input.0, symbol.value)) else {
            continue;
        };
        if context.global_symbols.get(&symbol.name) == Some(&id) {
            found.push((id, *of));
        }
    }
    found
}

/// The output's definitions it exports: those a shared library of the link refers to or defines too (or,
/// with `--export-dynamic`, every global one), of default or protected visibility, in name order.
pub(crate) fn exports(context: &LinkContext) -> Vec<SymbolId> {
    let graph = &context.graph;
    let table = &context.global_symbols;
    let exportable = |symbol: SymbolId| {
        let entry = &graph.symbols[symbol.index()];
        matches!(entry.visibility, Visibility::Default | Visibility::Protected)
            && matches!(entry.binding, Binding::Global | Binding::Weak)
            && !matches!(entry.definition, Definition::Undefined | Definition::Shared)
            && entry.symbol_type != SymbolType::Section
    };
    let shared_library = context.options.output_kind.is_shared_library();
    let mut exports: Vec<SymbolId> = if shared_library {
        table.values().copied().filter(|symbol| exportable(*symbol)).collect()
    } else if context.options.export_dynamic {
        table.values().copied().filter(|symbol| exportable(*symbol)).collect()
    } else {
        // Names shared libraries refer to, and names they define (so that their references bind to the
        // output's definition), as GNU ld exports them from an executable.
        let defined_there = graph
            .symbols
            .iter()
            .filter(|symbol| symbol.definition == Definition::Shared)
            .map(|symbol| &symbol.name);
        graph
            .shared_libraries
            .iter()
            .flat_map(|library| &library.references)
            .chain(defined_there)
            .filter_map(|name| table.get(name).copied())
            .chain(listed(context))
            .chain(version_symbols(context))
            .filter(|symbol| exportable(*symbol))
            .collect()
    };
    exports.sort_by(|a, b| graph.symbols[a.index()].name.cmp(&graph.symbols[b.index()].name));
    exports.dedup();
    exports
}

/// The symbols naming the versions a version script defines, which ld.bfd exports from every dynamically
/// linked output (an executable's too).
fn version_symbols(context: &LinkContext) -> impl Iterator<Item = SymbolId> + '_ {
    let graph = &context.graph;
    context
        .options
        .symbols
        .version_script
        .iter()
        .flat_map(|script| script.named_nodes())
        .filter_map(|node| node.name.as_ref())
        .filter_map(|name| context.global_symbols.get(name).copied())
        .filter(move |symbol| {
            let entry = &graph.symbols[symbol.index()];
            entry.definition == Definition::Absolute && entry.version.as_ref() == Some(&entry.name)
        })
}

/// The global symbols `--dynamic-list`, `--export-dynamic-symbol-list` and `--export-dynamic-symbol` name:
/// exact names looked up, patterns matched against every global name.
pub(crate) fn listed(context: &LinkContext) -> Vec<SymbolId> {
    let patterns = &context.options.symbols.dynamic_exports;
    let is_glob = |pattern: &String| pattern.contains(['*', '?', '[']);
    let mut listed: Vec<SymbolId> = patterns
        .iter()
        .filter(|pattern| !is_glob(pattern))
        .filter_map(|name| context.global_symbols.get(name).copied())
        .collect();
    let globs: Vec<&String> = patterns.iter().filter(|pattern| is_glob(pattern)).collect();
    if !globs.is_empty() {
        listed.extend(
            context
                .global_symbols
                .iter()
                .filter(|(name, _)| globs.iter().any(|glob| glob_matches(glob, name)))
                .map(|(_, symbol)| *symbol),
        );
    }
    listed
}

/// Makes the PLT of `functions`: the architecture's header and one entry each, their `.got.plt` slots (after
/// the reserved words; each first sends its entry to the loader's resolver) and room for their `JUMP_SLOT`
/// relocations in `.rela.plt`, which the caller fills once `.dynsym` is ordered.
fn make_plt(graph: &mut LinkGraph, functions: &[SymbolId], origin: Origin) -> Result<ImportPlt, PhaseError> {
    let Some(templates) = graph.arch().lazy_plt else {
        let names: Vec<String> = functions
            .iter()
            .take(3)
            .map(|symbol| format!("`{}`", crate::symbol_name::display(&graph.symbols[symbol.index()].name)))
            .collect();
        return Err(PhaseError::new(
            PHASE,
            format!(
                "calling functions of shared libraries ({}) is not supported for this target yet",
                names.join(", ")
            ),
        ));
    };
    let header_fields =
        DeclaredFields::of(graph, &templates.header, "its PLT").map_err(|error| PhaseError::new(PHASE, error))?;
    let entry_fields =
        DeclaredFields::of(graph, &templates.entry, "its PLT").map_err(|error| PhaseError::new(PHASE, error))?;
    let back_fields = DeclaredFields::of(graph, &templates.entry_to_header, "its PLT")
        .map_err(|error| PhaseError::new(PHASE, error))?;
    let absolute = declared(graph, RelocationKind::Symbol, RelocationBase::Nothing, 64)?;
    let header_size = templates.header.size();
    let entry_size = templates.entry.size();
    let count = functions.len() as u64;
    let mut code = templates.header.code.to_vec();
    for entry in 0..count {
        let start = code.len();
        code.extend_from_slice(templates.entry.code);
        if let Some(at) = templates.index_at {
            let at = start + at as usize;
            if let Some(field) = code.get_mut(at..at + 4) {
                field.copy_from_slice(&(entry as u32).to_le_bytes());
            }
        }
    }
    let reserved = templates.reserved_slots;
    let plt = new_atom(graph, None, OutputSectionId::Iplt.name(), 16, code, origin);
    let slots = new_atom(
        graph,
        None,
        OutputSectionId::IgotPlt.name(),
        8,
        vec![0; ((reserved + count) * 8) as usize],
        origin,
    );
    let relocations = new_atom(graph, None, OutputSectionId::RelaIplt.name(), 8, Vec::new(), origin);
    let edges: Vec<_> = header_fields.edges(plt, 0, (None, Some(slots)), 0, origin).collect();
    graph.edges.extend(edges);
    for entry in 0..count {
        let at = header_size + entry * entry_size;
        let slot = ((reserved + entry) * 8) as i64;
        let mut edges: Vec<_> = entry_fields.edges(plt, at, (None, Some(slots)), slot, origin).collect();
        edges.extend(back_fields.edges(plt, at, (None, Some(plt)), 0, origin));
        let unbound = match templates.unbound {
            Unbound::IntoEntry(offset) => at + offset,
            Unbound::Header => 0,
        };
        edges.push(absolute_edge(
            absolute,
            slots,
            slot as u64,
            (None, Some(plt)),
            unbound as i64,
            origin,
        ));
        graph.edges.extend(edges);
    }
    let entries = functions
        .iter()
        .enumerate()
        .map(|(entry, function)| (*function, entry as u32))
        .collect();
    Ok(ImportPlt {
        atom: plt,
        slots,
        relocations,
        header_size,
        entry_size,
        reserved_slots: reserved,
        entries,
        functions: functions.to_vec(),
    })
}

/// The number of hash buckets for `count` symbols, as GNU ld chooses it without optimization: the largest
/// of its primes that is at most the count.
pub(crate) fn bucket_count(count: usize) -> u32 {
    const BUCKETS: [u32; 16] = [
        1, 3, 17, 37, 67, 97, 131, 197, 263, 521, 1031, 2053, 4099, 8209, 16411, 32771,
    ];
    let mut best = BUCKETS[0];
    for pair in BUCKETS.windows(2) {
        best = pair[0];
        if (count as u64) < u64::from(pair[1]) {
            return best;
        }
    }
    BUCKETS[BUCKETS.len() - 1].max(best)
}

/// GNU's symbol hash (`.gnu.hash`, the DJB hash).
pub(crate) fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |hash, byte| {
        hash.wrapping_mul(33).wrapping_add(u32::from(*byte))
    })
}

/// The System V symbol hash (`.hash`, and the version names of `.gnu.version_r`).
pub(crate) fn sysv_hash(name: &[u8]) -> u32 {
    let mut hash = 0u32;
    for byte in name {
        hash = (hash << 4).wrapping_add(u32::from(*byte));
        let high = hash & 0xf000_0000;
        if high != 0 {
            hash ^= high >> 24;
        }
        hash &= !high;
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_the_elf_ones() {
        // The values the gABI and GNU's documentation give.
        assert_eq!(gnu_hash(b""), 5381);
        assert_eq!(gnu_hash(b"printf"), 0x156b_2bb8);
        assert_eq!(sysv_hash(b"printf"), 0x0779_05a6);
        assert_eq!(sysv_hash(b"GLIBC_2.2.5"), 0x09691a75);
        assert_eq!(bucket_count(0), 1);
        assert_eq!(bucket_count(2), 1);
        assert_eq!(bucket_count(3), 3);
        assert_eq!(bucket_count(40), 37);
    }
}
