//! `neverc.link.read_inputs`: parse objects into the graph and list archive members (extracted later, by
//! symbol resolution, except the members of a `--whole-archive` archive, which are all extracted here, in the
//! archive's order). Inputs are read one after another: `read::parallel` reads them on every core into
//! the same graph, but on this 2-core machine its extra append pass costs more than the second core saves
//! (BENCHMARKS.md), so it is not the default yet.

use crate::context::{LinkContext, PhaseError};
use crate::graph::InputId;
use crate::phases::LinkPhase;
use crate::read::{extract_whole_archive, read_input};

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if !context.graph.sections.is_empty() || !context.graph.archives.is_empty() {
        return Ok(());
    }
    for index in 0..context.graph.inputs.len() {
        read_input(&mut context.graph, InputId(index as u32), phase)
            .map_err(|error| PhaseError::from_read(LinkPhase::ReadInputs, &error))?;
        // Top-level inputs are the graph's first inputs, in the order of `options.inputs`.
        if context.options.whole_archive.contains(&index) {
            extract_whole_archive(&mut context.graph, InputId(index as u32), phase)
                .map_err(|error| PhaseError::from_read(LinkPhase::ReadInputs, &error))?;
        }
    }
    context.graph.index_edges();
    Ok(())
}
