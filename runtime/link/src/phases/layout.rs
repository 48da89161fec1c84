//! `neverc.link.layout`: output sections, segments and addresses (`crate::place`), for the page size the
//! options or the target say.

use crate::context::{LinkContext, PhaseError};

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    context.resolve_page_size();
    let layout = crate::place::lay_out(context)?;
    context.set_layout(layout);
    Ok(())
}
