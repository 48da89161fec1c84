//! Command-line interface definition.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Exit status:
  0  success
  1  the declarations are invalid, a request cannot be answered (unknown target or register), or a link
     fails (an undefined symbol, a policy violation, a verifier)
  2  usage error, such as an output that is the same file as an input or another output (nothing is written)
  3  a file could not be read or written
  4  internal error while generating code
  5  an audit or conformance run failed: a broken invariant, a breaking change against the baseline, a plugin
     manifest request the declared policy refuses, or a failed conformance case
  128+N  killed by signal N

Outputs are written to a temporary file beside the destination (`.<name>.<pid>.<random>.tmp`, created
exclusively) and renamed into place when complete, so a failure leaves the previous file untouched; a device
or a FIFO (such as /dev/null) is written in place, never replaced. New files get mode 0777 (a linked
executable) or 0666, less the umask. SIGINT, SIGTERM and SIGHUP remove the temporary file before the process
dies; SIGKILL cannot be caught and leaves it, and the next run writing the same output removes temporaries
whose process is gone.";

/// Calling conventions and compiler/linker phase policies, declared as data.
///
/// The declarations are `PhaseSchema.json` (phases, their policies and the link state machine) and
/// `targets/*.toml` (registers, reserved registers, the standard ABI, calling-convention defaults).
/// The runtime trusts only tables generated from validated declarations.
#[derive(Debug, Parser)]
#[command(name = "neverc-spec", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate the phase schema and target files and print a summary.
    ///
    /// Every problem of every file is reported at once, with its file, line:column and JSON pointer.
    #[command(after_help = AFTER_HELP)]
    Check(CheckArgs),
    /// Write the generated Rust tables (the same files the build generates) into a directory, for review.
    #[command(after_help = AFTER_HELP)]
    Gen(GenArgs),
    /// List the targets compiled into this binary (and any loaded with --target-file).
    #[command(after_help = AFTER_HELP)]
    Targets(TargetsArgs),
    /// Resolve register names, aliases, sub-register names or plan numbers on a target.
    #[command(after_help = AFTER_HELP)]
    Resolve(ResolveArgs),
    /// Calling conventions: turn a spec into a plan, or validate a plan.
    #[command(subcommand)]
    Cc(CcCommand),
    /// Link relocatable objects and archives into a static executable, running the declared link phases.
    ///
    /// GNU-style single-dash spellings are accepted too: `-static`, `-Map FILE`, `-Map=FILE`.
    #[command(after_help = AFTER_HELP)]
    Link(LinkArgs),
    /// GNU ld's command line, for compiler drivers: `gcc -static -B DIR` with `DIR/ld` a link to this binary.
    ///
    /// Invoked as `ld`, `ld.NAME` or `TRIPLE-ld`, or as `neverc-spec ld ARGS...`, neverc-spec parses GNU ld's
    /// options (order-sensitive `-l`, `-L`, `-Bstatic`, groups, `@file` response files), expands linker
    /// scripts such as Debian's `libm.a` (GROUP/INPUT/AS_NEEDED), and runs the same link as `link`. Archives
    /// are searched as lld searches them: a symbol is taken from any archive, whatever the order.
    /// `neverc-spec ld --help` lists every supported, accepted, ignored and refused option.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Ld(LdArgs),
    /// Audit a phase schema: sealed gates, capabilities, invariants, policy smells; diff it and the plugin ABI
    /// against baselines; check a plugin manifest.
    ///
    /// The sealing audit lists, per domain, the sealed gates and what each guards, every phase's capabilities,
    /// the invariants of validation (and where the schema breaks them), and policy smells worth a human look.
    /// --baseline classifies every change from an older schema as compatible, warning, allowed (the phase was
    /// experimental) or breaking, like `buf breaking`. --abi-baseline does the same for the plugin ABI
    /// declarations (--abi, default `abi/`) against an older copy of that directory: in a stable part, removing
    /// or reordering fields, slots, values or bits, changing a type, a value's number, a bit's position, an
    /// interface's id or its major version is breaking; appending a field or slot at the end (the Header's
    /// StructSize), adding values, bits, types and interfaces, and a minor version bump are compatible; changes
    /// to an experimental interface are allowed. --plugin-manifest checks what a plugin asks for with the
    /// check the link runtime runs when a plugin registers, so both refuse the same requests with the same
    /// message. Manifest format (TOML, or the same keys in JSON):
    ///
    ///   plugin = "name"
    ///   providers = ["linker", "object-merge", "image-verifier", "lto"]
    ///   [[phases]]
    ///   name = "neverc.link.layout"
    ///   observe = ["BEFORE", "AFTER"]
    ///   intercept = true
    ///   replace = false
    ///   skip_with_proof = false
    #[command(after_help = AFTER_HELP, verbatim_doc_comment)]
    Audit(AuditArgs),
    /// Run conformance vectors (from `gen conformance`) against this implementation and count the verdicts.
    ///
    /// Each case passes, fails, or is not applicable (this implementation cannot execute it, with the reason).
    /// Any failure fails the run (exit 5).
    #[command(after_help = AFTER_HELP)]
    Conformance(ConformanceArgs),
}

#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// The phase schema to audit.
    #[arg(long, value_name = "PATH", default_value = "PhaseSchema.json")]
    pub(crate) phase_schema: PathBuf,
    /// An older version of the schema to diff against; breaking changes fail the audit (exit 5).
    #[arg(long, value_name = "OLD.json")]
    pub(crate) baseline: Option<PathBuf>,
    /// The directory whose `*.toml` files declare the plugin C ABI, diffed against --abi-baseline.
    #[arg(long, value_name = "DIR", default_value = "abi", requires = "abi_baseline")]
    pub(crate) abi: PathBuf,
    /// An older copy of the ABI directory to diff --abi against; breaking changes fail the audit (exit 5). It is
    /// read with the --baseline schema when one is given (for values taken from its state machines), else with
    /// --phase-schema. The rules: docs/plugin-abi-format.md, "Compatibility".
    #[arg(long, value_name = "OLD_DIR")]
    pub(crate) abi_baseline: Option<PathBuf>,
    /// A plugin manifest (TOML or JSON) to check against the schema's policy; refusals fail the audit (exit 5).
    #[arg(long, value_name = "PATH", conflicts_with = "plugin")]
    pub(crate) plugin_manifest: Option<PathBuf>,
    /// A plugin built against the C ABI (`include/neverc/Plugin/`): it is loaded, registers with a dry-run
    /// registrar that hooks nothing, and what it asks for is checked like a manifest's requests (the same
    /// verdicts); refusals fail the audit (exit 5). A plugin that cannot be loaded is an error naming its status.
    #[arg(long, value_name = "PATH.so")]
    pub(crate) plugin: Option<PathBuf>,
    /// An argument for a plugin, `ID:NAME[=VALUE]` where ID is the plugin's id (repeatable); every plugin is
    /// handed all of them and reads its own.
    #[arg(long = "plugin-arg", value_name = "ID:NAME[=VALUE]")]
    pub(crate) plugin_args: Vec<String>,
    /// text for people, json for machines, dot for Graphviz (state machines and the policy matrix), html for one
    /// self-contained page.
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub(crate) format: AuditFormat,
    /// Write the report to this file (completely or not at all) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum AuditFormat {
    Text,
    Json,
    Dot,
    Html,
}

#[derive(Debug, Args)]
pub(crate) struct LinkArgs {
    /// The executable to write (written completely or not at all).
    #[arg(short = 'o', default_value = "a.out")]
    pub(crate) output: PathBuf,
    /// The entry symbol.
    #[arg(short = 'e', long = "entry", default_value = "_start")]
    pub(crate) entry: String,
    /// Link statically (the only mode there is; accepted for compatibility).
    #[arg(long = "static")]
    pub(crate) static_link: bool,
    /// Drop sections nothing live refers to.
    #[arg(long)]
    pub(crate) gc_sections: bool,
    /// Write `.eh_frame_hdr`, the unwinder's binary search table over `.eh_frame`, and its PT_GNU_EH_FRAME.
    #[arg(long)]
    pub(crate) eh_frame_hdr: bool,
    /// Fold identical code whose address is not significant.
    #[arg(long, value_enum, default_value_t = IcfChoice::None)]
    pub(crate) icf: IcfChoice,
    /// Write a link map.
    #[arg(long = "Map", value_name = "FILE")]
    pub(crate) map: Option<PathBuf>,
    /// Place the functions and data named in FILE (one symbol per line) first, in that order.
    #[arg(long, value_name = "FILE")]
    pub(crate) symbol_ordering_file: Option<PathBuf>,
    /// Print, per phase: policy, who acted, state before and after, duration.
    #[arg(long)]
    pub(crate) trace_phases: bool,
    /// Load a plugin built against the C ABI (`include/neverc/Plugin/`; repeatable): its observers and
    /// providers run in the phases they registered for, as the phases' policies allow. What it reports is
    /// printed as notes; a callback that fails fails the link, naming the plugin, and nothing is written.
    #[arg(long = "plugin", value_name = "PATH.so")]
    pub(crate) plugins: Vec<PathBuf>,
    /// An argument for a plugin, `ID:NAME[=VALUE]` where ID is the plugin's id (repeatable).
    #[arg(long = "plugin-arg", value_name = "ID:NAME[=VALUE]")]
    pub(crate) plugin_args: Vec<String>,
    #[command(flatten)]
    pub(crate) lto: LtoArgs,
    /// Objects, archives and LLVM bitcode files (clang -flto), in link order.
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
}

/// How bitcode inputs are optimized, compiled and cached (`neverc-spec link`; the `ld` driver spells them as
/// LLVM's plugin options and lld's `--thinlto-cache-dir`).
#[derive(Debug, Args)]
pub(crate) struct LtoArgs {
    /// Optimization level of LTO (0 to 3).
    #[arg(long = "lto-O", value_name = "LEVEL", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=3))]
    pub(crate) optimization_level: u32,
    /// Threads LTO code generation may use (ThinLTO backends); default: every core.
    #[arg(long = "thinlto-jobs", value_name = "N")]
    pub(crate) jobs: Option<u32>,
    /// Keep the intermediate files of LTO and write OUTPUT.resolution.txt (the symbol resolutions, in
    /// LLVM's format).
    #[arg(long)]
    pub(crate) save_temps: bool,
    /// Cache LTO products in memory for this link only.
    #[arg(long, conflicts_with_all = ["lto_cache_dir", "lto_cache_url"])]
    pub(crate) lto_cache_task: bool,
    /// Cache LTO products in this directory, shared by the links of a machine (entries checked by a digest,
    /// or by an HMAC with --lto-cache-hmac-key-file).
    #[arg(long, value_name = "DIR", conflicts_with = "lto_cache_url")]
    pub(crate) lto_cache_dir: Option<PathBuf>,
    /// Cache LTO products in this Redis server, shared by machines
    /// (`redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`); a server that cannot be reached, takes more than 10 s
    /// for a request or sends a malformed reply or one over 512 MiB is a warning, not an error.
    #[arg(long, value_name = "URL")]
    pub(crate) lto_cache_url: Option<String>,
    /// The namespace of the cache's keys (so that projects sharing a server do not share entries).
    #[arg(long, value_name = "NAME", default_value = "")]
    pub(crate) lto_cache_namespace: String,
    /// Seal and check the shared cache's entries (directory or Redis) with an HMAC-SHA256 under the key in
    /// this file (at least 16 bytes; $NEVERC_LTO_CACHE_HMAC_KEY holds a key too). Without a key, entries carry
    /// a digest that catches damage but not forgery by anyone who can write to the cache.
    #[arg(long, value_name = "FILE")]
    pub(crate) lto_cache_hmac_key_file: Option<PathBuf>,
}

impl LtoArgs {
    /// Applies these options to a link's.
    pub(crate) fn apply(&self, options: &mut neverc_link::context::LinkOptions) {
        use neverc_link::lto::{CacheScope, OptionFlags};
        let lto = &mut options.lto;
        lto.optimization_level = self.optimization_level;
        lto.thread_budget = self
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |count| count.get() as u32))
            .max(1);
        if self.save_temps {
            lto.flags |= OptionFlags::SAVE_TEMPS;
        }
        lto.cache_namespace = self.lto_cache_namespace.clone();
        if self.lto_cache_task {
            lto.cache_scope = CacheScope::Task;
        }
        if let Some(dir) = &self.lto_cache_dir {
            lto.cache_scope = CacheScope::LocalShared;
            options.lto_cache_dir = Some(dir.clone());
        }
        if let Some(url) = &self.lto_cache_url {
            lto.cache_scope = CacheScope::RemoteShared;
            options.lto_cache_url = Some(url.clone());
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct LdArgs {
    /// GNU ld's arguments (`neverc-spec ld --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    pub(crate) arguments: Vec<std::ffi::OsString>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum IcfChoice {
    All,
    None,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CcCommand {
    /// Plan a function signature under a spec and print the plan string and where every value goes.
    ///
    /// Values the plan does not cover follow the target's standard convention; the table says which. With
    /// --standard, no spec is used: the whole plan is the target's standard convention.
    #[command(after_help = AFTER_HELP)]
    Plan(CcPlanArgs),
    /// Validate a plan string against a target: NeverC's four hard errors, then every record check.
    #[command(after_help = AFTER_HELP)]
    Validate(CcValidateArgs),
    /// Materialize specs into plans over an LLVM IR module (`.ll`), as NeverC's post_opt pass does.
    ///
    /// Functions with a `"neverc-callconv"` attribute or an `annotate("neverc-callconv=<spec>")` get a plan;
    /// with --cc-all, so do all defined functions whose name starts with --ccprefix. Existing plans are only
    /// validated. Everything else in the module is left byte-identical.
    ///
    /// With --plugin, a calling-convention plugin built against the C ABI (`include/neverc/Plugin/`) plans
    /// instead: it registers a convention for the module's target through NevercCallingConventionAPI, and
    /// its PlanCallingConvention is asked about every function without a plan, in module order; it selects
    /// the functions it plans (its own options come as --plugin-arg). Its plans are validated like any
    /// plan (registers of the target, values covered, no register twice, aligned stack slots) and then
    /// materialized exactly like built-in plans; an invalid plan or a failing callback fails the command,
    /// naming the plugin and the function, and nothing is written.
    #[command(after_help = AFTER_HELP)]
    Materialize(CcMaterializeArgs),
    /// Lower a materialized module's plans into adapter thunks that stock LLVM (llc-14, clang-14) compiles.
    ///
    /// Stock LLVM compiles `cc 1000` as the C convention and ignores plans. Lowering makes them real: every
    /// function defined with a plan keeps its symbol, which becomes an adapter in module-level assembly that
    /// receives the arguments where the plan says, calls the function's body (now an internal function of
    /// the standard convention, `<name>.neverc_body`), returns the result where the plan says, and
    /// preserves the registers the plan declares callee-saved that the standard convention does not. Calls
    /// with a plan to a declared function go through an outgoing adapter (`<name>.neverc_out`) that does
    /// the reverse; calls between the module's planned functions call the bodies directly. The adapters are
    /// filled in from the target's `[lowering]` templates. Everything else in the module is left as it is.
    #[command(after_help = AFTER_HELP)]
    Lower(CcLowerArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CcLowerArgs {
    /// The materialized module to read (LLVM IR text).
    #[arg(value_name = "IN.ll")]
    pub(crate) input: PathBuf,
    /// Where to write the lowered module (written completely or not at all).
    #[arg(short, long, value_name = "OUT.ll")]
    pub(crate) output: PathBuf,
    /// Target name or alias (default: from the module's `target triple`).
    #[arg(long, value_name = "NAME")]
    pub(crate) target: Option<String>,
    /// Load the target, and the adapter templates of its `[lowering]`, from this TOML file instead of the
    /// compiled-in registry.
    #[arg(long = "target-file", value_name = "PATH", conflicts_with = "target")]
    pub(crate) target_file: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct CcMaterializeArgs {
    /// The module to read (LLVM IR text, typed or opaque pointers).
    #[arg(value_name = "IN.ll")]
    pub(crate) input: PathBuf,
    /// Where to write the result (written completely or not at all).
    #[arg(short, long, value_name = "OUT.ll")]
    pub(crate) output: PathBuf,
    /// Target name or alias (default: from the module's `target triple`).
    #[arg(long, value_name = "NAME")]
    pub(crate) target: Option<String>,
    /// Apply a spec to every defined function (source specs still win).
    #[arg(long = "cc-all", conflicts_with = "plugin")]
    pub(crate) cc_all: bool,
    /// With --cc-all, only functions whose name starts with this prefix.
    #[arg(long, value_name = "PREFIX", default_value = "", conflicts_with = "plugin")]
    pub(crate) ccprefix: String,
    /// With --cc-all, the spec to apply (default: the target's default spec).
    #[arg(long, value_name = "SPEC", conflicts_with = "plugin")]
    pub(crate) ccspec: Option<String>,
    /// With --cc-all, cycle through the target's four layouts instead.
    #[arg(long, conflicts_with = "plugin")]
    pub(crate) ccshuffle: bool,
    /// A calling-convention plugin (a shared library built against the C ABI) that plans the functions
    /// instead of the built-in specs; the options above are then its own, given as --plugin-arg.
    #[arg(long, value_name = "PATH.so")]
    pub(crate) plugin: Option<PathBuf>,
    /// An argument for the plugin, `ID:NAME[=VALUE]` where ID is the plugin's id (repeatable), such as
    /// `org.neverc.example.custom-callconv:cc-all=1`.
    #[arg(long = "plugin-arg", value_name = "ID:NAME[=VALUE]", requires = "plugin")]
    pub(crate) plugin_args: Vec<String>,
    /// Lower the materialized plans into adapter thunks as well, as `cc lower` does, so that stock LLVM
    /// compiles a module whose plans take effect.
    #[arg(long)]
    pub(crate) lower: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct TargetChoice {
    /// Target name or alias (x86_64, x86-64, amd64, aarch64, arm64, ...).
    #[arg(long, value_name = "NAME", required_unless_present = "target_file")]
    pub(crate) target: Option<String>,
    /// Load the target from this TOML file instead of the compiled-in registry.
    #[arg(long = "target-file", value_name = "PATH", conflicts_with = "target")]
    pub(crate) target_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CcPlanArgs {
    #[command(flatten)]
    pub(crate) target: TargetChoice,
    /// The spec, such as `gpr:rcx,rdx,r8;ret:rax` (default: the target's default spec).
    #[arg(long, value_name = "SPEC")]
    pub(crate) spec: Option<String>,
    /// Plan without a spec: every value where the target's standard convention puts it (arguments and
    /// return, a hidden pointer for a value returned indirectly), with the target's callee-saved registers
    /// and stack alignment.
    #[arg(long, conflicts_with = "spec")]
    pub(crate) standard: bool,
    /// The IR signature, such as `i32 (i32, i64, ptr byval(%struct.Q) align 8)`.
    #[arg(long, value_name = "SIG")]
    pub(crate) sig: String,
    /// A named type used by the signature, such as `%struct.Q = type { i64, i64, i64 }` (repeatable).
    #[arg(long = "type", value_name = "DEFINITION")]
    pub(crate) types: Vec<String>,
    /// Function name used in diagnostics.
    #[arg(long, value_name = "NAME", default_value = "f")]
    pub(crate) function: String,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct CcValidateArgs {
    #[command(flatten)]
    pub(crate) target: TargetChoice,
    /// The IR signature the plan is for; enables the checks that need value sizes, and reads the plan over it
    /// as the planner does (refusing, as it does, a return the target cannot make).
    #[arg(long, value_name = "SIG")]
    pub(crate) sig: Option<String>,
    /// The plan string.
    #[arg(value_name = "PLAN")]
    pub(crate) plan: String,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct DeclarationArgs {
    /// The phase schema to read.
    #[arg(long, value_name = "PATH", default_value = "PhaseSchema.json")]
    pub(crate) phase_schema: PathBuf,
    /// Directory whose `*.toml` files are the targets.
    #[arg(long, value_name = "DIR", default_value = "targets")]
    pub(crate) targets: PathBuf,
    /// An additional target file to validate with the others (repeatable).
    #[arg(long = "target-file", value_name = "PATH")]
    pub(crate) target_files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) declarations: DeclarationArgs,
    /// Directory whose `*.toml` files declare the plugin C ABI, checked against --phase-schema (the values
    /// it takes from a schema's state machines come from that schema). Without it, the bundled `abi`
    /// directory is checked against the schema it derives from, the bundled `PhaseSchema.json`, whatever
    /// --phase-schema names.
    #[arg(long, value_name = "DIR")]
    pub(crate) abi: Option<PathBuf>,
    /// Output format; `json` prints one JSON document on stdout, diagnostics included.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub(crate) struct GenArgs {
    #[command(subcommand)]
    pub(crate) what: Option<GenCommand>,
    #[command(flatten)]
    pub(crate) declarations: DeclarationArgs,
    /// Directory to write the generated files into (created if missing; existing files are replaced atomically).
    #[arg(long, value_name = "DIR", required = true)]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GenCommand {
    /// Export the conformance cases of the declarations as JSON vectors, one file per declaration file.
    ///
    /// The format is `neverc-conformance-v1` (docs/conformance-format.md): every case carries all it needs, so
    /// another implementation can run them; `neverc-spec conformance` runs them against this one. The number of
    /// cases per source file is printed.
    #[command(after_help = AFTER_HELP)]
    Conformance(GenConformanceArgs),
    /// Write the plugin C ABI's headers (`PluginCore.h`, `PluginLink.h`, ...) generated from the ABI
    /// declarations, as committed under `include/neverc/Plugin/`.
    #[command(after_help = AFTER_HELP)]
    Headers(GenHeadersArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GenHeadersArgs {
    /// The phase schema the declarations take values from (`from = "phase_schema:..."`).
    #[arg(long, value_name = "PATH", default_value = "PhaseSchema.json")]
    pub(crate) phase_schema: PathBuf,
    /// Directory whose `*.toml` files declare the plugin C ABI.
    #[arg(long, value_name = "DIR", default_value = "abi")]
    pub(crate) abi: PathBuf,
    /// Directory to write the headers into (created if missing; existing files are replaced atomically).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Directory whose `*.toml` files are the targets (for --targets-out).
    #[arg(long, value_name = "DIR", default_value = "targets")]
    pub(crate) targets: PathBuf,
    /// Also write one header per target (`<target>.h`: its ids, register numbers, stack alignment and
    /// default specs, as committed in include/neverc/Targets/) into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) targets_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct GenConformanceArgs {
    #[command(flatten)]
    pub(crate) declarations: DeclarationArgs,
    /// Directory whose `*.toml` files declare the plugin C ABI (its descriptor rules give cases too).
    #[arg(long, value_name = "DIR", default_value = "abi")]
    pub(crate) abi: PathBuf,
    /// Directory to write the vector files into (created if missing; each file is written atomically).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// text: one line per file with its case count; json: the same as one document.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// A directory of vector files written by `gen conformance` (every `*.conformance.json` in it).
    #[arg(long, value_name = "DIR")]
    pub(crate) vectors: PathBuf,
    /// The declarations the vectors were generated from: their tables are the ones run.
    #[command(flatten)]
    pub(crate) declarations: DeclarationArgs,
    /// An object or archive of a program that links (repeatable, in link order); cases that run the link state
    /// machine link it. Without one, those cases are reported as not applicable.
    #[arg(long = "link-input", value_name = "FILE")]
    pub(crate) link_inputs: Vec<PathBuf>,
    /// Run the cases through this C plugin instead of Rust hooks: the generic conformance plugin
    /// (`runtime/plugin-host/tests/fixtures/conform.c`, id `org.neverc.conformance`) is loaded for each case, told
    /// what to ask for, and the case is judged from the answers it reports. Target cases are not applicable.
    #[arg(long, value_name = "PATH.so")]
    pub(crate) plugin: Option<PathBuf>,
    /// text: counts per source, then every case not applicable or failed with its reason; json: the same as one
    /// document.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct TargetsArgs {
    /// Also load this target file at run time, through the same validation (repeatable).
    #[arg(long = "target-file", value_name = "PATH")]
    pub(crate) target_files: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Debug, Args)]
pub(crate) struct ResolveArgs {
    #[command(flatten)]
    pub(crate) target: TargetChoice,
    /// Register names (any case), aliases, sub-register names, or `#N` for plan number N.
    #[arg(required = true, value_name = "REGISTER")]
    pub(crate) registers: Vec<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}
