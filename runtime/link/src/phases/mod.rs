//! The builtin providers of the link phases, one file per phase, named after it. Each takes the link
//! context and does its phase's work on the graph; the executor (`crate::execute`) decides whether the
//! builtin runs at all (a plugin may replace or skip it, as the declared policy allows).

pub(crate) mod commit;
pub(crate) mod emit_image;
pub(crate) mod gc;
pub(crate) mod icf;
pub(crate) mod image_verify;
pub(crate) mod input_probe;
pub(crate) mod layout;
pub(crate) mod lto_generate;
pub(crate) mod lto_resolve;
pub(crate) mod object_merge;
pub(crate) mod read_inputs;
pub(crate) mod relax_thunks;
pub(crate) mod relocate;
pub(crate) mod resolve_symbols;
pub(crate) mod select_comdat;
pub(crate) mod side_outputs_verify;
pub(crate) mod synthesize;

use crate::context::{LinkContext, PhaseError};

/// The link phases the bundled schema declares (generated): builtins are bound to this enum, never to strings.
pub use neverc_tables::generated::phases::link::Phase as LinkPhase;

/// A builtin phase implementation. `phase` is the phase's index in the tables the link runs with, which
/// the builtin stamps on the entities it creates.
pub(crate) type Builtin = fn(&mut LinkContext, u16) -> Result<(), PhaseError>;

/// A phase whose builtin only advances the state (nothing to do for a static ELF link without bitcode).
fn advance_only(_context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    Ok(())
}

/// The builtin of a link phase. The declaration says which phases exist and what they may do; this match
/// only says which code implements each, and it is exhaustive: a phase added to the schema does not compile
/// until it has a builtin or is declared to have none.
pub(crate) const fn builtin_for(phase: LinkPhase) -> Option<Builtin> {
    Some(match phase {
        LinkPhase::InputProbe => input_probe::run,
        LinkPhase::ReadInputs => read_inputs::run,
        LinkPhase::LtoResolve => lto_resolve::run,
        LinkPhase::LtoGenerate => lto_generate::run,
        LinkPhase::RelaxThunks => relax_thunks::run,
        LinkPhase::ResolveSymbols => resolve_symbols::run,
        LinkPhase::SelectComdat => select_comdat::run,
        LinkPhase::Gc => gc::run,
        LinkPhase::Icf => icf::run,
        LinkPhase::Synthesize => synthesize::run,
        LinkPhase::Layout => layout::run,
        LinkPhase::Relocate => relocate::run,
        LinkPhase::EmitImage => emit_image::run,
        LinkPhase::PostEmit | LinkPhase::AfterCommit => advance_only,
        LinkPhase::ImageVerify => image_verify::run,
        LinkPhase::SideOutputsVerify => side_outputs_verify::run,
        LinkPhase::Commit => commit::run,
        // `-r`: the builtin merge, which an object-merge provider may replace.
        LinkPhase::ObjectMerge => object_merge::run,
        // A linker provider replaces `full`; it has no builtin (the transitions above are the builtin link).
        LinkPhase::Full => return None,
    })
}

/// [`lay_out_and_relocate`] for a graph of inputs read for checking (tests and fuzzing): the output limited
/// to `limit` bytes and never written, the entry the first named symbol that is not undefined (a fuzzed
/// object rarely defines `_start`). Returns the file size of the laid-out image.
pub fn lay_out_within(graph: crate::graph::LinkGraph, limit: u64) -> Result<u64, PhaseError> {
    lay_out_as(graph, crate::output_kind::OutputKind::StaticExecutable, limit)
}

/// Like [`lay_out_within`], for an output of `kind` (a PIE's image based at 0, as the `ld` driver lays it).
pub fn lay_out_as(
    graph: crate::graph::LinkGraph,
    kind: crate::output_kind::OutputKind,
    limit: u64,
) -> Result<u64, PhaseError> {
    let mut options = crate::context::LinkOptions::new(Vec::new(), "/nonexistent-neverc/a.out".into());
    options.max_output_size = limit;
    options.output_kind = kind;
    if kind.is_position_independent() {
        options.image_base = 0;
    }
    if let Some(symbol) = graph
        .symbols
        .iter()
        .find(|symbol| !symbol.name.is_empty() && symbol.definition != crate::graph::Definition::Undefined)
    {
        options.entry = symbol.name.clone();
    }
    lay_out_and_relocate(graph, options)
}

/// Runs the builtins from symbol resolution through relocation over `graph` (its inputs already read), with
/// `options`, whose output limit bounds every size laid out: what a link does between reading its inputs and
/// emitting the image, for fuzzing and tests, in the order the bundled link state machine declares (no
/// plugins, no verifiers). Returns the file size of the laid-out image.
pub fn lay_out_and_relocate(
    graph: crate::graph::LinkGraph,
    options: crate::context::LinkOptions,
) -> Result<u64, PhaseError> {
    let tables = &neverc_tables::BUNDLED_PHASES;
    let no_machine = || {
        PhaseError::new(
            LinkPhase::ResolveSymbols,
            "the bundled tables declare no link state machine",
        )
    };
    let machine = crate::execute::link_state_machine(tables).ok_or_else(no_machine)?;
    let first = LinkPhase::ResolveSymbols.index_in(tables).ok_or_else(no_machine)?;
    let last = LinkPhase::Relocate.index_in(tables).ok_or_else(no_machine)?;
    let mut context = LinkContext::new(options);
    context.graph = graph;
    let declared = machine
        .transitions
        .iter()
        .map(|transition| transition.phase)
        .skip_while(|phase| *phase != first);
    for index in declared {
        let phase = LinkPhase::ALL
            .into_iter()
            .find(|phase| phase.index_in(tables) == Some(index));
        if let Some(builtin) = phase.and_then(builtin_for) {
            builtin(&mut context, u16::try_from(index).unwrap_or(u16::MAX))?;
        }
        if index == last {
            break;
        }
    }
    context
        .layout()
        .map(|layout| layout.file_size)
        .ok_or_else(|| PhaseError::new(LinkPhase::Relocate, "no layout was made"))
}

/// Runs the builtin `object_merge` phase (`-r`) over `graph` (its inputs already read) with `options`, whose
/// output limit bounds the merged object: for fuzzing and tests. Returns the relocatable object's bytes.
pub fn merge_relocatable(
    graph: crate::graph::LinkGraph,
    options: crate::context::LinkOptions,
) -> Result<Vec<u8>, PhaseError> {
    let phase = LinkPhase::ObjectMerge;
    let index = phase
        .index_in(&neverc_tables::BUNDLED_PHASES)
        .unwrap_or(usize::from(u16::MAX));
    let mut context = LinkContext::new(options);
    context.graph = graph;
    object_merge::run(&mut context, u16::try_from(index).unwrap_or(u16::MAX))?;
    let image = context
        .image()
        .ok_or_else(|| PhaseError::new(phase, "no object was made"))?;
    image
        .to_vec()
        .map_err(|error| PhaseError::new(phase, error.to_string()))
}
