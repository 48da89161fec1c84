//! `neverc-spec link`: the declared link phases over real objects, into a static executable.

use std::ffi::OsString;

use neverc_link::context::{IcfMode, LinkContext, LinkOptions};
use neverc_link::execute::run_link;

use crate::CommandError;
use crate::cli::{IcfChoice, LinkArgs};

/// Rewrites GNU ld's single-dash long options (`-static`, `-Map`) to the double-dash spelling clap parses.
pub(crate) fn gnu_style_arguments(arguments: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let arguments: Vec<OsString> = arguments.collect();
    if arguments.get(1).is_none_or(|command| command != "link") {
        return arguments;
    }
    arguments
        .into_iter()
        .map(|argument| match argument.to_str() {
            Some("-static") => OsString::from("--static"),
            Some("-Map") => OsString::from("--Map"),
            Some(text) if text.starts_with("-Map=") => OsString::from(format!("-{text}")),
            _ => argument,
        })
        .collect()
}

pub(crate) fn run(args: &LinkArgs) -> Result<(), CommandError> {
    let mut options = LinkOptions::new(args.inputs.clone(), args.output.clone());
    options.entry = args.entry.clone();
    options.gc_sections = args.gc_sections;
    options.icf = match args.icf {
        IcfChoice::All => IcfMode::All,
        IcfChoice::None => IcfMode::None,
    };
    options.map_file = args.map.clone();
    let mut context = LinkContext::new(options);
    let trace = run_link(&mut context, &neverc_runtime::BUNDLED_PHASES)
        .map_err(|error| CommandError::Request(format!("link failed: {error}")))?;
    if args.trace_phases {
        for entry in &trace {
            outln!(
                "{:<34} {:<58} {:<18} {:>21} -> {:<21} {:>9.3} ms",
                entry.phase,
                entry.policy,
                entry.actor.name(),
                entry.state_before,
                entry.state_after,
                entry.duration.as_secs_f64() * 1000.0
            );
        }
    }
    Ok(())
}
