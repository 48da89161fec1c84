#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The bitcode symbol table reader against the LLVM 14 tools: C and C++ sources built by clang-14 with
//! `-flto` and `-flto=thin` (ELF, Mach-O inside the bitcode wrapper, COFF), a two-module file (a split LTO
//! unit), files made by `llvm-link-14` and `llvm-lto2-14` and an `llvm-ar-14` archive. Every symbol is compared with
//! `llvm-nm-14 -P -a --no-sort` (name, order and type letter), with the IR that `llvm-dis-14` prints
//! (visibility, TLS, section, COMDAT, `unnamed_addr`, omission from the symbol table, `llvm.used`), with the
//! archive map `llvm-ar-14` writes (the linker-visible definitions) and the triples and blobs
//! `llvm-bcanalyzer-14 -dump` shows. Truncated and corrupted copies must read to an error or to a consistent
//! table, and never panic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_link::read::bitcode::{
    BitcodeError, BitcodeModule, BitcodeSymbol, BitcodeSymbolTable, ComdatSelection, IRSYMTAB_VERSION, ProducerCheck,
    SymbolFlags, Visibility, is_bitcode, read_symbol_table, read_symbol_table_with,
};
use neverc_test_support::{Rng, scratch, seed_of, text};

/// Most kinds of symbol C has: defined and undefined functions and data, weak definitions and references,
/// hidden and protected visibility, thread-local variables, `used`, named sections, aliases, an ifunc, module
/// asm and a dependent library.
const BASIC_C: &str = r#"#pragma comment(lib, "m")
extern int undefined_data;
extern int undefined_function(int);
extern int weak_undefined(void) __attribute__((weak));
int defined_data = 42;
int zero_data;
const int const_data = 7;
static int local_data = 3;
__attribute__((weak)) int weak_data = 5;
__attribute__((visibility("hidden"))) int hidden_data = 1;
__attribute__((visibility("protected"))) int protected_function(void) { return 2; }
__thread int tls_data = 9;
extern __thread int tls_undefined;
__attribute__((used)) static int used_static = 11;
__attribute__((section("x"))) int in_section_x = 12;
__attribute__((section("y"))) int function_in_y(void) { return 13; }
static int local_function(int x) { return x + local_data + used_static; }
__attribute__((weak)) int weak_function(void) { return 4; }
int defined_function(int x) {
  return undefined_function(x) + undefined_data + local_function(x) + tls_undefined +
         (weak_undefined ? weak_undefined() : 0);
}
int alias_of_defined(int) __attribute__((alias("defined_function")));
int weak_alias(int) __attribute__((weak, alias("defined_function")));
const char *message(void) { return "hello"; }
static int ifunc_impl(void) { return 0; }
static void *ifunc_resolver(void) { return (void *)ifunc_impl; }
int ifunc_function(void) __attribute__((ifunc("ifunc_resolver")));
__asm__(".globl asm_symbol\nasm_symbol:\n  jmp asm_undefined\n");
"#;

/// Common symbols (built with `-fcommon`), one with an explicit alignment.
const COMMON_C: &str = r#"int common_int;
int common_array[10];
__attribute__((aligned(64))) int aligned_common;
static int local_counter;
int *counter(void) { return &local_counter; }
"#;

/// A module built with `-ffunction-sections -fdata-sections`.
const SECTIONS_C: &str = r#"static const char table[] = "abc";
int first(void) { return table[0]; }
int second(void) { return table[1]; }
long big[100] = {1};
__attribute__((section(".text.custom"))) int custom(void) { return 3; }
"#;

/// COMDATs: an inline function, function and variable templates and a class with a vtable.
const COMDAT_CPP: &str = r#"inline int inline_function(int x) { return x * 2; }
template <typename T> T twice(T x) { return x + x; }
template <typename T> struct Holder { static int count; };
template <typename T> int Holder<T>::count = 1;
struct S { virtual int v() { return 1; } };
extern "C" int c_linkage(void) { return Holder<char>::count; }
int use(int x) { S s; return inline_function(x) + twice<long>(x) + twice<int>(x) + s.v() + Holder<int>::count; }
"#;

/// A class whose vtable, with `-fsplit-lto-unit -fwhole-program-vtables`, makes ThinLTO split the module in
/// two: one bitcode file with two modules and one irsymtab for both.
const SPLIT_CPP: &str = r#"struct A { virtual int f(); virtual ~A(); };
int A::f() { return 1; }
A::~A() {}
int call(A *a) { return a->f(); }
"#;

/// A small source for the Mach-O (wrapper) and COFF targets (Mach-O has no aliases).
const OTHER_TARGETS_C: &str = r#"#pragma comment(lib, "foo")
extern int undefined_function(void);
int defined_function(void) { return undefined_function(); }
int defined_data = 1;
__attribute__((weak)) int weak_function(void) { return 2; }
#ifndef __APPLE__
int weak_alias(void) __attribute__((weak, alias("defined_function")));
#endif
"#;

/// The fixtures, built once per test binary.
struct Fixtures {
    dir: PathBuf,
    /// Every bitcode file with an irsymtab, and the number of modules it holds.
    files: Vec<(PathBuf, usize)>,
    /// An `llvm-ar-14` archive of some of `files`.
    archive: PathBuf,
    /// Files without an irsymtab, and the number of modules they hold: made by `llvm-cat-14` with and without
    /// `-b`, and by `llvm-link-14` from a module with module asm.
    without_table: Vec<(PathBuf, usize)>,
}

static FIXTURES: OnceLock<Fixtures> = OnceLock::new();

/// Runs `program` in `dir`; a failure panics with what it printed.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let output = match Command::new(program).args(args).current_dir(dir).output() {
        Ok(output) => output,
        Err(error) => panic!("cannot run {program} (clang-14 and llvm-14 are needed): {error}"),
    };
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{}",
        output.status,
        text(&output.stderr)
    );
    text(&output.stdout)
}

fn fixtures() -> &'static Fixtures {
    FIXTURES.get_or_init(|| {
        let dir = scratch!("bitcode-fixtures");
        for (name, source) in [
            ("basic.c", BASIC_C),
            ("common.c", COMMON_C),
            ("sections.c", SECTIONS_C),
            ("comdat.cpp", COMDAT_CPP),
            ("split.cpp", SPLIT_CPP),
            ("other.c", OTHER_TARGETS_C),
        ] {
            std::fs::write(dir.join(name), source).unwrap();
        }
        let elf = "--target=x86_64-pc-linux-gnu";
        let builds: &[(&str, &str, &[&str], &str, usize)] = &[
            ("clang-14", "basic.c", &["-flto", elf], "basic-full.o", 1),
            ("clang-14", "basic.c", &["-flto=thin", elf], "basic-thin.o", 1),
            ("clang-14", "basic.c", &["-flto", "-O2", elf], "basic-o2.o", 1),
            ("clang-14", "common.c", &["-flto", "-fcommon", elf], "common-full.o", 1),
            (
                "clang-14",
                "common.c",
                &["-flto=thin", "-fcommon", elf],
                "common-thin.o",
                1,
            ),
            (
                "clang-14",
                "sections.c",
                &["-flto", "-ffunction-sections", "-fdata-sections", elf],
                "sections-full.o",
                1,
            ),
            (
                "clang-14",
                "sections.c",
                &["-flto=thin", "-ffunction-sections", "-fdata-sections", elf],
                "sections-thin.o",
                1,
            ),
            ("clang++-14", "comdat.cpp", &["-flto", elf], "comdat-full.o", 1),
            ("clang++-14", "comdat.cpp", &["-flto=thin", elf], "comdat-thin.o", 1),
            (
                "clang++-14",
                "split.cpp",
                &[
                    "-flto=thin",
                    "-fsplit-lto-unit",
                    "-fwhole-program-vtables",
                    "-fvisibility=hidden",
                    elf,
                ],
                "split-thin.o",
                2,
            ),
            (
                "clang-14",
                "other.c",
                &["-flto", "--target=x86_64-apple-macosx11"],
                "macho-full.o",
                1,
            ),
            (
                "clang-14",
                "other.c",
                &["-flto=thin", "--target=arm64-apple-macosx11"],
                "macho-arm64-thin.o",
                1,
            ),
            (
                "clang-14",
                "other.c",
                &["-flto", "--target=x86_64-pc-windows-msvc"],
                "coff-full.o",
                1,
            ),
        ];
        let mut files = Vec::new();
        for (compiler, source, flags, output, modules) in builds {
            let mut args = vec!["-c", source, "-o", output];
            args.extend_from_slice(flags);
            run(&dir, compiler, &args);
            files.push((dir.join(output), *modules));
        }
        run(
            &dir,
            "llvm-link-14",
            &["common-full.o", "sections-full.o", "-o", "linked.bc"],
        );
        files.push((dir.join("linked.bc"), 1));
        // `llvm-lto2` merges modules for regular LTO; `-save-temps` keeps the merged module as bitcode. Every
        // global symbol needs a resolution: definitions prevail and are visible outside, as `llvm-nm` shows them.
        let mut args = vec![
            "run".to_string(),
            "-save-temps".to_string(),
            "-o".to_string(),
            "lto2".to_string(),
        ];
        for input in ["common-full.o", "sections-full.o"] {
            args.push(input.to_string());
            for (name, letter) in llvm_nm(&dir.join(input)).remove(0).1 {
                match letter {
                    'U' | 'w' => args.push(format!("-r={input},{name},")),
                    letter if letter.is_ascii_uppercase() => args.push(format!("-r={input},{name},px")),
                    _ => {}
                }
            }
        }
        run(
            &dir,
            "llvm-lto2-14",
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        files.push((dir.join("lto2.0.0.preopt.bc"), 1));
        // `llvm-link` registers no target, so it writes no irsymtab for a module with module asm.
        run(
            &dir,
            "llvm-link-14",
            &["basic-full.o", "common-full.o", "-o", "linked-asm.bc"],
        );
        run(
            &dir,
            "llvm-ar-14",
            &[
                "rcs",
                "lib.a",
                "basic-full.o",
                "comdat-thin.o",
                "split-thin.o",
                "common-full.o",
            ],
        );
        run(
            &dir,
            "llvm-cat-14",
            &["-b", "basic-full.o", "common-full.o", "-o", "cat-binary.bc"],
        );
        run(
            &dir,
            "llvm-cat-14",
            &["basic-full.o", "common-full.o", "-o", "cat-ir.bc"],
        );
        Fixtures {
            archive: dir.join("lib.a"),
            without_table: vec![
                (dir.join("cat-binary.bc"), 2),
                (dir.join("cat-ir.bc"), 2),
                (dir.join("linked-asm.bc"), 1),
            ],
            dir,
            files,
        }
    })
}

fn read_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

fn read<'a>(path: &Path, bytes: &'a [u8]) -> BitcodeSymbolTable<'a> {
    read_symbol_table(bytes).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The letter `llvm-nm-14` prints for a symbol of a bitcode file (`getNMTypeChar`): `w`/`W` for weak
/// references and definitions, `U`, `C`, then `t` for functions and `d` for everything else, upper case when
/// global.
fn nm_letter(symbol: &BitcodeSymbol<'_>) -> char {
    let flags = symbol.flags;
    if flags.is_weak() {
        return if flags.is_undefined() { 'w' } else { 'W' };
    }
    if flags.is_undefined() {
        return 'U';
    }
    if flags.is_common() {
        return 'C';
    }
    let letter = if flags.is_executable() { 't' } else { 'd' };
    if flags.is_global() {
        letter.to_ascii_uppercase()
    } else {
        letter
    }
}

/// The symbols `llvm-nm-14 -P -a --no-sort` prints for `path` (name and type letter), per file: one list for
/// an object, one per member (by member name) for an archive.
fn llvm_nm(path: &Path) -> Vec<(String, Vec<(String, char)>)> {
    let listing = run(
        Path::new("."),
        "llvm-nm-14",
        &["-P", "-a", "--no-sort", &path.to_string_lossy()],
    );
    let mut files: Vec<(String, Vec<(String, char)>)> = Vec::new();
    for line in listing.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [member] = fields.as_slice()
            && let Some(member) = member.strip_suffix(':')
        {
            files.push((member.to_string(), Vec::new()));
            continue;
        }
        let [name, letter, ..] = fields.as_slice() else {
            panic!("unexpected llvm-nm line `{line}`");
        };
        if files.is_empty() {
            files.push((String::new(), Vec::new()));
        }
        let letter = letter.chars().next().unwrap();
        files.last_mut().unwrap().1.push((name.to_string(), letter));
    }
    files
}

/// Our symbols as `llvm-nm` shows them.
fn as_nm(table: &BitcodeSymbolTable<'_>) -> Vec<(String, char)> {
    table
        .symbols
        .iter()
        .map(|symbol| (string(symbol.name), nm_letter(symbol)))
        .collect()
}

/// What `llvm-bcanalyzer-14 -dump` shows of a file: the modules' triples and source file names, the size of
/// the irsymtab blob and the string table blob when it is printable.
#[derive(Debug, Default)]
struct Analysis {
    modules: usize,
    /// The length of each identification block, in 32-bit words.
    identification_words: Vec<u64>,
    triples: Vec<String>,
    source_file_names: Vec<String>,
    symtab_sizes: Vec<usize>,
    strtabs: Vec<Option<String>>,
}

/// The characters of a record's `opN=` operands.
fn record_string(line: &str) -> String {
    line.split_whitespace()
        .filter_map(|field| field.split_once('=').filter(|(key, _)| key.starts_with("op")))
        .map(|(_, value)| value.trim_end_matches("/>").parse::<u8>().unwrap() as char)
        .collect()
}

fn bcanalyzer(path: &Path) -> Analysis {
    let dump = run(
        Path::new("."),
        "llvm-bcanalyzer-14",
        &["-dump", &path.to_string_lossy()],
    );
    let mut analysis = Analysis::default();
    let mut lines = dump.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("<MODULE_BLOCK ") {
            analysis.modules += 1;
        } else if let Some(rest) = trimmed.strip_prefix("<IDENTIFICATION_BLOCK_ID NumWords=") {
            analysis
                .identification_words
                .push(rest.split_whitespace().next().unwrap().parse().unwrap());
        } else if trimmed.starts_with("<TRIPLE ") {
            analysis.triples.push(record_string(trimmed));
        } else if trimmed.starts_with("<SOURCE_FILENAME ") {
            analysis.source_file_names.push(record_string(trimmed));
        } else if trimmed.starts_with("<SYMTAB_BLOCK ") || trimmed.starts_with("<STRTAB_BLOCK ") {
            let blob = lines.next().unwrap_or_default();
            let data = blob
                .split_once("blob data = ")
                .map(|(_, data)| data)
                .unwrap_or_default();
            if trimmed.starts_with("<SYMTAB_BLOCK ") {
                let size = data
                    .strip_prefix("unprintable, ")
                    .and_then(|rest| rest.strip_suffix(" bytes."))
                    .unwrap_or_else(|| panic!("unexpected irsymtab blob line `{blob}`"));
                analysis.symtab_sizes.push(size.parse().unwrap());
            } else {
                analysis.strtabs.push(
                    data.strip_prefix('\'')
                        .and_then(|data| data.strip_suffix('\''))
                        .map(str::to_string),
                );
            }
        }
    }
    analysis
}

/// The IR of each module of `path`, as `llvm-dis-14` prints it (it writes `NAME.ll.0`, `NAME.ll.1`, ... for a
/// file of several modules).
fn llvm_dis(path: &Path, modules: usize) -> Vec<String> {
    let dir = scratch!("bitcode-dis-{}", path.file_name().unwrap().to_string_lossy());
    let output = dir.join("module.ll");
    run(
        &dir,
        "llvm-dis-14",
        &[&path.to_string_lossy(), "-o", &output.to_string_lossy()],
    );
    if modules == 1 {
        return vec![std::fs::read_to_string(&output).unwrap()];
    }
    (0..modules)
        .map(|index| std::fs::read_to_string(dir.join(format!("module.ll.{index}"))).unwrap())
        .collect()
}

/// The line of `ir` that defines or declares the global `name`.
fn declaration<'t>(ir: &'t str, name: &str) -> Option<&'t str> {
    let variable = format!("@{name} = ");
    let function = format!("@{name}(");
    ir.lines().find(|line| {
        line.starts_with(&variable)
            || ((line.starts_with("define ") || line.starts_with("declare ")) && line.contains(&function))
    })
}

/// The globals named in the initializers of `llvm.used` and `llvm.compiler.used`.
fn used_globals(ir: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in ir
        .lines()
        .filter(|line| line.starts_with("@llvm.used = ") || line.starts_with("@llvm.compiler.used = "))
    {
        let initializer = line.split_once(" = ").unwrap().1;
        for piece in initializer.split('@').skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
                .collect();
            used.insert(name);
        }
    }
    used
}

/// The selection kind of every COMDAT the IR declares (`$name = comdat any`).
fn ir_comdats(ir: &str) -> BTreeMap<String, String> {
    ir.lines()
        .filter_map(|line| line.strip_prefix('$'))
        .filter_map(|line| line.split_once(" = comdat "))
        .map(|(name, kind)| (name.to_string(), kind.trim().to_string()))
        .collect()
}

/// Checks the symbols of module `index` of `table` against the module's IR; returns how many were checked.
fn check_against_ir(label: &str, table: &BitcodeSymbolTable<'_>, index: usize, ir: &str) -> usize {
    let module = &table.modules[index];
    let used = used_globals(ir);
    let comdats = ir_comdats(ir);
    let mut checked = 0;
    for symbol in &table.symbols[module.symbols.clone()] {
        let name = string(symbol.ir_name);
        if name.is_empty() {
            // A symbol of module asm: no IR, and used exactly when undefined.
            assert_eq!(
                symbol.flags.is_used(),
                symbol.flags.is_undefined(),
                "{label}: asm symbol {symbol:?}"
            );
            continue;
        }
        let line = declaration(ir, &name).unwrap_or_else(|| panic!("{label}: no declaration of @{name} in the IR"));
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let has = |token: &str| tokens.contains(&token);
        let context = format!("{label}: @{name} ({line})");
        let visibility = if has("hidden") {
            Visibility::Hidden
        } else if has("protected") {
            Visibility::Protected
        } else {
            Visibility::Default
        };
        assert_eq!(symbol.visibility, visibility, "{context}");
        assert_eq!(symbol.flags.is_tls(), line.contains("thread_local"), "{context}");
        assert_eq!(symbol.flags.is_unnamed_addr(), has("unnamed_addr"), "{context}");
        assert_eq!(symbol.flags.is_used(), used.contains(&name), "{context}");
        // LLVM 14 marks aliases indirect, not ifuncs.
        assert_eq!(symbol.flags.is_indirect(), has("alias"), "{context}");
        let is_function = line.starts_with("define ") || line.starts_with("declare ");
        let may_omit = has("linkonce_odr")
            && (has("unnamed_addr") || (has("local_unnamed_addr") && (is_function || has("constant"))));
        assert_eq!(symbol.flags.may_omit(), may_omit, "{context}");
        let section = line
            .split_once(" section \"")
            .map(|(_, rest)| rest.split('"').next().unwrap_or_default());
        assert_eq!(string(symbol.section_name()), section.unwrap_or_default(), "{context}");
        // A COMDAT is named after the global unless the IR names it: `comdat($name)`.
        let comdat = tokens.iter().find_map(|token| {
            let rest = token.strip_prefix("comdat")?;
            let rest = rest.trim_end_matches([',', '{']);
            Some(match rest.strip_prefix("($").and_then(|rest| rest.strip_suffix(')')) {
                Some(named) => named.to_string(),
                None => name.clone(),
            })
        });
        let ours = symbol.comdat.map(|comdat| &table.comdats[comdat as usize]);
        assert_eq!(ours.map(|comdat| string(comdat.name)), comdat, "{context}");
        if let Some(comdat) = ours {
            let kind = match comdat.selection {
                ComdatSelection::Any => "any",
                ComdatSelection::ExactMatch => "exactmatch",
                ComdatSelection::Largest => "largest",
                ComdatSelection::NoDeduplicate => "nodeduplicate",
                ComdatSelection::SameSize => "samesize",
            };
            assert_eq!(
                comdats.get(&string(comdat.name)).map(String::as_str),
                Some(kind),
                "{context}"
            );
        }
        checked += 1;
    }
    checked
}

/// Checks what holds for every table that reads: the modules cover the symbols in order, COMDAT indices are
/// in range, the blobs and every string lie inside the file, common symbols have uncommon data.
fn check_consistent(label: &str, bytes: &[u8], table: &BitcodeSymbolTable<'_>) {
    let mut next = 0;
    let mut previous_end = 0;
    for module in &table.modules {
        assert_eq!(module.symbols.start, next, "{label}: {module:?}");
        assert!(module.symbols.start <= module.symbols.end, "{label}: {module:?}");
        assert!(
            module.range.start >= previous_end && module.range.end <= bytes.len(),
            "{label}: {module:?}"
        );
        next = module.symbols.end;
        previous_end = module.range.end;
    }
    assert_eq!(next, table.symbols.len(), "{label}");
    assert!(
        table.symtab_range.end <= bytes.len() && table.strtab_range.end <= bytes.len(),
        "{label}"
    );
    let strtab = bytes[table.strtab_range.clone()].as_ptr_range();
    let inside = |string: &[u8]| {
        string.is_empty() || (string.as_ptr() >= strtab.start && string.as_ptr_range().end <= strtab.end)
    };
    for symbol in &table.symbols {
        assert!(inside(symbol.name) && inside(symbol.ir_name), "{label}: {symbol:?}");
        assert!(
            symbol
                .comdat
                .is_none_or(|comdat| (comdat as usize) < table.comdats.len()),
            "{label}"
        );
        if let Some(uncommon) = symbol.uncommon {
            assert!(
                inside(uncommon.section_name) && inside(uncommon.coff_weak_external_fallback),
                "{label}"
            );
        }
    }
    for comdat in &table.comdats {
        assert!(inside(comdat.name), "{label}");
    }
    for string in [
        table.producer,
        table.target_triple,
        table.source_file_name,
        table.coff_linker_opts,
    ] {
        assert!(inside(string), "{label}");
    }
}

#[test]
fn every_symbol_matches_llvm_nm_and_the_ir() {
    let fixtures = fixtures();
    let mut symbols = 0;
    let mut ir_checked = 0;
    for (path, modules) in &fixtures.files {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = read_bytes(path);
        assert!(is_bitcode(&bytes), "{label}");
        let table = read(path, &bytes);
        check_consistent(&label, &bytes, &table);
        assert_eq!(table.version, IRSYMTAB_VERSION, "{label}");
        assert!(
            table.producer.starts_with(b"14."),
            "{label}: producer {}",
            string(table.producer)
        );
        assert_eq!(table.modules.len(), *modules, "{label}");

        let nm = llvm_nm(path);
        assert_eq!(nm.len(), 1, "{label}");
        assert_eq!(
            as_nm(&table),
            nm[0].1,
            "{label}: symbols (name, letter) vs llvm-nm -P -a --no-sort"
        );
        symbols += table.symbols.len();

        let irs = llvm_dis(path, *modules);
        assert_eq!(irs.len(), table.modules.len(), "{label}");
        for (index, ir) in irs.iter().enumerate() {
            ir_checked += check_against_ir(&label, &table, index, ir);
            let triple = ir
                .lines()
                .find_map(|line| line.strip_prefix("target triple = \""))
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{label}: no triple in the IR"));
            assert_eq!(
                table.modules[index].triple.as_deref(),
                Some(triple.as_bytes()),
                "{label}"
            );
            if index == 0 {
                assert_eq!(string(table.target_triple), triple, "{label}: triple vs llvm-dis");
            }
        }
    }
    eprintln!(
        "{} files: {symbols} symbols compared with llvm-nm, {ir_checked} with the IR",
        fixtures.files.len()
    );
    assert!(
        symbols > 150 && ir_checked > 100,
        "{symbols} symbols, {ir_checked} checked against the IR"
    );
}

#[test]
fn modules_triples_and_blobs_match_llvm_bcanalyzer() {
    let fixtures = fixtures();
    for (path, _) in &fixtures.files {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = read_bytes(path);
        let table = read(path, &bytes);
        let analysis = bcanalyzer(path);
        assert_eq!(table.modules.len(), analysis.modules, "{label}");
        let per_module = |field: fn(&BitcodeModule) -> &Option<Vec<u8>>| -> Vec<String> {
            table
                .modules
                .iter()
                .map(|module| string(field(module).as_deref().unwrap_or_default()))
                .collect()
        };
        assert_eq!(per_module(|module| &module.triple), analysis.triples, "{label}");
        assert_eq!(
            per_module(|module| &module.source_file_name),
            analysis.source_file_names,
            "{label}"
        );
        assert_eq!(string(table.target_triple), analysis.triples[0], "{label}");
        assert_eq!(string(table.source_file_name), analysis.source_file_names[0], "{label}");
        assert_eq!(analysis.symtab_sizes, [table.symtab_range.len()], "{label}");
        assert_eq!(analysis.strtabs.len(), 1, "{label}");
        if let Some(strtab) = &analysis.strtabs[0] {
            assert_eq!(string(&bytes[table.strtab_range.clone()]), *strtab, "{label}");
        }
        for (module, words) in table.modules.iter().zip(&analysis.identification_words) {
            let identification = module.identification.as_ref().unwrap();
            assert_eq!(string(&identification.producer), "LLVM14.0.6", "{label}");
            assert_eq!(identification.epoch, Some(0), "{label}");
            // Each block's position is just past its id (2 + 8 bits); the identification block's header takes
            // 64 bits (id, width, alignment, length word), then its words.
            assert_eq!(module.identification_bit, Some(10), "{label}");
            assert_eq!(module.module_bit, 64 + 32 * words + 10, "{label}");
        }
    }
}

#[test]
fn the_kinds_of_symbol_read_as_clang_writes_them() {
    let fixtures = fixtures();
    let bytes = read_bytes(&fixtures.dir.join("basic-full.o"));
    let table = read_symbol_table(&bytes).unwrap();
    let symbol = |name: &str| {
        *table
            .symbols
            .iter()
            .find(|symbol| symbol.name == name.as_bytes())
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    assert_eq!(string(table.target_triple), "x86_64-pc-linux-gnu");
    assert_eq!(string(table.source_file_name), "basic.c");
    assert_eq!(table.dependent_libraries, [b"m"]);
    assert!(table.coff_linker_opts.is_empty());
    assert!(table.comdats.is_empty());

    let defined = symbol("defined_function");
    assert!(defined.flags.is_global() && defined.flags.is_executable() && !defined.flags.is_undefined());
    assert!(defined.is_linker_visible() && defined.uncommon.is_none());
    assert_eq!(defined.ir_name, b"defined_function");
    assert!(symbol("undefined_function").flags.is_undefined());
    assert!(symbol("undefined_data").flags.is_undefined() && !symbol("undefined_data").flags.is_executable());
    let weak_undefined = symbol("weak_undefined").flags;
    assert!(weak_undefined.contains(SymbolFlags::WEAK.union(SymbolFlags::UNDEFINED)));
    assert!(symbol("weak_data").flags.is_weak() && !symbol("weak_data").flags.is_undefined());
    assert_eq!(symbol("hidden_data").visibility, Visibility::Hidden);
    assert_eq!(symbol("protected_function").visibility, Visibility::Protected);
    assert!(symbol("tls_data").flags.is_tls() && symbol("tls_undefined").flags.is_tls());
    let used = symbol("used_static");
    assert!(used.flags.is_used() && !used.flags.is_global() && !used.is_linker_visible());
    assert_eq!(symbol("in_section_x").section_name(), b"x");
    assert_eq!(symbol("function_in_y").section_name(), b"y");
    let alias = symbol("alias_of_defined").flags;
    assert!(alias.is_indirect() && alias.is_executable() && !alias.is_weak());
    assert!(
        symbol("weak_alias")
            .flags
            .contains(SymbolFlags::INDIRECT.union(SymbolFlags::WEAK))
    );
    let ifunc = symbol("ifunc_function").flags;
    assert!(ifunc.is_executable() && ifunc.is_global() && !ifunc.is_indirect());
    let private = symbol(".L.str");
    assert_eq!(private.ir_name, b".str");
    assert!(private.flags.is_format_specific() && !private.is_linker_visible());
    assert!(symbol("llvm.compiler.used").flags.is_format_specific());
    let asm = symbol("asm_symbol");
    assert!(asm.ir_name.is_empty() && asm.flags.is_global() && !asm.flags.is_undefined());
    assert!(
        symbol("asm_undefined")
            .flags
            .contains(SymbolFlags::UNDEFINED.union(SymbolFlags::USED))
    );

    let bytes = read_bytes(&fixtures.dir.join("common-full.o"));
    let table = read_symbol_table(&bytes).unwrap();
    let commons: Vec<(String, u64, u32)> = table
        .symbols
        .iter()
        .filter(|symbol| symbol.flags.is_common())
        .map(|symbol| {
            let uncommon = symbol.uncommon.unwrap();
            (string(symbol.name), uncommon.common_size, uncommon.common_align)
        })
        .collect();
    assert_eq!(
        commons,
        [
            ("common_int".to_string(), 4, 4),
            ("common_array".to_string(), 40, 16),
            ("aligned_common".to_string(), 4, 64)
        ]
    );

    let bytes = read_bytes(&fixtures.dir.join("comdat-thin.o"));
    let table = read_symbol_table(&bytes).unwrap();
    let inline = table
        .symbols
        .iter()
        .find(|symbol| symbol.name == b"_Z15inline_functioni")
        .unwrap();
    let comdat = table.comdats[inline.comdat.unwrap() as usize];
    assert_eq!(
        (comdat.name, comdat.selection),
        (&b"_Z15inline_functioni"[..], ComdatSelection::Any)
    );
    assert!(inline.flags.is_weak() && !inline.flags.may_omit());
    let vtable = table.symbols.iter().find(|symbol| symbol.name == b"_ZTV1S").unwrap();
    assert!(vtable.flags.may_omit() && vtable.flags.is_unnamed_addr() && vtable.comdat.is_some());
    assert!(
        table
            .symbols
            .iter()
            .any(|symbol| symbol.name == b"_ZN6HolderIcE5countE" && symbol.comdat.is_some())
    );
}

#[test]
fn the_wrapper_and_other_object_formats() {
    let fixtures = fixtures();
    // Mach-O: the bitcode wrapper, and mangled names with an underscore the IR names do not have.
    for name in ["macho-full.o", "macho-arm64-thin.o"] {
        let bytes = read_bytes(&fixtures.dir.join(name));
        assert!(bytes.starts_with(&[0xde, 0xc0, 0x17, 0x0b]), "{name} has no wrapper");
        let table = read_symbol_table(&bytes).unwrap();
        let offset = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        assert_eq!(
            table.modules[0].range.start,
            offset + 4,
            "{name}: the module starts after the magic"
        );
        for symbol in &table.symbols {
            if !symbol.flags.is_format_specific() {
                assert_eq!(symbol.name, [b"_", symbol.ir_name].concat(), "{name}");
            }
        }
        assert!(string(table.target_triple).ends_with("-apple-macosx11.0.0"), "{name}");
    }
    // COFF: linker directives and the fallback of a weak alias.
    let bytes = read_bytes(&fixtures.dir.join("coff-full.o"));
    let table = read_symbol_table(&bytes).unwrap();
    assert!(string(table.target_triple).starts_with("x86_64-pc-windows-msvc"));
    assert!(
        string(table.coff_linker_opts).contains("/DEFAULTLIB:foo.lib"),
        "{table:?}"
    );
    assert!(table.dependent_libraries.is_empty());
    let alias = table
        .symbols
        .iter()
        .find(|symbol| symbol.name == b"weak_alias")
        .unwrap();
    assert!(alias.flags.is_weak() && alias.flags.is_indirect());
    assert_eq!(alias.uncommon.unwrap().coff_weak_external_fallback, b"defined_function");
}

#[test]
fn a_split_lto_unit_has_two_modules_in_one_table() {
    let fixtures = fixtures();
    let bytes = read_bytes(&fixtures.dir.join("split-thin.o"));
    let table = read_symbol_table(&bytes).unwrap();
    let [first, second] = table.modules.as_slice() else {
        panic!("{:?}", table.modules);
    };
    assert!(first.range.end <= second.range.start && !first.symbols.is_empty() && !second.symbols.is_empty());
    assert_eq!(first.symbols.end, second.symbols.start);
    // The vtable is defined by the second module (the regular LTO part) and referenced by the first.
    let vtable: Vec<bool> = table
        .symbols
        .iter()
        .filter(|symbol| symbol.name == b"_ZTV1A")
        .map(|symbol| symbol.flags.is_undefined())
        .collect();
    assert_eq!(vtable, [true, false]);
}

#[test]
fn archive_members_match_llvm_nm_and_the_archive_map() {
    let fixtures = fixtures();
    let data = read_bytes(&fixtures.archive);
    let archive = object::read::archive::ArchiveFile::parse(&*data).unwrap();
    let nm: BTreeMap<String, Vec<(String, char)>> = llvm_nm(&fixtures.archive).into_iter().collect();
    let mut mapped: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for symbol in archive.symbols().unwrap().unwrap() {
        let symbol = symbol.unwrap();
        let member = archive.member(symbol.offset()).unwrap();
        mapped
            .entry(string(member.name()))
            .or_default()
            .insert(string(symbol.name()));
    }
    let mut members = 0;
    for member in archive.members() {
        let member = member.unwrap();
        let name = string(member.name());
        let bytes = member.data(&*data).unwrap();
        assert_eq!(bytes, read_bytes(&fixtures.dir.join(&name)), "{name}");
        let table = read_symbol_table(bytes).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(as_nm(&table), nm[&name], "{name} vs llvm-nm");
        // `llvm-ar` indexes the global, non-format-specific definitions (aliases included).
        let defined: BTreeSet<String> = table
            .symbols
            .iter()
            .filter(|symbol| symbol.is_linker_visible() && !symbol.flags.is_undefined())
            .map(|symbol| string(symbol.name))
            .collect();
        assert_eq!(
            mapped.get(&name).cloned().unwrap_or_default(),
            defined,
            "{name} vs the archive map"
        );
        members += 1;
    }
    assert_eq!(members, 4);
}

#[test]
fn files_without_a_table_for_every_module_are_refused() {
    let fixtures = fixtures();
    // `llvm-cat` writes no irsymtab (with `-b`, two string tables), nor does `llvm-link` for module asm: LLVM
    // rebuilds one from the IR.
    for (path, modules) in &fixtures.without_table {
        let bytes = read_bytes(path);
        assert_eq!(
            read_symbol_table(&bytes),
            Err(BitcodeError::NoSymbolTable),
            "{}",
            path.display()
        );
        let analysis = bcanalyzer(path);
        assert_eq!(
            (analysis.modules, analysis.symtab_sizes.len()),
            (*modules, 0),
            "{}",
            path.display()
        );
    }
    assert_eq!(read_symbol_table(b"\x7fELF"), Err(BitcodeError::NotBitcode));
    assert!(!is_bitcode(b"BC\xc0"));
}

#[test]
fn the_version_and_the_producer_are_checked() {
    let fixtures = fixtures();
    let bytes = read_bytes(&fixtures.dir.join("basic-thin.o"));
    let table = read_symbol_table(&bytes).unwrap();
    let producer = string(table.producer);
    assert_eq!(producer, "14.0.6");
    assert_eq!(
        read_symbol_table_with(&bytes, ProducerCheck::Exact(&producer)).unwrap(),
        table
    );
    assert!(matches!(
        read_symbol_table_with(&bytes, ProducerCheck::Exact("15.0.0")),
        Err(BitcodeError::UnexpectedProducer { .. })
    ));
    for version in [1, 2, 4, 0xffff_ffff] {
        let mut patched = bytes.clone();
        let at = table.symtab_range.start;
        patched[at..at + 4].copy_from_slice(&u32::to_le_bytes(version));
        let at = table.symtab_range.start;
        assert_eq!(
            read_symbol_table_with(&patched, ProducerCheck::Any),
            Err(BitcodeError::UnsupportedVersion { at, version })
        );
    }
}

#[test]
fn truncated_and_corrupted_files_never_panic() {
    let fixtures = fixtures();
    let mut flips = 0;
    for name in ["basic-full.o", "split-thin.o", "macho-full.o", "comdat-thin.o"] {
        let bytes = read_bytes(&fixtures.dir.join(name));
        let full = read_symbol_table(&bytes).unwrap();
        // Every prefix: an error, or (only a wrapper's padding cut) the same table.
        for length in 0..bytes.len() {
            match read_symbol_table(&bytes[..length]) {
                Ok(table) => assert_eq!(table, full, "{name} cut at {length}"),
                Err(error) => assert!(!error.to_string().is_empty()),
            }
        }
        // A deterministic sample of single bit flips and byte overwrites.
        let mut rng = Rng::new(seed_of(name));
        let mut copy = bytes.clone();
        for round in 0..3000 {
            let at = rng.below(copy.len());
            let original = copy[at];
            copy[at] = if round % 2 == 0 {
                original ^ (1 << rng.below(8))
            } else {
                rng.next_u64() as u8
            };
            let label = format!("{name} with byte {at} = {:#x}", copy[at]);
            match read_symbol_table_with(&copy, ProducerCheck::Any) {
                Ok(table) => check_consistent(&label, &copy, &table),
                Err(error) => assert!(!error.to_string().is_empty()),
            }
            copy[at] = original;
            flips += 1;
        }
        // Within the irsymtab every word matters: overwrite each with a few values.
        for at in (full.symtab_range.start..full.symtab_range.end).step_by(4) {
            for value in [0u32, 1, 0x7fff_ffff, 0xffff_ffff, 24] {
                let mut copy = bytes.clone();
                copy[at..at + 4].copy_from_slice(&value.to_le_bytes());
                let label = format!("{name} with word {at} = {value:#x}");
                match read_symbol_table_with(&copy, ProducerCheck::Any) {
                    Ok(table) => check_consistent(&label, &copy, &table),
                    Err(error) => assert!(!error.to_string().is_empty()),
                }
                flips += 1;
            }
        }
    }
    assert!(flips > 12_000);
}
