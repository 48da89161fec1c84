//! `neverc.link.read_inputs`: parse objects into the graph and list archive members (extracted later, by
//! symbol resolution, except the members of a `--whole-archive` archive, which are all extracted here, in the
//! archive's order). Inputs are read one after another: `read::parallel` reads them on every core into
//! the same graph, but on this 2-core machine its extra append pass costs more than the second core saves
//! (BENCHMARKS.md), so it is not the default yet.

use crate::context::{LinkContext, PhaseError};
use crate::graph::{InputId, InputKind};
use crate::phases::LinkPhase;
use crate::read::{extract_whole_archive, read_input};

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if !context.graph.sections.is_empty() || !context.graph.archives.is_empty() {
        context.resolve_image_base();
        return Ok(());
    }
    context.graph.skip_debug_relocations = context.options.strip != crate::context::Strip::Nothing;
    for index in 0..context.graph.inputs.len() {
        if context.graph.inputs[index].kind == InputKind::SharedLibrary && !context.options.output_kind.is_dynamic() {
            // ld.bfd's words: a static output cannot hold a library the loader maps.
            return Err(PhaseError::new(
                LinkPhase::ReadInputs,
                format!(
                    "{}: attempted static link of dynamic object (a static output cannot use a shared library)",
                    context.graph.inputs[index].logical_name
                ),
            ));
        }
        read_input(&mut context.graph, InputId(index as u32), phase)
            .map_err(|error| PhaseError::from_read(LinkPhase::ReadInputs, &error))?;
        // Top-level inputs are the graph's first inputs, in the order of `options.inputs`.
        if context.options.whole_archive.contains(&index) {
            extract_whole_archive(&mut context.graph, InputId(index as u32), phase)
                .map_err(|error| PhaseError::from_read(LinkPhase::ReadInputs, &error))?;
        }
    }
    context.graph.index_edges();
    context.resolve_image_base();
    Ok(())
}
