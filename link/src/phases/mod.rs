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
pub(crate) mod read_inputs;
pub(crate) mod relocate;
pub(crate) mod resolve_symbols;
pub(crate) mod select_comdat;
pub(crate) mod side_outputs_verify;
pub(crate) mod synthesize;

use crate::context::{LinkContext, PhaseError};

/// A builtin phase implementation.
pub(crate) type Builtin = fn(&mut LinkContext) -> Result<(), PhaseError>;

/// A phase whose builtin only advances the state (nothing to do for a static ELF link without bitcode).
fn advance_only(_context: &mut LinkContext) -> Result<(), PhaseError> {
    Ok(())
}

/// The builtin for a link phase, by the phase's declared symbol (`LINK_RESOLVE_SYMBOLS`). The declaration
/// says which phases exist and what they may do; this table only says which code implements each.
pub(crate) fn builtin_for(symbol: &str) -> Option<Builtin> {
    Some(match symbol {
        "LINK_INPUT_PROBE" => input_probe::run,
        "LINK_READ_INPUTS" => read_inputs::run,
        "LINK_LTO_RESOLVE" | "LINK_LTO_GENERATE" | "LINK_RELAX_THUNKS" => advance_only,
        "LINK_RESOLVE_SYMBOLS" => resolve_symbols::run,
        "LINK_SELECT_COMDAT" => select_comdat::run,
        "LINK_GC" => gc::run,
        "LINK_ICF" => icf::run,
        "LINK_SYNTHESIZE" => synthesize::run,
        "LINK_LAYOUT" => layout::run,
        "LINK_RELOCATE" => relocate::run,
        "LINK_EMIT_IMAGE" => emit_image::run,
        "LINK_POST_EMIT" | "LINK_AFTER_COMMIT" => advance_only,
        "LINK_IMAGE_VERIFY" => image_verify::run,
        "LINK_SIDE_OUTPUTS_VERIFY" => side_outputs_verify::run,
        "LINK_COMMIT" => commit::run,
        _ => return None,
    })
}
