//! `neverc.link.layout`: output sections, segments and addresses (`crate::place`), for the page size the
//! options or the target say. A link without its entry symbol starts at its code, with a warning.

use crate::context::{LinkContext, PhaseError};

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    context.resolve_page_size();
    let layout = crate::place::lay_out(context)?;
    if crate::place::entry_symbol_address(context).is_none() {
        let warning = format!(
            "cannot find entry symbol {}; defaulting to {:016x}",
            context.options.entry, layout.entry
        );
        context.warnings.push(warning);
    }
    context.set_layout(layout);
    Ok(())
}
