//! `neverc.link.read_inputs`: parse objects into the graph and list archive members (extracted later, by
//! symbol resolution).

use crate::context::{LinkContext, PhaseError};
use crate::graph::InputId;
use crate::read::read_input;

pub(crate) fn run(context: &mut LinkContext) -> Result<(), PhaseError> {
    if !context.graph.sections.is_empty() || !context.graph.archives.is_empty() {
        return Ok(());
    }
    for index in 0..context.graph.inputs.len() {
        read_input(&mut context.graph, InputId(index as u32), 1)
            .map_err(|error| PhaseError::new("read_inputs", error.to_string()))?;
    }
    context.graph.index_edges();
    Ok(())
}
