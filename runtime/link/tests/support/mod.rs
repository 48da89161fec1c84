//! Helpers of the reader tests: building the fixture programs once per test binary, running binutils
//! (`readelf`, `nm`, `ar`) and the LLVM tools on the same files, and parsing what they print.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use neverc_test_support::{read_text, run_script, text};

/// Where the tests build their fixtures: a directory of the target directory's test scratch space.
fn fixture_root() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("link-read")
}

fn fixture_sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/programs")
}

static PROGRAMS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
static FOREIGN: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// `build.sh`'s output directory (built on first use).
pub fn programs() -> &'static Path {
    let built = PROGRAMS.get_or_init(|| {
        let out = fixture_root().join("programs");
        run_script(&fixture_sources().join("build.sh"), &out).map(|()| out)
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!("building the fixture programs failed (gcc, g++, binutils needed): {message}"),
    }
}

/// `foreign.sh`'s output directory `OUTDIR/foreign` (built on first use).
pub fn foreign() -> &'static Path {
    let built = FOREIGN.get_or_init(|| {
        let out = fixture_root().join("foreign-out");
        run_script(&fixture_sources().join("foreign/foreign.sh"), &out).map(|()| out.join("foreign"))
    });
    match built {
        Ok(path) => path,
        Err(message) => panic!(
            "building the foreign objects failed (Debian packages gcc-aarch64-linux-gnu and clang-14 needed): {message}"
        ),
    }
}

/// The fixture programs, in build order.
pub fn program_names() -> Vec<String> {
    let list = read_text(&programs().join("programs.txt"));
    list.lines()
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The files of every program directory whose name ends with `suffix`, sorted.
fn program_files(suffix: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for program in program_names() {
        let dir = programs().join(&program);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            panic!("cannot list {}", dir.display());
        };
        let mut names: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.to_string_lossy().ends_with(suffix))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
}

/// Every x86_64 relocatable object `build.sh` made (link inputs and archive members).
pub fn x86_objects() -> Vec<PathBuf> {
    program_files(".o")
}

/// Every archive `build.sh` made (`libx.a`, `libx_thin.a`).
pub fn archives() -> Vec<PathBuf> {
    program_files(".a")
}

/// The four objects of `foreign.sh`.
pub fn foreign_objects() -> Vec<PathBuf> {
    [
        "aarch64-linux.o",
        "x86_64-windows.obj",
        "x86_64-macos.o",
        "arm64-macos.o",
    ]
    .iter()
    .map(|name| foreign().join(name))
    .collect()
}

/// The link inputs of `program`, in link order, as absolute paths.
pub fn program_inputs(program: &str) -> Vec<PathBuf> {
    let dir = programs().join(program);
    read_text(&dir.join("inputs.txt"))
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| dir.join(line))
        .collect()
}

pub fn read_bytes(path: &Path) -> Vec<u8> {
    match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) => panic!("cannot read {}: {error}", path.display()),
    }
}

/// The input name the tests give a file: its full path (thin archives find members next to it).
pub fn input_name(path: &Path) -> String {
    path.display().to_string()
}

/// Runs a tool and returns its stdout; a failure panics with the command and stderr.
pub fn tool(program: &str, args: &[&str], cwd: Option<&Path>) -> String {
    let mut command = Command::new(program);
    command.args(args).env("LC_ALL", "C");
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => panic!("cannot run {program}: {error}"),
    };
    if !output.status.success() {
        panic!(
            "{program} {args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    text(&output.stdout)
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

fn hex(text: &str) -> u64 {
    let digits = text.trim_start_matches("0x");
    match u64::from_str_radix(digits, 16) {
        Ok(value) => value,
        Err(error) => panic!("not a hex number `{text}`: {error}"),
    }
}

fn dec(text: &str) -> u64 {
    match text.parse() {
        Ok(value) => value,
        Err(error) => panic!("not a decimal number `{text}`: {error}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// readelf

/// One line of `readelf -SW`.
#[derive(Clone, Debug)]
pub struct ElfSection {
    pub index: u32,
    pub name: String,
    pub sh_type: String,
    pub offset: u64,
    pub size: u64,
    pub entsize: u64,
    /// The `Flg` letters (`WAX`, `AMS`, ...).
    pub flags: String,
    pub link: u32,
    pub info: u32,
    pub align: u64,
}

impl ElfSection {
    pub fn has_flag(&self, letter: char) -> bool {
        self.flags.contains(letter)
    }

    /// Sections that are structure rather than content (the reader places none of them).
    pub fn is_structural(&self) -> bool {
        matches!(
            self.sh_type.as_str(),
            "NULL" | "SYMTAB" | "STRTAB" | "RELA" | "REL" | "GROUP" | "SYMTAB_SHNDX" | "RELR" | "CREL"
        )
    }
}

/// `readelf -SW FILE`, every section header including index 0.
pub fn readelf_sections(path: &Path) -> Vec<ElfSection> {
    let text = tool("readelf", &["-SW", &path_arg(path)], None);
    let mut sections = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((index, rest)) = rest.split_once(']') else {
            continue;
        };
        let Ok(index) = index.trim().parse::<u32>() else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // Section 0 has no name: [ 0]  NULL  addr off size es lk inf al.
        let fields: Vec<&str> = if fields.first() == Some(&"NULL") && index == 0 {
            std::iter::once("").chain(fields).collect()
        } else {
            fields
        };
        let (flags, tail) = match fields.len() {
            10 => (fields[6], &fields[7..]),
            9 => ("", &fields[6..]),
            other => panic!("unexpected readelf -SW line ({other} fields): {line}"),
        };
        sections.push(ElfSection {
            index,
            name: fields[0].to_string(),
            sh_type: fields[1].to_string(),
            offset: hex(fields[3]),
            size: hex(fields[4]),
            entsize: hex(fields[5]),
            flags: flags.to_string(),
            link: dec(tail[0]) as u32,
            info: dec(tail[1]) as u32,
            align: dec(tail[2]),
        });
    }
    assert!(
        !sections.is_empty(),
        "readelf -SW {} printed no sections",
        path.display()
    );
    sections
}

/// One line of `readelf -sW`.
#[derive(Clone, Debug)]
pub struct ElfSymbol {
    pub index: u32,
    pub value: u64,
    pub size: u64,
    pub symbol_type: String,
    pub bind: String,
    pub visibility: String,
    /// `UND`, `ABS`, `COM` or a section index.
    pub ndx: String,
    /// As readelf prints it (section symbols show their section's name).
    pub name: String,
}

/// `readelf -sW FILE`: the `.symtab` entries, index 0 included.
pub fn readelf_symbols(path: &Path) -> Vec<ElfSymbol> {
    let text = tool("readelf", &["-sW", &path_arg(path)], None);
    let mut symbols = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 7 {
            continue;
        }
        let Some(index) = fields[0].strip_suffix(':').and_then(|index| index.parse::<u32>().ok()) else {
            continue;
        };
        let size = if let Some(hex_size) = fields[2].strip_prefix("0x") {
            hex(hex_size)
        } else {
            dec(fields[2])
        };
        symbols.push(ElfSymbol {
            index,
            value: hex(fields[1]),
            size,
            symbol_type: fields[3].to_string(),
            bind: fields[4].to_string(),
            visibility: fields[5].to_string(),
            ndx: fields[6].to_string(),
            name: fields.get(7).map_or(String::new(), |name| (*name).to_string()),
        });
    }
    symbols
}

/// One relocation of `readelf -rW`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ElfRelocation {
    pub offset: u64,
    /// `ELF64_R_TYPE(r_info)`.
    pub r_type: u32,
    /// `ELF64_R_SYM(r_info)`.
    pub symbol: u32,
    pub addend: i64,
    /// readelf's name of the type (`R_X86_64_PC32`).
    pub type_name: String,
}

/// `readelf -rW FILE`, keyed by the index of the section the relocations patch (`sh_info` of the
/// relocation section).
pub fn readelf_relocations(path: &Path, sections: &[ElfSection]) -> BTreeMap<u32, Vec<ElfRelocation>> {
    let text = tool("readelf", &["-rW", &path_arg(path)], None);
    let mut result: BTreeMap<u32, Vec<ElfRelocation>> = BTreeMap::new();
    let mut current: Option<u32> = None;
    let mut announced: BTreeMap<u32, u64> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Relocation section '") {
            let Some((name, rest)) = rest.split_once('\'') else {
                panic!("unexpected readelf -rW header: {line}");
            };
            let offset = rest
                .split_whitespace()
                .skip_while(|word| *word != "offset")
                .nth(1)
                .map(hex)
                .unwrap_or_else(|| panic!("no offset in readelf -rW header: {line}"));
            let entries = rest
                .split_whitespace()
                .skip_while(|word| *word != "contains")
                .nth(1)
                .map(dec)
                .unwrap_or_else(|| panic!("no entry count in readelf -rW header: {line}"));
            let section = sections
                .iter()
                .find(|section| section.name == name && section.offset == offset)
                .unwrap_or_else(|| panic!("relocation section {name} at {offset:#x} not in readelf -SW"));
            current = Some(section.info);
            *announced.entry(section.info).or_default() += entries;
            result.entry(section.info).or_default();
            continue;
        }
        let Some(target) = current else { continue };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 || fields[0] == "Offset" || u64::from_str_radix(fields[0], 16).is_err() {
            continue;
        }
        let info = hex(fields[1]);
        let addend = match fields.len() {
            // offset info type value name +/- addend
            7 => {
                let magnitude = hex(fields[6]) as i64;
                if fields[5] == "-" { -magnitude } else { magnitude }
            }
            // offset info type addend (no symbol)
            4 => hex(fields[3]) as i64,
            3 => 0,
            _ => panic!("unexpected readelf -rW line: {line}"),
        };
        let list = result.entry(target).or_default();
        list.push(ElfRelocation {
            offset: hex(fields[0]),
            r_type: (info & 0xffff_ffff) as u32,
            symbol: (info >> 32) as u32,
            addend,
            type_name: fields[2].to_string(),
        });
    }
    for (target, count) in &announced {
        let parsed = result.get(target).map_or(0, Vec::len) as u64;
        assert_eq!(
            parsed,
            *count,
            "{}: parsed relocations of section {target}",
            path.display()
        );
    }
    result
}

/// One group of `readelf -gW`: its signature and member section indices.
#[derive(Clone, Debug)]
pub struct ElfGroup {
    pub comdat: bool,
    pub signature: String,
    pub members: Vec<u32>,
}

pub fn readelf_groups(path: &Path) -> Vec<ElfGroup> {
    let text = tool("readelf", &["-gW", &path_arg(path)], None);
    let mut groups: Vec<ElfGroup> = Vec::new();
    for line in text.lines() {
        if line.contains("group section [") {
            // COMDAT group section [    1] `.group' [_Z4bumpv] contains 2 sections:
            let signature = line
                .split_once("' [")
                .and_then(|(_, rest)| rest.rsplit_once("] contains"))
                .map(|(signature, _)| signature.to_string())
                .unwrap_or_else(|| panic!("unexpected readelf -gW line: {line}"));
            groups.push(ElfGroup {
                comdat: line.starts_with("COMDAT"),
                signature,
                members: Vec::new(),
            });
        } else if let Some(rest) = line.trim_start().strip_prefix('[')
            && let Some((index, _)) = rest.split_once(']')
            && let Ok(index) = index.trim().parse::<u32>()
            && let Some(group) = groups.last_mut()
        {
            group.members.push(index);
        }
    }
    groups
}

/// One FDE of `readelf --debug-dump=frames`: its offset in `.eh_frame` and its length field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fde {
    pub offset: u64,
    pub length: u64,
}

pub fn readelf_fdes(path: &Path) -> Vec<Fde> {
    let text = tool("readelf", &["--debug-dump=frames", &path_arg(path)], None);
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() >= 4 && fields[3] == "FDE").then(|| Fde {
                offset: hex(fields[0]),
                length: hex(fields[1]),
            })
        })
        .collect()
}

/// `nm -A -g --defined-only ARCHIVE`, run in the archive's directory: member name → defined global names.
pub fn nm_archive_definitions(archive: &Path) -> BTreeMap<String, Vec<String>> {
    let (dir, file) = split(archive);
    let text = tool("nm", &["-A", "-g", "--defined-only", &file], Some(&dir));
    let mut result: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        // libx.a:x_alpha.o:0000000000000000 T x_alpha
        let Some(rest) = line.strip_prefix(&format!("{file}:")) else {
            continue;
        };
        let Some((member, symbol)) = rest.split_once(':') else {
            continue;
        };
        let Some(name) = symbol.split_whitespace().last() else {
            continue;
        };
        result.entry(member.to_string()).or_default().push(name.to_string());
    }
    result
}

/// `nm --print-armap ARCHIVE`: the archive's symbol index, (symbol, member) in index order.
pub fn nm_armap(archive: &Path) -> Vec<(String, String)> {
    let (dir, file) = split(archive);
    let text = tool("nm", &["--print-armap", &file], Some(&dir));
    let mut result = Vec::new();
    let mut in_index = false;
    for line in text.lines() {
        if line == "Archive index:" {
            in_index = true;
        } else if line.is_empty() {
            if in_index && !result.is_empty() {
                break;
            }
        } else if in_index && let Some((symbol, member)) = line.split_once(" in ") {
            result.push((symbol.to_string(), member.to_string()));
        }
    }
    result
}

/// `ar t ARCHIVE`, run in the archive's directory: member names as stored.
pub fn ar_members(archive: &Path) -> Vec<String> {
    let (dir, file) = split(archive);
    tool("ar", &["t", &file], Some(&dir))
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

fn split(path: &Path) -> (PathBuf, String) {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let file = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, file)
}

// ---------------------------------------------------------------------------------------------------------
// LLVM tools (COFF and Mach-O, which binutils on Debian can not read completely)

/// `llvm-readobj-14 -r FILE`: section name → relocation type names, in the order printed.
pub fn llvm_relocations(path: &Path) -> BTreeMap<String, Vec<String>> {
    let text = tool("llvm-readobj-14", &["-r", &path_arg(path)], None);
    let mut result: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Section ")
            && let Some(rest) = rest.strip_suffix(" {")
        {
            // COFF: `Section (1) .text {`; Mach-O: `Section __text {`.
            let name = rest.rsplit(' ').next().unwrap_or(rest).to_string();
            result.entry(name.clone()).or_default();
            current = Some(name);
        } else if line == "}" {
            current = None;
        } else if let Some(section) = &current
            && let Some(type_name) = line
                .split_whitespace()
                .find(|word| word.starts_with("IMAGE_REL_") || word.contains("_RELOC_"))
        {
            result.entry(section.clone()).or_default().push(type_name.to_string());
        }
    }
    result
}

/// One line of `llvm-nm-14 -a`.
#[derive(Clone, Debug)]
pub struct NmSymbol {
    pub value: Option<u64>,
    pub letter: char,
    pub name: String,
}

pub fn llvm_nm(path: &Path) -> Vec<NmSymbol> {
    let text = tool("llvm-nm-14", &["-a", &path_arg(path)], None);
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [letter, name] if letter.len() == 1 => Some(NmSymbol {
                    value: None,
                    letter: letter.chars().next().unwrap_or('?'),
                    name: (*name).to_string(),
                }),
                [value, letter, name] if letter.len() == 1 => Some(NmSymbol {
                    value: u64::from_str_radix(value, 16).ok(),
                    letter: letter.chars().next().unwrap_or('?'),
                    name: (*name).to_string(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// One line of `llvm-objdump-14 -h`: name, size, address.
#[derive(Clone, Debug)]
pub struct ObjdumpSection {
    pub name: String,
    pub size: u64,
    pub address: u64,
    pub section_type: String,
}

pub fn llvm_sections(path: &Path) -> Vec<ObjdumpSection> {
    let text = tool("llvm-objdump-14", &["-h", &path_arg(path)], None);
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 4 || fields[0].parse::<u32>().is_err() {
                return None;
            }
            Some(ObjdumpSection {
                name: fields[1].to_string(),
                size: hex(fields[2]),
                address: hex(fields[3]),
                section_type: fields.get(4).map_or(String::new(), |kind| (*kind).to_string()),
            })
        })
        .collect()
}
