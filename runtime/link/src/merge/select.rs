//! Which objects a relocatable link (`-r`) merges: every object named, every member of an archive named
//! under `--whole-archive`, and the archive members that define a name an object already taken refers to
//! strongly and no object taken defines. Archives are searched as a link searches them (every archive's
//! members are candidates whatever the order; the first archive, and the first member in it, defining a name
//! wins). Everything is read into the graph through the link's own readers, so an object is checked exactly
//! as a link checks it (its machine, its relocation numbers, its section headers) before it is merged.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{LinkContext, PhaseError};
use crate::graph::{Binding, Definition, InputId, InputKind, LinkGraph, MaterializationReason, MemberId, SymbolType};
use crate::phases::LinkPhase;
use crate::read::{ReadError, add_input_file, extract_member, extract_whole_archive, read_input};

const PHASE: LinkPhase = LinkPhase::ObjectMerge;

/// Reads the link's inputs into the graph (once) and returns the objects to merge, in command-line order (an
/// archive member stands where its archive was named, in the archive's order).
pub(crate) fn selected_objects(context: &mut LinkContext, phase: u16) -> Result<Vec<InputId>, PhaseError> {
    let read_error = |error: ReadError| PhaseError::from_read(PHASE, &error);
    let graph = &mut context.graph;
    if graph.inputs.is_empty() {
        if context.options.inputs.is_empty() {
            return Err(PhaseError::new(PHASE, "no input files"));
        }
        for path in &context.options.inputs {
            add_input_file(graph, path, phase).map_err(read_error)?;
        }
        for index in 0..graph.inputs.len() {
            let input = &graph.inputs[index];
            if input.kind == InputKind::Bitcode {
                return Err(bitcode_refused(&input.logical_name));
            }
            read_input(graph, InputId(index as u32), phase).map_err(read_error)?;
            if context.options.whole_archive.contains(&index) {
                extract_whole_archive(graph, InputId(index as u32), phase).map_err(read_error)?;
            }
        }
        extract_needed_members(graph, phase)?;
        graph.index_edges();
    }
    let order = graph.command_line_order();
    let mut objects = Vec::new();
    for (index, input) in graph.inputs.iter().enumerate() {
        match input.kind {
            InputKind::Object => objects.push(InputId(index as u32)),
            InputKind::Bitcode => return Err(bitcode_refused(&input.logical_name)),
            _ => {}
        }
    }
    objects.sort_by_key(|input| order.get(input.index()).copied());
    Ok(objects)
}

/// LLVM bitcode has no sections to merge; a relocatable link of it would need code generation first.
fn bitcode_refused(name: &str) -> PhaseError {
    PhaseError::new(
        PHASE,
        format!("{name}: LLVM bitcode cannot be merged by a relocatable link (-r), which merges ELF objects only"),
    )
}

/// Whether `symbol` defines its name for the purpose of archive search: a global or weak definition, common
/// ones included.
fn defines(symbol: &crate::graph::Symbol) -> bool {
    symbol.binding != Binding::Local
        && symbol.definition != Definition::Undefined
        && !symbol.name.is_empty()
        && !matches!(symbol.symbol_type, SymbolType::File | SymbolType::Section)
}

/// Extracts the archive members that define a strongly referenced name nothing taken defines, repeating
/// while the members extracted refer to more. Each reference is looked at once: a name that wants a member
/// gets it in that round, and one that no archive defines never will.
fn extract_needed_members(graph: &mut LinkGraph, phase: u16) -> Result<(), PhaseError> {
    let mut providers: FxHashMap<String, MemberId> = FxHashMap::default();
    for (index, member) in graph.archive_members.iter().enumerate() {
        for name in &member.defines {
            providers.entry(name.clone()).or_insert(MemberId(index as u32));
        }
    }
    let mut defined: FxHashSet<String> = FxHashSet::default();
    let mut first_new = 0;
    loop {
        let symbols = &graph.symbols[first_new..];
        defined.extend(
            symbols
                .iter()
                .filter(|symbol| defines(symbol))
                .map(|symbol| symbol.name.clone()),
        );
        let wanted: Vec<(String, MemberId)> = symbols
            .iter()
            .filter(|symbol| {
                symbol.definition == Definition::Undefined
                    && symbol.binding != Binding::Weak
                    && symbol.binding != Binding::Local
                    && !symbol.name.is_empty()
                    && !defined.contains(&symbol.name)
            })
            .filter_map(|symbol| providers.get(&symbol.name).map(|member| (symbol.name.clone(), *member)))
            .collect();
        first_new = graph.symbols.len();
        if wanted.is_empty() {
            return Ok(());
        }
        for (name, member) in wanted {
            // A member extracted earlier in this round may define the name already.
            if defined.contains(&name) || graph.archive_members[member.index()].materialized.is_some() {
                continue;
            }
            defined.extend(graph.archive_members[member.index()].defines.iter().cloned());
            extract_member(graph, member, MaterializationReason::Defines(name), phase)
                .map_err(|error| PhaseError::from_read(PHASE, &error))?;
        }
    }
}
