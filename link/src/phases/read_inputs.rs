//! `neverc.link.read_inputs`: parse objects into the graph and list archive members (extracted later, by
//! symbol resolution), on every core (`read::parallel`); the graph is the same as reading one by one.

use neverc_runtime::generated::phases::index::LINK_READ_INPUTS;

use crate::context::{LinkContext, PhaseError};
use crate::read::parallel::read_all_inputs;

pub(crate) fn run(context: &mut LinkContext) -> Result<(), PhaseError> {
    if !context.graph.sections.is_empty() || !context.graph.archives.is_empty() {
        return Ok(());
    }
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    read_all_inputs(&mut context.graph, LINK_READ_INPUTS as u16, workers)
        .map_err(|error| PhaseError::new("read_inputs", error.to_string()))
}
