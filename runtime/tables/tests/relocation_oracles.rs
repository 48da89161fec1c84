#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The bundled relocation tables against the tools that define ELF relocations: glibc's `elf.h` (machine
//! numbers, relocation numbers and names), GNU as and readelf (every declared name assembles to the declared
//! number and reads back under the declared name), and ld.bfd (for every relocation it resolves without a
//! GOT or TLS block, the bits it writes are the bits `RelocationRecord::insert` computes, and it refuses a
//! value at the edges of a field exactly when `RelocationRecord::fits` does).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use neverc_tables::{
    Overflow, RelocationBase, RelocationFormat, RelocationKind, RelocationRecord, TargetRecord, target_by_name,
};
use neverc_test_support::{read_text, run_in, scratch, text};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

/// The GNU tools of a bundled target.
struct Tools {
    target: &'static str,
    assembler: &'static str,
    linker: &'static str,
    /// A data directive as wide as the widest place (the `.reloc`s of a listing patch it).
    word: &'static str,
}

const TOOLS: [Tools; 3] = [
    Tools {
        target: "x86_64",
        assembler: "as",
        linker: "ld",
        word: ".quad 0",
    },
    Tools {
        target: "aarch64",
        assembler: "aarch64-linux-gnu-as",
        linker: "aarch64-linux-gnu-ld",
        word: ".xword 0",
    },
    Tools {
        target: "riscv64",
        assembler: "riscv64-linux-gnu-as",
        linker: "riscv64-linux-gnu-ld",
        word: ".dword 0",
    },
];

/// Declared names glibc's `elf.h` does not define; GNU as and readelf still know them (checked below).
/// `R_AARCH64_TLS_DTPMOD64`, `_DTPREL64` and `_TPREL64` are GNU's names (as and readelf) of what `elf.h` calls
/// `R_AARCH64_TLS_DTPMOD`, `_DTPREL` and `_TPREL`.
const NOT_IN_ELF_H: &[&str] = &[
    "R_AARCH64_NULL",
    "R_AARCH64_TLS_DTPMOD64",
    "R_AARCH64_TLS_DTPREL64",
    "R_AARCH64_TLS_TPREL64",
];

fn target(name: &str) -> &'static TargetRecord {
    target_by_name(name).unwrap_or_else(|| panic!("no bundled target {name}"))
}

/// `#define NAME NUMBER` lines of glibc's `elf.h`.
fn elf_h() -> BTreeMap<String, u64> {
    let mut defines = BTreeMap::new();
    for line in read_text(Path::new("/usr/include/elf.h")).lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        if let (Some(name), Some(Ok(value))) = (words.next(), words.next().map(str::parse::<u64>)) {
            defines.insert(name.to_string(), value);
        }
    }
    defines
}

#[test]
fn machines_relocation_numbers_and_names_agree_with_elf_h() {
    let defines = elf_h();
    let mut checked = 0;
    for (name, machine, prefix) in [
        ("x86_64", "EM_X86_64", "R_X86_64_"),
        ("aarch64", "EM_AARCH64", "R_AARCH64_"),
        ("riscv64", "EM_RISCV", "R_RISCV_"),
    ] {
        let target = target(name);
        let elf = target.elf.unwrap_or_else(|| panic!("{name} declares no ELF facts"));
        assert_eq!(Some(&u64::from(elf.machine)), defines.get(machine), "{name}: {machine}");
        assert_eq!(elf.class, target.pointer_width, "{name}");
        for relocation in target.relocations {
            assert!(relocation.name.starts_with(prefix), "{name}: {}", relocation.name);
            assert_eq!(relocation.format, RelocationFormat::Elf);
            match defines.get(relocation.name) {
                Some(number) => assert_eq!(*number, u64::from(relocation.number), "{}", relocation.name),
                None => assert!(
                    NOT_IN_ELF_H.contains(&relocation.name),
                    "{} is not in elf.h",
                    relocation.name
                ),
            }
            checked += 1;
        }
    }
    assert!(checked >= 75, "only {checked} relocations checked");
}

/// Assembles `source` for `tools` into `dir/name.o`.
fn assemble(tools: &Tools, dir: &Path, name: &str, source: &str) -> PathBuf {
    let input = dir.join(format!("{name}.s"));
    let output = dir.join(format!("{name}.o"));
    std::fs::write(&input, source).unwrap();
    let result = run_in(
        tools.assembler,
        dir,
        &[input.to_str().unwrap(), "-o", output.to_str().unwrap()],
    );
    assert!(result.status.success(), "{}: {}", tools.assembler, text(&result.stderr));
    output
}

/// (type number, type name) of every relocation `readelf -rW` prints for `object`, in order.
fn readelf_relocations(object: &Path) -> Vec<(u32, String)> {
    let output = run_in("readelf", Path::new("/"), &["-rW", object.to_str().unwrap()]);
    assert!(output.status.success(), "readelf: {}", text(&output.stderr));
    text(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (_offset, info, name) = (words.next()?, words.next()?, words.next()?);
            let info = u64::from_str_radix(info, 16).ok()?;
            name.starts_with("R_")
                .then(|| ((info & 0xffff_ffff) as u32, name.to_string()))
        })
        .collect()
}

#[test]
fn gnu_as_and_readelf_agree_on_every_declared_number_and_name() {
    let dir = scratch!("relocation-oracles-names");
    for tools in &TOOLS {
        let target = target(tools.target);
        let mut source = String::from(".text\n");
        for relocation in target.relocations {
            source.push_str(&format!(".reloc ., {}, t\n", relocation.name));
        }
        source.push_str(tools.word);
        source.push('\n');
        let object = assemble(tools, &dir, tools.target, &source);
        let read: Vec<(u32, String)> = readelf_relocations(&object);
        let declared: Vec<(u32, String)> = target
            .relocations
            .iter()
            .map(|relocation| (relocation.number, relocation.name.to_string()))
            .collect();
        assert_eq!(read, declared, "{}", tools.target);
    }
}

/// The relocation of `target` that ELF type `number` is.
fn record(target: &'static TargetRecord, number: u32) -> &'static RelocationRecord {
    target
        .relocation(RelocationFormat::Elf, number)
        .unwrap_or_else(|| panic!("{}: relocation type {number} is not declared", target.name))
}

/// The value of a relocation of `record` against `s + a` at place `p`, when it needs no GOT or TLS block.
fn value_of(record: &RelocationRecord, s_plus_a: u64, p: u64) -> Option<i64> {
    let value = match record.relative_to {
        RelocationBase::Nothing => s_plus_a,
        RelocationBase::Place => s_plus_a.wrapping_sub(p),
        RelocationBase::Page => (s_plus_a & !0xfff).wrapping_sub(p & !0xfff),
        RelocationBase::Got | RelocationBase::GotPage | RelocationBase::GlobalPointer => return None,
    };
    Some(value as i64)
}

/// The `size / 8` bytes at `offset` of `data`, little end first.
fn read_place(data: &[u8], offset: usize, size: u32) -> u64 {
    let bytes = &data[offset..offset + size as usize / 8];
    bytes.iter().rev().fold(0, |value, byte| value << 8 | u64::from(*byte))
}

fn low_bits(size: u32) -> u64 {
    if size >= 64 { u64::MAX } else { (1 << size) - 1 }
}

/// Instructions and data with a relocation of every kind ld.bfd resolves without a GOT or TLS, per target,
/// with the absolute symbols they name, and the relocations they must produce.
fn listing(target: &str) -> (&'static str, &'static [(&'static str, u64)], &'static [&'static str]) {
    match target {
        "x86_64" => (
            ".text
.globl _start
_start:
 movabs $target, %rax
 movl $target, %eax
 movl target, %eax
 leaq target(%rip), %rax
 call far
 jmp far
.data
 .quad target
 .long target
 .quad target - .
 .long target - .
 .word small
 .word near16 - .
 .byte tiny
 .byte near8 - .
 .reloc ., R_X86_64_SIZE32, sized + 3
 .long 0
 .reloc ., R_X86_64_SIZE64, sized
 .quad 0
 .globl sized
 .type sized, @object
 .size sized, 24
sized:
 .zero 24
",
            &[
                ("target", 0x1234_5670),
                ("far", 0x50_0000),
                ("small", 0x1234),
                ("tiny", 0x7f),
                ("near16", 0x60_0100),
                ("near8", 0x60_0040),
            ],
            &[
                "R_X86_64_64",
                "R_X86_64_32",
                "R_X86_64_32S",
                "R_X86_64_PC32",
                "R_X86_64_PLT32",
                "R_X86_64_PC64",
                "R_X86_64_16",
                "R_X86_64_PC16",
                "R_X86_64_8",
                "R_X86_64_PC8",
                "R_X86_64_SIZE32",
                "R_X86_64_SIZE64",
            ],
        ),
        "riscv64" => (
            ".option norelax
.option rvc
.text
.globl _start
_start:
 lui a0, %hi(target)
 addi a0, a0, %lo(target)
 sw a0, %lo(target)(a1)
1: auipc a0, %pcrel_hi(target)
 addi a0, a0, %pcrel_lo(1b)
2: auipc a1, %pcrel_hi(target + 8)
 sd a0, %pcrel_lo(2b)(a1)
 .reloc ., R_RISCV_BRANCH, near
 .4byte 0x00b50063 # beq a0, a1, 0: raw, so that GNU as adds no relocation of its own
 jal far
 call far
 tail far
 .reloc ., R_RISCV_CALL, far
 .4byte 0x00000097 # auipc ra, 0
 .4byte 0x000080e7 # jalr ra, 0(ra): raw, the pair the deprecated R_RISCV_CALL patches
 .reloc ., R_RISCV_RVC_BRANCH, cnear
 .2byte 0xc101 # c.beqz a0, 0
 .reloc ., R_RISCV_RVC_JUMP, cnear
 .2byte 0xa001 # c.j 0
 .reloc ., R_RISCV_RVC_LUI, small
 .2byte 0x6505 # c.lui a0, 1
.data
 .dword target
 .word target
 .reloc ., R_RISCV_32_PCREL, near16
 .word 0
 .reloc ., R_RISCV_SET8, tiny
 .byte 0
 .reloc ., R_RISCV_SET16, small
 .half 0
 .reloc ., R_RISCV_SET32, target
 .word 0
 .reloc ., R_RISCV_SET6, tiny
 .byte 0xc0
 .reloc ., R_RISCV_SUB6, tiny
 .byte 0x45
 .reloc ., R_RISCV_ADD8, tiny
 .byte 5
 .reloc ., R_RISCV_ADD16, small
 .half 0x100
 .reloc ., R_RISCV_ADD32, target
 .word 0x1000
 .reloc ., R_RISCV_ADD64, target
 .dword 0x10000
 .reloc ., R_RISCV_SUB8, tiny
 .byte 0x90
 .reloc ., R_RISCV_SUB16, small
 .half 0x5000
 .reloc ., R_RISCV_SUB32, target
 .word 0x20000000
 .reloc ., R_RISCV_SUB64, target
 .dword 0x20000000
",
            &[
                ("target", 0x1234_5670),
                ("far", 0x48_0000),
                ("near", 0x40_0800),
                ("cnear", 0x40_0100),
                ("small", 0x1234),
                ("tiny", 0x1f),
                ("near16", 0x60_0100),
            ],
            &[
                "R_RISCV_HI20",
                "R_RISCV_LO12_I",
                "R_RISCV_LO12_S",
                "R_RISCV_PCREL_HI20",
                "R_RISCV_PCREL_LO12_I",
                "R_RISCV_PCREL_LO12_S",
                "R_RISCV_BRANCH",
                "R_RISCV_JAL",
                "R_RISCV_CALL_PLT",
                "R_RISCV_CALL",
                "R_RISCV_RVC_BRANCH",
                "R_RISCV_RVC_JUMP",
                "R_RISCV_RVC_LUI",
                "R_RISCV_64",
                "R_RISCV_32",
                "R_RISCV_32_PCREL",
                "R_RISCV_SET8",
                "R_RISCV_SET16",
                "R_RISCV_SET32",
                "R_RISCV_SET6",
                "R_RISCV_SUB6",
                "R_RISCV_ADD8",
                "R_RISCV_ADD16",
                "R_RISCV_ADD32",
                "R_RISCV_ADD64",
                "R_RISCV_SUB8",
                "R_RISCV_SUB16",
                "R_RISCV_SUB32",
                "R_RISCV_SUB64",
            ],
        ),
        _ => (
            ".text
.globl _start
_start:
 adrp x0, target
 adrp x0, :pg_hi21_nc:target
 adr x0, near
 add x0, x0, :lo12:target
 ldrb w0, [x0, :lo12:target]
 ldrh w0, [x0, :lo12:target]
 ldr w0, [x0, :lo12:target]
 ldr x0, [x0, :lo12:target]
 ldr q0, [x0, :lo12:target]
 bl far
 b far
 b.eq near
 tbz x0, #3, near
 ldr x0, near
 movz x0, #:abs_g0:small
 movk x0, #:abs_g0_nc:target
 movz x0, #:abs_g1:target
 movk x0, #:abs_g1_nc:target
 movz x0, #:abs_g2:big
 movk x0, #:abs_g2_nc:big
 movk x0, #:abs_g3:big
.data
 .xword target
 .word target
 .hword small
 .xword target - .
 .word target - .
 .hword near16 - .
",
            &[
                ("target", 0x1234_5670),
                ("far", 0x50_0000),
                ("near", 0x40_0800),
                ("small", 0x1234),
                ("big", 0x1234_5678_9ab0),
                ("near16", 0x60_0100),
            ],
            &[
                "R_AARCH64_ADR_PREL_PG_HI21",
                "R_AARCH64_ADR_PREL_PG_HI21_NC",
                "R_AARCH64_ADR_PREL_LO21",
                "R_AARCH64_ADD_ABS_LO12_NC",
                "R_AARCH64_LDST8_ABS_LO12_NC",
                "R_AARCH64_LDST16_ABS_LO12_NC",
                "R_AARCH64_LDST32_ABS_LO12_NC",
                "R_AARCH64_LDST64_ABS_LO12_NC",
                "R_AARCH64_LDST128_ABS_LO12_NC",
                "R_AARCH64_CALL26",
                "R_AARCH64_JUMP26",
                "R_AARCH64_CONDBR19",
                "R_AARCH64_TSTBR14",
                "R_AARCH64_LD_PREL_LO19",
                "R_AARCH64_MOVW_UABS_G0",
                "R_AARCH64_MOVW_UABS_G0_NC",
                "R_AARCH64_MOVW_UABS_G1",
                "R_AARCH64_MOVW_UABS_G1_NC",
                "R_AARCH64_MOVW_UABS_G2",
                "R_AARCH64_MOVW_UABS_G2_NC",
                "R_AARCH64_MOVW_UABS_G3",
                "R_AARCH64_ABS64",
                "R_AARCH64_ABS32",
                "R_AARCH64_ABS16",
                "R_AARCH64_PREL64",
                "R_AARCH64_PREL32",
                "R_AARCH64_PREL16",
            ],
        ),
    }
}

/// Links `object` with `tools` at text 0x400000 and data 0x600000, defining `symbols`; whether ld succeeded,
/// and what it said.
fn link(tools: &Tools, object: &Path, output: &Path, symbols: &[(&str, u64)]) -> (bool, String) {
    let mut args: Vec<String> = vec![
        // RISC-V: the places keep the instructions they were assembled with (no relaxation).
        "--no-relax".into(),
        "-static".into(),
        "-e".into(),
        "0".into(),
        "-Ttext=0x400000".into(),
        "-Tdata=0x600000".into(),
        "-o".into(),
        output.display().to_string(),
        object.display().to_string(),
    ];
    args.extend(
        symbols
            .iter()
            .map(|(name, value)| format!("--defsym={name}={value:#x}")),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = run_in(tools.linker, Path::new("/"), &args);
    (result.status.success(), text(&result.stderr))
}

#[test]
fn ld_writes_the_bits_the_records_compute() {
    let dir = scratch!("relocation-oracles-bits");
    for tools in &TOOLS {
        let target = target(tools.target);
        let (source, symbols, expected) = listing(tools.target);
        let object_path = assemble(tools, &dir, tools.target, source);
        let executable_path = dir.join(tools.target);
        let (linked, messages) = link(tools, &object_path, &executable_path, symbols);
        assert!(linked, "{}: {messages}", tools.linker);
        let object_bytes = std::fs::read(&object_path).unwrap();
        let executable_bytes = std::fs::read(&executable_path).unwrap();
        let object = object::File::parse(&*object_bytes).unwrap();
        let executable = object::File::parse(&*executable_bytes).unwrap();
        let mut seen = BTreeSet::new();
        for section in object.sections() {
            let Ok(name) = section.name() else { continue };
            let Some(linked) = executable.section_by_name(name) else {
                continue;
            };
            let (original, patched) = (section.data().unwrap(), linked.data().unwrap());
            for (offset, relocation) in section.relocations() {
                let RelocationFlags::Elf { r_type } = relocation.flags() else {
                    panic!("not ELF")
                };
                let record = record(target, r_type);
                let RelocationTarget::Symbol(index) = relocation.target() else {
                    panic!("{}: not against a symbol", record.name)
                };
                // S + A of a relocation of the object, from the linked executable's symbols.
                let s_plus_a_of = |relocation: &object::Relocation| {
                    let RelocationTarget::Symbol(index) = relocation.target() else {
                        panic!("{}: not against a symbol", record.name)
                    };
                    let name = object.symbol_by_index(index).unwrap().name().unwrap();
                    let symbol = executable.symbols().find(|symbol| symbol.name() == Ok(name)).unwrap();
                    let address = symbol.address().wrapping_add(relocation.addend() as u64);
                    (symbol, address)
                };
                let offset_in_section = offset;
                let place = linked.address() + offset;
                let offset = offset as usize;
                let before = read_place(original, offset, record.size);
                let after = read_place(patched, offset, record.size);
                let value = match record.kind {
                    RelocationKind::Symbol | RelocationKind::Branch => {
                        value_of(record, s_plus_a_of(&relocation).1, place).unwrap()
                    }
                    RelocationKind::Size => s_plus_a_of(&relocation)
                        .0
                        .size()
                        .wrapping_add(relocation.addend() as u64) as i64,
                    // The high part at the label: its value relative to its own place.
                    RelocationKind::PairedLow => {
                        let label = object.symbol_by_index(index).unwrap().address();
                        let (_, high) = section
                            .relocations()
                            .find(|(at, _)| *at == label && *at != offset_in_section)
                            .unwrap_or_else(|| panic!("{}: no high part at its label", record.name));
                        s_plus_a_of(&high).1.wrapping_sub(linked.address() + label) as i64
                    }
                    RelocationKind::Add => record.extract(before).wrapping_add(s_plus_a_of(&relocation).1) as i64,
                    RelocationKind::Subtract => record.extract(before).wrapping_sub(s_plus_a_of(&relocation).1) as i64,
                    other => panic!("{}: kind {other:?} is not in the listing", record.name),
                };
                assert!(
                    record.fits(value),
                    "{}: {value:#x} does not fit, and ld wrote it",
                    record.name
                );
                assert_eq!(
                    record.insert(before, value) & low_bits(record.size),
                    after,
                    "{}: {value:#x} into {before:#x}",
                    record.name
                );
                seen.insert(record.name);
            }
        }
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(seen, expected, "{}: relocations the listing produced", tools.target);
    }
}

/// The values at the edges of the field of `record`: (value, whether it fits).
fn edges(record: &RelocationRecord) -> Vec<(i64, bool)> {
    let width = record.value_width();
    let (low, high): (i128, i128) = match record.overflow {
        Overflow::Signed => (-(1 << (width - 1)), (1 << (width - 1)) - 1),
        Overflow::Unsigned => (0, (1 << width) - 1),
        Overflow::Either => (-(1 << (width - 1)), (1 << width) - 1),
        Overflow::None => return Vec::new(),
    };
    let scale = 1i128 << record.shift;
    if record.round != 0 {
        // The value is rounded (2^(round-1) added) before it is shifted: the edges are that much lower, and
        // the largest value that fits is the last of its multiple of the scale.
        let bias = 1i128 << (record.round - 1);
        return [
            (high * scale + scale - 1 - bias, true),
            (high * scale + scale - bias, false),
            (low * scale - bias, true),
            (low * scale - bias - 1, false),
        ]
        .into_iter()
        .map(|(edge, fits)| (edge as i64, fits))
        .collect();
    }
    [(high, true), (high + 1, false), (low, true), (low - 1, false)]
        .into_iter()
        .map(|(edge, fits)| ((edge * scale) as i64, fits))
        .collect()
}

/// The edges where the declared rule deliberately differs from ld.bfd 2.40's check: (relocation, value, why).
/// Everywhere else ld.bfd must agree, and it must disagree exactly here.
const LD_BFD_DIFFERS: &[(&str, i64, &str)] = &[
    ("R_X86_64_16", -0x8001, BITFIELD),
    ("R_X86_64_8", -0x81, BITFIELD),
    ("R_X86_64_PC16", 0x8000, PC16),
    ("R_X86_64_PC16", -0x8001, PC16),
    ("R_AARCH64_ABS32", -0x8000_0000, AARCH64_ABI),
    ("R_AARCH64_ABS16", -0x8000, AARCH64_ABI),
    ("R_AARCH64_PREL32", 0xffff_ffff, AARCH64_ABI),
    ("R_AARCH64_PREL16", 0xffff, AARCH64_ABI),
    ("R_RISCV_PCREL_HI20", -0x8000_0801, RISCV_PCREL_HI20),
    ("R_RISCV_32_PCREL", 0x8000_0000, RISCV_32_PCREL),
    ("R_RISCV_32_PCREL", -0x8000_0001, RISCV_32_PCREL),
];
const RISCV_PCREL_HI20: &str = "`auipc` + a sign-extended 12-bit low part reaches -2^31-2048 at the lowest (lld's checkInt \
                                of v + 0x800 over 32 bits); ld.bfd 2.40 lets one byte more through";
const RISCV_32_PCREL: &str = "ld.bfd does not check R_RISCV_32_PCREL (complain_overflow_dont); a 32-bit pc-relative \
                              difference is signed";
const BITFIELD: &str = "ld.bfd's `bitfield` check also accepts -2^w <= v < -2^(w-1), which neither a signed nor an \
                        unsigned reading of the field gives back; `either` is lld's checkIntUInt";
const PC16: &str = "ld.bfd checks PC16 as a `bitfield`; a pc-relative displacement is signed (lld's checkInt)";
const AARCH64_ABI: &str = "the AArch64 ELF ABI (and lld) allow -2^(w-1) <= X < 2^w for ABS16/32 and PREL16/32; ld.bfd \
                           checks ABS as unsigned and PREL as signed";

#[test]
fn ld_refuses_exactly_the_values_the_records_say_do_not_fit() {
    let dir = scratch!("relocation-oracles-overflow");
    let mut links = 0;
    let mut disagreements = Vec::new();
    let mut exercised = BTreeSet::new();
    for tools in &TOOLS {
        let target = target(tools.target);
        for record in target.relocations {
            // A branch may go through a thunk (ld.bfd adds AArch64 long-branch stubs), and the other kinds need a
            // GOT or a TLS block: only plain symbol references overflow.
            if record.kind != RelocationKind::Symbol
                || matches!(
                    record.relative_to,
                    RelocationBase::Got | RelocationBase::GotPage | RelocationBase::GlobalPointer
                )
                || record.value_width() >= 64
            {
                continue;
            }
            let source = format!(".data\n.reloc ., {}, t\n{}\n", record.name, tools.word);
            let object = assemble(tools, &dir, record.name, &source);
            let place: u64 = 0x60_0000;
            for (value, fits) in edges(record) {
                assert_eq!(record.fits(value), fits, "{} at {value:#x}", record.name);
                let symbol = match record.relative_to {
                    RelocationBase::Nothing => value as u64,
                    RelocationBase::Place => place.wrapping_add(value as u64),
                    // Page(S) - Page(P) with P at a page start.
                    _ => place.wrapping_add(value as u64),
                };
                let output = dir.join(format!("{}-{value:x}", record.name));
                let (linked, messages) = link(tools, &object, &output, &[("t", symbol)]);
                let differs = LD_BFD_DIFFERS
                    .iter()
                    .find(|(name, edge, _)| *name == record.name && *edge == value);
                if let Some(difference) = differs {
                    exercised.insert(difference.0.to_string() + &difference.1.to_string());
                }
                if linked != (fits != differs.is_some()) {
                    disagreements.push(format!(
                        "{} with value {value:#x} (t = {symbol:#x}): ld {} it, the record says it {} fit{}: {messages}",
                        record.name,
                        if linked { "accepted" } else { "refused" },
                        if fits { "does" } else { "does not" },
                        differs.map_or(String::new(), |(.., why)| format!(" (listed as differing: {why})"))
                    ));
                }
                links += 1;
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert_eq!(
        exercised.len(),
        LD_BFD_DIFFERS.len(),
        "every listed difference is an edge that was linked"
    );
    assert!(links >= 60, "only {links} links");
}
