//! `neverc.link.input_probe`: read every input file and tell what it is (object, archive, bitcode, ...).

use crate::context::{LinkContext, PhaseError};
use crate::phases::LinkPhase;
use crate::read::add_input_file;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    if !context.graph.inputs.is_empty() {
        // A rerun after a mutation: the inputs are already probed.
        return Ok(());
    }
    if context.options.inputs.is_empty() {
        return Err(PhaseError::new(LinkPhase::InputProbe, "no input files"));
    }
    for path in context.options.inputs.clone() {
        add_input_file(&mut context.graph, &path, 0)
            .map_err(|error| PhaseError::from_read(LinkPhase::InputProbe, &error))?;
    }
    Ok(())
}
