//! `neverc.link.resolve_symbols`: one prevailing definition per global name. Archive members are extracted
//! while they define a name that is still undefined (repeating, since a member may need another); a strong
//! definition beats a common one, which beats a weak one, which beats a shared library's; weak references pull nothing and may stay
//! undefined (address 0); a strong reference to a name nobody defines is an error naming the referencing
//! input and the symbol. Common symbols get zero-filled atoms; names the linker defines (`__start_X`,
//! `__init_array_start`, ...) get synthetic symbols whose values layout fills in.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{LinkContext, PhaseError};
use crate::graph::{
    Atom, AtomId, Binding, COMMON, Content, Definition, LinkGraph, MaterializationReason, MemberId, Origin, STRONG,
    Symbol, SymbolId, SymbolType, Synthetic, SyntheticRole, Visibility, atom_flags,
};
use crate::linker_defined::linker_defined;
use crate::phases::LinkPhase;
use crate::read::extract_member;
use crate::symbol_name;
use crate::symbol_options::{Defsym, DefsymValue, Unresolved};

const PHASE: LinkPhase = LinkPhase::ResolveSymbols;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    let options = context.options.symbols.clone();
    let graph = &mut context.graph;
    let mut table: FxHashMap<String, SymbolId> = FxHashMap::default();
    let mut duplicates = Vec::new();
    // Members by the names they define, first archive and first member first.
    let mut providers: FxHashMap<String, MemberId> = FxHashMap::default();
    for (index, member) in graph.archive_members.iter().enumerate() {
        for name in &member.defines {
            providers.entry(name.clone()).or_insert(MemberId(index as u32));
        }
    }
    // The symbols the next round adds to the table: on the first, all from the first one read from an input
    // on; on each later one, those of the members extracted by the round before (appended to the graph).
    let mut first_new_symbol = graph
        .symbols
        .iter()
        .position(|symbol| symbol.origin.input().is_some())
        .unwrap_or(graph.symbols.len());
    // The symbols the next round looks at for references that want a member: on the first, all of them. A
    // reference that wants no member in a round never will (names only ever become defined and members only
    // ever extracted), and one that wants a member has it extracted in that round; so each later round looks
    // only at the symbols of the members extracted by the round before, and the work is linear overall.
    let mut first_new_reference = 0;
    loop {
        // Add the symbols of inputs read since the last round.
        for id in first_new_symbol..graph.symbols.len() {
            wrap_reference(&mut graph.symbols[id], &options.wrap);
            add_definition(graph, &mut table, SymbolId(id as u32), &mut duplicates);
        }
        // Extract the members that define a strongly referenced, still undefined name; or one a shared library
        // defines, when the member's archive comes before that library on the command line (GNU ld and lld
        // take the archive's member there: `-lgcc` before `-lgcc_s`).
        let wants_member = |name: &str, member: MemberId| match table.get(name) {
            None => true,
            Some(prevailing) => {
                let prevailing = &graph.symbols[prevailing.index()];
                let archive = graph.archive_members[member.index()].archive;
                prevailing.definition == Definition::Shared
                    && prevailing
                        .origin
                        .input()
                        .is_some_and(|library| graph.archives[archive.index()].input < library)
            }
        };
        let wanted: Vec<(String, MemberId)> = graph.symbols[first_new_reference..]
            .iter()
            .filter(|symbol| {
                symbol.definition == Definition::Undefined && symbol.binding != Binding::Weak && !symbol.name.is_empty()
            })
            .filter_map(|symbol| {
                providers
                    .get(&symbol.name)
                    .filter(|member| graph.archive_members[member.index()].materialized.is_none())
                    .filter(|member| wants_member(&symbol.name, **member))
                    .map(|member| (symbol.name.clone(), *member))
            })
            .collect();
        // As GNU ld does, a common symbol also takes a member that defines its name as global data (not a
        // function, not another common, not weak): that definition then prevails.
        let wanted_by_commons: Vec<(String, MemberId)> = graph.symbols[first_new_reference..]
            .iter()
            .filter(|symbol| {
                symbol.definition == Definition::Common
                    && table
                        .get(&symbol.name)
                        .is_some_and(|prevailing| graph.symbols[prevailing.index()].definition == Definition::Common)
            })
            .filter_map(|symbol| {
                providers
                    .get(&symbol.name)
                    .filter(|member| graph.archive_members[member.index()].materialized.is_none())
                    .filter(|member| member_defines_global_data(graph, **member, &symbol.name))
                    .map(|member| (symbol.name.clone(), *member))
            })
            .collect();
        // On the first round, the names `-u`, `--require-defined` and `--defsym` refer to take members too.
        let wanted_by_options: Vec<(String, MemberId)> = if first_new_reference == 0 {
            options
                .references()
                .filter(|name| !table.contains_key(*name))
                .filter_map(|name| {
                    providers
                        .get(name)
                        .filter(|member| graph.archive_members[member.index()].materialized.is_none())
                        .map(|member| (name.to_string(), *member))
                })
                .collect()
        } else {
            Vec::new()
        };
        let wanted = [wanted, wanted_by_commons, wanted_by_options].concat();
        first_new_symbol = graph.symbols.len();
        first_new_reference = graph.symbols.len();
        if wanted.is_empty() {
            break;
        }
        let mut extracted = FxHashSet::default();
        for (name, member) in wanted {
            if extracted.insert(member) && graph.archive_members[member.index()].materialized.is_none() {
                extract_member(graph, member, MaterializationReason::Defines(name), phase)
                    .map_err(|error| PhaseError::from_read(PHASE, &error))?;
            }
        }
    }
    let mut errors_written_anyway = Vec::new();
    if !duplicates.is_empty() && !options.allow_multiple_definition {
        // `--noinhibit-exec`: reported, and the first definition is used.
        if !options.noinhibit_exec {
            return Err(PhaseError::new(PHASE, duplicates.join("\n")));
        }
        errors_written_anyway.append(&mut duplicates);
    }
    // Extracted members brought edges of their own.
    graph.index_edges();
    allocate_commons(graph, &table, phase);
    define_symbols(graph, &mut table, &options.defsyms, phase).map_err(|message| PhaseError::new(PHASE, message))?;
    let dynamic = context.options.output_kind.has_dynamic_section();
    define_linker_symbols(graph, &mut table, phase, dynamic);
    let missing: Vec<String> = options
        .require_defined
        .iter()
        .filter(|name| {
            table
                .get(*name)
                .is_none_or(|id| graph.symbols[id.index()].definition == Definition::Undefined)
        })
        .map(|name| format!("required symbol `{}' not defined", symbol_name::display(name)))
        .collect();
    if !missing.is_empty() {
        return Err(PhaseError::new(PHASE, missing.join("\n")));
    }

    // Every reference resolves to the prevailing definition; strong references must find one, except in a
    // shared library (unless `-z defs`), which leaves them to the loader: then the references of one name
    // resolve to the first of them, which is what the library imports.
    let shared_library = context.options.output_kind.is_shared_library();
    let leave_to_loader = shared_library && !context.options.no_undefined;
    graph.interposable = shared_library.then_some(context.options.symbolic);
    if shared_library && !context.options.exclude_libs.is_empty() {
        hide_excluded_libraries(graph, &context.options.exclude_libs);
    }
    if context.options.output_kind.is_dynamic() {
        assign_versions(graph, &mut table, &options, phase).map_err(|message| PhaseError::new(PHASE, message))?;
    }
    let mut left_undefined: FxHashMap<String, SymbolId> = FxHashMap::default();
    let mut undefined: Vec<(String, SymbolId)> = Vec::new();
    let mut reported = FxHashSet::default();
    for index in 0..graph.symbols.len() {
        let symbol = &graph.symbols[index];
        if symbol.binding == Binding::Local || symbol.name.is_empty() || symbol.symbol_type == SymbolType::File {
            continue;
        }
        match table
            .get(&symbol.name)
            .copied()
            .or_else(|| of_version(graph, &table, &symbol.name))
        {
            Some(prevailing) => {
                graph.symbols[index].resolution = Some(prevailing);
                graph.symbols[prevailing.index()].prevailing = true;
            }
            None if shared_library => {
                let (name, weak) = (symbol.name.clone(), symbol.binding == Binding::Weak);
                let first = *left_undefined.entry(name.clone()).or_insert(SymbolId(index as u32));
                graph.symbols[index].resolution = Some(first);
                if !weak && !leave_to_loader && reported.insert(name.clone()) {
                    undefined.push((name, SymbolId(index as u32)));
                }
            }
            None if symbol.binding == Binding::Weak => {}
            None => {
                if reported.insert(symbol.name.clone()) {
                    undefined.push((symbol.name.clone(), SymbolId(index as u32)));
                }
            }
        }
    }
    if !undefined.is_empty() {
        let needed = names_needed_outside_tls_sequences(graph);
        undefined.retain(|(name, _)| needed.contains(name.as_str()));
    }
    if !undefined.is_empty() {
        let references: Vec<SymbolId> = undefined.iter().map(|(_, reference)| *reference).collect();
        let mut messages = undefined_references(graph, &references);
        let as_errors = options.unresolved == Unresolved::Error && !options.noinhibit_exec;
        if options.unresolved == Unresolved::Error && options.error_limit != 0 && messages.len() > options.error_limit {
            messages.truncate(options.error_limit);
            messages.push("too many errors emitted, stopping now (use --error-limit=0 to see all errors)".into());
        }
        if as_errors {
            return Err(PhaseError::new(PHASE, messages.join("\n")));
        }
        // Warned about (or ignored), the references are 0, as undefined weak ones are.
        let names: FxHashSet<String> = undefined.into_iter().map(|(name, _)| name).collect();
        for symbol in graph.symbols.iter_mut() {
            if symbol.definition == Definition::Undefined && names.contains(&symbol.name) {
                symbol.binding = Binding::Weak;
            }
        }
        match options.unresolved {
            Unresolved::Ignore => {}
            Unresolved::Warn => context.warnings.extend(messages),
            Unresolved::Error => errors_written_anyway.extend(messages),
        }
    }
    // A dynamically linked output imports what shared libraries define (synthesis decides how); any other
    // cannot.
    if !context.options.output_kind.is_dynamic() {
        refuse_imports(graph, &table)?;
    }
    // What the shared libraries leave undefined must be defined by the link or by the libraries they need
    // (`--no-allow-shlib-undefined`, GNU ld's default for an executable).
    let in_shared_libraries = match options.unresolved_in_shared_libraries {
        Some(unresolved) => unresolved,
        // GNU ld's default: checked for an executable, not for a shared library.
        None if context.options.output_kind.is_shared_library() => Unresolved::Ignore,
        None if options.unresolved == Unresolved::Warn => Unresolved::Warn,
        None => Unresolved::Error,
    };
    if context.options.output_kind.is_dynamic()
        && !graph.shared_libraries.is_empty()
        && in_shared_libraries != Unresolved::Ignore
    {
        let found = crate::needed_libraries::check(graph, &table, &context.options.needed_library_dirs);
        context.warnings.extend(found.warnings.iter().cloned());
        if !found.undefined.is_empty() {
            let as_warnings = in_shared_libraries == Unresolved::Warn;
            let messages = found.messages(as_warnings);
            if !as_warnings && !options.noinhibit_exec {
                return Err(PhaseError::new(PHASE, messages.join("\n")));
            }
            if as_warnings {
                context.warnings.extend(messages);
            } else {
                errors_written_anyway.extend(messages);
            }
        }
    }
    context.global_symbols = table;
    // A dynamic list binds what it does not name to the library (and keeps what it names interposable), as
    // does `--export-dynamic-symbol` with `-Bsymbolic` or `-Bsymbolic-functions`.
    let symbolic = context.options.symbolic != crate::context::SymbolicBinding::None;
    if shared_library && (options.dynamic_list || (symbolic && !options.dynamic_exports.is_empty())) {
        if options.dynamic_list {
            context.graph.interposable = Some(crate::context::SymbolicBinding::All);
        }
        context.graph.listed_interposable = crate::synth::imports::listed(context).into_iter().collect();
    }
    // `--noinhibit-exec`: the errors are printed, and the link goes on.
    context.warnings.extend(errors_written_anyway);
    let warnings = gnu_warnings(&context.graph);
    context.warnings.extend(warnings);
    Ok(())
}

/// `--exclude-libs`: the definitions of the archives named (by file name; `ALL`: every archive) are hidden
/// in a shared library, as GNU ld hides them: not exported, bound where they are.
fn hide_excluded_libraries(graph: &mut LinkGraph, excluded: &[String]) {
    let archive_names: Vec<Option<String>> = graph
        .archives
        .iter()
        .map(|archive| {
            std::path::Path::new(&graph.inputs[archive.input.index()].logical_name)
                .file_name()
                .and_then(|name| name.to_str())
                .map(str::to_string)
        })
        .collect();
    let hidden: Vec<bool> = archive_names
        .iter()
        .map(|name| {
            excluded
                .iter()
                .any(|wanted| wanted == "ALL" || Some(wanted) == name.as_ref())
        })
        .collect();
    for index in 0..graph.symbols.len() {
        let symbol = &graph.symbols[index];
        let from_hidden = symbol
            .origin
            .input()
            .and_then(|input| graph.inputs[input.index()].archive)
            .is_some_and(|archive| hidden.get(archive.index()).copied().unwrap_or(false));
        if from_hidden && !matches!(symbol.definition, Definition::Undefined | Definition::Shared) {
            graph.symbols[index].visibility = Visibility::Hidden;
        }
    }
}

/// What a dynamically linked output's version script says of its global definitions, as GNU ld applies it:
/// a definition a `local:` pattern makes local is hidden (not exported, bound inside the output); one a
/// named node's `global:` pattern matches takes that version. A definition an object names `name@@VERSION`
/// (`.symver`) is the default version of `name`, which references to `name` bind to; one named
/// `name@VERSION` is a hidden version, which only references to `name@VERSION` bind to; both need the
/// version in the script. Each named version is also an absolute symbol of its own name, in its version, as
/// ld.bfd defines them.
fn assign_versions(
    graph: &mut LinkGraph,
    table: &mut FxHashMap<String, SymbolId>,
    options: &crate::symbol_options::SymbolOptions,
    phase: u16,
) -> Result<(), String> {
    use crate::symbol_options::Versioned;
    let script = options.version_script.as_ref();
    let mut defined_names: FxHashSet<String> = FxHashSet::default();
    // Without a script only the `.symver` definitions (named with an `@`) need a look.
    let mut defined: Vec<(String, SymbolId)> = table
        .iter()
        .filter(|(name, _)| script.is_some() || name.contains('@'))
        .filter(|(_, id)| {
            let symbol = &graph.symbols[id.index()];
            !matches!(symbol.definition, Definition::Undefined | Definition::Shared)
                && matches!(symbol.binding, Binding::Global | Binding::Weak)
                && matches!(symbol.visibility, Visibility::Default | Visibility::Protected)
        })
        .map(|(name, id)| (name.clone(), *id))
        .collect();
    defined.sort_unstable();
    let demangle = script.is_some_and(|script| script.matches_demangled_names());
    let mut missing = Vec::new();
    for (name, id) in defined {
        if let Some((base, version)) = name.split_once('@') {
            let (default, version) = match version.strip_prefix('@') {
                Some(version) => (true, version),
                None => (false, version),
            };
            if !script.is_some_and(|script| script.defines_version(version)) {
                missing.push(format!(
                    "version node not found for symbol `{}` (a version script must define version `{version}`)",
                    symbol_name::display(&name)
                ));
                continue;
            }
            graph.symbols[id.index()].version = Some(version.to_string());
            // The default version is what references to the plain name bind to, unless the output defines
            // that name itself.
            let plain_defined = table.get(base).is_some_and(|other| {
                !matches!(
                    graph.symbols[other.index()].definition,
                    Definition::Undefined | Definition::Shared
                )
            });
            if default && !plain_defined {
                table.insert(base.to_string(), id);
            }
            continue;
        }
        let Some(script) = script else {
            continue;
        };
        let demangled = demangle
            .then(|| cpp_demangle::Symbol::new(name.as_bytes()).ok())
            .flatten()
            .and_then(|symbol| symbol.demangle().ok());
        if options.no_undefined_version {
            defined_names.insert(name.clone());
            defined_names.extend(demangled.clone());
        }
        match script.version_of(&name, demangled.as_deref()) {
            Some(Versioned::Local) => graph.symbols[id.index()].visibility = Visibility::Hidden,
            Some(Versioned::Global(Some(version))) => graph.symbols[id.index()].version = Some(version.to_string()),
            Some(Versioned::Global(None)) | None => {}
        }
    }
    // `--no-undefined-version`: every name a `global:` part gives exactly is defined.
    if options.no_undefined_version
        && let Some(script) = script
    {
        for (version, name, _) in script.exact_global_names() {
            if !defined_names.contains(name) {
                missing.push(format!(
                    "version script assignment of `{}` to symbol `{}` failed: symbol not defined",
                    version.unwrap_or("global"),
                    symbol_name::display(name)
                ));
            }
        }
    }
    if !missing.is_empty() {
        return Err(missing.join("\n"));
    }
    let Some(script) = script else {
        return Ok(());
    };
    for node in script.named_nodes() {
        let Some(name) = &node.name else {
            continue;
        };
        if table.contains_key(name) {
            continue;
        }
        let id = SymbolId(graph.symbols.len() as u32);
        graph.symbols.push(Symbol {
            version: Some(name.clone()),
            visibility: Visibility::Default,
            symbol_type: SymbolType::Object,
            ..made_symbol(name.clone(), phase)
        });
        table.insert(name.clone(), id);
    }
    Ok(())
}

/// The definition a versioned reference (`printf@GLIBC_2.2.5`, an object's `.symver`) binds to when no
/// hidden version of that name is defined (those are in the table under their versioned names): a shared
/// library's definition of the plain name in that version, its default one.
fn of_version(graph: &LinkGraph, table: &FxHashMap<String, SymbolId>, name: &str) -> Option<SymbolId> {
    let (base, version) = name.split_once('@')?;
    let version = version.trim_start_matches('@');
    let id = *table.get(base)?;
    let definition = &graph.symbols[id.index()];
    (definition.definition == Definition::Shared && definition.version.as_deref() == Some(version)).then_some(id)
}

/// Refuses a link of an output that is not dynamically linked (a static executable or PIE) in which a
/// definition of a shared library prevails for a name the link's objects refer to: nothing could import it,
/// and a reference left as it is would be a silent wrong output.
fn refuse_imports(graph: &LinkGraph, table: &FxHashMap<String, SymbolId>) -> Result<(), PhaseError> {
    if !graph
        .symbols
        .iter()
        .any(|symbol| symbol.definition == Definition::Shared)
    {
        return Ok(());
    }
    let referenced: FxHashSet<&str> = graph
        .symbols
        .iter()
        .filter(|symbol| symbol.definition == Definition::Undefined)
        .map(|symbol| symbol.name.as_str())
        .collect();
    let mut imported: Vec<String> = referenced
        .iter()
        .filter_map(|name| table.get(*name))
        .map(|id| &graph.symbols[id.index()])
        .filter(|symbol| symbol.definition == Definition::Shared)
        .map(|symbol| {
            format!(
                "`{}` is defined only by the shared library {}, which a static output cannot import from",
                symbol_name::display(&symbol.name),
                graph.input_name(symbol.origin.input())
            )
        })
        .collect();
    if imported.is_empty() {
        return Ok(());
    }
    imported.sort();
    Err(PhaseError::new(PHASE, imported.join("\n")))
}

/// Whether archive member `member` defines `name` as GNU ld's archive rule for common symbols wants it: a
/// global (or GNU-unique) definition in a section, not a function and not common.
fn member_defines_global_data(graph: &LinkGraph, member: MemberId, name: &str) -> bool {
    use object::{Object as _, ObjectSymbol as _};
    let entry = &graph.archive_members[member.index()];
    let Some(bytes) = entry.data.get(entry.range.clone()) else {
        return false;
    };
    let Ok(file) = object::File::parse(bytes) else {
        return false;
    };
    let wanted = symbol_name::to_bytes(name);
    file.symbols().any(|symbol| {
        symbol.name_bytes().is_ok_and(|bytes| bytes == wanted.as_ref())
            && symbol.is_global()
            && !symbol.is_weak()
            && !symbol.is_common()
            && symbol.section_index().is_some()
            && symbol.kind() != object::SymbolKind::Text
    })
}

/// `--wrap`: an undefined reference to a wrapped `SYM` becomes one to `__wrap_SYM`, and one to
/// `__real_SYM` one to `SYM`, as GNU ld renames them (definitions keep their names).
fn wrap_reference(symbol: &mut Symbol, wrap: &[String]) {
    if wrap.is_empty() || symbol.definition != Definition::Undefined {
        return;
    }
    if wrap.contains(&symbol.name) {
        symbol.name = format!("__wrap_{}", symbol.name);
    } else if let Some(real) = symbol.name.strip_prefix("__real_")
        && wrap.iter().any(|wrapped| wrapped == real)
    {
        symbol.name = real.to_string();
    }
}

/// `--defsym NAME=EXPRESSION`: NAME is defined as the number, or as the symbol (in its section, so that
/// it moves with it) plus the offset; it replaces any other definition of NAME, as a script assignment does.
fn define_symbols(
    graph: &mut LinkGraph,
    table: &mut FxHashMap<String, SymbolId>,
    defsyms: &[Defsym],
    phase: u16,
) -> Result<(), String> {
    for defsym in defsyms {
        let (definition, atom, value, symbol_type) = match &defsym.value {
            DefsymValue::Absolute(value) => (Definition::Absolute, None, *value, SymbolType::None),
            DefsymValue::Symbol { name, offset } => {
                let target = table
                    .get(name)
                    .map(|id| &graph.symbols[id.index()])
                    .filter(|symbol| matches!(symbol.definition, Definition::Defined | Definition::Absolute))
                    .ok_or_else(|| {
                        format!(
                            "--defsym {}={}: undefined symbol `{}' referenced in expression",
                            defsym.name,
                            defsym.value,
                            symbol_name::display(name)
                        )
                    })?;
                (
                    target.definition,
                    target.atom,
                    target.value.wrapping_add_signed(*offset),
                    target.symbol_type,
                )
            }
        };
        let id = SymbolId(graph.symbols.len() as u32);
        graph.symbols.push(Symbol {
            visibility: Visibility::Default,
            definition,
            symbol_type,
            atom,
            value,
            ..made_symbol(defsym.name.clone(), phase)
        });
        table.insert(defsym.name.clone(), id);
    }
    Ok(())
}

/// GNU ld's message for each undefined reference of `references` (tools grep for its words): the input
/// holding the reference and, where the reference is a relocation inside a function, the function, as in
/// "main.o: in function `main': undefined reference to `foo'".
fn undefined_references(graph: &LinkGraph, references: &[SymbolId]) -> Vec<String> {
    // The first relocation of each reference, in one pass over the edges.
    let mut first_edge: FxHashMap<SymbolId, (AtomId, u64)> = references
        .iter()
        .map(|reference| (*reference, (AtomId(u32::MAX), 0)))
        .collect();
    for edge in &graph.edges {
        if let Some(slot) = edge.target_symbol.get().and_then(|target| first_edge.get_mut(&target))
            && slot.0 == AtomId(u32::MAX)
        {
            *slot = (edge.source, edge.offset);
        }
    }
    // The function around each such relocation: a function symbol of the atom whose range holds it.
    let mut functions: FxHashMap<(AtomId, u64), &str> = FxHashMap::default();
    let mut sites: FxHashMap<AtomId, Vec<u64>> = FxHashMap::default();
    for (atom, offset) in first_edge.values() {
        sites.entry(*atom).or_default().push(*offset);
    }
    for symbol in &graph.symbols {
        if symbol.symbol_type != SymbolType::Function || symbol.name.is_empty() {
            continue;
        }
        let Some((atom, offsets)) = symbol
            .atom
            .and_then(|atom| sites.get(&atom).map(|offsets| (atom, offsets)))
        else {
            continue;
        };
        for offset in offsets {
            if symbol.value <= *offset && *offset < symbol.value.saturating_add(symbol.size.max(1)) {
                functions.entry((atom, *offset)).or_insert(&symbol.name);
            }
        }
    }
    references
        .iter()
        .map(|reference| {
            let symbol = &graph.symbols[reference.index()];
            let file = graph.input_name(symbol.origin.input());
            let name = symbol_name::display(&symbol.name);
            match first_edge.get(reference).and_then(|site| functions.get(site)) {
                Some(function) => format!(
                    "{file}: in function `{}': undefined reference to `{name}'",
                    symbol_name::display(function)
                ),
                None => format!("{file}: undefined reference to `{name}'"),
            }
        })
        .collect()
}

/// The warnings of `.gnu.warning.SYMBOL` sections (text the C library attaches to a function, such as
/// glibc's for `gets`), one per input that refers to the symbol, at its first reference; and of plain
/// `.gnu.warning` sections, one per input that has one (as GNU ld reports them).
fn gnu_warnings(graph: &LinkGraph) -> Vec<String> {
    let text = |section: &crate::graph::Section| {
        let bytes = graph.atom_bytes(&graph.atoms[section.atom.index()]);
        let end = bytes.iter().position(|byte| *byte == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).trim().to_string()
    };
    let mut by_symbol: FxHashMap<&str, String> = FxHashMap::default();
    let mut warnings = Vec::new();
    for section in &graph.sections {
        if let Some(symbol) = section.name.strip_prefix(".gnu.warning.") {
            by_symbol.insert(symbol, text(section));
        } else if section.name == ".gnu.warning" {
            let input = graph.input_name(graph.atoms[section.atom.index()].origin.input());
            warnings.push(format!("{input}: {}", text(section)));
        }
    }
    if by_symbol.is_empty() {
        return warnings;
    }
    let mut warned: FxHashSet<(Option<crate::graph::InputId>, &str)> = FxHashSet::default();
    for (_, edge) in graph.edge_order.iter().map(|id| (*id, &graph.edges[id.index()])) {
        let Some(symbol) = edge.target_symbol.get() else {
            continue;
        };
        let name = graph.symbols[symbol.index()].name.as_str();
        let Some(message) = by_symbol.get(name) else { continue };
        let source = &graph.atoms[edge.source.index()];
        if warned.insert((source.origin.input(), name)) {
            warnings.push(format!(
                "{}:{}+{:#x}: {message}",
                graph.input_name(source.origin.input()),
                source.name,
                edge.offset
            ));
        }
    }
    warnings
}

/// The names some relocation needs, other than those inside a TLS code sequence that a static executable
/// relaxes to local-exec (the call of `__tls_get_addr` disappears with it, so a static link never needs the
/// function, which glibc's `libc.a` does not have). Only asked when a name is undefined.
fn names_needed_outside_tls_sequences(graph: &LinkGraph) -> FxHashSet<&str> {
    let arch = graph.arch();
    let relaxed_sequence = |edge: &crate::graph::Edge| {
        graph
            .relocation_kind(edge)
            .and_then(|kind| (arch.rewritten_sequence)(kind, edge.offset))
    };
    let mut sequences: FxHashMap<AtomId, Vec<std::ops::Range<u64>>> = FxHashMap::default();
    for edge in &graph.edges {
        if let Some(range) = relaxed_sequence(edge) {
            sequences.entry(edge.source).or_default().push(range);
        }
    }
    graph
        .edges
        .iter()
        .filter(|edge| {
            relaxed_sequence(edge).is_some()
                || !sequences
                    .get(&edge.source)
                    .is_some_and(|ranges| ranges.iter().any(|range| range.contains(&edge.offset)))
        })
        .filter_map(|edge| edge.target_symbol.get())
        .map(|symbol| graph.symbols[symbol.index()].name.as_str())
        .collect()
}

/// How strongly a symbol defines its name.
fn rank(symbol: &Symbol) -> u8 {
    crate::graph::strength(symbol.definition, symbol.binding)
}

fn add_definition(
    graph: &LinkGraph,
    table: &mut FxHashMap<String, SymbolId>,
    id: SymbolId,
    duplicates: &mut Vec<String>,
) {
    let symbol = &graph.symbols[id.index()];
    if symbol.binding == Binding::Local
        || symbol.name.is_empty()
        || matches!(symbol.symbol_type, SymbolType::File | SymbolType::Section)
        || rank(symbol) == 0
    {
        return;
    }
    match table.get(&symbol.name) {
        None => {
            table.insert(symbol.name.clone(), id);
        }
        Some(existing) => {
            let current = &graph.symbols[existing.index()];
            let (new_rank, old_rank) = (rank(symbol), rank(current));
            if new_rank == STRONG && old_rank == STRONG {
                // Definitions in COMDAT groups are duplicates by design; selection keeps one group.
                let in_group = |symbol: &Symbol| {
                    symbol
                        .atom
                        .and_then(|atom| graph.atoms.get(atom.index()))
                        .is_some_and(|atom| atom.comdat.is_some())
                };
                if !(in_group(symbol) && in_group(current)) {
                    // GNU ld's words, which tools grep for: the later definition, then the first.
                    duplicates.push(format!(
                        "{}: multiple definition of `{}'; {}: first defined here",
                        graph.input_name(symbol.origin.input()),
                        symbol_name::display(&symbol.name),
                        graph.input_name(current.origin.input()),
                    ));
                }
            } else if new_rank > old_rank || (new_rank == COMMON && old_rank == COMMON && symbol.size > current.size) {
                table.insert(symbol.name.clone(), id);
            }
        }
    }
}

/// Gives each prevailing common symbol a zero-filled atom (the largest size, the strictest alignment).
fn allocate_commons(graph: &mut LinkGraph, table: &FxHashMap<String, SymbolId>, phase: u16) {
    let mut alignments: FxHashMap<&str, u64> = FxHashMap::default();
    for symbol in &graph.symbols {
        if symbol.definition == Definition::Common {
            let entry = alignments.entry(symbol.name.as_str()).or_insert(1);
            *entry = (*entry).max(crate::graph::effective_alignment(symbol.value));
        }
    }
    let alignments: FxHashMap<String, u64> = alignments.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let mut commons: Vec<SymbolId> = table
        .values()
        .copied()
        .filter(|id| graph.symbols[id.index()].definition == Definition::Common)
        .collect();
    commons.sort();
    for id in commons {
        let atom = AtomId(graph.atoms.len() as u32);
        let symbol = &graph.symbols[id.index()];
        graph.atoms.push(Atom {
            section: None,
            name: "COMMON".into(),
            flags: atom_flags::SYNTHETIC,
            alignment: alignments.get(&symbol.name).copied().unwrap_or(1),
            address: 0,
            file_offset: 0,
            content: Content::ZeroFill,
            zero_fill: symbol.size,
            comdat: None,
            fold_leader: None,
            origin: symbol.origin.with_created_by_phase(Some(phase)),
        });
        let symbol = &mut graph.symbols[id.index()];
        symbol.atom = Some(atom);
        symbol.value = 0;
    }
    graph.edges_by_atom.resize(graph.atoms.len(), 0..0);
}

/// A global symbol the link itself defines (a linker-defined name, hidden, or one of `--defsym`'s):
/// absolute 0 until its definition is filled in.
fn made_symbol(name: String, phase: u16) -> Symbol {
    Symbol {
        name,
        version: None,
        binding: Binding::Global,
        visibility: Visibility::Hidden,
        definition: Definition::Absolute,
        symbol_type: SymbolType::None,
        atom: None,
        value: 0,
        size: 0,
        prevailing: true,
        exported: false,
        imported: false,
        root: false,
        resolution: None,
        origin: Origin::made(None, None, 0, Some(phase)),
    }
}

/// Whether the linker defines `name` (see [`crate::linker_defined`]).
pub(crate) fn is_linker_defined(name: &str, graph: &LinkGraph, dynamic: bool) -> bool {
    linker_defined(
        name,
        |section| graph.sections.iter().any(|candidate| candidate.name == section),
        dynamic,
        graph.arch(),
    )
    .is_some()
}

fn define_linker_symbols(graph: &mut LinkGraph, table: &mut FxHashMap<String, SymbolId>, phase: u16, dynamic: bool) {
    let mut names: Vec<String> = graph
        .symbols
        .iter()
        .filter(|symbol| {
            symbol.definition == Definition::Undefined
                && !table.contains_key(&symbol.name)
                && is_linker_defined(&symbol.name, graph, dynamic)
        })
        .map(|symbol| symbol.name.clone())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let id = SymbolId(graph.symbols.len() as u32);
        graph.symbols.push(made_symbol(name.clone(), phase));
        graph.synthetics.push(Synthetic {
            role: SyntheticRole::LinkerDefined(name.clone()),
            section: None,
            atom: None,
            origin: Origin::made(None, None, 0, Some(phase)),
        });
        table.insert(name, id);
    }
}
