//! `neverc.link.lto_resolve`: one resolution per symbol of every bitcode module, from the link's own symbol
//! resolution over objects and bitcode together, with the rules lld uses (lld/ELF/LTO.cpp):
//!
//! - PREVAILING: the module defines the symbol and its definition is the one the link chose (a strong
//!   definition beats a common one, which beats a weak one; among equals the first in input order wins).
//! - VISIBLE_TO_REGULAR_OBJECT: code outside the bitcode modules can see the symbol: an object that is not
//!   bitcode names it (defines or refers to it), it is the entry point, or it is defined in a section whose
//!   `__start_`/`__stop_` symbols some input uses. (`-r` and dynamic exports would add to this; a static
//!   executable has neither.)
//! - REFERENCED_BY_REGULAR_OBJECT: an object that is not bitcode refers to it (an undefined symbol there).
//! - FINAL_DEFINITION: nothing outside the link can replace the definition the name resolved to (lld:
//!   executable output or non-default visibility, and the definition is in a section, or in the bitcode of
//!   this module or a later one; not absolute). Set on references too, as lld sets it.
//! - EXPORTED: in the dynamic symbol table; never for a static executable.
//! - LINKER_REDEFINED: `--defsym`/`--wrap` redefine it; neither exists in this linker yet, so never.
//! - CAN_INTERNALIZE: prevailing, neither visible to regular objects nor exported nor `used`: the optimizer
//!   may make it local and drop it when unused.
//! - CAN_INLINE: prevailing and not redefined by the linker: the body the optimizer sees is the one the
//!   program runs, so calls to it may be inlined.
//!
//! Archive members are extracted while they define a name some object or bitcode module still needs, as
//! `resolve_symbols` does, so that bitcode members take part in LTO; object members extracted here stay in
//! the link. Without bitcode inputs or bitcode archive members the phase does nothing.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::context::{LinkContext, PhaseError};
use crate::graph::strength;
use crate::graph::{
    Binding, BitcodeModuleId, BitcodeSymbol, Definition, InputKind, LinkGraph, MaterializationReason, MemberId,
    SymbolId, SymbolType,
};
use crate::lto::{LtoResolution, ResolutionFlags};
use crate::phases::LinkPhase;
use crate::read::{extract_member, probe};

const PHASE: LinkPhase = LinkPhase::LtoResolve;

/// A definition the table holds for a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    Object(SymbolId),
    Bitcode(BitcodeModuleId, u32),
}

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    let graph = &mut context.graph;
    let bitcode_members = graph.archive_members.iter().any(|member| {
        member.materialized.is_none()
            && member
                .data
                .get(member.range.clone())
                .is_some_and(|bytes| probe(bytes) == InputKind::Bitcode)
    });
    if graph.bitcode_modules.is_empty() && !bitcode_members {
        return Ok(());
    }
    let table = resolve_names(graph, phase)?;
    let resolutions = resolutions(graph, &table, &context.options.entry);
    context.graph.lto_resolutions = resolutions;
    Ok(())
}

/// Resolves every global name over objects and bitcode modules, extracting archive members (objects and
/// bitcode) while they define a name still needed; returns the chosen definition of each name.
fn resolve_names(graph: &mut LinkGraph, phase: u16) -> Result<FxHashMap<String, (u8, Holder)>, PhaseError> {
    let mut providers: FxHashMap<String, MemberId> = FxHashMap::default();
    for (index, member) in graph.archive_members.iter().enumerate() {
        for name in &member.defines {
            providers.entry(name.clone()).or_insert(MemberId(index as u32));
        }
    }
    let mut table: FxHashMap<String, (u8, Holder)> = FxHashMap::default();
    let offer = |table: &mut FxHashMap<String, (u8, Holder)>, name: &str, rank: u8, holder: Holder| {
        if rank == 0 || name.is_empty() {
            return;
        }
        match table.get(name) {
            Some((existing, _)) if *existing >= rank => {}
            _ => {
                table.insert(name.to_string(), (rank, holder));
            }
        }
    };
    let (mut next_symbol, mut next_module) = (0, 0);
    loop {
        for index in next_symbol..graph.symbols.len() {
            let symbol = &graph.symbols[index];
            if symbol.binding == Binding::Local || matches!(symbol.symbol_type, SymbolType::File | SymbolType::Section)
            {
                continue;
            }
            let rank = strength(symbol.definition, symbol.binding);
            offer(&mut table, &symbol.name, rank, Holder::Object(SymbolId(index as u32)));
        }
        for module in next_module..graph.bitcode_modules.len() {
            for (position, symbol) in graph.bitcode_modules[module].symbols.iter().enumerate() {
                let rank = strength(symbol.definition, symbol.binding);
                let holder = Holder::Bitcode(BitcodeModuleId(module as u32), position as u32);
                offer(&mut table, &symbol.name, rank, holder);
            }
        }
        // The names still needed: strong references nobody defines yet.
        let object_needs = graph.symbols[next_symbol..]
            .iter()
            .filter(|symbol| symbol.definition == Definition::Undefined && symbol.binding != Binding::Weak)
            .map(|symbol| symbol.name.as_str());
        let bitcode_needs = graph.bitcode_modules[next_module..]
            .iter()
            .flat_map(|module| module.symbols.iter())
            .filter(|symbol| symbol.definition == Definition::Undefined && symbol.binding != Binding::Weak)
            .map(|symbol| symbol.name.as_str());
        let mut wanted: Vec<(String, MemberId)> = object_needs
            .chain(bitcode_needs)
            .filter(|name| !name.is_empty() && !table.contains_key(*name))
            .filter_map(|name| {
                providers
                    .get(name)
                    .filter(|member| graph.archive_members[member.index()].materialized.is_none())
                    .map(|member| (name.to_string(), *member))
            })
            .collect();
        next_symbol = graph.symbols.len();
        next_module = graph.bitcode_modules.len();
        if wanted.is_empty() {
            break;
        }
        wanted.sort_by_key(|(_, member)| *member);
        let mut extracted = FxHashSet::default();
        for (name, member) in wanted {
            if extracted.insert(member) && graph.archive_members[member.index()].materialized.is_none() {
                extract_member(graph, member, MaterializationReason::Defines(name), phase)
                    .map_err(|error| PhaseError::from_read(PHASE, &error))?;
            }
        }
    }
    graph.index_edges();
    Ok(table)
}

/// The names objects that are not bitcode define or refer to, and those they refer to.
struct RegularNames<'g> {
    named: FxHashSet<&'g str>,
    referenced: FxHashSet<&'g str>,
}

fn regular_names(graph: &LinkGraph) -> RegularNames<'_> {
    let mut names = RegularNames {
        named: FxHashSet::default(),
        referenced: FxHashSet::default(),
    };
    for symbol in &graph.symbols {
        if symbol.binding == Binding::Local || symbol.name.is_empty() {
            continue;
        }
        names.named.insert(symbol.name.as_str());
        if symbol.definition == Definition::Undefined {
            names.referenced.insert(symbol.name.as_str());
        }
    }
    names
}

/// One resolution per symbol of every module, in module and symbol order.
fn resolutions(graph: &LinkGraph, table: &FxHashMap<String, (u8, Holder)>, entry: &str) -> Vec<LtoResolution> {
    let regular = regular_names(graph);
    // Sections whose `__start_`/`__stop_` symbols some object or module refers to.
    let start_stop: FxHashSet<&str> = regular
        .referenced
        .iter()
        .copied()
        .chain(
            graph
                .bitcode_modules
                .iter()
                .flat_map(|module| module.symbols.iter())
                .filter(|symbol| symbol.definition == Definition::Undefined)
                .map(|symbol| symbol.name.as_str()),
        )
        .filter_map(|name| name.strip_prefix("__start_").or_else(|| name.strip_prefix("__stop_")))
        .collect();
    let mut all = Vec::new();
    for (module_index, module) in graph.bitcode_modules.iter().enumerate() {
        let module_id = BitcodeModuleId(module_index as u32);
        for (position, symbol) in module.symbols.iter().enumerate() {
            let chosen = table.get(&symbol.name).map(|(_, holder)| *holder);
            let defined_here = symbol.definition != Definition::Undefined;
            let prevailing = defined_here && chosen == Some(Holder::Bitcode(module_id, position as u32));
            // lld: the definition the name resolved to is one the link holds in a section, or in bitcode
            // of this module or one after it (lld hands modules to LTO in order, and once the prevailing
            // module is handed over its definitions are no longer the linker's: references from later
            // modules are not final); absolute definitions and names left undefined are not final.
            let final_definition = match chosen {
                Some(Holder::Bitcode(prevailing, _)) => prevailing.index() >= module_index,
                Some(Holder::Object(id)) => graph.symbols[id.index()].atom.is_some(),
                None => false,
            };
            let flags = flags_of(symbol, prevailing, final_definition, &regular, &start_stop, entry);
            all.push(LtoResolution {
                module: module_id,
                symbol: position as u32,
                flags,
                link_symbol: match chosen {
                    Some(Holder::Object(id)) => Some(id),
                    _ => None,
                },
            });
        }
    }
    all
}

fn flags_of(
    symbol: &BitcodeSymbol,
    prevailing: bool,
    final_definition: bool,
    regular: &RegularNames<'_>,
    start_stop: &FxHashSet<&str>,
    entry: &str,
) -> ResolutionFlags {
    let visible = regular.named.contains(symbol.name.as_str())
        || symbol.name == entry
        || symbol
            .section
            .as_deref()
            .is_some_and(|section| start_stop.contains(section));
    let exported = false;
    let redefined = false;
    let mut flags = ResolutionFlags::EMPTY;
    let mut set = |condition: bool, flag: ResolutionFlags| {
        if condition {
            flags |= flag;
        }
    };
    set(prevailing, ResolutionFlags::PREVAILING);
    set(visible, ResolutionFlags::VISIBLE_TO_REGULAR_OBJECT);
    set(
        regular.referenced.contains(symbol.name.as_str()),
        ResolutionFlags::REFERENCED_BY_REGULAR_OBJECT,
    );
    // A static executable: nothing outside the link replaces a definition, whatever its visibility.
    set(final_definition, ResolutionFlags::FINAL_DEFINITION);
    set(exported, ResolutionFlags::EXPORTED);
    set(redefined, ResolutionFlags::LINKER_REDEFINED);
    set(
        prevailing && !visible && !exported && !symbol.used,
        ResolutionFlags::CAN_INTERNALIZE,
    );
    set(prevailing && !redefined, ResolutionFlags::CAN_INLINE);
    flags
}
