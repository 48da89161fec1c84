//! The `ld` driver: GNU ld's command line, so that compiler drivers (`gcc -static -B DIR`, `musl-gcc -static
//! -B DIR`, `clang -static --ld-path=...`) link with neverc-spec unchanged. It runs when the binary is invoked
//! as `ld` (argv[0] `ld`, `ld.NAME` or `TRIPLE-ld`, such as a symbolic link in gcc's `-B` directory) or as
//! `neverc-spec ld ARGS...`.
//!
//! `@file` response files are expanded ([`response`]), the command line is parsed ([`args`]), `-l` options
//! and linker scripts are resolved to files ([`inputs`], [`script`]), and the link runs through the same
//! code as `neverc-spec link` ([`crate::link::link`]).

mod args;
mod error;
mod inputs;
mod response;

use std::ffi::{OsStr, OsString};
use std::path::Path;

use miette::MietteDiagnostic;
use neverc_link::context::LinkOptions;
use neverc_link::graph::LinkTarget;
use neverc_link::output_kind::{OutputKind, OutputRequest};

use crate::CommandError;
use crate::link::{LinkRequest, link};
use args::{LdCommand, Request};
use error::{LdError, ScriptError};
use neverc_link::search::SearchError;

/// The first line of `--version` and `-v`: tools that ask which linker they have (libtool looks for `GNU`,
/// Meson and CMake read the first line) see a GNU-compatible linker, and who it really is.
pub(crate) const VERSION_LINE: &str = concat!("neverc-spec ", env!("CARGO_PKG_VERSION"), " (compatible with GNU ld)");

/// Whether argv[0] asks for the driver: its file name is `ld`, `ld.NAME` or `TRIPLE-ld`.
pub(crate) fn invoked_as_ld(program: &OsStr) -> bool {
    let Some(name) = Path::new(program).file_name().and_then(OsStr::to_str) else {
        return false;
    };
    name == "ld" || name.starts_with("ld.") || name.ends_with("-ld")
}

/// Runs the driver on GNU ld's arguments (without argv[0]).
pub(crate) fn run(arguments: Vec<OsString>) -> Result<(), CommandError> {
    match drive(arguments) {
        Ok(()) => Ok(()),
        Err(Driven::Ld(LdError::Search(SearchError::Script(script)))) => {
            print_script_error(&script);
            Err(LdError::Search(SearchError::Script(script)).into())
        }
        Err(Driven::Ld(error)) => Err(error.into()),
        Err(Driven::Link(error)) => Err(error),
    }
}

/// Where a driver run failed: before the link (refused by the driver) or in it.
enum Driven {
    Ld(LdError),
    Link(CommandError),
}

impl From<LdError> for Driven {
    fn from(error: LdError) -> Driven {
        Driven::Ld(error)
    }
}

fn drive(arguments: Vec<OsString>) -> Result<(), Driven> {
    let arguments = response::expand(arguments)?;
    let command = match args::parse(arguments)? {
        Request::Help => {
            outln!("{}", HELP.replace(DECLARED_EMULATIONS, &args::declared_emulations()));
            return Ok(());
        }
        Request::Version => {
            outln!("{VERSION_LINE}");
            return Ok(());
        }
        Request::Link(command) => command,
    };
    for note in &command.notes {
        errln!("note: neverc-spec ld: {note}");
    }
    if !command.shared && !command.exclude_libs.is_empty() {
        errln!(
            "note: neverc-spec ld: `--exclude-libs` is not applied: an executable exports the definitions its \
             shared libraries refer to (all with --export-dynamic), whichever archive they come from"
        );
    }
    if command.unclosed_group {
        errln!("warning: neverc-spec ld: missing --end-group; added as the last option");
    }
    let files = neverc_link::search::RealFiles;
    let resolver = inputs::search(&command, &files);
    if command.print_version || command.verbose {
        outln!("{VERSION_LINE}");
    }
    if command.verbose {
        // What `ld --verbose | grep SEARCH_DIR` looks for.
        for dir in resolver.library_dirs() {
            outln!("SEARCH_DIR(\"{}\");", dir.display());
        }
    }
    if command.items.is_empty() {
        return if command.print_version || command.verbose {
            Ok(())
        } else {
            Err(LdError::NoInputs.into())
        };
    }
    // Shared objects are inputs where no -Bstatic is in force, unless the output is relocatable or a static
    // PIE; one among the inputs makes the output dynamically linked.
    let resolver = resolver.allowing_shared_libraries(!command.relocatable && !static_pie(&command));
    let resolved = resolver.resolve_items(&command.items).map_err(LdError::from)?;
    // `--whole-archive` and `--as-needed` apply to the files of the items named inside them (a script's files
    // included); a script's `AS_NEEDED` to the files it names.
    let whole_archive = resolved
        .iter()
        .enumerate()
        .filter(|(_, found)| command.whole_archive_items.contains(&found.item))
        .map(|(index, _)| index)
        .collect();
    let as_needed = resolved
        .iter()
        .enumerate()
        .filter(|(_, found)| found.as_needed || command.as_needed_items.contains(&found.item))
        .map(|(index, _)| index)
        .collect();
    let imports = resolved.iter().any(|found| found.shared);
    let files: Vec<std::path::PathBuf> = resolved.into_iter().map(|found| found.path).collect();
    if command.trace_inputs {
        for file in &files {
            outln!("{}", file.display());
        }
    }
    // Where the libraries the shared libraries need are looked for: -rpath-link, -rpath, the search path.
    let needed_library_dirs = command
        .rpath_link
        .iter()
        .cloned()
        .chain(command.rpath.iter().map(std::path::PathBuf::from))
        .chain(resolver.library_dirs().iter().cloned())
        .collect();
    let mut request = request(*command, files, imports);
    request.options.needed_library_dirs = needed_library_dirs;
    request.options.whole_archive = whole_archive;
    request.options.as_needed = as_needed;
    link(request).map_err(Driven::Link)
}

/// Whether the command line makes a static PIE: `-pie` with `--no-dynamic-linker` (gcc -static-pie) or
/// with `-static` and no shared library.
fn static_pie(command: &LdCommand) -> bool {
    command.pie && command.no_dynamic_linker
}

/// What the command line makes, as GNU ld decides it. The driver refuses -shared by name. `-pie` makes a
/// position-independent executable: static (no interpreter, relocating itself) with --no-dynamic-linker, or
/// with -static when no shared library is an input; otherwise started through the interpreter. Without it,
/// the executable is dynamically linked when a shared library is among the inputs (`shared_inputs`), and
/// static otherwise (ld.bfd then writes no interpreter either).
fn output_kind(command: &LdCommand, shared_inputs: bool) -> OutputKind {
    OutputKind::decide(OutputRequest {
        relocatable: command.relocatable,
        shared: command.shared,
        pie: command.pie,
        static_link: if command.pie {
            static_pie(command) || (command.static_seen && !shared_inputs)
        } else {
            !shared_inputs
        },
    })
}

/// The link the command line describes, over the resolved input files.
fn request(command: LdCommand, files: Vec<std::path::PathBuf>, shared_inputs: bool) -> LinkRequest {
    let output_kind = output_kind(&command, shared_inputs);
    let mut options = LinkOptions::new(files, command.output);
    if let Some(entry) = command.entry {
        options.entry = entry;
    }
    options.gc_sections = command.gc_sections;
    options.icf = command.icf;
    options.map_file = command.map_file;
    options.build_id = command.build_id;
    options.eh_frame_hdr = command.eh_frame_hdr;
    options.relro = command.relro;
    options.rpath = command.rpath;
    options.new_dtags = command.new_dtags;
    options.bind_now = command.bind_now;
    options.origin = command.origin;
    options.pack_relative_relocs = command.pack_relative_relocs;
    options.fix_erratum = command.fix_erratum;
    options.compress_debug_sections = command.compress_debug_sections;
    options.print_gc_sections = command.print_gc_sections;
    options.print_map = command.print_map;
    options.fatal_warnings = command.fatal_warnings;
    if let Some(base) = command.image_base {
        options.image_base = base;
    }
    options.section_starts = command.section_starts;
    options.separate_code = command.separate_code;
    options.keep_text_section_prefix = command.keep_text_section_prefix;
    options.strip = command.strip;
    options.relax = command.relax;
    options.threads = command.threads;
    options.text_relocations = command.text_relocations;
    options.soname = command.soname.clone();
    options.no_undefined = command.no_undefined;
    options.symbolic = command.symbolic;
    options.exclude_libs = command.exclude_libs.clone();
    options.loader_requests = command.loader_requests;
    options.emit_relocs = command.emit_relocs;
    options.symbols = command.symbols;
    options.lto = command.lto;
    options.lto_cache_dir = command.lto_cache_dir;
    options.lto_cache_url = command.lto_cache_url;
    options.thinlto_index_only = command.thinlto_index_only;
    options.thinlto_naming = command.thinlto_naming;
    options.lto_cache_policy = command.lto_cache_policy;
    options.output_kind = output_kind;
    options.export_dynamic = command.export_dynamic;
    options.interpreter = command.dynamic_linker;
    options.hash_style = command.hash_style;
    // A position-independent output is laid out from address 0 (the loader chooses where it goes).
    if options.output_kind.is_position_independent() && command.image_base.is_none() {
        options.image_base = 0;
    }
    if let Some(page_size) = command.page_size {
        options.page_size = page_size;
    }
    if let Some(emulation) = command.emulation {
        options.target = LinkTarget::Fixed {
            target: emulation.target,
            set_by: Some(format!("-m {}", emulation.name)),
        };
    }
    // gcc passes its LTO plugin on every link; it is named only when an input holds GCC LTO bytecode.
    let ignored_lto_plugin = (command.ignored_plugin.is_some() || command.ignored_plugin_options > 0).then(|| {
        let plugin = command
            .ignored_plugin
            .as_deref()
            .map_or_else(String::new, |plugin| format!("-plugin {plugin} and "));
        format!("{plugin}{} -plugin-opt option(s)", command.ignored_plugin_options)
    });
    LinkRequest {
        options,
        ignored_lto_plugin,
        lto_cache_hmac_key_file: command.lto_cache_hmac_key_file,
        symbol_ordering_file: command.symbol_ordering_file,
        trace_phases: command.trace_phases,
        trace_symbols: command.trace_symbols,
        cref: command.cref,
        plugins: Vec::new(),
        plugin_args: Vec::new(),
    }
}

/// Where a script problem is, with a snippet of the script (the message follows as the command's error).
fn print_script_error(error: &ScriptError) {
    let file = error.file.display().to_string();
    // The snippet says where; the error that follows says what, so the message is given once.
    let diagnostic = MietteDiagnostic::new(format!(
        "{file}:{}:{}: not an object or archive, so read as a linker script (as GNU ld reads it)",
        error.line, error.column
    ));
    crate::render::print_snippet(diagnostic, &file, &error.text, error.span.clone(), "here");
}

/// Where `--help` lists the declared emulations.
const DECLARED_EMULATIONS: &str = "{declared emulations}";

/// `neverc-spec ld --help`.
const HELP: &str = "\
neverc-spec ld: GNU ld's command line for executables of the declared targets, static or dynamically
linked, so that compiler drivers link with neverc-spec unchanged:

  gcc -B DIR ...                  (DIR holds a symbolic link `ld` to neverc-spec; gcc's default: a PIE)
  gcc -static -B DIR ...
  musl-gcc -static -B DIR ...
  clang -static --ld-path=DIR/ld ...
  RUSTFLAGS=\"-C linker-features=-lld -C link-arg=-BDIR\" cargo build
  neverc-spec ld -static -o prog crt1.o main.o -L DIR -lfoo ...

It runs when neverc-spec is invoked as `ld`, `ld.NAME` or `TRIPLE-ld`, or as `neverc-spec ld`. The link
itself is `neverc-spec link`'s: the declared link phases, into an executable (dynamically linked when a
shared library is among the inputs, or with -pie; with -static-pie, a static position-independent one; with
-r, one relocatable object).

Inputs, in order:
  FILE                  an object, an archive (GNU or thin) or a linker script
  -l NAME, -lNAME, --library=NAME
                        libNAME.a in the library directories (after -Bstatic/-static only libNAME.a; otherwise
                        libNAME.so first, as GNU ld does: a shared library, which the output imports from)
  -l :FILE              FILE itself in the library directories
  -L DIR, -LDIR, --library-path=DIR
                        a library directory; every -L applies to every -l, wherever it appears; `=DIR` or
                        `$SYSROOT/DIR` is under --sysroot
  -static, -Bstatic, -dn, -non_shared / -Bdynamic, -dy, -call_shared
                        which files -l looks for from here on; --push-state / --pop-state save and restore it
  --start-group, -(  ... --end-group, -)
                        accepted; every archive is searched as if all were in one group (see below)
  --whole-archive ... --no-whole-archive
                        every member of the archives named between them (by file, -l or a script) is linked,
                        whether or not anything refers to it, as GNU ld links them; --push-state /
                        --pop-state save and restore it too
  --                    everything after it is an input file
  @FILE                 read arguments from FILE (GNU quoting: quotes, backslash; nested at most 32 deep, at
                        most 2000 files and 4,194,304 arguments in all, as libiberty bounds them)
  --sysroot=DIR         the sysroot for `=` paths, the default directories and absolute names in scripts
  -nostdlib             search only the -L directories, not the default ones (GNU ld's for elf_x86_64,
                        whatever -m says)

Target:
  -m EMULATION, -mEMULATION
                        the link's target, by GNU ld's name for it: an emulation a target declares in its
                        `[elf] emulations`; every object must then be one of its. Without -m the first
                        object's ELF header chooses. Declared:
                        {declared emulations}
  -EL, -EB              accepted when the link's target has that byte order (without -m: when every declared
                        target has it); refused otherwise

Output:
  -o FILE, --output=FILE          the executable (default a.out), written completely or not at all; `-o -`
                                  writes a file named `-`, as GNU ld does
  -e SYM, --entry=SYM             the entry symbol (default _start; it may be data); without it, a warning
                                  and the start of .text, as GNU ld does
  --image-base=ADDR               where the first segment goes (lld's option; page-aligned)
  -Ttext-segment=ADDR             the same, in GNU ld's hexadecimal (`0x` optional)
  --section-start=NAME=ADDR, -Ttext=ADDR, -Tdata=ADDR, -Tbss=ADDR
                                  put output section NAME (.text, .data, .bss) at ADDR (hexadecimal, `0x`
                                  optional; the last one given for a name counts); the sections after it
                                  follow it, as with GNU ld. An address below the sections placed before it
                                  or not a multiple of the section's alignment is an error; a name no
                                  output section has is a warning
  -z separate-code, -z noseparate-code
                                  code in PT_LOADs of its own (the default), or one read-and-execute PT_LOAD
                                  for the headers, the code and the read-only data, as GNU ld lays them out
  -z keep-text-section-prefix     unlikely, exit, start-up and hot code (.text.unlikely.*, .text.exit.*,
                                  .text.startup.*, .text.hot.*) go to output sections .text.unlikely,
                                  .text.exit, .text.startup and .text.hot after .fini, as ld.lld makes them
                                  (ld.bfd ignores the option for a static executable); without it they come
                                  first in .text in that order, then .text.sorted.* by name, as GNU ld's
                                  default script orders them
  --gc-sections, --no-gc-sections drop sections nothing live refers to
  --icf=all|none                  fold identical code whose address is not significant
  -Map FILE, -Map=FILE            write a link map
  --build-id[=sha1|none]          a .note.gnu.build-id: the SHA-1 of the image (of its 1 MiB pieces' SHA-1s
                                  when larger, hashed in parallel, as ld.lld does)
  --eh-frame-hdr, --no-eh-frame-hdr
  -z relro, -z norelro            PT_GNU_RELRO (relro is the default)
  -z max-page-size=N              the segment alignment (a power of two, 4 KiB to 1 GiB; default the
                                  target's `[elf] max_page_size`)
  -z common-page-size=N           accepted when at most the maximum page size
  -s, --strip-all / -S, --strip-debug
                                  drop the symbol table and debugging sections / the debugging sections
                                  (the last one wins); without them, debugging information (DWARF) and
                                  the other sections no segment loads (.comment) are kept as GNU ld keeps
                                  them, their strings merged
  --compress-debug-sections=none|zlib|zlib-gabi|zstd
                                  write the debugging sections compressed (SHF_COMPRESSED, a zlib stream or a
                                  Zstandard frame) where that makes them smaller; zlib-gnu is refused
  -pie, -no-pie, -static-pie, --no-dynamic-linker
                                  with -static (or --no-dynamic-linker), -pie makes a static
                                  position-independent executable, as gcc -static-pie asks: ET_DYN from
                                  address 0 without an interpreter, a RELATIVE relocation in .rela.dyn for
                                  every address its data holds, the indirect functions' IRELATIVE ones in
                                  .rela.plt, and the .dynamic (with .dynsym, .dynstr, hash tables) glibc's
                                  start-up code reads to relocate it; code holding 32-bit absolute addresses
                                  (not -fPIE) is refused naming the relocation, as are addresses in read-only
                                  sections (text relocations). Without -static, -pie makes a PIE that
                                  the kernel starts through its program interpreter (PT_INTERP, after
                                  PT_PHDR), importing from the shared libraries among its inputs; without
                                  -pie, a shared library among the inputs makes an executable at a fixed
                                  address that imports from it (functions through a lazily bound PLT,
                                  data through GOT slots and COPY relocations, .dynsym with the versions
                                  the libraries define); with neither, a static executable
  -dynamic-linker FILE, -I FILE   the interpreter a dynamically linked executable names (default: the
                                  target's `[elf] interpreter`,
                                  /lib64/ld-linux-x86-64.so.2 on x86-64); ignored for a static output, as
                                  ld.bfd ignores it
  --hash-style=sysv|gnu|both      the symbol hash tables of an output with a .dynamic: .hash, .gnu.hash or
                                  both (the default, as GNU ld's; gcc passes gnu)
  --as-needed, --no-as-needed     a shared library named after --as-needed (or in a script's AS_NEEDED) is
                                  needed (DT_NEEDED) only when the output imports one of its definitions;
                                  --push-state / --pop-state save and restore it
  -rpath DIR, -R DIR              where the loader looks for the needed libraries: DT_RUNPATH, the paths
                                  joined by `:` in order (DT_RPATH with --disable-new-dtags)
  --enable-new-dtags, --disable-new-dtags
  --no-allow-shlib-undefined, --allow-shlib-undefined
                                  every name a shared library of the link leaves undefined must be defined
                                  by the executable, a library of the link or one they need (the default
                                  for an executable, as with GNU ld), or not checked;
                                  --unresolved-symbols=ignore-in-shared-libs and --warn-unresolved-symbols
                                  apply to these names as GNU ld applies them
  -rpath-link DIR                 where the libraries a shared library needs are looked for first (then the
                                  -rpath directories, then the library search path); one not found is a
                                  warning naming it, as with GNU ld
  --export-dynamic, -E            every global definition in .dynsym (otherwise those a shared library of the
                                  link refers to or defines too, as GNU ld exports them)
  --dynamic-list FILE, --export-dynamic-symbol-list FILE, --export-dynamic-symbol GLOB
                                  also export the global definitions the list (`{ NAME; GLOB*; };`) or the
                                  pattern names; in a shared library, a dynamic list binds every
                                  definition it does not name to the library (those it names stay
                                  interposable), as --export-dynamic-symbol does with -Bsymbolic
  -z now, -z lazy                 bind every imported function at start-up (DF_BIND_NOW, DF_1_NOW) or at
                                  its first call (the default)
  -z origin                       DF_ORIGIN and DF_1_ORIGIN: the paths may name $ORIGIN
  -z notext, -z text              allow addresses in read-only sections that the loader relocates (text
                                  relocations: DT_TEXTREL, DF_TEXTREL), or refuse them (the default, as
                                  ld.lld refuses them)
  -z pack-relative-relocs, -z nopack-relative-relocs
                                  a position-independent executable's RELATIVE relocations of aligned
                                  words go to .relr.dyn (DT_RELR: an address, then bitmaps of the words
                                  after it), a fraction of .rela.dyn's size; with the shared C library the
                                  output needs its GLIBC_ABI_DT_RELR version, as ld.bfd writes it (glibc
                                  2.36 reads DT_RELR)
  -r, -i, --relocatable           merge the inputs into one relocatable object (ET_REL) as GNU ld -r
                                  does: sections combined by name, relocations and symbols kept, COMDAT
                                  groups kept as groups (a second copy dropped), archive members pulled as
                                  a link pulls them (all with --whole-archive); two strong definitions of a
                                  name are an error naming both files (the first kept with
                                  --allow-multiple-definition); -Map/-M, --gc-sections, --icf, -s/-S,
                                  --compress-debug-sections, -u, --require-defined, --defsym, --wrap,
                                  --version-script and --retain-symbols-file are refused with it
  --symbol-ordering-file FILE     place the symbols FILE names first, in that order
  --fix-cortex-a53-843419[=full]  the AArch64 Cortex-A53 erratum 843419 workaround, as ld.bfd makes it (gcc's
                                  AArch64 driver passes it unless given -mno-fix-cortex-a53-843419): an
                                  `adrp` at page offset 0xff8 or 0xffc that starts an affected sequence
                                  becomes an `adr` where one reaches, and elsewhere the sequence's load or
                                  store moves to a veneer; modes adr and adrp are refused
  -t, --trace                     print every input file after -l and scripts are resolved
  -y SYM, --trace-symbol=SYM      print every input that defines or refers to SYM, as GNU ld does
  --print-gc-sections             print every section --gc-sections removes, as GNU ld does (the COMDAT
                                  copies discarded before it are not listed)
  -M, --print-map                 print the link map (what -Map writes) on standard output
  --fatal-warnings, --no-fatal-warnings
                                  a link that warns fails and writes nothing (the last one wins)
  -q, --emit-relocs               keep every relocation of the output's sections in it, as ld.bfd does: a
                                  non-allocated SHT_RELA section `.rela<section>` for each section that has
                                  any (sh_link .symtab, sh_info the section), r_offset the final address,
                                  symbols by their index in .symtab (which then lists every symbol they
                                  name, and the section symbols of the output sections a local section's
                                  relocation is rebased onto); the types are the input's but for GOT loads
                                  relaxed to direct references (R_X86_64_PC32 where ld.bfd writes
                                  R_X86_64_32S for its `mov $imm`); those of sections the link dropped are
                                  not kept; ignored with -r, refused with -s, as ld.bfd fails that link
  --relax, --no-relax             --relax (the default): GOT loads the architecture can rewrite (x86-64's
                                  GOTPCRELX) become direct references and need no GOT slot; --no-relax
                                  keeps every GOT load and its slot, as ld.bfd does. TLS sequences are
                                  relaxed to local-exec either way, as a static executable needs (the last
                                  one wins)

Symbols (as GNU ld defines them):
  -u SYM, --undefined=SYM         SYM is referred to: an archive member defining it is linked, and it is
                                  kept by --gc-sections
  --require-defined=SYM           as -u, and the link fails unless SYM is defined
  --defsym=SYM=EXPR               define SYM: EXPR is a number, a symbol, or a symbol plus or minus a number
                                  (other expressions are refused)
  --wrap=SYM                      undefined references to SYM go to __wrap_SYM, those to __real_SYM to SYM
  --allow-multiple-definition, -z muldefs
                                  the first of several definitions is used, without an error
  --unresolved-symbols=report-all|ignore-all|ignore-in-object-files|ignore-in-shared-libs
  --warn-unresolved-symbols, --error-unresolved-symbols
                                  an undefined reference is an error (the default), a warning, or nothing;
                                  references let through are 0
  --noinhibit-exec                write the executable even when references are undefined or defined twice
                                  (the errors are printed; the exit status is 0, as with GNU ld)
  --error-limit=N                 list at most N undefined references (lld's; 0, the default: all)
  --retain-symbols-file=FILE      the symbol table keeps only the symbols FILE lists, one a line
  --version-script=FILE           version nodes `NAME { global: ...; local: ...; } PARENT;` (wildcards,
                                  extern \"C\" and extern \"C++\" patterns, the latter matched on demangled
                                  names): a dynamically linked output exports each global definition in
                                  the version a pattern gives it (.gnu.version_d, as GNU ld decides ties),
                                  and what a `local:` pattern matches is local to it; an object's `.symver`
                                  definitions (name@VER hidden, name@@VER default) need their version in
                                  the script; in a static executable, `local:` makes symbols local in the
                                  symbol table. Several scripts are read as one
  --no-undefined-version, --undefined-version
                                  a name a version script's `global:` part gives exactly that the output
                                  does not define is an error (or, the default as in GNU ld, ignored)
  --cref                          print GNU ld's cross reference table (appended to the -Map file if any)
  --trace-phases                  print every link phase: policy, actor, states, duration
  -shared, -Bshareable            a shared library (ET_DYN without an interpreter): every global definition
                                  of default or protected visibility exported, undefined references left
                                  to the loader; its own references to what it exports go through the
                                  loader (PLT, GOT), so that another definition may interpose; its TLS
                                  accesses keep their models (local-exec ones are refused)
  -soname NAME, -h NAME           the shared library's DT_SONAME
  -z defs, --no-undefined         a shared library's undefined references are errors (-z undefs: not)
  -z nodelete, -z nodlopen, -z initfirst, -z interpose
                                  what a shared library asks of the loader (DF_1_NODELETE, DF_1_NOOPEN,
                                  DF_1_INITFIRST, DF_1_INTERPOSE)
  --exclude-libs=LIB,LIB... | ALL  a shared library exports nothing these archives (by file name) define;
                                  a note for a program, which exports what its shared libraries refer to
  -Bsymbolic, -Bsymbolic-functions, -Bno-symbolic
                                  a shared library's references bind to its own definitions (all, or its
                                  functions), or may be interposed (the default); no effect on a program
  --threads[=N], --no-threads     how many threads the link may use: N, every core (the default; the LTO
                                  plugin's -plugin-opt=jobs=N when only that is given), or one; the output
                                  is the same whatever the number
  -v, -V, --verbose               print the version first (--verbose also the SEARCH_DIRs); without
                                  inputs, only that

Accepted, since they cannot change the output (or ask for what neverc-spec does anyway):
  -O LEVEL,
  --[no-]copy-dt-needed-entries,
  --[no-]warn-rwx-segments, --[no-]warn-execstack, --warn-common, --warn-once,
  --no-warn-mismatch, --no-warn-search-mismatch, -g,
  -X and --discard-locals (temporary `.L` symbols are never written to the symbol table),
  -z noexecstack|defs

LTO (LLVM bitcode from clang-14 -flto or -flto=thin, linked natively; the default code generator is
llvm-lto2-14):
  -plugin .../LLVMgold.so          what clang passes with -flto: its -plugin-opt options that follow are
                                   honoured: O0..O3, mcpu=, mattr=, jobs=, thinlto-jobs=, thinlto, save-temps
                                   (also writes OUTPUT.resolution.txt), cache-dir=DIR, cache-policy=POLICY,
                                   thinlto-index-only[=FILE], thinlto-emit-imports-files,
                                   thinlto-prefix-replace=OLD;NEW, thinlto-object-suffix-replace=OLD;NEW;
                                   others are refused by name
  --thinlto-cache-dir=DIR          cache LTO products in DIR (as -plugin-opt=cache-dir=DIR)
  --thinlto-cache-policy=POLICY    prune the cache directory after the link by LLVM's cache pruning policy
                                   (as -plugin-opt=cache-policy=POLICY): colon-separated prune_interval=N,
                                   prune_after=N (N then s, m or h), cache_size=N%, cache_size_bytes=N[k|m|g],
                                   cache_size_files=N; only neverc-spec's own entries are ever removed
  --thinlto-index-only[=FILE]      distributed ThinLTO (also -plugin-opt=thinlto-index-only[=FILE]): write
                                   each bitcode file's .thinlto.bc index and .imports beside it (FILE: the
                                   list of the native objects the final link takes), link nothing; compile
                                   the backends with clang-14 -fthinlto-index=F.thinlto.bc and link their
                                   objects
  --thinlto-prefix-replace=OLD;NEW  with --thinlto-index-only: write the index and imports of a module whose
                                   path starts with OLD under NEW instead (FILE names its object there too)
  --thinlto-object-suffix-replace=OLD;NEW  with --thinlto-index-only: a bitcode file whose name ends in OLD
                                   is the module ending in NEW (a thin link of -fthin-link-bitcode= files
                                   naming the full bitcode); ignored by other links, as by lld
  --thinlto-emit-imports-files     accepted: an index-only link always writes the .imports lists
  --lto-cache-url=redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]  cache LTO products in a Redis server shared
                                   by machines; a server that cannot be reached, takes more than 10 s for a
                                   request or sends a malformed reply or one over 512 MiB is a warning
  --lto-cache-namespace=NAME       the namespace of the cache's keys
  --lto-cache-hmac-key-file=FILE   seal and check the shared cache's entries with an HMAC-SHA256 under the key
                                   in FILE (at least 16 bytes; or $NEVERC_LTO_CACHE_HMAC_KEY); without a key,
                                   a digest catches damage but not forgery by whoever can write the cache

Ignored:
  -plugin FILE, -plugin-opt OPT   any other plugin, GCC's LTO plugin among them (gcc passes it on every
                                  link): a note names it when an input holds GCC LTO bytecode, whose
                                  machine code (-ffat-lto-objects) is linked; GCC LTO objects without
                                  machine code are refused by name

Refused (exit 2, naming the option), because neverc-spec does not implement what they would change:
  -shared, -T/--script, -Trodata-segment, -Tldata-segment, -x/--discard-all, -N, -n,
  -z execstack, -m naming no
  declared emulation, -EB or -EL for the other byte order, --build-id=md5|uuid|0xHEX, --icf=safe, any other
  -z keyword, and every option not listed here.

Linker scripts: a file that is text rather than ELF or an archive is a linker script, as with GNU ld (Debian's
libm.a and libc.so are). GROUP(...), INPUT(...), AS_NEEDED(...) (its files are inputs like the others),
-lNAME inside them, OUTPUT_FORMAT(elf64-x86-64) and /* */ comments are supported; any other command is an
error naming it, the script, and the line. A name starting with `=` is under the sysroot; an absolute name in
a script inside the sysroot is looked for there; a relative name not found is looked for in the library
directories. Scripts nest at most 16 deep, and one link expands at most 1000 scripts (256 MiB of them) and
1,048,576 inputs: scripts that name each other many times over are an error naming the script.

Archives: neverc-spec searches archives as lld does, not as GNU ld does. GNU ld pulls a member from an
archive only to define a symbol that is undefined when it reaches that archive, so archives that need each
other must be grouped (--start-group ... --end-group) and an archive must come after the objects that use
it. neverc-spec remembers every archive's symbols, so a symbol undefined anywhere is taken from any archive:
links that GNU ld refuses for their order succeed, as with lld. When two archives define a symbol, the
first in command-line order wins.

Exit status:
  0  success (also --help, --version)
  1  the link failed (an undefined symbol, a library not found, a shared object where a static link needs
     an archive, a phase error)
  2  usage error: an unknown or unsupported option or value, a linker script command that is not supported,
     response files or scripts beyond their bounds, an output that is also an input; nothing is written
  3  a file could not be read or written, or an output would replace a file the link read (a thin-archive
     member, a linker script, a response file); nothing is written";
