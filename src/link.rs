//! `neverc-spec link`: the declared link phases over real objects, into a static executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use neverc_link::LinkPhase;
use neverc_link::context::{IcfMode, LinkContext, LinkOptions};
use neverc_link::execute::{LinkError, run_link};
use neverc_link::lto::cache::{Integrity, MacKey};
use neverc_link::ordering::SymbolOrderingPlugin;
use neverc_link::plugin::{LinkPlugin as _, Registry};

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
    options.eh_frame_hdr = args.eh_frame_hdr;
    options.icf = match args.icf {
        IcfChoice::All => IcfMode::All,
        IcfChoice::None => IcfMode::None,
    };
    options.map_file = args.map.clone();
    args.lto.apply(&mut options);
    link(LinkRequest {
        options,
        lto_cache_hmac_key_file: args.lto.lto_cache_hmac_key_file.clone(),
        symbol_ordering_file: args.symbol_ordering_file.clone(),
        trace_phases: args.trace_phases,
        trace_symbols: Vec::new(),
        cref: false,
        ignored_lto_plugin: None,
        plugins: args.plugins.clone(),
        plugin_args: args.plugin_args.clone(),
    })
}

/// A link as `neverc-spec link` and the `ld` driver ask for it: the options, and what the CLI adds to them.
pub(crate) struct LinkRequest {
    pub(crate) options: LinkOptions,
    /// `--lto-cache-hmac-key-file`: the key of the LTO cache's HMACs (else `$NEVERC_LTO_CACHE_HMAC_KEY`).
    pub(crate) lto_cache_hmac_key_file: Option<PathBuf>,
    /// `--symbol-ordering-file`: run the ordering plugin with this file.
    pub(crate) symbol_ordering_file: Option<PathBuf>,
    /// `--trace-phases`: print every phase as it ran.
    pub(crate) trace_phases: bool,
    /// `-y SYM` (`ld`): print every input that defines or refers to these symbols.
    pub(crate) trace_symbols: Vec<String>,
    /// `--cref` (`ld`): print the cross reference table (appended to the `-Map` file when there is one).
    pub(crate) cref: bool,
    /// The linker plugin the `ld` driver ignored (gcc's `liblto_plugin.so`, which gcc passes on every link),
    /// as the note names it: printed only when an input holds GCC LTO bytecode, which the plugin would have
    /// optimized.
    pub(crate) ignored_lto_plugin: Option<String>,
    /// `--plugin`: C plugins to load, in order.
    pub(crate) plugins: Vec<PathBuf>,
    /// `--plugin-arg ID:NAME[=VALUE]`, for every plugin.
    pub(crate) plugin_args: Vec<String>,
}

/// The first input (in link order) with GCC LTO bytecode (`.gnu.lto_*` sections), if any.
fn gcc_lto_input(graph: &neverc_link::graph::LinkGraph) -> Option<&str> {
    graph
        .sections
        .iter()
        .find(|section| section.name.starts_with(".gnu.lto_"))
        .map(|section| graph.input_name(Some(section.input)))
}

/// The environment variable that may hold the key of the LTO cache's HMACs.
const HMAC_KEY_VARIABLE: &str = "NEVERC_LTO_CACHE_HMAC_KEY";

/// How the shared LTO cache's entries are sealed: an HMAC under the key in `key_file` (or, without one, in
/// `$NEVERC_LTO_CACHE_HMAC_KEY`), or a digest when there is no key.
fn cache_integrity(key_file: Option<&Path>) -> Result<Integrity, CommandError> {
    let key = match key_file {
        Some(path) => neverc_userfile::read_user_file(path, neverc_userfile::TEXT_LIMIT)
            .map_err(|error| CommandError::Io(error.to_string()))?,
        None => match std::env::var_os(HMAC_KEY_VARIABLE) {
            Some(key) => key.into_encoded_bytes(),
            None => return Ok(Integrity::Digest),
        },
    };
    let source = key_file.map_or_else(
        || format!("${HMAC_KEY_VARIABLE}"),
        |path| format!("`{}`", path.display()),
    );
    MacKey::new(key)
        .map(Integrity::Keyed)
        .map_err(|reason| CommandError::Usage(format!("{source}: {reason}")))
}

/// Runs one link: the one path of `neverc-spec link` and `neverc-spec ld`.
pub(crate) fn link(request: LinkRequest) -> Result<(), CommandError> {
    let LinkRequest {
        mut options,
        lto_cache_hmac_key_file,
        symbol_ordering_file,
        trace_phases,
        trace_symbols,
        cref,
        ignored_lto_plugin,
        plugins,
        plugin_args,
    } = request;
    // Refused before the link runs, so that nothing is read twice or written at all.
    let mut outputs = vec![("-o", options.output.as_path())];
    outputs.extend(options.map_file.as_deref().map(|map| ("-Map", map)));
    let mut inputs: Vec<(&str, &Path)> = options
        .inputs
        .iter()
        .map(|input| ("the input", input.as_path()))
        .collect();
    inputs.extend(
        symbol_ordering_file
            .as_deref()
            .map(|path| ("--symbol-ordering-file", path)),
    );
    inputs.extend(plugins.iter().map(|path| ("--plugin", path.as_path())));
    neverc_output::check_distinct(&outputs, &inputs)?;
    options.lto_cache_integrity = cache_integrity(lto_cache_hmac_key_file.as_deref())?;
    let mut registry = Registry::default();
    if let Some(path) = &symbol_ordering_file {
        let text = neverc_userfile::read_user_text(path, neverc_userfile::TEXT_LIMIT)
            .map_err(|error| CommandError::Io(error.to_string()))?;
        let mut plugin = SymbolOrderingPlugin::from_text(&text);
        registry
            .register(&neverc_tables::BUNDLED_PHASES, &mut plugin)
            .map_err(|status| CommandError::Internal(status.to_string()))?;
    }
    let c_plugins = crate::plugins::load_all(&plugins, &plugin_args)?;
    let mut c_plugins: Vec<neverc_plugin_host::CPlugin> =
        c_plugins.into_iter().map(neverc_plugin_host::CPlugin::new).collect();
    for plugin in &mut c_plugins {
        registry
            .register(&neverc_tables::BUNDLED_PHASES, plugin)
            .map_err(|status| CommandError::Request(format!("plugin `{}`: {status}", plugin.name())))?;
    }
    let mut context = LinkContext::new(options);
    let linked = run_link(&mut context, &neverc_tables::BUNDLED_PHASES, &mut registry);
    crate::plugins::print_reports(&c_plugins);
    for line in traced_symbols(&context.graph, &trace_symbols) {
        errln!("neverc-spec ld: {line}");
    }
    if let Some(plugin) = &ignored_lto_plugin
        && let Some(input) = gcc_lto_input(&context.graph)
    {
        errln!(
            "note: neverc-spec ld: ignoring {plugin}: {input} holds GCC LTO bytecode, which neverc-spec does not \
             optimize; its machine code (-ffat-lto-objects) is linked as it is (LLVM bitcode is linked natively)"
        );
    }
    for note in &context.notes {
        errln!("neverc-spec ld: {note}");
    }
    // Warnings are printed whether the link succeeded or not (with --fatal-warnings they are why it failed).
    for warning in &context.warnings {
        errln!("warning: {warning}");
    }
    let trace = linked.map_err(|error| match &error {
        // Files that cannot be read or written are I/O failures (exit status 3). A builtin phase's message
        // names the input, symbol or site; which internal phase found it is not the user's business.
        LinkError::Phase(phase) if phase.io || phase.phase == LinkPhase::InputProbe => {
            CommandError::Io(format!("link failed: {}", phase.message))
        }
        LinkError::Phase(phase) => CommandError::Request(format!("link failed: {}", phase.message)),
        _ => CommandError::Request(format!("link failed: {error}")),
    })?;
    if let Some(stopped) = &context.stopped {
        errln!("note: {stopped}");
    }
    // `--cref`: GNU ld's cross reference table, after the map in the map file, else on standard output.
    if cref {
        let table = cross_reference_table(&context.graph);
        match &context.options.map_file {
            Some(map) => {
                use std::io::Write as _;
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(map)
                    .and_then(|mut file| file.write_all(table.as_bytes()))
                    .map_err(|error| CommandError::Io(format!("cannot write {}: {error}", map.display())))?;
            }
            None => outln!("{}", table.strip_suffix('\n').unwrap_or(&table)),
        }
    }
    // `-M`: the link map on standard output, as GNU ld prints it.
    if context.options.print_map
        && let Some(map) = context.map_text()
    {
        outln!("{map}");
    }
    if trace_phases {
        for entry in &trace {
            outln!(
                "{:<34} {:<58} {:<32} {:>21} -> {:<21} {:>9.3} ms",
                entry.phase,
                entry.policy,
                if entry.intercepted {
                    format!("{} (intercepted)", entry.actor.name())
                } else {
                    entry.actor.name().to_string()
                },
                entry.state_before,
                entry.state_after,
                entry.duration.as_secs_f64() * 1000.0
            );
        }
    }
    // The process ends right after a link: freeing the graph's tens of thousands of allocations one by one
    // would cost up to a tenth of the link (measured on the glibc real-programs link), and the kernel reclaims
    // the memory at exit anyway, as lld and mold let it.
    std::mem::forget(context);
    Ok(())
}

/// GNU ld's `--cref` table: every global name an input defines or refers to, sorted, with the files that
/// define it, then those that hold it as a common symbol, then those that refer to it, each in input order;
/// file names start at column 50.
fn cross_reference_table(graph: &neverc_link::graph::LinkGraph) -> String {
    use neverc_link::graph::{Binding, Definition};
    use std::collections::BTreeMap;
    const FILE_COLUMN: usize = 50;
    // For each name: (definitions, commons, references) as input indexes.
    let mut names: BTreeMap<String, [Vec<u32>; 3]> = BTreeMap::new();
    for symbol in &graph.symbols {
        let Some(input) = symbol.origin.input() else {
            continue;
        };
        if symbol.binding == Binding::Local || symbol.name.is_empty() {
            continue;
        }
        let kind = match symbol.definition {
            Definition::Undefined => 2,
            Definition::Common => 1,
            _ => 0,
        };
        // A file is listed once for a name, by what it does first (defines, holds as common, refers to).
        let kinds = names
            .entry(neverc_link::symbol_name::display(&symbol.name).into_owned())
            .or_default();
        if kinds.iter().all(|files| !files.contains(&input.0)) {
            kinds[kind].push(input.0);
        } else if kind == 0 {
            for files in kinds.iter_mut() {
                files.retain(|file| *file != input.0);
            }
            kinds[0].push(input.0);
        }
    }
    let mut table = format!("\nCross Reference Table\n\n{:<FILE_COLUMN$}File\n", "Symbol");
    for (name, kinds) in &names {
        let mut first = true;
        for input in kinds.iter().flatten() {
            let file = graph.input_name(Some(neverc_link::graph::InputId(*input)));
            let label = if first { name.as_str() } else { "" };
            // A name too long for its column is followed by one space, as GNU ld writes it.
            if label.len() >= FILE_COLUMN {
                table.push_str(&format!("{label} {file}\n"));
            } else {
                table.push_str(&format!("{label:<FILE_COLUMN$}{file}\n"));
            }
            first = false;
        }
    }
    table
}

/// What `-y SYM` prints, as GNU ld does: for every input, in the order they were read, whether it defines
/// or refers to each traced symbol (`main.o: reference to printf`, `libc.a(printf.o): definition of printf`).
fn traced_symbols(graph: &neverc_link::graph::LinkGraph, names: &[String]) -> Vec<String> {
    use neverc_link::graph::{Binding, Definition};
    if names.is_empty() {
        return Vec::new();
    }
    graph
        .symbols
        .iter()
        .filter(|symbol| symbol.binding != Binding::Local && symbol.origin.input().is_some())
        .filter(|symbol| names.contains(&symbol.name))
        .map(|symbol| {
            let what = match symbol.definition {
                Definition::Undefined => "reference to",
                Definition::Common => "common of",
                _ => "definition of",
            };
            format!("{}: {what} {}", graph.input_name(symbol.origin.input()), symbol.name)
        })
        .collect()
}
