//! `neverc.link.layout`: output sections, segments and addresses (`crate::place`), for the page size the
//! options or the target say. A link without its entry symbol starts at its code, with a warning. The
//! packed relative relocations (`synth/relr.rs`) are encoded here, once addresses are known.

use crate::context::{LinkContext, PhaseError};

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    context.resolve_page_size();
    let layout = crate::place::lay_out(context)?;
    // A shared library needs no entry point (GNU ld leaves its `e_entry` 0 without one).
    let library = context.options.output_kind.is_shared_library();
    if crate::place::entry_symbol_address(context).is_none() && !library {
        let warning = format!(
            "cannot find entry symbol {}; defaulting to {:016x}",
            context.options.entry, layout.entry
        );
        context.warnings.push(warning);
    }
    // GNU ld makes an empty section for a `--section-start` name no input has; nothing is made here, which
    // the user is told.
    for (name, start) in &context.options.section_starts {
        if !layout.sections.iter().any(|section| section.name == *name) {
            let warning = format!("--section-start {name}={start:#x}: the output has no section `{name}`");
            if !context.warnings.contains(&warning) {
                context.warnings.push(warning);
            }
        }
    }
    context.set_layout(layout);
    // The packed relative relocations are encoded for the addresses the layout gave (laid out again while
    // their table grows).
    crate::synth::relr::encode_after_layout(context, crate::phases::LinkPhase::Layout, |context| {
        let layout = crate::place::lay_out(context)?;
        context.set_layout(layout);
        Ok(())
    })
}
