//! GNU ld's command line, parsed by hand: clap cannot express it. Order matters (`-Bstatic` applies to the
//! `-l` options after it), options mix with input files, short options take their value attached or as the
//! next argument (`-lm`, `-l m`, `-L/usr/lib`), and, as with getopt_long_only, a long option may be spelled
//! with one dash or two (`-static`, `--static`, `-Map=FILE`, `--Map FILE`); a single-dash word that is no
//! long option is a short option with its value attached (`-lfoo`, `-O1`, `-zrelro`).
//!
//! Every option is one of: mapped onto [`LinkOptions`](neverc_link::context::LinkOptions); accepted because
//! it cannot change a static executable; ignored with a note (linker plugins); or refused, naming the option,
//! because it would change the output in a way neverc-spec does not implement.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use neverc_link::context::{HashStyle, IcfMode, Strip, SymbolicBinding};
use neverc_link::image::DebugCompression;
use neverc_tables::{BUNDLED_TARGETS, TargetRecord};

use super::error::LdError;

pub(crate) use neverc_link::search::Item;

/// A link as GNU ld's command line describes it.
#[derive(Clone, Debug)]
pub(crate) struct LdCommand {
    pub(crate) items: Vec<Item>,
    /// The indices in `items` of those named between `--whole-archive` and `--no-whole-archive`: every
    /// member of the archives they are (or name) is linked.
    pub(crate) whole_archive_items: std::collections::BTreeSet<usize>,
    /// The items named inside `--as-needed` (their shared libraries are needed only if imported from).
    pub(crate) as_needed_items: std::collections::BTreeSet<usize>,
    /// `--export-dynamic` (`-E`).
    pub(crate) export_dynamic: bool,
    /// `-L` directories in order (all apply to every `-l`, wherever they appear, as in GNU ld).
    pub(crate) library_dirs: Vec<PathBuf>,
    pub(crate) output: PathBuf,
    pub(crate) entry: Option<String>,
    pub(crate) gc_sections: bool,
    pub(crate) icf: IcfMode,
    pub(crate) map_file: Option<PathBuf>,
    pub(crate) build_id: bool,
    pub(crate) eh_frame_hdr: bool,
    pub(crate) relro: bool,
    /// `-rpath DIR` and `-R DIR`, in order.
    pub(crate) rpath: Vec<String>,
    /// `-rpath-link DIR`, in order (a value may list several, separated by `:`).
    pub(crate) rpath_link: Vec<PathBuf>,
    /// `--enable-new-dtags` (the default) or `--disable-new-dtags`.
    pub(crate) new_dtags: bool,
    /// `-z now` (after any `-z lazy`).
    pub(crate) bind_now: bool,
    /// `-z origin`.
    pub(crate) origin: bool,
    /// `-z pack-relative-relocs` (after any `-z nopack-relative-relocs`).
    pub(crate) pack_relative_relocs: bool,
    /// `--fix-NAME` for an erratum a target declares (`--fix-cortex-a53-843419`).
    pub(crate) fix_erratum: bool,
    /// `--compress-debug-sections=zlib`.
    pub(crate) compress_debug_sections: DebugCompression,
    /// `--image-base=ADDR` (lld's) or `-Ttext-segment=ADDR` (GNU ld's): where the first segment goes.
    pub(crate) image_base: Option<u64>,
    /// `--section-start=NAME=ADDR`, `-Ttext=`, `-Tdata=`, `-Tbss=`: output sections at fixed addresses, in
    /// command-line order.
    pub(crate) section_starts: Vec<(String, u64)>,
    /// `-pie` (after any `-no-pie`).
    pub(crate) pie: bool,
    /// `-shared`: a shared library.
    pub(crate) shared: bool,
    /// `-soname NAME` (the last one).
    pub(crate) soname: Option<String>,
    /// `--no-undefined` or `-z defs` (and not a later `-z undefs`).
    pub(crate) no_undefined: bool,
    /// `-Bsymbolic`, `-Bsymbolic-functions`, `-Bno-symbolic` (the last one).
    pub(crate) symbolic: SymbolicBinding,
    /// `--exclude-libs` (every one given).
    pub(crate) exclude_libs: Vec<String>,
    /// `-z nodelete`, `-z nodlopen`, `-z initfirst`, `-z interpose`.
    pub(crate) loader_requests: neverc_link::context::LoaderRequests,
    /// `-static`, `-Bstatic` or their synonyms appeared.
    pub(crate) static_seen: bool,
    /// `--no-dynamic-linker`.
    pub(crate) no_dynamic_linker: bool,
    /// `-dynamic-linker FILE` (`-I FILE`): the program interpreter of a PIE (the last one given counts).
    pub(crate) dynamic_linker: Option<String>,
    /// `--hash-style=sysv|gnu|both` (GNU ld's default: both).
    pub(crate) hash_style: HashStyle,
    /// `-z separate-code` (the default) or `-z noseparate-code`.
    pub(crate) separate_code: bool,
    /// `-z keep-text-section-prefix`.
    pub(crate) keep_text_section_prefix: bool,
    /// `--print-gc-sections`.
    pub(crate) print_gc_sections: bool,
    /// `-M` / `--print-map`.
    pub(crate) print_map: bool,
    /// `--fatal-warnings` / `--no-fatal-warnings` (the last one wins).
    pub(crate) fatal_warnings: bool,
    /// `-y SYM` / `--trace-symbol=SYM`, in order.
    pub(crate) trace_symbols: Vec<String>,
    /// `-u`, `--defsym`, `--wrap`, `--version-script`, ...: how symbols resolve and which are kept.
    pub(crate) symbols: neverc_link::symbol_options::SymbolOptions,
    /// `--cref`: print the cross reference table (to the map file with `-Map`, else to standard output).
    pub(crate) cref: bool,
    /// Notes on options accepted although they cannot change a static executable (`-Bsymbolic`).
    pub(crate) notes: Vec<String>,
    pub(crate) strip: Strip,
    /// `-z max-page-size=`.
    pub(crate) page_size: Option<u64>,
    /// `-z common-page-size=`, checked against the page size once the whole line is read.
    pub(crate) common_page_size: Option<u64>,
    /// `-nostdlib`: only the `-L` directories are searched.
    pub(crate) nostdlib: bool,
    pub(crate) sysroot: Option<PathBuf>,
    pub(crate) relocatable: bool,
    /// `-t`: print every input file.
    pub(crate) trace_inputs: bool,
    pub(crate) trace_phases: bool,
    pub(crate) symbol_ordering_file: Option<PathBuf>,
    /// `-v` / `-V`: print the version line, then link if there are inputs.
    pub(crate) print_version: bool,
    /// `--verbose`: the version and the library search directories.
    pub(crate) verbose: bool,
    /// `-plugin FILE` (the last one) when it is neither LLVM's nor GCC's LTO plugin, and how many
    /// `-plugin-opt` options came with it: ignored, noted once.
    pub(crate) ignored_plugin: Option<String>,
    pub(crate) ignored_plugin_options: usize,
    /// The plugin the `-plugin-opt` options that follow are for.
    pub(crate) plugin: PluginKind,
    /// LTO options, from LLVM's plugin options (`-plugin-opt=O3`, `-plugin-opt=mcpu=...`).
    pub(crate) lto: neverc_link::lto::request::LtoOptions,
    /// The LTO cache directory (`-plugin-opt=cache-dir=DIR`, lld's `--thinlto-cache-dir=DIR`).
    pub(crate) lto_cache_dir: Option<PathBuf>,
    /// The LTO cache's Redis server (`--lto-cache-url=redis://HOST:PORT/`, neverc-spec's own option).
    pub(crate) lto_cache_url: Option<String>,
    /// The file holding the key of the LTO cache's HMACs (`--lto-cache-hmac-key-file=FILE`, neverc-spec's own).
    pub(crate) lto_cache_hmac_key_file: Option<PathBuf>,
    /// `--thinlto-index-only[=FILE]` / `-plugin-opt=thinlto-index-only[=FILE]`: write the indexes and stop.
    pub(crate) thinlto_index_only: Option<Option<PathBuf>>,
    /// `--thinlto-object-suffix-replace=OLD;NEW` and `--thinlto-prefix-replace=OLD;NEW` (or their
    /// `-plugin-opt=` spellings): what an index-only link calls each module and where it writes its files.
    pub(crate) thinlto_naming: neverc_link::lto::distributed::DistributedNaming,
    /// `--thinlto-cache-policy=POLICY` / `-plugin-opt=cache-policy=POLICY`: how the cache directory is pruned.
    pub(crate) lto_cache_policy: Option<neverc_link::lto::prune::CachePolicy>,
    /// A `--start-group` that was never closed (GNU ld adds the `--end-group` with a warning).
    pub(crate) unclosed_group: bool,
    /// `--relax` (the default) / `--no-relax`, the last one.
    pub(crate) relax: bool,
    /// `--threads[=N]` / `--no-threads`, the last one: how many threads the link may use (every core by
    /// default, or the LTO plugin's `jobs` when only that is given).
    pub(crate) threads: usize,
    /// Whether `--threads` or `--no-threads` was given.
    pub(crate) threads_given: bool,
    /// `-plugin-opt=jobs=N` (`thinlto-jobs`), the last one.
    pub(crate) jobs: Option<usize>,
    /// `-z notext` / `-z text`, the last one.
    pub(crate) text_relocations: bool,
    /// `--emit-relocs` / `-q` (ignored by `-r`, as by ld.bfd).
    pub(crate) emit_relocs: bool,
    /// `-m EMULATION` (the last one): the target it names and the option as spelled, for messages.
    pub(crate) emulation: Option<Emulation>,
    /// `-EL` (true) or `-EB` (false), the last one, checked against the target once the whole line is read.
    pub(crate) little_endian: Option<bool>,
}

/// Which linker plugin a `-plugin` option names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum PluginKind {
    /// None yet.
    #[default]
    None,
    /// LLVM's `LLVMgold.so` (clang passes it with `-flto`): bitcode is linked natively, its options honoured.
    Llvm,
    /// Any other plugin, GCC's `liblto_plugin.so` (which gcc always passes) among them: ignored with a note.
    /// GCC LTO objects are refused by name when they are read.
    Other,
}

/// Applies one of LLVM's plugin options (`-plugin-opt=VALUE`, as clang passes them with `-flto`), or says
/// why it is refused: options that would change the output in a way not implemented are refused by name.
fn llvm_plugin_option(command: &mut LdCommand, option: &str) -> Result<(), String> {
    use neverc_link::lto::{CacheScope, LtoMode, OptionFlags};
    let lto = &mut command.lto;
    let number = |text: &str, what: &str| -> Result<u32, String> {
        text.parse::<u32>()
            .map_err(|_| format!("`{text}` is not a number of {what}"))
    };
    match option.split_once('=') {
        None => match option {
            "O0" | "O1" | "O2" | "O3" => lto.optimization_level = number(&option[1..], "optimization level")?,
            "save-temps" => lto.flags |= OptionFlags::SAVE_TEMPS,
            "thinlto" => lto.mode = LtoMode::Thin,
            "thinlto-index-only" => command.thinlto_index_only = Some(None),
            // An index-only link writes every module's imports list whether asked or not.
            "thinlto-emit-imports-files" => {}
            "disable-verify"
            | "no-new-pass-manager"
            | "new-pass-manager"
            | "emit-llvm"
            | "emit-asm"
            | "debug-pass-manager" => {
                return Err(format!("`{option}` is not supported by neverc-spec's LTO yet"));
            }
            _ => return Err(format!("unknown LLVM plugin option `{option}`")),
        },
        Some((key, value)) => match key {
            "mcpu" => lto.cpu = value.to_string(),
            "mattr" => lto.features = value.to_string(),
            "jobs" | "thinlto-jobs" => {
                lto.thread_budget = number(value, "threads")?.max(1);
                command.jobs = Some(lto.thread_budget as usize);
            }
            "cache-dir" => {
                lto.cache_scope = CacheScope::LocalShared;
                command.lto_cache_dir = Some(PathBuf::from(value));
            }
            "thinlto-index-only" => command.thinlto_index_only = Some(Some(PathBuf::from(value))),
            "thinlto-prefix-replace" => command.thinlto_naming.prefix_replace = Some(old_and_new(value)?),
            "thinlto-object-suffix-replace" => {
                command.thinlto_naming.object_suffix_replace = Some(old_and_new(value)?);
            }
            "cache-policy" => command.lto_cache_policy = Some(cache_policy(value)?),
            "cs-profile-path"
            | "sample-profile"
            | "dwo_dir"
            | "obj-path"
            | "opt-remarks-filename"
            | "lto-partitions"
            | "stats-file" => {
                return Err(format!("`{key}=` is not supported by neverc-spec's LTO yet"));
            }
            _ => return Err(format!("unknown LLVM plugin option `{key}=`")),
        },
    }
    Ok(())
}

/// The value of `--thinlto-prefix-replace=` or `--thinlto-object-suffix-replace=`: `OLD;NEW`, split at the
/// first semicolon; NEW may not be empty (lld's rule; OLD may).
fn old_and_new(value: &str) -> Result<(String, String), String> {
    match value.split_once(';') {
        Some((old, new)) if !new.is_empty() => Ok((old.to_string(), new.to_string())),
        _ => Err(format!("expects `OLD;NEW`, but got `{value}`")),
    }
}

/// The value of `--thinlto-cache-policy=` or `-plugin-opt=cache-policy=`: LLVM's cache pruning policy.
fn cache_policy(value: &str) -> Result<neverc_link::lto::prune::CachePolicy, String> {
    neverc_link::lto::prune::parse_policy(value).map_err(|error| format!("invalid cache policy: {error}"))
}

/// A GNU ld emulation the command line chose (`-m aarch64linux`, `-maarch64linux`).
#[derive(Clone, Debug)]
pub(crate) struct Emulation {
    pub(crate) name: String,
    pub(crate) target: &'static TargetRecord,
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Request {
    Help,
    Version,
    Link(Box<LdCommand>),
}

/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arity {
    Flag,
    /// Attached (`--opt=V`, `-xV`) or the next argument.
    Required,
    /// Only attached (`--build-id=sha1`); `--build-id` alone is the default.
    Optional,
}

/// Why a GNU ld option is refused.
const CHANGES_OUTPUT: &str = "neverc-spec does not implement it, and it would change the output";
const SCRIPT: &str = "neverc-spec has no linker-script layout; a script of GROUP/INPUT/AS_NEEDED/OUTPUT_FORMAT \
                      commands may be given as an input file instead";

/// Every option the driver knows, by what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opt {
    Output,
    Entry,
    Library,
    LibraryPath,
    Static,
    Dynamic,
    StartGroup,
    EndGroup,
    PushState,
    PopState,
    Emulation,
    /// `-EL` (true) or `-EB` (false): the byte order of the output.
    ByteOrder(bool),
    HashStyle,
    BuildId,
    Z,
    EhFrameHdr(bool),
    NoStdLib,
    StripAll,
    StripDebug,
    Optimize,
    GcSections(bool),
    Icf,
    Map,
    Version,
    PrintVersion,
    Verbose,
    Help,
    Plugin,
    PluginOption,
    ThinLtoCacheDir,
    ThinLtoIndexOnly,
    ThinLtoPrefixReplace,
    ThinLtoObjectSuffixReplace,
    ThinLtoCachePolicy,
    LtoCacheUrl,
    LtoCacheNamespace,
    LtoCacheHmacKeyFile,
    /// `-dynamic-linker FILE`: there is no `PT_INTERP` in a static executable (ld.bfd ignores it too).
    DynamicLinker,
    /// `-R DIR` is `-rpath DIR`; `-R FILE` is `--just-symbols FILE`, which is refused.
    RpathOrJustSymbols,
    /// `-rpath DIR`.
    Rpath,
    /// `--enable-new-dtags` / `--disable-new-dtags`.
    NewDtags(bool),
    Sysroot,
    Relocatable,
    /// `--whole-archive` (true) / `--no-whole-archive` (false): whether the archives after it contribute every
    /// member.
    WholeArchive(bool),
    AsNeeded(bool),
    ExportDynamic(bool),
    /// `--fix-NAME[=full]` for an erratum a target declares: its workaround, as ld.bfd makes it.
    FixErratum,
    ImageBase,
    /// `-pie` (true) / `-no-pie` (false).
    Pie(bool),
    /// `-shared`, `-Bshareable`: a shared library.
    Shared,
    /// `-soname NAME`, `-h NAME`: the library's `DT_SONAME`.
    Soname,
    /// `--no-undefined`: a shared library's undefined references are errors (`-z defs`).
    NoUndefined,
    /// `-Bsymbolic` (all), `-Bsymbolic-functions`, `-Bno-symbolic`: how a shared library binds its own definitions.
    Symbolic(SymbolicBinding),
    /// `-static-pie`: `-static -pie --no-dynamic-linker`.
    StaticPie,
    /// `--no-dynamic-linker`: no interpreter, the output relocates itself (a static PIE).
    NoDynamicLinker,
    /// `-Ttext-segment=ADDR`: the image base, in GNU ld's hexadecimal.
    TextSegment,
    /// `--section-start=NAME=ADDR` (no name) or `-Ttext`/`-Tdata`/`-Tbss` (the section they name).
    SectionStart(Option<&'static str>),
    PrintGcSections(bool),
    PrintMap,
    FatalWarnings(bool),
    TraceSymbol,
    /// `-u SYM` / `--undefined=SYM`.
    Undefined,
    RequireDefined,
    Defsym,
    Wrap,
    AllowMultipleDefinition,
    /// `--unresolved-symbols=METHOD`.
    UnresolvedSymbols,
    /// `--warn-unresolved-symbols` (true) / `--error-unresolved-symbols` (false).
    WarnUnresolvedSymbols(bool),
    /// `--allow-shlib-undefined` (true) / `--no-allow-shlib-undefined` (false).
    AllowShlibUndefined(bool),
    /// `-rpath-link DIR`.
    RpathLink,
    ErrorLimit,
    NoinhibitExec,
    VersionScript,
    /// `--no-undefined-version` (true) / `--undefined-version` (false).
    UndefinedVersion(bool),
    /// `--dynamic-list FILE`, `--export-dynamic-symbol-list FILE`.
    DynamicList,
    /// `--export-dynamic-symbol GLOB`.
    ExportDynamicSymbol,
    RetainSymbolsFile,
    Cref,
    /// `--threads[=N]` (lld's, mold's): how many threads the link uses (every core without N).
    Threads,
    /// `--no-threads`: one thread.
    NoThreads,
    /// `--exclude-libs=LIB,LIB|ALL`: a shared library does not export what these archives define (a note
    /// for an executable, which exports what its shared libraries refer to).
    ExcludeLibs,
    Trace,
    TracePhases,
    SymbolOrderingFile,
    CompressDebugSections,
    /// `--relax` (true) / `--no-relax` (false): whether GOT loads are relaxed (the last one wins).
    Relax(bool),
    /// `--emit-relocs` / `-q`: keep the relocations in the executable.
    EmitRelocs,
    /// Accepted: cannot change a static executable, or asks for what neverc-spec does anyway.
    NoEffect,
    Unsupported(&'static str),
}

/// The long options (one or two dashes), exactly as GNU ld spells them. Abbreviations are not accepted.
fn long_option(name: &str) -> Option<(Opt, Arity)> {
    use Arity::{Flag, Optional, Required};
    let found = match name {
        "output" => (Opt::Output, Required),
        "entry" => (Opt::Entry, Required),
        "library" => (Opt::Library, Required),
        "library-path" => (Opt::LibraryPath, Required),
        "static" | "Bstatic" | "dn" | "non_shared" => (Opt::Static, Flag),
        "Bdynamic" | "dy" | "call_shared" => (Opt::Dynamic, Flag),
        "start-group" => (Opt::StartGroup, Flag),
        "end-group" => (Opt::EndGroup, Flag),
        "push-state" => (Opt::PushState, Flag),
        "pop-state" => (Opt::PopState, Flag),
        "EL" => (Opt::ByteOrder(true), Flag),
        "EB" => (Opt::ByteOrder(false), Flag),
        "hash-style" => (Opt::HashStyle, Required),
        "build-id" => (Opt::BuildId, Optional),
        "eh-frame-hdr" => (Opt::EhFrameHdr(true), Flag),
        "no-eh-frame-hdr" => (Opt::EhFrameHdr(false), Flag),
        "nostdlib" => (Opt::NoStdLib, Flag),
        "strip-all" => (Opt::StripAll, Flag),
        "strip-debug" => (Opt::StripDebug, Flag),
        "gc-sections" => (Opt::GcSections(true), Flag),
        "no-gc-sections" => (Opt::GcSections(false), Flag),
        "icf" => (Opt::Icf, Required),
        "Map" => (Opt::Map, Required),
        "version" => (Opt::Version, Flag),
        "verbose" => (Opt::Verbose, Flag),
        "help" => (Opt::Help, Flag),
        "plugin" => (Opt::Plugin, Required),
        "plugin-opt" => (Opt::PluginOption, Required),
        "thinlto-cache-dir" => (Opt::ThinLtoCacheDir, Required),
        "thinlto-index-only" => (Opt::ThinLtoIndexOnly, Optional),
        "thinlto-prefix-replace" => (Opt::ThinLtoPrefixReplace, Required),
        "thinlto-object-suffix-replace" => (Opt::ThinLtoObjectSuffixReplace, Required),
        "thinlto-cache-policy" => (Opt::ThinLtoCachePolicy, Required),
        "lto-cache-url" => (Opt::LtoCacheUrl, Required),
        "lto-cache-namespace" => (Opt::LtoCacheNamespace, Required),
        "lto-cache-hmac-key-file" => (Opt::LtoCacheHmacKeyFile, Required),
        "dynamic-linker" => (Opt::DynamicLinker, Required),
        "rpath" => (Opt::Rpath, Required),
        "rpath-link" => (Opt::RpathLink, Required),
        "allow-shlib-undefined" => (Opt::AllowShlibUndefined(true), Flag),
        "no-allow-shlib-undefined" => (Opt::AllowShlibUndefined(false), Flag),
        "enable-new-dtags" => (Opt::NewDtags(true), Flag),
        "disable-new-dtags" => (Opt::NewDtags(false), Flag),
        "sysroot" => (Opt::Sysroot, Required),
        "relocatable" => (Opt::Relocatable, Flag),
        "whole-archive" => (Opt::WholeArchive(true), Flag),
        "as-needed" => (Opt::AsNeeded(true), Flag),
        "no-as-needed" => (Opt::AsNeeded(false), Flag),
        "export-dynamic" => (Opt::ExportDynamic(true), Flag),
        "no-export-dynamic" => (Opt::ExportDynamic(false), Flag),
        "no-whole-archive" => (Opt::WholeArchive(false), Flag),
        "trace" => (Opt::Trace, Flag),
        "trace-phases" => (Opt::TracePhases, Flag),
        "symbol-ordering-file" => (Opt::SymbolOrderingFile, Required),
        "image-base" => (Opt::ImageBase, Required),
        "print-gc-sections" => (Opt::PrintGcSections(true), Flag),
        "no-print-gc-sections" => (Opt::PrintGcSections(false), Flag),
        "print-map" => (Opt::PrintMap, Flag),
        "fatal-warnings" => (Opt::FatalWarnings(true), Flag),
        "no-fatal-warnings" => (Opt::FatalWarnings(false), Flag),
        "trace-symbol" => (Opt::TraceSymbol, Required),
        "undefined" => (Opt::Undefined, Required),
        "require-defined" => (Opt::RequireDefined, Required),
        "defsym" => (Opt::Defsym, Required),
        "wrap" => (Opt::Wrap, Required),
        "allow-multiple-definition" => (Opt::AllowMultipleDefinition, Flag),
        "unresolved-symbols" => (Opt::UnresolvedSymbols, Required),
        "warn-unresolved-symbols" => (Opt::WarnUnresolvedSymbols(true), Flag),
        "error-unresolved-symbols" => (Opt::WarnUnresolvedSymbols(false), Flag),
        "error-limit" => (Opt::ErrorLimit, Required),
        "noinhibit-exec" => (Opt::NoinhibitExec, Flag),
        "version-script" => (Opt::VersionScript, Required),
        "no-undefined-version" => (Opt::UndefinedVersion(true), Flag),
        "undefined-version" => (Opt::UndefinedVersion(false), Flag),
        "dynamic-list" | "export-dynamic-symbol-list" => (Opt::DynamicList, Required),
        "export-dynamic-symbol" => (Opt::ExportDynamicSymbol, Required),
        "retain-symbols-file" => (Opt::RetainSymbolsFile, Required),
        "cref" => (Opt::Cref, Flag),
        "threads" => (Opt::Threads, Optional),
        "no-threads" => (Opt::NoThreads, Flag),
        "Bsymbolic" => (Opt::Symbolic(SymbolicBinding::All), Flag),
        "Bsymbolic-functions" => (Opt::Symbolic(SymbolicBinding::Functions), Flag),
        "Bno-symbolic" => (Opt::Symbolic(SymbolicBinding::None), Flag),
        "exclude-libs" => (Opt::ExcludeLibs, Required),
        "compress-debug-sections" => (Opt::CompressDebugSections, Required),
        "relax" => (Opt::Relax(true), Flag),
        "no-relax" => (Opt::Relax(false), Flag),
        "emit-relocs" => (Opt::EmitRelocs, Flag),
        // Nothing to do for a static executable: no dynamic section, no dynamic symbols, no shared libraries;
        // or what neverc-spec does anyway (undefined symbols are errors).
        "no-undefined" => (Opt::NoUndefined, Flag),
        "copy-dt-needed-entries"
        | "no-copy-dt-needed-entries"
        | "warn-rwx-segments"
        | "no-warn-rwx-segments"
        | "warn-execstack"
        | "no-warn-execstack"
        | "no-warn-symbol-ordering"
        | "warn-symbol-ordering"
        | "no-warn-mismatch"
        | "no-warn-search-mismatch"
        | "warn-common"
        | "warn-once"
        // An index-only link writes every module's imports list whether asked or not.
        | "thinlto-emit-imports-files"
        // Temporary local symbols (`.L...`) are never written to the symbol table anyway.
        | "discard-locals" => (Opt::NoEffect, Flag),
        "pie" | "pic-executable" => (Opt::Pie(true), Flag),
        "no-pie" | "no-pic-executable" => (Opt::Pie(false), Flag),
        // lld's spelling of `-static -pie --no-dynamic-linker`.
        "static-pie" => (Opt::StaticPie, Flag),
        "no-dynamic-linker" => (Opt::NoDynamicLinker, Flag),
        "shared" | "Bshareable" => (Opt::Shared, Flag),
        "soname" => (Opt::Soname, Required),
        "Ttext" => (Opt::SectionStart(Some(".text")), Required),
        "Tdata" => (Opt::SectionStart(Some(".data")), Required),
        "Tbss" => (Opt::SectionStart(Some(".bss")), Required),
        "section-start" => (Opt::SectionStart(None), Required),
        "Ttext-segment" => (Opt::TextSegment, Required),
        "script" | "default-script" | "dT" | "Trodata-segment" | "Tldata-segment" => {
            (Opt::Unsupported(SCRIPT), Flag)
        }
        "just-symbols"
        | "discard-all"
        | "omagic"
        | "nmagic"
        | "sort-common"
        | "sort-section"
        | "strip-discarded"
        | "orphan-handling"
        | "unique"
        | "format"
        | "oformat"
        | "relax-thunks" => (Opt::Unsupported(CHANGES_OUTPUT), Flag),
        // `--fix-NAME` for every erratum a bundled target declares (`[elf] errata`).
        _ if name.strip_prefix("fix-").is_some_and(is_declared_erratum) => (Opt::FixErratum, Optional),
        _ => return None,
    };
    Some(found)
}

/// Whether a bundled target declares the core erratum `name` (its `--fix-NAME` option).
fn is_declared_erratum(name: &str) -> bool {
    BUNDLED_TARGETS
        .iter()
        .filter_map(|target| target.elf)
        .any(|elf| elf.errata.contains(&name))
}

/// The short options (`-x`, with a value attached or as the next argument).
fn short_option(letter: u8) -> Option<(Opt, Arity)> {
    use Arity::{Flag, Required};
    let found = match letter {
        b'o' => (Opt::Output, Required),
        b'e' => (Opt::Entry, Required),
        b'l' => (Opt::Library, Required),
        b'L' => (Opt::LibraryPath, Required),
        b'(' => (Opt::StartGroup, Flag),
        b')' => (Opt::EndGroup, Flag),
        b'm' => (Opt::Emulation, Required),
        b'z' => (Opt::Z, Required),
        b's' => (Opt::StripAll, Flag),
        b'S' => (Opt::StripDebug, Flag),
        b'O' => (Opt::Optimize, Required),
        b'v' | b'V' => (Opt::PrintVersion, Flag),
        b'I' => (Opt::DynamicLinker, Required),
        b'R' => (Opt::RpathOrJustSymbols, Required),
        b'r' | b'i' => (Opt::Relocatable, Flag),
        b't' => (Opt::Trace, Flag),
        // -E: export all dynamic symbols (there are none); -g: ignored by GNU ld too; -X (--discard-locals):
        // temporary local symbols (`.L...`) are never written to the symbol table anyway.
        b'E' => (Opt::ExportDynamic(true), Flag),
        b'g' | b'X' => (Opt::NoEffect, Flag),
        b'T' => (Opt::Unsupported(SCRIPT), Flag),
        b'h' => (Opt::Soname, Required),
        b'y' => (Opt::TraceSymbol, Required),
        b'M' => (Opt::PrintMap, Flag),
        b'u' => (Opt::Undefined, Required),
        b'q' => (Opt::EmitRelocs, Flag),
        b'x' | b'N' | b'n' | b'd' | b'c' | b'b' | b'F' | b'f' | b'A' => (Opt::Unsupported(CHANGES_OUTPUT), Flag),
        _ => return None,
    };
    Some(found)
}

/// The parse in progress. A single-dash word is looked up as a long option first ([`long_option`]), as
/// getopt_long_only does, so only words that are no long option reach [`short_option`].
struct Parser {
    arguments: std::vec::IntoIter<OsString>,
    command: LdCommand,
    static_only: bool,
    in_group: bool,
    /// Inside `--whole-archive`.
    whole_archive: bool,
    /// Inside `--as-needed`.
    as_needed: bool,
    /// What `--push-state` saved: the `-Bstatic`, `--whole-archive` and `--as-needed` states.
    pushed: Vec<(bool, bool, bool)>,
}

/// Parses GNU ld's command line (after response files are expanded).
pub(crate) fn parse(arguments: Vec<OsString>) -> Result<Request, LdError> {
    let mut parser = Parser {
        arguments: arguments.into_iter(),
        command: LdCommand {
            items: Vec::new(),
            whole_archive_items: std::collections::BTreeSet::new(),
            as_needed_items: std::collections::BTreeSet::new(),
            export_dynamic: false,
            library_dirs: Vec::new(),
            output: PathBuf::from("a.out"),
            entry: None,
            gc_sections: false,
            icf: IcfMode::None,
            map_file: None,
            build_id: false,
            eh_frame_hdr: false,
            relro: true,
            rpath: Vec::new(),
            rpath_link: Vec::new(),
            new_dtags: true,
            bind_now: false,
            origin: false,
            pack_relative_relocs: false,
            fix_erratum: false,
            compress_debug_sections: DebugCompression::None,
            image_base: None,
            section_starts: Vec::new(),
            separate_code: true,
            pie: false,
            shared: false,
            soname: None,
            no_undefined: false,
            symbolic: SymbolicBinding::None,
            exclude_libs: Vec::new(),
            loader_requests: neverc_link::context::LoaderRequests::default(),
            static_seen: false,
            no_dynamic_linker: false,
            dynamic_linker: None,
            hash_style: HashStyle::Both,
            keep_text_section_prefix: false,
            print_gc_sections: false,
            print_map: false,
            fatal_warnings: false,
            trace_symbols: Vec::new(),
            symbols: neverc_link::symbol_options::SymbolOptions::default(),
            cref: false,
            notes: Vec::new(),
            strip: Strip::Nothing,
            page_size: None,
            common_page_size: None,
            nostdlib: false,
            sysroot: None,
            relocatable: false,
            trace_inputs: false,
            trace_phases: false,
            symbol_ordering_file: None,
            print_version: false,
            verbose: false,
            ignored_plugin: None,
            ignored_plugin_options: 0,
            plugin: PluginKind::None,
            lto_cache_dir: None,
            lto_cache_url: None,
            lto_cache_hmac_key_file: None,
            thinlto_index_only: None,
            thinlto_naming: neverc_link::lto::distributed::DistributedNaming::default(),
            lto_cache_policy: None,
            lto: neverc_link::lto::request::LtoOptions {
                thread_budget: std::thread::available_parallelism().map_or(1, |count| count.get() as u32),
                ..neverc_link::lto::request::LtoOptions::default()
            },
            unclosed_group: false,
            relax: true,
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            threads_given: false,
            jobs: None,
            text_relocations: false,
            emit_relocs: false,
            emulation: None,
            little_endian: None,
        },
        static_only: false,
        in_group: false,
        whole_archive: false,
        as_needed: false,
        pushed: Vec::new(),
    };
    // The first refusal is reported once the whole line is read, so that `--help` and `--version` work
    // whatever else the line holds (`gcc -Wl,--version` passes gcc's usual options before it).
    let mut refused = None;
    while let Some(argument) = parser.arguments.next() {
        let bytes = argument.as_encoded_bytes();
        if argument == "--" {
            // Everything after `--` is an input file, even if it starts with a dash.
            let static_only = parser.static_only;
            let rest: Vec<OsString> = parser.arguments.by_ref().collect();
            for path in rest {
                parser.push(Item::File {
                    path: PathBuf::from(path),
                    static_only,
                });
            }
            break;
        }
        if bytes.len() < 2 || bytes[0] != b'-' {
            let static_only = parser.static_only;
            parser.push(Item::File {
                path: PathBuf::from(argument),
                static_only,
            });
            continue;
        }
        match parser.option(&argument) {
            Ok(Some(request)) => return Ok(request),
            Ok(None) => {}
            Err(error) => {
                refused.get_or_insert(error);
            }
        }
    }
    match refused {
        Some(error) => Err(error),
        None => parser.finish(),
    }
}

impl Parser {
    /// Adds an input item, noting whether it is inside `--whole-archive`.
    fn push(&mut self, item: Item) {
        if self.whole_archive {
            self.command.whole_archive_items.insert(self.command.items.len());
        }
        if self.as_needed {
            self.command.as_needed_items.insert(self.command.items.len());
        }
        self.command.items.push(item);
    }

    /// Handles one option; returns a request that ends parsing (`--help`, `--version`).
    fn option(&mut self, argument: &OsStr) -> Result<Option<Request>, LdError> {
        let bytes = argument.as_encoded_bytes();
        let dashes = if bytes.starts_with(b"--") { 2 } else { 1 };
        let body = &bytes[dashes..];
        // A long option: the name up to `=`, with one dash or two.
        let name_end = body.iter().position(|&byte| byte == b'=').unwrap_or(body.len());
        let long = std::str::from_utf8(&body[..name_end]).ok().and_then(long_option);
        let (opt, arity, spelled, attached) = match long {
            Some((opt, arity)) => {
                let spelled = display(&bytes[..dashes + name_end]);
                let attached = (name_end < body.len()).then(|| os_from_bytes_of(argument, dashes + name_end + 1));
                (opt, arity, spelled, attached.map(OsStr::to_os_string))
            }
            None if dashes == 1 => {
                let Some((opt, arity)) = short_option(body[0]) else {
                    return Err(LdError::UnknownOption(display(bytes)));
                };
                let spelled = display(&bytes[..2]);
                let attached = (body.len() > 1).then(|| os_from_bytes_of(argument, 2).to_os_string());
                if attached.is_some() && arity == Arity::Flag {
                    // Short flags do not cluster (`-sS`); GNU ld reads such a word as a long option it lacks.
                    return Err(LdError::UnknownOption(display(bytes)));
                }
                (opt, arity, spelled, attached)
            }
            None => return Err(LdError::UnknownOption(display(bytes))),
        };
        if let Opt::Unsupported(reason) = opt {
            return Err(LdError::Unsupported {
                option: spelled,
                reason,
            });
        }
        let value = match (arity, attached) {
            (Arity::Flag, Some(_)) => return Err(LdError::UnexpectedArgument(spelled)),
            (Arity::Flag, None) | (Arity::Optional, None) => None,
            (_, Some(value)) => Some(value),
            (Arity::Required, None) => match self.arguments.next() {
                Some(value) => Some(value),
                None => return Err(LdError::MissingArgument(spelled)),
            },
        };
        self.apply(opt, &spelled, value)
    }

    fn apply(&mut self, opt: Opt, spelled: &str, value: Option<OsString>) -> Result<Option<Request>, LdError> {
        let text = |value: &Option<OsString>| -> Result<String, LdError> {
            match value {
                Some(value) => value.to_str().map(str::to_string).ok_or_else(|| LdError::BadValue {
                    option: spelled.to_string(),
                    reason: format!("`{}` is not UTF-8", value.to_string_lossy()),
                }),
                None => Err(LdError::MissingArgument(spelled.to_string())),
            }
        };
        let path = |value: Option<OsString>| -> Result<PathBuf, LdError> {
            value
                .map(PathBuf::from)
                .ok_or_else(|| LdError::MissingArgument(spelled.to_string()))
        };
        let command = &mut self.command;
        match opt {
            Opt::Output => command.output = path(value)?,
            Opt::Entry => command.entry = Some(text(&value)?),
            Opt::Library => {
                let namespec = value.ok_or_else(|| LdError::MissingArgument(spelled.to_string()))?;
                if namespec.is_empty() {
                    return Err(bad(spelled, "an empty library name"));
                }
                let static_only = self.static_only;
                self.push(Item::Library { namespec, static_only });
            }
            Opt::LibraryPath => command.library_dirs.push(path(value)?),
            Opt::Static => {
                self.static_only = true;
                self.command.static_seen = true;
            }
            Opt::Pie(pie) => self.command.pie = pie,
            Opt::StaticPie => {
                self.static_only = true;
                self.command.static_seen = true;
                self.command.pie = true;
                self.command.no_dynamic_linker = true;
            }
            Opt::NoDynamicLinker => self.command.no_dynamic_linker = true,
            Opt::Shared => self.command.shared = true,
            Opt::Dynamic => self.static_only = false,
            Opt::StartGroup => {
                if self.in_group {
                    return Err(LdError::Group(
                        "groups may not nest: a second --start-group before --end-group",
                    ));
                }
                self.in_group = true;
            }
            Opt::EndGroup => {
                if !self.in_group {
                    return Err(LdError::Group("--end-group without --start-group"));
                }
                self.in_group = false;
            }
            Opt::PushState => self.pushed.push((self.static_only, self.whole_archive, self.as_needed)),
            Opt::PopState => {
                (self.static_only, self.whole_archive, self.as_needed) = self
                    .pushed
                    .pop()
                    .ok_or(LdError::Group("--pop-state without --push-state"))?;
            }
            Opt::WholeArchive(on) => self.whole_archive = on,
            Opt::AsNeeded(on) => self.as_needed = on,
            Opt::ExportDynamic(on) => self.command.export_dynamic = on,
            Opt::Emulation => {
                let name = text(&value)?;
                // The emulations are the targets' declared `[elf] emulations`.
                let target = neverc_tables::target_by_emulation(&name).ok_or_else(|| {
                    bad(
                        spelled,
                        format!(
                            "emulation `{name}` is not declared by any target; the declared ones are {}",
                            declared_emulations()
                        ),
                    )
                })?;
                command.emulation = Some(Emulation { name, target });
            }
            Opt::ByteOrder(little) => command.little_endian = Some(little),
            Opt::HashStyle => {
                let style = text(&value)?;
                // A static executable has no dynamic symbol table, so no hash table: the style counts only for
                // outputs with a `.dynamic`.
                command.hash_style = match style.as_str() {
                    "sysv" => HashStyle::Sysv,
                    "gnu" => HashStyle::Gnu,
                    "both" => HashStyle::Both,
                    _ => {
                        return Err(bad(
                            spelled,
                            format!("unknown hash style `{style}` (sysv, gnu or both)"),
                        ));
                    }
                };
            }
            Opt::BuildId => {
                command.build_id = match value.as_deref().map(|style| style.to_str()) {
                    None | Some(Some("sha1")) => true,
                    Some(Some("none")) => false,
                    Some(style) => {
                        let style = style.map_or_else(|| "(not UTF-8)".to_string(), str::to_string);
                        return Err(bad(
                            spelled,
                            format!("build-id style `{style}` is not supported (sha1, the default, or none)"),
                        ));
                    }
                };
            }
            Opt::Z => {
                let keyword = text(&value)?;
                self.z_keyword(&keyword)?;
            }
            Opt::EhFrameHdr(on) => command.eh_frame_hdr = on,
            Opt::NoStdLib => command.nostdlib = true,
            // As with GNU ld, the last of -s and -S wins.
            Opt::StripAll => command.strip = Strip::All,
            Opt::StripDebug => command.strip = Strip::Debug,
            Opt::Optimize => {
                // -O only tunes hash tables of shared objects in GNU ld; any level is accepted.
                let level = text(&value)?;
                if level.is_empty() || !level.bytes().all(|byte| byte.is_ascii_digit()) {
                    return Err(bad(spelled, format!("`{level}` is not an optimization level")));
                }
            }
            Opt::GcSections(on) => command.gc_sections = on,
            Opt::Icf => {
                command.icf = match text(&value)?.as_str() {
                    "all" => IcfMode::All,
                    "none" => IcfMode::None,
                    other => {
                        return Err(bad(spelled, format!("`{other}` is not supported (all or none)")));
                    }
                }
            }
            Opt::Map => command.map_file = Some(path(value)?),
            Opt::Version => return Ok(Some(Request::Version)),
            Opt::PrintVersion => command.print_version = true,
            Opt::Verbose => command.verbose = true,
            Opt::Help => return Ok(Some(Request::Help)),
            Opt::Plugin => {
                let plugin = path(value)?;
                let file = plugin
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                command.plugin = match file.as_str() {
                    "LLVMgold.so" => PluginKind::Llvm,
                    _ => {
                        command.ignored_plugin = Some(plugin.display().to_string());
                        PluginKind::Other
                    }
                };
            }
            Opt::ThinLtoIndexOnly => {
                command.thinlto_index_only = Some(match &value {
                    Some(_) => Some(path(value)?),
                    None => None,
                });
            }
            Opt::ThinLtoCacheDir => {
                command.lto.cache_scope = neverc_link::lto::CacheScope::LocalShared;
                command.lto_cache_dir = Some(path(value)?);
            }
            Opt::ThinLtoPrefixReplace => {
                let value = text(&value)?;
                command.thinlto_naming.prefix_replace =
                    Some(old_and_new(&value).map_err(|reason| bad(spelled, reason))?);
            }
            Opt::ThinLtoObjectSuffixReplace => {
                let value = text(&value)?;
                command.thinlto_naming.object_suffix_replace =
                    Some(old_and_new(&value).map_err(|reason| bad(spelled, reason))?);
            }
            Opt::ThinLtoCachePolicy => {
                let value = text(&value)?;
                command.lto_cache_policy = Some(cache_policy(&value).map_err(|reason| bad(spelled, reason))?);
            }
            Opt::LtoCacheUrl => {
                command.lto.cache_scope = neverc_link::lto::CacheScope::RemoteShared;
                command.lto_cache_url = Some(text(&value)?);
            }
            Opt::LtoCacheNamespace => command.lto.cache_namespace = text(&value)?,
            Opt::LtoCacheHmacKeyFile => command.lto_cache_hmac_key_file = Some(path(value)?),
            Opt::PluginOption => {
                let option = text(&value)?;
                match command.plugin {
                    PluginKind::Llvm => llvm_plugin_option(command, &option)
                        .map_err(|reason| bad(&format!("-plugin-opt={option}"), reason))?,
                    PluginKind::None | PluginKind::Other => command.ignored_plugin_options += 1,
                }
            }
            Opt::DynamicLinker => command.dynamic_linker = Some(text(&value)?),
            Opt::NoEffect => {}
            Opt::Rpath => command.rpath.push(text(&value)?),
            Opt::NewDtags(on) => command.new_dtags = on,
            Opt::RpathOrJustSymbols => {
                // GNU ld reads `-R FILE` as --just-symbols and `-R DIR` as -rpath.
                let target = path(value)?;
                if target.is_file() {
                    return Err(LdError::Unsupported {
                        option: format!("{spelled} {}", target.display()),
                        reason: "it is --just-symbols for a file, which would change the output",
                    });
                }
                command.rpath.push(target.display().to_string());
            }
            Opt::Sysroot => command.sysroot = Some(path(value)?),
            Opt::Relocatable => command.relocatable = true,
            Opt::ImageBase => {
                let text = text(&value)?;
                command.image_base = Some(
                    parse_number(&text)
                        .filter(|base| base % 0x1000 == 0)
                        .ok_or_else(|| bad(spelled, format!("`{text}` is not a page-aligned address")))?,
                );
            }
            Opt::TextSegment => {
                let text = text(&value)?;
                command.image_base = Some(
                    parse_hexadecimal(&text)
                        .filter(|base| base % 0x1000 == 0)
                        .ok_or_else(|| bad(spelled, format!("`{text}` is not a page-aligned hexadecimal address")))?,
                );
            }
            Opt::SectionStart(named) => {
                let text = text(&value)?;
                let (name, address) = match named {
                    Some(name) => (name, text.as_str()),
                    None => text
                        .split_once('=')
                        .filter(|(name, _)| !name.is_empty())
                        .ok_or_else(|| bad(spelled, format!("`{text}` is not SECTION=ADDRESS")))?,
                };
                let address = parse_hexadecimal(address)
                    .ok_or_else(|| bad(spelled, format!("`{address}` is not a hexadecimal address")))?;
                command.section_starts.push((name.to_string(), address));
            }
            Opt::PrintGcSections(print) => command.print_gc_sections = print,
            Opt::PrintMap => command.print_map = true,
            Opt::FatalWarnings(fatal) => command.fatal_warnings = fatal,
            Opt::TraceSymbol => command.trace_symbols.push(text(&value)?),
            Opt::Undefined => command.symbols.undefined.push(text(&value)?),
            Opt::RequireDefined => command.symbols.require_defined.push(text(&value)?),
            Opt::Defsym => {
                let value = text(&value)?;
                let defsym = neverc_link::symbol_options::Defsym::parse(&value)
                    .map_err(|error| bad(spelled, error.to_string()))?;
                command.symbols.defsyms.push(defsym);
            }
            Opt::Wrap => command.symbols.wrap.push(text(&value)?),
            Opt::AllowMultipleDefinition => command.symbols.allow_multiple_definition = true,
            Opt::UnresolvedSymbols => {
                use neverc_link::symbol_options::Unresolved;
                // What undefined references of the objects are, then those of the shared libraries.
                let (objects, shared_libraries) = match text(&value)?.as_str() {
                    "report-all" => (Unresolved::Error, Unresolved::Error),
                    "ignore-in-shared-libs" => (Unresolved::Error, Unresolved::Ignore),
                    "ignore-in-object-files" => (Unresolved::Ignore, Unresolved::Error),
                    "ignore-all" => (Unresolved::Ignore, Unresolved::Ignore),
                    other => {
                        return Err(bad(
                            spelled,
                            format!(
                                "`{other}` is none of ignore-all, report-all, ignore-in-object-files, \
                                 ignore-in-shared-libs"
                            ),
                        ));
                    }
                };
                command.symbols.unresolved = objects;
                command.symbols.unresolved_in_shared_libraries = Some(shared_libraries);
            }
            Opt::WarnUnresolvedSymbols(warn) => {
                use neverc_link::symbol_options::Unresolved;
                let unresolved = if warn { Unresolved::Warn } else { Unresolved::Error };
                command.symbols.unresolved = unresolved;
                // What is ignored in shared libraries stays ignored.
                if command.symbols.unresolved_in_shared_libraries != Some(Unresolved::Ignore) {
                    command.symbols.unresolved_in_shared_libraries = Some(unresolved);
                }
            }
            Opt::AllowShlibUndefined(allow) => {
                use neverc_link::symbol_options::Unresolved;
                command.symbols.unresolved_in_shared_libraries =
                    Some(if allow { Unresolved::Ignore } else { Unresolved::Error });
            }
            Opt::RpathLink => command.rpath_link.extend(
                text(&value)?
                    .split(':')
                    .filter(|dir| !dir.is_empty())
                    .map(PathBuf::from),
            ),
            Opt::ErrorLimit => {
                let limit = text(&value)?;
                command.symbols.error_limit = limit
                    .parse()
                    .map_err(|_| bad(spelled, format!("`{limit}` is not a number (0: no limit)")))?;
            }
            Opt::NoinhibitExec => command.symbols.noinhibit_exec = true,
            Opt::Soname => command.soname = Some(text(&value)?),
            Opt::NoUndefined => command.no_undefined = true,
            Opt::Symbolic(binding) => command.symbolic = binding,
            Opt::VersionScript => {
                // Several scripts are read as one, their nodes in order, as GNU ld reads them.
                let script = version_script(spelled, path(value)?)?;
                match &mut command.symbols.version_script {
                    Some(earlier) => earlier.merge(script),
                    None => command.symbols.version_script = Some(script),
                }
            }
            Opt::UndefinedVersion(refused) => command.symbols.no_undefined_version = refused,
            Opt::DynamicList => {
                command.symbols.dynamic_list = true;
                // A dynamic list is a version script's anonymous node: `{ NAME; GLOB; extern "C" { ... }; };`.
                let list = version_script(spelled, path(value)?)?;
                command
                    .symbols
                    .dynamic_exports
                    .extend(list.global_patterns().map(str::to_string));
            }
            Opt::ExportDynamicSymbol => command.symbols.dynamic_exports.push(text(&value)?),
            Opt::RetainSymbolsFile => {
                let file = path(value)?;
                let names = std::fs::read_to_string(&file)
                    .map_err(|error| bad(spelled, format!("cannot read {}: {error}", file.display())))?;
                // One name a line, as GNU ld reads the file (blank lines name nothing).
                command.symbols.retain_symbols = Some(
                    names
                        .lines()
                        .map(str::trim)
                        .filter(|line| !line.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            Opt::Cref => command.cref = true,
            Opt::Threads => {
                command.threads_given = true;
                command.threads = match value.as_deref().map(|count| count.to_str()) {
                    None => std::thread::available_parallelism().map_or(1, usize::from),
                    Some(Some(count)) => count
                        .parse::<usize>()
                        .ok()
                        .filter(|count| *count > 0)
                        .ok_or_else(|| bad(spelled, format!("`{count}` is not a number of threads (1 or more)")))?,
                    Some(None) => return Err(bad(spelled, "the number of threads is not UTF-8")),
                };
            }
            Opt::NoThreads => {
                command.threads_given = true;
                command.threads = 1;
            }
            Opt::ExcludeLibs => command.exclude_libs.extend(
                text(&value)?
                    .split([',', ':'])
                    .filter(|name| !name.is_empty())
                    .map(str::to_string),
            ),
            Opt::FixErratum => match value.as_deref().map(|mode| mode.to_str()) {
                // ld.bfd's default mode: an `adr` where one reaches, a veneer elsewhere.
                None | Some(Some("full")) => command.fix_erratum = true,
                Some(mode) => {
                    let mode = mode.map_or_else(|| "(not UTF-8)".to_string(), str::to_string);
                    return Err(bad(
                        spelled,
                        format!(
                            "mode `{mode}` is not supported (full, the default, is: `adr` where it reaches, a veneer elsewhere)"
                        ),
                    ));
                }
            },
            Opt::Relax(relax) => command.relax = relax,
            Opt::EmitRelocs => command.emit_relocs = true,
            Opt::Trace => command.trace_inputs = true,
            Opt::TracePhases => command.trace_phases = true,
            Opt::SymbolOrderingFile => command.symbol_ordering_file = Some(path(value)?),
            Opt::CompressDebugSections => {
                let how = text(&value)?;
                command.compress_debug_sections = match how.as_str() {
                    "none" => DebugCompression::None,
                    // zlib is the gABI's SHF_COMPRESSED form, as with GNU ld.
                    "zlib" | "zlib-gabi" => DebugCompression::Zlib,
                    "zstd" => DebugCompression::Zstd,
                    "zlib-gnu" => {
                        return Err(bad(
                            spelled,
                            "`zlib-gnu` (the legacy `.zdebug` sections) is not supported: use zlib",
                        ));
                    }
                    other => {
                        return Err(bad(
                            spelled,
                            format!("`{other}` is none of none, zlib, zlib-gabi, zstd"),
                        ));
                    }
                };
            }
            Opt::Unsupported(reason) => {
                return Err(LdError::Unsupported {
                    option: spelled.to_string(),
                    reason,
                });
            }
        }
        Ok(None)
    }

    /// `-z KEYWORD`.
    fn z_keyword(&mut self, keyword: &str) -> Result<(), LdError> {
        let option = format!("-z {keyword}");
        let (name, value) = match keyword.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (keyword, None),
        };
        match (name, value) {
            ("relro", None) => self.command.relro = true,
            ("muldefs", None) => self.command.symbols.allow_multiple_definition = true,
            ("norelro", None) => self.command.relro = false,
            ("separate-code", None) => self.command.separate_code = true,
            ("noseparate-code", None) => self.command.separate_code = false,
            ("keep-text-section-prefix", None) => self.command.keep_text_section_prefix = true,
            ("nokeep-text-section-prefix", None) => self.command.keep_text_section_prefix = false,
            ("now", None) => self.command.bind_now = true,
            ("lazy", None) => self.command.bind_now = false,
            ("origin", None) => self.command.origin = true,
            ("pack-relative-relocs", None) => self.command.pack_relative_relocs = true,
            ("nopack-relative-relocs", None) => self.command.pack_relative_relocs = false,
            // Text relocations are refused anyway; the stack is never executable.
            ("notext" | "textoff", None) => self.command.text_relocations = true,
            ("text", None) => self.command.text_relocations = false,
            ("defs", None) => self.command.no_undefined = true,
            ("nodelete", None) => self.command.loader_requests.no_delete = true,
            ("nodlopen", None) => self.command.loader_requests.no_dlopen = true,
            ("initfirst", None) => self.command.loader_requests.init_first = true,
            ("interpose", None) => self.command.loader_requests.interpose = true,
            ("undefs", None) => self.command.no_undefined = false,
            ("noexecstack", None) => {}
            ("execstack", None) => {
                return Err(LdError::Unsupported {
                    option,
                    reason: "neverc-spec never makes the stack executable",
                });
            }
            ("max-page-size", Some(size)) => {
                let size = page_size_value(&option, size)?;
                self.command.page_size = Some(size);
            }
            ("common-page-size", Some(size)) => {
                let size = page_size_value(&option, size)?;
                self.command.common_page_size = Some(size);
            }
            _ => {
                return Err(LdError::Unsupported {
                    option,
                    reason: "an unknown -z keyword, or one neverc-spec does not implement (it would change \
                             the output)",
                });
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Request, LdError> {
        self.command.unclosed_group = self.in_group;
        // ld.bfd fails such a link ("final link failed: invalid operation"): the relocations name symbols of the
        // table -s removes. A relocatable link keeps its relocations anyway and ignores --emit-relocs.
        if self.command.emit_relocs && self.command.strip == Strip::All && !self.command.relocatable {
            return Err(LdError::Unsupported {
                option: "--emit-relocs with -s/--strip-all".to_string(),
                reason: "the kept relocations name the symbols of the table -s removes (ld.bfd fails such a link too)",
            });
        }
        if let Some(little) = self.command.little_endian {
            check_byte_order(little, self.command.emulation.as_ref())?;
        }
        if let Some(common) = self.command.common_page_size {
            // Without `-z max-page-size`, the page size is the target's when `-m` named it.
            let declared = self
                .command
                .emulation
                .as_ref()
                .and_then(|emulation| emulation.target.elf)
                .map(|elf| elf.max_page_size);
            let page = self.command.page_size.or(declared).unwrap_or(DEFAULT_PAGE_SIZE);
            if common > page {
                return Err(bad(
                    "-z common-page-size",
                    format!("{common:#x} is larger than the maximum page size {page:#x}"),
                ));
            }
        }
        // The LTO plugin's job count is the link's thread count too, unless `--threads` says otherwise.
        if !self.command.threads_given
            && let Some(jobs) = self.command.jobs
        {
            self.command.threads = jobs;
        }
        Ok(Request::Link(Box::new(self.command)))
    }
}

/// The page size of an x86-64 executable when `-z max-page-size` is not given (GNU ld's too).
pub(crate) const DEFAULT_PAGE_SIZE: u64 = 0x1000;

/// Every declared emulation with its target, for messages: `aarch64linux, aarch64elf (aarch64); ...`.
pub(crate) fn declared_emulations() -> String {
    let listed: Vec<String> = BUNDLED_TARGETS
        .iter()
        .filter_map(|target| {
            let elf = target.elf?;
            (!elf.emulations.is_empty()).then(|| format!("{} ({})", elf.emulations.join(", "), target.name))
        })
        .collect();
    if listed.is_empty() {
        "none".to_string()
    } else {
        listed.join("; ")
    }
}

/// `-EL` / `-EB`: accepted when it asks for the byte order of the link's target — the one `-m` names, or
/// else the first object's, which is then one of the declared targets, so every declared target must have
/// that byte order. GNU ld would write the other byte order; neverc-spec refuses it, naming the option.
fn check_byte_order(little: bool, emulation: Option<&Emulation>) -> Result<(), LdError> {
    let (option, order) = if little {
        ("-EL", "little-endian")
    } else {
        ("-EB", "big-endian")
    };
    let has_order = |target: &TargetRecord| target.little_endian == little;
    match emulation {
        Some(Emulation { name, target }) if !has_order(target) => Err(bad(
            option,
            format!("the target of `-m {name}`, {}, is not {order}", target.name),
        )),
        Some(_) => Ok(()),
        None if BUNDLED_TARGETS.iter().all(|target| has_order(target)) => Ok(()),
        None if BUNDLED_TARGETS.iter().any(|target| has_order(target)) => Err(bad(
            option,
            format!("the declared targets differ in byte order: name a {order} one with -m"),
        )),
        None => Err(bad(option, format!("no declared target is {order}"))),
    }
}

/// A number in C notation (`0x200000`, `4096`, `010000`).
fn parse_number(text: &str) -> Option<u64> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    }
}

/// An address as GNU ld reads `-Ttext=` and `--section-start=`: hexadecimal, with or without `0x`.
fn parse_hexadecimal(text: &str) -> Option<u64> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u64::from_str_radix(digits, 16).ok()
}

/// A page size: a power of two from 4 KiB to 1 GiB, in C notation (`0x200000`, `4096`, `010000`).
fn page_size_value(option: &str, text: &str) -> Result<u64, LdError> {
    match parse_number(text) {
        Some(size) if size.is_power_of_two() && (0x1000..=1 << 30).contains(&size) => Ok(size),
        _ => Err(bad(
            option,
            format!("`{text}` is not a page size (a power of two from 4096 to 1 GiB)"),
        )),
    }
}

/// The version script (or dynamic list) in `file`, given with option `spelled`.
fn version_script(spelled: &str, file: PathBuf) -> Result<neverc_link::symbol_options::VersionScript, LdError> {
    let script = std::fs::read_to_string(&file)
        .map_err(|error| bad(spelled, format!("cannot read {}: {error}", file.display())))?;
    neverc_link::symbol_options::VersionScript::parse(&script)
        .map_err(|error| bad(spelled, format!("{}: {error}", file.display())))
}

fn bad(option: &str, reason: impl Into<String>) -> LdError {
    LdError::BadValue {
        option: option.to_string(),
        reason: reason.into(),
    }
}

/// An option as the user spelled it, for messages (lossy only if it is not UTF-8).
fn display(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `argument` without its first `skip` bytes (which are ASCII, so the rest is a valid `OsStr`).
pub(crate) fn os_from_bytes_of(argument: &OsStr, skip: usize) -> &OsStr {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        OsStr::from_bytes(&argument.as_bytes()[skip..])
    }
    #[cfg(not(unix))]
    {
        // Only reached on platforms where arguments are not bytes; the driver targets Linux.
        match argument.to_str() {
            Some(text) => OsStr::new(text.get(skip..).unwrap_or_default()),
            None => OsStr::new(""),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn parse_link(arguments: &[&str]) -> Result<LdCommand, LdError> {
        match parse(arguments.iter().map(OsString::from).collect())? {
            Request::Link(command) => Ok(*command),
            other => panic!("not a link: {other:?}"),
        }
    }

    fn library(name: &str, static_only: bool) -> Item {
        Item::Library {
            namespec: name.into(),
            static_only,
        }
    }

    fn file(name: &str, static_only: bool) -> Item {
        Item::File {
            path: name.into(),
            static_only,
        }
    }

    #[test]
    fn relax_emit_relocs_and_their_refusal_with_strip_all() {
        let base = ["-o", "out", "main.o"];
        let with = |options: &[&str]| parse_link(&[&base[..], options].concat());
        let command = with(&[]).unwrap();
        assert!(command.relax && !command.emit_relocs);
        // The last of --relax and --no-relax wins.
        assert!(!with(&["--relax", "--no-relax"]).unwrap().relax);
        assert!(with(&["-no-relax", "--relax"]).unwrap().relax);
        assert!(with(&["-q"]).unwrap().emit_relocs);
        assert!(with(&["--emit-relocs", "-S"]).unwrap().emit_relocs);
        // ld.bfd fails a link that strips the symbols kept relocations name; -r ignores --emit-relocs.
        for strip in ["-s", "--strip-all"] {
            let refused = with(&["--emit-relocs", strip]).unwrap_err();
            assert!(refused.to_string().contains("--emit-relocs with -s"), "{refused}");
        }
        assert!(with(&["-r", "--emit-relocs"]).unwrap().relocatable);
    }

    #[test]
    fn gcc_s_static_command_line_parses_in_order() {
        let command = parse_link(&[
            "-plugin",
            "/usr/lib/gcc/x86_64-linux-gnu/12/liblto_plugin.so",
            "-plugin-opt=-pass-through=-lc",
            "--build-id",
            "-m",
            "elf_x86_64",
            "--hash-style=gnu",
            "--as-needed",
            "-static",
            "-o",
            "out",
            "crt1.o",
            "-L/a",
            "-L",
            "/b",
            "main.o",
            "-lm",
            "--start-group",
            "-lgcc",
            "-l",
            "c",
            "--end-group",
            "-Bdynamic",
            "-l:libx.a",
            "--",
            "-odd.o",
        ])
        .unwrap();
        assert_eq!(command.output, PathBuf::from("out"));
        assert!(command.build_id);
        assert_eq!(command.library_dirs, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(
            command.items,
            [
                file("crt1.o", true),
                file("main.o", true),
                library("m", true),
                library("gcc", true),
                library("c", true),
                library(":libx.a", false),
                file("-odd.o", false),
            ]
        );
        assert_eq!(
            command.ignored_plugin.as_deref(),
            Some("/usr/lib/gcc/x86_64-linux-gnu/12/liblto_plugin.so")
        );
        assert_eq!(command.ignored_plugin_options, 1);
    }

    #[test]
    fn long_options_take_one_dash_or_two_and_values_attached_or_not() {
        let command = parse_link(&["-Map=m1", "--entry", "main", "-e", "other", "x.o"]).unwrap();
        assert_eq!(command.map_file, Some(PathBuf::from("m1")));
        assert_eq!(command.entry.as_deref(), Some("other"));
        let command = parse_link(&[
            "--Map",
            "m2",
            "-eentry",
            "--output=o",
            "-zrelro",
            "-z",
            "norelro",
            "x.o",
        ])
        .unwrap();
        assert_eq!(command.map_file, Some(PathBuf::from("m2")));
        assert_eq!(command.entry.as_deref(), Some("entry"));
        assert_eq!(command.output, PathBuf::from("o"));
        assert!(!command.relro);
        let command = parse_link(&[
            "-s",
            "-S",
            "--gc-sections",
            "--icf=all",
            "-z",
            "max-page-size=0x200000",
            "x.o",
        ])
        .unwrap();
        assert_eq!(command.strip, Strip::Debug);
        assert!(command.gc_sections);
        assert_eq!(command.icf, IcfMode::All);
        assert_eq!(command.page_size, Some(0x20_0000));
    }

    #[test]
    fn section_starts_are_hexadecimal_with_or_without_0x_and_in_order() {
        let command = parse_link(&[
            "-Ttext=600000",
            "-Tdata",
            "0x800000",
            "--section-start=.rodata=0x70_0000",
            "--section-start",
            ".my.sec=A00000",
            "-Ttext-segment=0x500000",
            "x.o",
        ]);
        let message = command
            .as_ref()
            .map(|_| String::new())
            .unwrap_or_else(|error| error.to_string());
        assert!(message.contains("`0x70_0000`"), "{message}");
        let command = parse_link(&[
            "-Ttext=600000",
            "-Tdata",
            "0x800000",
            "--section-start",
            ".my.sec=A00000",
            "-Ttext-segment=0x500000",
            "x.o",
        ])
        .unwrap();
        assert_eq!(
            command.section_starts,
            [
                (".text".to_string(), 0x60_0000),
                (".data".to_string(), 0x80_0000),
                (".my.sec".to_string(), 0xa0_0000)
            ]
        );
        assert_eq!(command.image_base, Some(0x50_0000));
        for bad in [
            &["--section-start=.text", "x.o"][..],
            &["--section-start==0x1000", "x.o"],
            &["-Tbss=zz", "x.o"],
        ] {
            assert!(parse_link(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_link(&["-Ttext-segment=0x500010", "x.o"])
                .unwrap_err()
                .to_string()
                .contains("page-aligned")
        );
    }

    #[test]
    fn the_thread_count_is_threads_else_the_plugins_jobs_else_every_core() {
        let threads = |arguments: &[&str]| parse_link(arguments).unwrap().threads;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        // clang -flto names LLVM's plugin, then its options.
        let gold = ["-plugin", "/usr/lib/llvm-14/lib/LLVMgold.so"];
        let with_gold = |more: &[&str]| threads(&[&gold[..], more, &["x.o"]].concat());
        assert_eq!(threads(&["x.o"]), cores);
        assert_eq!(with_gold(&["-plugin-opt=jobs=3"]), 3);
        assert_eq!(with_gold(&["--plugin-opt=thinlto-jobs=5"]), 5);
        assert_eq!(with_gold(&["--threads=2", "-plugin-opt=jobs=3"]), 2);
        assert_eq!(with_gold(&["-plugin-opt=jobs=3", "--no-threads"]), 1);
        assert_eq!(with_gold(&["--threads", "-plugin-opt=jobs=3"]), cores);
    }

    #[test]
    fn refusals_name_the_option() {
        let message = |arguments: &[&str]| parse_link(arguments).unwrap_err().to_string();
        assert!(message(&["--frobnicate", "x.o"]).contains("`--frobnicate`"));
        assert!(message(&["--threads=0", "x.o"]).contains("`--threads`"));
        assert!(message(&["-sS", "x.o"]).contains("`-sS`"));
        assert!(message(&["--build-id=md5", "x.o"]).contains("`md5`"));
        assert!(message(&["-m", "armelf", "x.o"]).contains("`armelf`"));
        assert!(message(&["-z", "execstack", "x.o"]).contains("`-z execstack`"));
        assert!(message(&["-z", "max-page-size=100", "x.o"]).contains("`100`"));
        assert!(message(&["-N", "x.o"]).contains("`-N`"));
        assert!(message(&["-static", "--gc-sections=yes"]).contains("takes no argument"));
        assert!(message(&["x.o", "-o"]).contains("`-o` needs an argument"));
        assert!(message(&["-(", "-(", "x.o"]).contains("nest"));
        assert!(message(&["-)", "x.o"]).contains("without --start-group"));
    }

    #[test]
    fn m_chooses_the_target_by_a_declared_emulation_attached_or_not() {
        let chosen = |arguments: &[&str]| {
            parse_link(arguments)
                .unwrap()
                .emulation
                .map(|emulation| (emulation.name, emulation.target.name))
        };
        let aarch64 = Some(("aarch64linux".to_string(), "aarch64"));
        assert_eq!(chosen(&["-m", "aarch64linux", "x.o"]), aarch64);
        // The joined spelling gcc's AArch64 cross driver passes.
        assert_eq!(chosen(&["-maarch64linux", "x.o"]), aarch64);
        assert_eq!(
            chosen(&["-m", "aarch64elf", "x.o"]),
            Some(("aarch64elf".to_string(), "aarch64"))
        );
        assert_eq!(
            chosen(&["-m", "elf_x86_64", "x.o"]),
            Some(("elf_x86_64".to_string(), "x86_64"))
        );
        // As with GNU ld, the last -m wins; without one, the first object will choose.
        assert_eq!(chosen(&["-melf_x86_64", "-m", "aarch64linux", "x.o"]), aarch64);
        assert_eq!(chosen(&["x.o"]), None);
        // Every declared emulation chooses the target that declares it, and nothing else does.
        let mut declared = Vec::new();
        for target in BUNDLED_TARGETS {
            for emulation in target.elf.map_or(&[][..], |elf| elf.emulations) {
                assert_eq!(
                    chosen(&["-m", emulation, "x.o"]),
                    Some((emulation.to_string(), target.name))
                );
                declared.push(*emulation);
            }
        }
        assert!(declared.len() >= 4, "{declared:?}");
        // An unknown emulation (or one spelled in another case: GNU ld compares exactly) is refused, naming it
        // and listing every declared one with its target.
        for unknown in ["armelf", "ELF_X86_64", "aarch64linuxb"] {
            let message = parse_link(&["-m", unknown, "x.o"]).unwrap_err().to_string();
            assert!(
                message.starts_with(&format!("`-m`: emulation `{unknown}` is not declared by any target")),
                "{message}"
            );
            for emulation in &declared {
                assert!(message.contains(emulation), "{message} lacks {emulation}");
            }
            assert!(message.contains("aarch64linux, aarch64elf (aarch64)"), "{message}");
        }
    }

    #[test]
    fn gccs_aarch64_options_byte_order_and_discarding_locals() {
        // What aarch64-linux-gnu-gcc -static passes before its inputs, the erratum workaround aside.
        let command = parse_link(&[
            "--sysroot=/",
            "--build-id",
            "--hash-style=gnu",
            "--as-needed",
            "-Bstatic",
            "-X",
            "-EL",
            "-maarch64linux",
            "-o",
            "m",
            "crt1.o",
        ])
        .unwrap();
        assert_eq!(
            command.emulation.map(|emulation| emulation.target.name),
            Some("aarch64")
        );
        assert_eq!(command.little_endian, Some(true));
        // The byte order is checked against the target `-m` names, wherever `-m` is.
        let message = |arguments: &[&str]| parse_link(arguments).unwrap_err().to_string();
        assert_eq!(
            message(&["-EB", "-maarch64linux", "x.o"]),
            "`-EB`: the target of `-m aarch64linux`, aarch64, is not big-endian"
        );
        assert!(parse_link(&["-maarch64linux", "-EL", "x.o"]).is_ok());
        // Without -m, against every declared target (the first object chooses one of them).
        assert!(BUNDLED_TARGETS.iter().all(|target| target.little_endian));
        assert!(parse_link(&["-EL", "x.o"]).is_ok());
        assert_eq!(message(&["-EB", "x.o"]), "`-EB`: no declared target is big-endian");
        // -X and --discard-locals drop `.L` symbols, which are never written anyway; -x and --discard-all
        // would drop every local symbol, and are refused.
        assert!(parse_link(&["-X", "--discard-locals", "x.o"]).is_ok());
        assert!(message(&["-x", "x.o"]).contains("`-x` is not supported"));
        assert!(message(&["--discard-all", "x.o"]).contains("`--discard-all` is not supported"));
        // The erratum workaround is ld.bfd's default mode; the others are refused by name.
        assert!(parse_link(&["--fix-cortex-a53-843419", "x.o"]).unwrap().fix_erratum);
        assert!(
            parse_link(&["--fix-cortex-a53-843419=full", "x.o"])
                .unwrap()
                .fix_erratum
        );
        assert!(!parse_link(&["x.o"]).unwrap().fix_erratum);
        assert!(message(&["--fix-cortex-a53-843419=adr", "x.o"]).contains("mode `adr` is not supported"));
        // -z common-page-size is checked against the page size of the target -m names.
        assert!(parse_link(&["-maarch64linux", "-z", "common-page-size=0x10000", "x.o"]).is_ok());
        assert!(
            message(&["-melf_x86_64", "-z", "common-page-size=0x10000", "x.o"])
                .contains("larger than the maximum page size 0x1000")
        );
    }

    #[test]
    fn help_and_version_end_parsing() {
        assert!(matches!(
            parse(vec!["x.o".into(), "--version".into()]),
            Ok(Request::Version)
        ));
        assert!(matches!(
            parse(vec!["--help".into(), "--bogus".into()]),
            Ok(Request::Help)
        ));
        assert!(parse_link(&["-v"]).unwrap().print_version);
    }

    #[test]
    fn whole_archive_applies_to_the_inputs_between_it_and_no_whole_archive_and_push_state_saves_it() {
        let command = parse_link(&[
            "a.o",
            "--whole-archive",
            "liba.a",
            "-lb",
            "--push-state",
            "--no-whole-archive",
            "libc.a",
            "--pop-state",
            "libd.a",
            "--no-whole-archive",
            "libe.a",
        ])
        .unwrap();
        assert_eq!(command.items.len(), 6);
        assert_eq!(
            command.whole_archive_items.iter().copied().collect::<Vec<_>>(),
            vec![1, 2, 4]
        );
    }
}
