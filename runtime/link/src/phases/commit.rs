//! `neverc.link.commit` (a sealed gate): the image (and the map file) are written through `neverc-output`, to
//! temporary files beside their destinations renamed into place (a device or a FIFO is written in place); on
//! any failure the previous files stay untouched and no temporary file remains. An output that is also an input
//! or the other output is refused before anything is written. With `--fatal-warnings`, a link that warned
//! writes nothing.

use std::path::Path;

use neverc_output::{Mode, Output, OutputError};

use crate::context::{LinkContext, PhaseError};
use crate::phases::LinkPhase;

const PHASE: LinkPhase = LinkPhase::Commit;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    if context.options.fatal_warnings && !context.warnings.is_empty() {
        return Err(PhaseError::new(
            PHASE,
            format!(
                "{} warning(s) treated as errors (--fatal-warnings); nothing was written",
                context.warnings.len()
            ),
        ));
    }
    let image = context.required_image(PHASE)?;
    let options = &context.options;
    let map = options.map_file.as_deref().zip(context.map_text());
    let result = (|| -> Result<(), OutputError> {
        let mut outputs = vec![("-o", options.output.as_path())];
        outputs.extend(map.map(|(path, _)| ("-Map", path)));
        let inputs: Vec<(&str, &Path)> = options
            .inputs
            .iter()
            .map(|input| ("the input", input.as_path()))
            .collect();
        neverc_output::check_distinct(&outputs, &inputs)?;
        // `ld -r` output is not executable; a linked program or shared library is (both less the umask).
        let mode = if options.output_kind != crate::output_kind::OutputKind::Relocatable {
            Mode::Executable
        } else {
            Mode::Data
        };
        // Holes in the image (alignment gaps inside a section) stay holes in the file.
        let extents = image.extents().iter().map(|extent| (extent.offset(), extent.bytes()));
        let image = Output::staged_extents(&options.output, mode, image.len(), extents)?;
        let map = map
            .map(|(path, text)| Output::staged(path, Mode::Data, text.as_bytes()))
            .transpose()?;
        // The side output first, the image last: the image appears only when everything is in place. Outputs
        // not committed are dropped, which removes their temporaries.
        if let Some(map) = map {
            map.commit()?;
        }
        image.commit()
    })();
    result.map_err(|error| PhaseError::io(PHASE, error.to_string()))
}
