//! `neverc.link.synthesize`: what the linker makes itself (`crate::synth`): the PLT of indirect functions, the
//! global offset table, merged strings, the unwind tables without the records of dropped functions and their
//! search table, the merged program properties and the build ID note.

use crate::context::{LinkContext, PhaseError};

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    crate::synth::run(context, phase)
}
