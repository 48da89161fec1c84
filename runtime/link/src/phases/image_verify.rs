//! `neverc.link.image_verify` (a sealed gate): the emitted image is checked against its layout; every
//! finding is reported and none may remain.

use crate::context::{LinkContext, PhaseError};
use crate::output_kind::OutputKind;
use crate::phases::LinkPhase;
use object::Object as _;

use crate::image::verify_image;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    if context.options.output_kind == OutputKind::Relocatable {
        return verify_relocatable(context);
    }
    let image = context.required_image(LinkPhase::ImageVerify)?;
    let Some(layout) = context.image_layout() else {
        return Err(PhaseError::new(
            LinkPhase::ImageVerify,
            "the emitted image has no layout",
        ));
    };
    let findings = verify_image(image, layout);
    if findings.is_empty() {
        Ok(())
    } else {
        let lines: Vec<String> = findings.iter().map(|finding| finding.to_string()).collect();
        Err(PhaseError::new(LinkPhase::ImageVerify, lines.join("\n")))
    }
}

/// A merged object (`-r`) must be a relocatable object for the machine of the inputs.
fn verify_relocatable(context: &LinkContext) -> Result<(), PhaseError> {
    let image = context.required_image(LinkPhase::ImageVerify)?;
    let file = object::File::parse(image).map_err(|error| {
        PhaseError::new(
            LinkPhase::ImageVerify,
            format!("the merged output is not an object: {error}"),
        )
    })?;
    if file.kind() != object::ObjectKind::Relocatable {
        return Err(PhaseError::new(
            LinkPhase::ImageVerify,
            "the merged output is not a relocatable object",
        ));
    }
    Ok(())
}
