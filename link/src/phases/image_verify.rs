//! `neverc.link.image_verify` (a sealed gate): the emitted image is checked against its layout; every
//! finding is reported and none may remain.

use crate::context::{LinkContext, PhaseError};
use object::Object as _;

use crate::image::verify_image;

pub(crate) fn run(context: &mut LinkContext) -> Result<(), PhaseError> {
    if context.options.relocatable {
        return verify_relocatable(context);
    }
    let (Some(image), Some(layout)) = (context.image.as_ref(), context.image_layout.as_ref()) else {
        return Err(PhaseError::new("image_verify", "no emitted image"));
    };
    let findings = verify_image(image, layout);
    if findings.is_empty() {
        Ok(())
    } else {
        let lines: Vec<String> = findings.iter().map(|finding| finding.to_string()).collect();
        Err(PhaseError::new("image_verify", lines.join("\n")))
    }
}

/// A merged object (`-r`) must be a relocatable object for the machine of the inputs.
fn verify_relocatable(context: &LinkContext) -> Result<(), PhaseError> {
    let image = context
        .image
        .as_ref()
        .ok_or_else(|| PhaseError::new("image_verify", "no merged object"))?;
    let file = object::File::parse(image.as_slice())
        .map_err(|error| PhaseError::new("image_verify", format!("the merged output is not an object: {error}")))?;
    if file.kind() != object::ObjectKind::Relocatable {
        return Err(PhaseError::new(
            "image_verify",
            "the merged output is not a relocatable object",
        ));
    }
    Ok(())
}
