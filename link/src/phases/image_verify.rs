//! `neverc.link.image_verify` (a sealed gate): the emitted image is checked against its layout; every
//! finding is reported and none may remain.

use crate::context::{LinkContext, PhaseError};
use crate::image::verify_image;

pub(crate) fn run(context: &mut LinkContext) -> Result<(), PhaseError> {
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
