//! `neverc.link.object_merge`: a relocatable link (`-r`). The inputs are read into the graph by the link's
//! readers, the objects to merge chosen (`merge::selected_objects`: archive members as a link pulls them, or
//! all of them under `--whole-archive`), and one ELF relocatable object is written from them
//! (`merge::merge_objects`), as GNU ld's `-r` makes it. The object is the phase's product, which the sealed
//! gates check and `commit` writes, completely or not at all. A plugin that replaces the phase makes the
//! object instead.

use crate::context::{IcfMode, LinkContext, LinkOptions, PhaseError, Strip};
use crate::merge::{MergeError, MergeInput, merge_objects, selected_objects};
use crate::phases::LinkPhase;

const PHASE: LinkPhase = LinkPhase::ObjectMerge;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    refuse_unsupported_options(&context.options)?;
    let objects = selected_objects(context, phase)?;
    let graph = &context.graph;
    let inputs: Vec<MergeInput<'_>> = objects
        .iter()
        .map(|input| {
            let entry = &graph.inputs[input.index()];
            MergeInput {
                name: &entry.logical_name,
                bytes: entry.data.get(entry.object_range.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let merged = merge_objects(
        &inputs,
        context.options.max_output_size,
        context.options.symbols.allow_multiple_definition,
    )
    .map_err(|error: MergeError| PhaseError::new(PHASE, error.to_string()))?;
    context.set_image(merged.into(), None);
    Ok(())
}

/// The options that change what a link makes but that a relocatable link does not apply: refused by name
/// rather than ignored, so that nothing is written that the command line did not ask for.
fn refuse_unsupported_options(options: &LinkOptions) -> Result<(), PhaseError> {
    let symbols = &options.symbols;
    let refused = [
        (options.map_file.is_some() || options.print_map, "-Map/-M (a link map)"),
        (options.gc_sections, "--gc-sections"),
        (options.icf != IcfMode::None, "--icf"),
        (options.strip != Strip::Nothing, "-s/-S (stripping)"),
        (
            options.compress_debug_sections != crate::image::DebugCompression::None,
            "--compress-debug-sections",
        ),
        (!symbols.undefined.is_empty(), "-u/--undefined"),
        (!symbols.require_defined.is_empty(), "--require-defined"),
        (!symbols.defsyms.is_empty(), "--defsym"),
        (!symbols.wrap.is_empty(), "--wrap"),
        (symbols.version_script.is_some(), "--version-script"),
        (symbols.retain_symbols.is_some(), "--retain-symbols-file"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, option)) => Err(PhaseError::new(
            PHASE,
            format!("{option} is not supported with -r: a relocatable link does not apply it"),
        )),
        None => Ok(()),
    }
}
