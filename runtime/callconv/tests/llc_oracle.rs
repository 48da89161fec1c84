#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Oracle: the standard-ABI fallback planner places every argument and every return value where LLVM 14
//! (`llc-14`) does.
//!
//! For each target and each of several fixed seeds, a generator makes several hundred IR signatures (after
//! the hand-picked ones of `tests/oracle/edge_cases.txt`), with random return types: scalars, vectors,
//! arrays, and structs that fit the return registers or do not (then LLVM returns them through a hidden
//! pointer). One module per target and seed holds, for each signature `N`, a function `@fN` that stores
//! every parameter `i` to its own global `@gN_i` with `store volatile` (a `byval` parameter stores its
//! pointer, so the assembly shows the address of the stack copy), then returns the value it loads from the
//! global `@hN` with `load volatile`. `llc-14 -O2` compiles the module once; a small emulator of each
//! function's assembly traces every store back to the incoming argument register or the incoming stack
//! offset its bytes came from, and at the return sees which register holds which byte offset of `@hN`, or
//! which offset of `@hN` is stored through which incoming pointer register (the hidden pointer). That is
//! compared with `standard_assignments`: per byte offset of each parameter, the physical register
//! (canonical name, not the width) or the offset in the incoming argument area; per piece of the return
//! value, its register, or for an indirect return the register of the hidden pointer (and the arguments
//! then shift where that register is an argument register).
//!
//! Arrays get sweeps of their own (issue 24): on aarch64 every element type of [`AARCH64_ARRAY_ELEMENTS`] at
//! lengths 1 to 9, after 0 to 8 `i64` and 0 to 8 `double` arguments and before an `i64` and a `float`, and as
//! returns; on x86_64 the same for the arguments of [`X86_64_ARRAY_ELEMENTS`]. The issue's two examples are
//! named tests that also say where each piece goes.
//!
//! Where we knowingly differ from LLVM 14, the difference is a named [`Llvm14Quirk`]; the same names, with
//! the reasons, make the table of `docs/standard-abi-deviations.md`, and the test checks that the table and
//! the enum list the same quirks. A signature is accepted against llc-14 only when the planner agrees, or
//! when llc-14's placement is exactly the planner's for the signature rewritten the way the quirks say
//! LLVM 14 sees it and the planner gives the psABI answer for the values the quirks are about.
//!
//! llc-14 is required: the test fails, never skips, when it is missing (`scripts/test.sh` installs it).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use neverc_cc::assignment::{Place, ValueRef};
use neverc_cc::layout::TypeTable;
use neverc_cc::signature::{IrType, Signature};
use neverc_cc::standard_abi::standard_assignments;
use neverc_tables::TargetRecord;
use neverc_tables::target_by_name;
use neverc_test_support::{Rng, read_text, seed_of};

const LLC: &str = "llc-14";
/// The fixed seeds; every run checks all of them, and a failure names the one it happened on.
const SEEDS: [u64; 3] = [0x6e65_7665_7263_0014, 0x5eed_0000_0000_0002, 0x0ddb_a11c_afe0_0003];
const RANDOM_SIGNATURES: usize = 600;
const MAX_PARAMETERS: usize = 12;
const MAX_RETURN_FIELDS: usize = 6;
const BYVAL_S24: &str = "ptr byval(%struct.S24) align 8";
const DEVIATIONS: &str = "docs/standard-abi-deviations.md";

/// How LLVM 14 is known to differ from the psABI on a target; each is a row of `docs/standard-abi-deviations.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Llvm14Quirk {
    /// x86-64: LLVM 14 splits an `i128` argument into two independent `i64`s. With only `r9` left it passes
    /// the low half in `r9` and the high half on the stack, and a stack `i128` gets only 8-byte alignment.
    /// The psABI (and gcc, and LLVM 18, which fixed both: `CC_X86_64_I128`) passes it wholly on the stack,
    /// 16-byte aligned, leaving `r9` to later arguments. LLVM 14's view is the planner's for the signature
    /// with every `i128` argument written as `i64, i64`; the quirk is hit when an `i128` is then split
    /// between `r9` and the stack or lies at an 8-aligned stack offset.
    I128AsTwoI64,
    /// x86-64: LLVM 14 has no `half` ABI and soft-promotes `half` to `i16`: arguments in general registers
    /// (or 8-byte stack slots), returns in `ax`. The psABI (and LLVM 15 on) pass and return `_Float16` in
    /// SSE registers, as the planner does. LLVM 14's view is the planner's with every `half` written `i16`.
    HalfAsI16,
    /// x86-64: LLVM 14's data layout aligns `i128` to 8 bytes, so in a returned struct an `i128` field
    /// after an 8-byte boundary lies at an 8-aligned offset; the psABI (and LLVM 18's layout) align it to 16,
    /// as the planner does. LLVM 14's view is the planner's with every `i128` field written `i64, i64`.
    I128FieldAlign8,
}

impl Llvm14Quirk {
    const ALL: [Llvm14Quirk; 3] = [
        Llvm14Quirk::I128AsTwoI64,
        Llvm14Quirk::HalfAsI16,
        Llvm14Quirk::I128FieldAlign8,
    ];

    fn name(self) -> &'static str {
        match self {
            Llvm14Quirk::I128AsTwoI64 => "I128AsTwoI64",
            Llvm14Quirk::HalfAsI16 => "HalfAsI16",
            Llvm14Quirk::I128FieldAlign8 => "I128FieldAlign8",
        }
    }

    /// How LLVM 14 sees one parameter type: the types it is split into.
    fn rewrite_parameter(self, ty: &str) -> Option<Vec<&'static str>> {
        match (self, ty) {
            (Llvm14Quirk::I128AsTwoI64, "i128") => Some(vec!["i64", "i64"]),
            (Llvm14Quirk::HalfAsI16, "half") => Some(vec!["i16"]),
            _ => None,
        }
    }

    /// How LLVM 14 sees a return type.
    fn rewrite_return(self, ty: &str) -> Option<String> {
        match (self, ty) {
            (Llvm14Quirk::HalfAsI16, "half") => Some("i16".into()),
            (Llvm14Quirk::I128FieldAlign8, _) if ty.starts_with('{') && ty.contains("i128") => {
                Some(ty.replace("i128", "i64, i64"))
            }
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syntax {
    Att,
    Arm,
}

/// Types and their weights, in parts (the common part and the target's own).
type Menu = &'static [&'static [(&'static str, usize)]];

struct OracleTarget {
    name: &'static str,
    triple: &'static str,
    syntax: Syntax,
    /// Bytes between the stack pointer at entry and the incoming argument area (x86-64: the return address).
    entry_sp_below_arguments: i64,
    /// Parameter types and their weights, in parts.
    menu: Menu,
    /// Whole return types and their weights (`struct` stands for a random struct of `fields`).
    returns: Menu,
    /// Field types of random returned structs, and the most fields of a floating-point class one may have.
    fields: &'static [&'static str],
    max_fp_fields: usize,
    quirks: &'static [Llvm14Quirk],
}

/// Parameter types both targets take, with their weights.
const COMMON_MENU: &[(&str, usize)] = &[
    ("i8", 2),
    ("i16", 2),
    ("i32", 3),
    ("i64", 3),
    ("ptr", 3),
    ("i128", 4),
    ("i256", 1),
    ("half", 2),
    ("float", 3),
    ("double", 3),
    ("fp128", 2),
    ("<2 x float>", 2),
    ("<4 x float>", 2),
    ("<2 x double>", 2),
    ("<4 x i32>", 2),
    ("<8 x float>", 2),
];

/// Return types both targets take (`struct` stands for a random struct of the target's `fields`).
const COMMON_RETURNS: &[(&str, usize)] = &[
    ("void", 3),
    ("i8", 1),
    ("i16", 1),
    ("i32", 2),
    ("i64", 2),
    ("ptr", 1),
    ("i128", 2),
    ("i256", 2),
    ("half", 1),
    ("float", 1),
    ("double", 1),
    ("fp128", 1),
    ("<2 x float>", 1),
    ("<4 x float>", 1),
    ("<8 x float>", 1),
    ("{ i64, i64, i64 }", 2),
    ("struct", 8),
];

const X86_64: OracleTarget = OracleTarget {
    name: "x86_64",
    triple: "x86_64-unknown-linux-gnu",
    syntax: Syntax::Att,
    entry_sp_below_arguments: 8,
    menu: &[
        COMMON_MENU,
        &[
            ("x86_fp80", 2),
            ("[2 x float]", 1),
            ("[3 x float]", 1),
            ("[4 x float]", 1),
            ("[2 x double]", 1),
            ("[4 x double]", 1),
            ("[3 x i32]", 1),
            ("[5 x float]", 1),
            (BYVAL_S24, 3),
        ],
    ],
    // x86_fp80 is returned in st0, which the target does not declare (see the deviation table).
    returns: &[COMMON_RETURNS, &[("[2 x double]", 1), ("[3 x i64]", 1)]],
    fields: &[
        "i8",
        "i16",
        "i32",
        "i64",
        "ptr",
        "i128",
        "float",
        "double",
        "<4 x float>",
    ],
    // LLVM returns a third floating-point scalar in st0 (see the deviation table).
    max_fp_fields: 2,
    quirks: &[
        Llvm14Quirk::I128AsTwoI64,
        Llvm14Quirk::HalfAsI16,
        Llvm14Quirk::I128FieldAlign8,
    ],
};

const AARCH64: OracleTarget = OracleTarget {
    name: "aarch64",
    triple: "aarch64-unknown-linux-gnu",
    syntax: Syntax::Arm,
    entry_sp_below_arguments: 0,
    menu: &[
        COMMON_MENU,
        &[
            ("[2 x float]", 2),
            ("[3 x float]", 2),
            ("[4 x float]", 2),
            ("[2 x double]", 2),
            ("[4 x double]", 2),
            ("[2 x i64]", 3),
            ("[5 x float]", 1),
            ("[3 x i32]", 1),
            ("[3 x i64]", 1),
            ("[3 x half]", 1),
            ("[2 x i128]", 1),
            ("[2 x <4 x float>]", 1),
        ],
    ],
    returns: &[
        COMMON_RETURNS,
        &[
            ("[4 x double]", 1),
            ("[9 x i64]", 1),
            ("[5 x float]", 1),
            ("[2 x i128]", 1),
        ],
    ],
    fields: &[
        "i8",
        "i16",
        "i32",
        "i64",
        "ptr",
        "i128",
        "half",
        "float",
        "double",
        "fp128",
        "<4 x float>",
    ],
    max_fp_fields: MAX_RETURN_FIELDS,
    quirks: &[],
};

#[test]
fn x86_64_standard_abi_matches_llc_14() {
    check_target(&X86_64);
}

#[test]
fn aarch64_standard_abi_matches_llc_14() {
    check_target(&AARCH64);
}

/// The deviation table lists exactly the quirks the oracle accepts.
#[test]
fn deviation_table_lists_every_quirk() {
    let path = neverc_test_support::repo().join(DEVIATIONS);
    let text = read_text(&path);
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(name, _)| name))
        .collect();
    let known: Vec<&str> = Llvm14Quirk::ALL.iter().map(|quirk| quirk.name()).collect();
    for name in &known {
        assert!(listed.contains(name), "{DEVIATIONS} does not list the quirk `{name}`");
    }
    for name in &listed {
        assert!(
            known.contains(name),
            "{DEVIATIONS} lists `{name}`, which the oracle does not know as a quirk"
        );
    }
}

// ---------------------------------------------------------------------------------------------------------
// Arrays (issue 24)

/// Element types of the AArch64 array sweep: every scalar class, vectors of 64, 128, 256 and 512 bits, and
/// arrays and structs as elements, whose scalars are all of one type (LLVM then treats the array as one
/// block, as for a scalar element of that type; padding between them makes the block's stack slot differ
/// from the array's layout) or are not. Left out: vectors narrower than 64 bits and vectors of `bfloat`,
/// which llc-14 widens, promotes or splits where the planner does not (docs/standard-abi-deviations.md),
/// `<3 x float>`, which llc-14 cannot pass on the stack in an array, and `i1` and `i48`, whose stores the
/// emulator cannot trace.
const AARCH64_ARRAY_ELEMENTS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "i256",
    "ptr",
    "half",
    "bfloat",
    "float",
    "double",
    "fp128",
    "<2 x float>",
    "<4 x half>",
    "<8 x i8>",
    "<4 x float>",
    "<2 x double>",
    "<4 x i32>",
    "<8 x float>",
    "<16 x float>",
    "i96",
    "<1 x double>",
    "<16 x i8>",
    "<4 x double>",
    "<2 x ptr>",
    "[2 x float]",
    "[2 x i32]",
    "[2 x [2 x double]]",
    "[3 x [1 x i128]]",
    "{ double, double }",
    "{ half, half, half }",
    "<{ float, float }>",
    "{ i64, ptr }",
    "{ float, {} }",
    "{ [0 x double], float }",
    "{ float, i32 }",
    "{ [2 x float], float }",
    "{ [2 x float], i32 }",
];
/// Array lengths of the sweep.
const ARRAY_LENGTHS: std::ops::RangeInclusive<u32> = 1..=9;
/// Argument registers of each class taken before the array: none up to all eight.
const ARRAY_PRESSURE: std::ops::RangeInclusive<usize> = 0..=8;

/// Element types of the x86-64 array sweep: those LLVM 14 passes as the psABI says (not `half`, `i128` nor
/// `bfloat`: docs/standard-abi-deviations.md).
const X86_64_ARRAY_ELEMENTS: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "ptr",
    "float",
    "double",
    "fp128",
    "x86_fp80",
    "<2 x float>",
    "<4 x float>",
    "<8 x float>",
    "[2 x float]",
    "{ double, double }",
    "{ float, i32 }",
];

/// Every element type of `elements`, at every length of [`ARRAY_LENGTHS`], after every number of `i64` and
/// `double` arguments of [`ARRAY_PRESSURE`] and before an `i64` and a `float` (which show what the array
/// left of each register class); then, with `returns`, each array as a return type.
fn array_sweep(elements: &[&str], returns: bool) -> Vec<Case> {
    let mut cases = Vec::new();
    for element in elements {
        for length in ARRAY_LENGTHS {
            let array = format!("[{length} x {element}]");
            for general in ARRAY_PRESSURE {
                for float in ARRAY_PRESSURE {
                    let mut parameters = vec!["i64".to_string(); general];
                    parameters.extend(std::iter::repeat_n("double".to_string(), float));
                    parameters.extend([array.clone(), "i64".into(), "float".into()]);
                    cases.push(Case {
                        ret: "void".into(),
                        parameters,
                    });
                }
            }
            if returns {
                cases.push(Case {
                    ret: array,
                    parameters: Vec::new(),
                });
            }
        }
    }
    cases
}

/// Issue 24, must-show 1: arrays of every element type, lengths 1 to 9, in every register-pressure position,
/// as arguments and as returns, placed piece by piece where llc-14 places them.
#[test]
fn issue_24_aarch64_arrays_of_every_element_type_match_llc_14() {
    let summary = check_array_sweep(&AARCH64, AARCH64_ARRAY_ELEMENTS, true);
    // Every element type must reach registers and the stack, or a rule goes unchecked.
    for element in AARCH64_ARRAY_ELEMENTS {
        let (registers, stack) = summary
            .coverage
            .iter()
            .filter(|(ty, _)| ty.starts_with('[') && array_element(ty) == *element)
            .fold((0, 0), |(registers, stack), (_, (r, s))| (registers + r, stack + s));
        assert!(
            registers > 0 && stack > 0,
            "arrays of {element}: {registers} pieces in registers, {stack} on the stack"
        );
    }
}

/// On x86-64 every array is passed element by element, as llc-14 passes it, whatever its element and length.
/// Returns are left out: llc-14 returns a third and fourth floating-point value or vector of an aggregate in
/// registers the planner does not use (the x87 stack, `xmm2`, `xmm3`; docs/standard-abi-deviations.md).
#[test]
fn x86_64_arrays_of_every_element_type_match_llc_14() {
    check_array_sweep(&X86_64, X86_64_ARRAY_ELEMENTS, false);
}

/// Compares the array sweep of `elements` on a target with llc-14, failing on any mismatch (counted per
/// element type, the first reports shown); the summary.
fn check_array_sweep(oracle: &OracleTarget, elements: &[&str], returns: bool) -> Summary {
    let target = target_by_name(oracle.name).unwrap();
    let cases = array_sweep(elements, returns);
    let (summary, report) = compare(target, oracle, "arrays", &cases);
    let mut by_element: BTreeMap<String, usize> = BTreeMap::new();
    for number in &summary.mismatched {
        let case = &cases[*number];
        let array = case
            .parameters
            .iter()
            .find(|parameter| parameter.starts_with('['))
            .unwrap_or(&case.ret);
        *by_element.entry(array_element(array).to_string()).or_default() += 1;
    }
    println!(
        "{} arrays: {} signatures, {} pieces checked against llc-14; {} mismatching signatures {by_element:?}",
        oracle.name, summary.signatures, summary.pieces, summary.mismatches
    );
    let shown: String = report.lines().take(400).collect::<Vec<_>>().join("\n");
    assert!(
        summary.mismatches == 0,
        "{} of {} signatures disagree with llc-14 {by_element:?} (the first shown):\n{shown}",
        summary.mismatches,
        cases.len()
    );
    summary
}

/// Issue 24, must-show 2: a `[5 x float]` that does not fit the four float registers left is one block: llc-14
/// passes it wholly on the stack, packed (20 bytes at offset 0), and no later float takes `v4`–`v7`.
#[test]
fn issue_24_five_floats_after_four_floats_go_wholly_to_the_stack() {
    check_named_case(
        "void (float, float, float, float, [5 x float], float)",
        &[
            "@0 v0 (4B)",
            "@0 v1 (4B)",
            "@0 v2 (4B)",
            "@0 v3 (4B)",
            "@0 stack+0 (20B)",
            "@0 stack+24 (4B)",
        ],
    );
}

/// Issue 24, must-show 2: the elements of a `[3 x i32]` are passed one by one, each in its own register or
/// 8-byte stack slot, so the array is split between `x6`, `x7` and the stack.
#[test]
fn issue_24_three_i32_split_between_x7_and_the_stack() {
    check_named_case(
        "void (i64, i64, i64, i64, i64, i64, [3 x i32], i64)",
        &[
            "@0 x0 (8B)",
            "@0 x1 (8B)",
            "@0 x2 (8B)",
            "@0 x3 (8B)",
            "@0 x4 (8B)",
            "@0 x5 (8B)",
            "@0 x6 (4B), @4 x7 (4B), @8 stack+0 (4B)",
            "@0 stack+8 (8B)",
        ],
    );
}

/// The AArch64 planner places each parameter of `signature` as `placements` says (piece by piece, as
/// [`describe_expected`] writes them), and so does llc-14.
fn check_named_case(signature: &str, placements: &[&str]) {
    let oracle = &AARCH64;
    let target = target_by_name(oracle.name).unwrap();
    let case = parse_case(signature);
    let expected = planned(target, &case).unwrap();
    let described: Vec<String> = expected
        .arguments
        .iter()
        .map(|pieces| describe_expected(pieces))
        .collect();
    assert_eq!(described, placements, "the planner's placement of {signature}");
    let label = format!("named-{}", seed_of(signature));
    let (summary, report) = compare(target, oracle, &label, &[case]);
    assert!(
        summary.signatures == 1 && summary.mismatches == 0,
        "llc-14 disagrees:\n{report}"
    );
}

/// `[5 x { float, i32 }]` -> `{ float, i32 }`.
fn array_element(array: &str) -> &str {
    array
        .trim()
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|inner| inner.split_once(" x "))
        .map_or(array, |(_, element)| element.trim())
}

// ---------------------------------------------------------------------------------------------------------
// Signatures

/// One signature: the return type and the parameter types, as IR text.
#[derive(Clone, Debug)]
struct Case {
    ret: String,
    parameters: Vec<String>,
}

impl Case {
    fn text(&self) -> String {
        format!("{} ({})", self.ret, self.parameters.join(", "))
    }

    fn returns_value(&self) -> bool {
        self.ret != "void"
    }
}

fn types() -> TypeTable {
    TypeTable::from([(
        "%struct.S24".to_string(),
        IrType::Struct {
            packed: false,
            fields: vec![IrType::Integer(64); 3],
        },
    )])
}

fn pick(rng: &mut Rng, menu: Menu) -> &'static str {
    let entries = || menu.iter().flat_map(|part| part.iter());
    let total_weight: usize = entries().map(|(_, weight)| weight).sum();
    let mut pick = rng.below(total_weight);
    for (ty, weight) in entries() {
        if pick < *weight {
            return ty;
        }
        pick -= weight;
    }
    menu[0][0].0
}

/// A random return type of the target's menu.
fn random_return(rng: &mut Rng, oracle: &OracleTarget) -> String {
    let chosen = pick(rng, oracle.returns);
    if chosen != "struct" {
        return chosen.to_string();
    }
    let count = 1 + rng.below(MAX_RETURN_FIELDS);
    let mut fp_fields = 0;
    let mut fields = Vec::new();
    while fields.len() < count {
        let field = oracle.fields[rng.below(oracle.fields.len())];
        let floating = ["half", "float", "double", "fp128", "<4 x float>"].contains(&field);
        if floating {
            if fp_fields == oracle.max_fp_fields {
                continue;
            }
            fp_fields += 1;
        }
        fields.push(field);
    }
    format!("{{ {} }}", fields.join(", "))
}

/// The signatures to check for one seed: the hand-picked edge cases, then the random ones.
fn signatures(oracle: &OracleTarget, seed: u64) -> Vec<Case> {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/edge_cases.txt");
    let text = read_text(&fixture);
    let mut cases = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        let (target, signature) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("`target: signature` expected: {line}"));
        if target.trim() == oracle.name {
            cases.push(parse_case(signature.trim()));
        }
    }
    // A fixed sequence per seed, the same on every machine.
    let mut rng = Rng::new(seed ^ oracle.name.len() as u64);
    for _ in 0..RANDOM_SIGNATURES {
        // Biased toward many parameters, so that registers run out and the stack is exercised.
        let count = 1 + rng.below(MAX_PARAMETERS).max(rng.below(MAX_PARAMETERS));
        let parameters = (0..count).map(|_| pick(&mut rng, oracle.menu).to_string()).collect();
        let ret = random_return(&mut rng, oracle);
        cases.push(Case { ret, parameters });
    }
    cases
}

/// `{ i64, i64 } (i32, ptr byval(%struct.S24) align 8)` -> the return type and the parameter texts.
fn parse_case(signature: &str) -> Case {
    let open = signature
        .find('(')
        .unwrap_or_else(|| panic!("`RET (...)` expected: {signature}"));
    let inner = signature[open + 1..]
        .trim_end()
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("`RET (...)` expected: {signature}"));
    let parameters = split_top_level(inner, ',')
        .into_iter()
        .map(|part| part.trim().to_string())
        .filter(|part| !part.is_empty())
        .collect();
    Case {
        ret: signature[..open].trim().to_string(),
        parameters,
    }
}

fn split_top_level(text: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match c {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth -= 1,
            c if c == separator && depth == 0 => {
                parts.push(&text[start..index]);
                start = index + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The type a parameter's global holds: a `byval` parameter stores its pointer.
fn stored_type(parameter: &str) -> &str {
    if parameter.contains("byval") { "ptr" } else { parameter }
}

fn module(cases: &[Case]) -> String {
    let mut text = String::from("%struct.S24 = type { i64, i64, i64 }\n\n");
    for (number, case) in cases.iter().enumerate() {
        for (index, parameter) in case.parameters.iter().enumerate() {
            writeln!(
                text,
                "@g{number}_{index} = dso_local global {} zeroinitializer",
                stored_type(parameter)
            )
            .unwrap();
        }
        if case.returns_value() {
            writeln!(text, "@h{number} = dso_local global {} zeroinitializer", case.ret).unwrap();
        }
        let list: Vec<String> = case
            .parameters
            .iter()
            .enumerate()
            .map(|(index, parameter)| format!("{parameter} %p{index}"))
            .collect();
        writeln!(text, "define {} @f{number}({}) nounwind {{", case.ret, list.join(", ")).unwrap();
        for (index, parameter) in case.parameters.iter().enumerate() {
            let ty = stored_type(parameter);
            writeln!(text, "  store volatile {ty} %p{index}, ptr @g{number}_{index}").unwrap();
        }
        if case.returns_value() {
            writeln!(text, "  %r = load volatile {}, ptr @h{number}", case.ret).unwrap();
            writeln!(text, "  ret {} %r\n}}\n", case.ret).unwrap();
        } else {
            text.push_str("  ret void\n}\n\n");
        }
    }
    text
}

fn run_llc(oracle: &OracleTarget, label: &str, module: &str) -> String {
    let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llc_oracle");
    std::fs::create_dir_all(&directory).unwrap();
    let input = directory.join(format!("{}-{label}.ll", oracle.name));
    let output = directory.join(format!("{}-{label}.s", oracle.name));
    std::fs::write(&input, module).unwrap();
    let result = Command::new(LLC)
        .arg("-O2")
        // LLVM 14 reads typed pointers by default; the module uses opaque `ptr`, as the signatures do.
        .arg("-opaque-pointers")
        .arg(format!("-mtriple={}", oracle.triple))
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output();
    let result = match result {
        Ok(result) => result,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => panic!(
            "{LLC} is not installed, and this oracle test does not skip: run scripts/test.sh, which installs LLVM 14"
        ),
        Err(error) => panic!("cannot run {LLC}: {error}"),
    };
    assert!(
        result.status.success(),
        "{LLC} failed on {} ({}, {label}):\n{}",
        input.display(),
        oracle.triple,
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::read_to_string(&output).unwrap()
}

// ---------------------------------------------------------------------------------------------------------
// Locations

/// Where bytes of a parameter are at entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Loc {
    /// An argument register, by canonical name.
    Register(String),
    /// The incoming argument area, at this offset.
    Stack(i64),
    /// A pointer to the incoming argument area at this offset (a `byval` copy).
    StackAddress(i64),
    /// Not traceable to an argument.
    Unknown(String),
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loc::Register(name) => f.write_str(name),
            Loc::Stack(offset) => write!(f, "stack+{offset}"),
            Loc::StackAddress(offset) => write!(f, "&stack+{offset}"),
            Loc::Unknown(what) => write!(f, "?({what})"),
        }
    }
}

/// One piece of a value as the planner places it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Expected {
    offset: u64,
    size: u64,
    /// Where the piece's first byte is.
    start: Loc,
}

impl Expected {
    /// Where byte `offset` of the value is, if this piece holds it.
    fn byte(&self, offset: u64) -> Option<Loc> {
        if offset < self.offset || offset >= self.offset + self.size.max(1) {
            return None;
        }
        let delta = (offset - self.offset) as i64;
        Some(match &self.start {
            Loc::Stack(start) => Loc::Stack(start + delta),
            Loc::StackAddress(start) => Loc::StackAddress(start + delta),
            other => other.clone(),
        })
    }
}

/// Where the planner returns a value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ReturnPlan {
    Void,
    /// Pieces in registers.
    Registers(Vec<Expected>),
    /// Through a hidden pointer in this register (canonical name).
    Indirect(String),
}

/// The planner's pieces, per parameter, and its return.
#[derive(Clone, Debug)]
struct Planned {
    arguments: Vec<Vec<Expected>>,
    ret: ReturnPlan,
}

/// The planner's answer for a case.
fn planned(target: &TargetRecord, case: &Case) -> Result<Planned, String> {
    let text = case.text();
    let signature = Signature::parse(&text).map_err(|error| format!("parse `{text}`: {error}"))?;
    let assignments = standard_assignments(target, &signature, &types()).map_err(|error| error.to_string())?;
    let mut arguments = vec![Vec::new(); case.parameters.len()];
    let mut ret = ReturnPlan::Void;
    for assignment in assignments {
        let pieces = assignment.pieces.iter().map(|piece| Expected {
            offset: piece.offset,
            size: piece.size,
            start: match piece.place {
                Place::Register { register, .. } => Loc::Register(target.registers[register].name.to_string()),
                Place::Stack { offset, .. } if assignment.indirect => Loc::StackAddress(offset as i64),
                Place::Stack { offset, .. } => Loc::Stack(offset as i64),
            },
        });
        match assignment.value {
            ValueRef::Argument(index) => arguments[index as usize].extend(pieces),
            ValueRef::Return if assignment.indirect => {
                ret = match pieces.collect::<Vec<_>>().as_slice() {
                    [
                        Expected {
                            start: Loc::Register(register),
                            ..
                        },
                    ] => ReturnPlan::Indirect(register.clone()),
                    other => return Err(format!("an indirect return in {other:?}, not in one register")),
                };
            }
            ValueRef::Return => ret = ReturnPlan::Registers(pieces.collect()),
        }
    }
    Ok(Planned { arguments, ret })
}

/// LLVM 14's placement, through the planner: the case rewritten as the target's quirks say LLVM 14 sees it.
fn planned_as_llvm14(target: &TargetRecord, quirks: &[Llvm14Quirk], case: &Case) -> Result<Planned, String> {
    let mut model = Vec::new();
    let mut origin = Vec::new();
    for (index, parameter) in case.parameters.iter().enumerate() {
        let parts = quirks
            .iter()
            .find_map(|quirk| quirk.rewrite_parameter(parameter))
            .unwrap_or_else(|| vec![parameter.as_str()]);
        let mut offset = 0;
        for part in parts {
            model.push(part.to_string());
            origin.push((index, offset));
            // Every split part is 8 bytes.
            offset += 8;
        }
    }
    let ret = quirks
        .iter()
        .find_map(|quirk| quirk.rewrite_return(&case.ret))
        .unwrap_or_else(|| case.ret.clone());
    let view = planned(target, &Case { ret, parameters: model })?;
    let mut arguments = vec![Vec::new(); case.parameters.len()];
    for (pieces, (index, offset)) in view.arguments.into_iter().zip(origin) {
        for mut piece in pieces {
            piece.offset += offset;
            arguments[index].push(piece);
        }
    }
    Ok(Planned {
        arguments,
        ret: view.ret,
    })
}

/// Where llc-14 put the bytes of each parameter and of the returned value.
struct Observed {
    arguments: Vec<BTreeMap<u64, Vec<Loc>>>,
    /// Byte offsets of `@hN` held by registers at the return, with the registers.
    returned: BTreeMap<u64, Vec<String>>,
    /// Stores of bytes of `@hN` through an incoming register: the register, the offset from it, and the
    /// byte offset of `@hN`.
    through_pointer: Vec<(String, i64, i64)>,
}

/// Indices of the parameters whose observed bytes disagree with the expected pieces.
fn disagreements(expected: &[Vec<Expected>], observed: &Observed) -> Vec<usize> {
    let mut bad = Vec::new();
    for (index, pieces) in expected.iter().enumerate() {
        let seen = &observed.arguments[index];
        let mut ok = seen.iter().all(|(offset, locations)| {
            let want = pieces.iter().find_map(|piece| piece.byte(*offset));
            locations.iter().all(|location| Some(location) == want.as_ref())
        });
        // Every piece must be seen at least once: no piece of the planner goes unchecked.
        ok &= pieces
            .iter()
            .all(|piece| seen.keys().any(|offset| piece.byte(*offset).is_some()));
        ok &= !pieces.is_empty();
        if !ok {
            bad.push(index);
        }
    }
    bad
}

/// Whether llc-14 returns the value where the planner says.
fn return_agrees(expected: &ReturnPlan, observed: &Observed) -> bool {
    match expected {
        ReturnPlan::Void => observed.returned.is_empty() && observed.through_pointer.is_empty(),
        ReturnPlan::Registers(pieces) => {
            observed.through_pointer.is_empty()
                && pieces.iter().all(|piece| {
                    matches!(&piece.start, Loc::Register(name)
                        if observed.returned.get(&piece.offset).is_some_and(|held| held.contains(name)))
                })
                && observed.returned.iter().all(|(offset, registers)| {
                    registers.iter().all(|register| {
                        pieces
                            .iter()
                            .any(|piece| piece.offset == *offset && piece.start == Loc::Register(register.clone()))
                    })
                })
        }
        // Every byte stored goes to its own offset from the hidden pointer; the first one is stored.
        ReturnPlan::Indirect(register) => {
            observed
                .through_pointer
                .iter()
                .all(|(base, offset, byte)| base == register && offset == byte)
                && observed.through_pointer.iter().any(|(_, offset, _)| *offset == 0)
        }
    }
}

/// Whether the planner's answer agrees with llc-14 everywhere.
fn agrees(expected: &Planned, observed: &Observed) -> bool {
    disagreements(&expected.arguments, observed).is_empty() && return_agrees(&expected.ret, observed)
}

fn describe_expected(pieces: &[Expected]) -> String {
    let parts: Vec<String> = pieces
        .iter()
        .map(|piece| format!("@{} {} ({}B)", piece.offset, piece.start, piece.size))
        .collect();
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

fn describe_observed(seen: &BTreeMap<u64, Vec<Loc>>) -> String {
    let parts: Vec<String> = seen
        .iter()
        .flat_map(|(offset, locations)| locations.iter().map(move |location| format!("@{offset} {location}")))
        .collect();
    if parts.is_empty() {
        "no store traced".into()
    } else {
        parts.join(", ")
    }
}

fn describe_return_plan(ret: &ReturnPlan) -> String {
    match ret {
        ReturnPlan::Void => "void".into(),
        ReturnPlan::Registers(pieces) => describe_expected(pieces),
        ReturnPlan::Indirect(register) => format!("hidden pointer in {register}"),
    }
}

fn describe_returned(observed: &Observed) -> String {
    let mut parts: Vec<String> = observed
        .returned
        .iter()
        .flat_map(|(offset, registers)| registers.iter().map(move |register| format!("@{offset} {register}")))
        .collect();
    parts.extend(
        observed
            .through_pointer
            .iter()
            .map(|(base, offset, byte)| format!("@{byte} stored at {base}+{offset}")),
    );
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

// ---------------------------------------------------------------------------------------------------------
// The check

#[derive(Default)]
struct Summary {
    signatures: usize,
    parameters: usize,
    pieces: usize,
    returns_in_registers: usize,
    returns_indirect: usize,
    /// Values that hit each LLVM 14 quirk case.
    quirk_hits: BTreeMap<&'static str, usize>,
    exception_signatures: usize,
    mismatches: usize,
    /// The numbers of the mismatching signatures.
    mismatched: Vec<usize>,
    /// Per parameter type: pieces in registers, pieces on the stack.
    coverage: BTreeMap<String, (usize, usize)>,
}

fn check_target(oracle: &OracleTarget) {
    let target = target_by_name(oracle.name).unwrap_or_else(|| panic!("target {} is not bundled", oracle.name));
    let mut failures = Vec::new();
    for seed in SEEDS {
        if let Err(report) = check_seed(target, oracle, seed) {
            failures.push(report);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One seed's signatures against llc-14; the report of every mismatch on failure.
fn check_seed(target: &TargetRecord, oracle: &OracleTarget, seed: u64) -> Result<(), String> {
    let cases = signatures(oracle, seed);
    let (summary, report) = compare(target, oracle, &format!("{seed:x}"), &cases);
    println!(
        "{} seed {seed:#x}: {} signatures, {} parameters, {} returns in registers, {} indirect returns, {} pieces \
         checked against llc-14; LLVM 14 quirks: {} signatures ({:?}); {} mismatching signatures",
        oracle.name,
        summary.signatures,
        summary.parameters,
        summary.returns_in_registers,
        summary.returns_indirect,
        summary.pieces,
        summary.exception_signatures,
        summary.quirk_hits,
        summary.mismatches
    );
    let coverage: Vec<String> = summary
        .coverage
        .iter()
        .map(|(ty, (registers, stack))| format!("{ty}: {registers} reg/{stack} stack"))
        .collect();
    println!(
        "{} seed {seed:#x}: pieces per type: {}",
        oracle.name,
        coverage.join("; ")
    );
    let mut problems = Vec::new();
    if summary.signatures < 300 {
        problems.push("too few signatures checked".to_string());
    }
    if summary.returns_in_registers == 0 || summary.returns_indirect == 0 {
        problems.push("the returns must include register and indirect ones".to_string());
    }
    // The generator must reach the stack with every type of the menu, or the stack rules go unchecked.
    for (ty, _) in oracle.menu.iter().flat_map(|part| part.iter()) {
        let stack = summary.coverage.get(*ty).map_or(0, |(_, stack)| *stack);
        if stack == 0 {
            problems.push(format!(
                "no {ty} argument went to the stack: change the seed or the weights"
            ));
        }
    }
    if summary.mismatches > 0 {
        problems.push(format!(
            "{} of {} signatures disagree with llc-14:\n{report}",
            summary.mismatches,
            cases.len()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} seed {seed:#x}: {}", oracle.name, problems.join("\n")))
    }
}

/// Compiles `cases` with llc-14 (the files named after the target and `label`) and compares every argument
/// and return with the planner's; the counts, and a report of every mismatching signature.
fn compare(target: &TargetRecord, oracle: &OracleTarget, label: &str, cases: &[Case]) -> (Summary, String) {
    let asm = run_llc(oracle, label, &module(cases));
    let bodies = function_bodies(&asm, oracle.syntax);
    let mut summary = Summary::default();
    let mut report = String::new();
    for (number, case) in cases.iter().enumerate() {
        let body = bodies
            .get(&number)
            .unwrap_or_else(|| panic!("no function f{number} in the llc output ({label})"));
        let observed = trace(target, oracle, number, case.parameters.len(), body);
        let expected = match planned(target, case) {
            Ok(expected) => expected,
            Err(error) => {
                summary.mismatches += 1;
                summary.mismatched.push(number);
                writeln!(
                    report,
                    "{} f{number}: {}\n  planner error: {error}",
                    oracle.name,
                    case.text()
                )
                .unwrap();
                continue;
            }
        };
        summary.signatures += 1;
        summary.parameters += case.parameters.len();
        summary.pieces += expected.arguments.iter().map(Vec::len).sum::<usize>();
        match &expected.ret {
            ReturnPlan::Void => {}
            ReturnPlan::Registers(pieces) => {
                summary.returns_in_registers += 1;
                summary.pieces += pieces.len();
            }
            ReturnPlan::Indirect(_) => {
                summary.returns_indirect += 1;
                summary.pieces += 1;
            }
        }
        for (parameter, pieces) in case.parameters.iter().zip(&expected.arguments) {
            let (registers, stack) = summary.coverage.entry(parameter.clone()).or_default();
            for piece in pieces {
                match piece.start {
                    Loc::Register(_) => *registers += 1,
                    _ => *stack += 1,
                }
            }
        }
        if agrees(&expected, &observed) {
            continue;
        }
        let note = match quirk_verdict(target, oracle.quirks, case, &expected, &observed) {
            QuirkVerdict::Accepted(hits) => {
                for (case, count) in hits {
                    *summary.quirk_hits.entry(case).or_default() += count;
                }
                summary.exception_signatures += 1;
                continue;
            }
            QuirkVerdict::NotHit => None,
            QuirkVerdict::Rejected(reason) => Some(reason),
        };
        summary.mismatches += 1;
        summary.mismatched.push(number);
        writeln!(report, "{} f{number}: {}", oracle.name, case.text()).unwrap();
        if let Some(note) = note {
            writeln!(report, "  LLVM 14 quirk: {note}").unwrap();
        }
        let bad = disagreements(&expected.arguments, &observed);
        for (index, parameter) in case.parameters.iter().enumerate() {
            let mark = if bad.contains(&index) { "!!" } else { "  " };
            writeln!(
                report,
                "  {mark} %p{index} {parameter}\n       planner: {}\n       llc-14:  {}",
                describe_expected(&expected.arguments[index]),
                describe_observed(&observed.arguments[index])
            )
            .unwrap();
        }
        let mark = if return_agrees(&expected.ret, &observed) {
            "  "
        } else {
            "!!"
        };
        writeln!(
            report,
            "  {mark} return {}\n       planner: {}\n       llc-14:  {}",
            case.ret,
            describe_return_plan(&expected.ret),
            describe_returned(&observed)
        )
        .unwrap();
    }
    (summary, report)
}

enum QuirkVerdict {
    /// No quirk of the target explains the difference.
    NotHit,
    /// LLVM 14's quirks explain the whole difference; how many values hit each quirk case.
    Accepted(BTreeMap<&'static str, usize>),
    Rejected(String),
}

/// The target's LLVM 14 quirks: where they hit a signature, the planner must give the psABI answer and
/// llc-14 must give exactly LLVM 14's.
///
/// LLVM 14's view is the planner's answer for the case rewritten as the quirks say. `I128AsTwoI64` hits
/// when an `i128` is then split between `r9` and the stack or lies at an 8-aligned stack offset;
/// `HalfAsI16` hits every `half`. The psABI answer is accepted there only when llc-14's placement equals
/// LLVM 14's view everywhere, and the planner places every `i128` wholly in two registers or in one
/// 16-byte-aligned stack slot, and every `half` in a floating-point register or on the stack.
fn quirk_verdict(
    target: &TargetRecord,
    quirks: &[Llvm14Quirk],
    case: &Case,
    expected: &Planned,
    observed: &Observed,
) -> QuirkVerdict {
    if quirks.is_empty() {
        return QuirkVerdict::NotHit;
    }
    let llvm14 = match planned_as_llvm14(target, quirks, case) {
        Ok(llvm14) => llvm14,
        Err(error) => return QuirkVerdict::Rejected(format!("planner error on LLVM 14's view: {error}")),
    };
    let mut hits: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (index, parameter) in case.parameters.iter().enumerate() {
        let hit = match parameter.as_str() {
            "i128" if quirks.contains(&Llvm14Quirk::I128AsTwoI64) => {
                match (&llvm14.arguments[index][0].start, &llvm14.arguments[index][1].start) {
                    (Loc::Register(_), Loc::Stack(_)) => Some("i128 split r9/stack"),
                    (Loc::Stack(offset), Loc::Stack(_)) if offset % 16 != 0 => {
                        Some("i128 at an 8-aligned stack offset")
                    }
                    _ => None,
                }
            }
            "half" if quirks.contains(&Llvm14Quirk::HalfAsI16) => Some("half argument"),
            _ => None,
        };
        if let Some(hit) = hit {
            *hits.entry(hit).or_default() += 1;
        }
    }
    if case.ret == "half" && quirks.contains(&Llvm14Quirk::HalfAsI16) {
        *hits.entry("half return").or_default() += 1;
    }
    if case.ret.starts_with('{') && case.ret.contains("i128") && quirks.contains(&Llvm14Quirk::I128FieldAlign8) {
        *hits.entry("returned struct with an i128 field").or_default() += 1;
    }
    if hits.is_empty() {
        return QuirkVerdict::NotHit;
    }
    if !agrees(&llvm14, observed) {
        return QuirkVerdict::Rejected("llc-14 differs from LLVM 14's view through the planner too".into());
    }
    let integer_register = |start: &Loc| {
        matches!(start, Loc::Register(name)
            if target.resolve_register(name).is_some_and(|resolved| target.abi.integer_arguments.contains(&resolved.register)
                || target.abi.integer_returns.contains(&resolved.register)))
    };
    for (index, parameter) in case.parameters.iter().enumerate() {
        let psabi_shaped = match (parameter.as_str(), expected.arguments[index].as_slice()) {
            ("i128", [low, high]) => matches!((&low.start, &high.start), (Loc::Register(_), Loc::Register(_))),
            ("i128", [whole]) => matches!(whole.start, Loc::Stack(offset) if offset % 16 == 0) && whole.size == 16,
            ("half", [whole]) => !integer_register(&whole.start),
            ("i128" | "half", _) => false,
            _ => true,
        };
        if !psabi_shaped {
            return QuirkVerdict::Rejected(format!(
                "the planner places %p{index} as LLVM 14 does, not as the psABI says"
            ));
        }
    }
    if let ReturnPlan::Registers(pieces) = &expected.ret
        && case.ret == "half"
        && pieces.iter().any(|piece| integer_register(&piece.start))
    {
        return QuirkVerdict::Rejected("the planner returns a half as LLVM 14 does, not in an SSE register".into());
    }
    QuirkVerdict::Accepted(hits)
}

// ---------------------------------------------------------------------------------------------------------
// Assembly

/// Instruction lines of every `fN`, without directives and comments.
fn function_bodies(asm: &str, syntax: Syntax) -> HashMap<usize, Vec<String>> {
    let mut bodies = HashMap::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for line in asm.lines() {
        if !line.starts_with([' ', '\t']) {
            let label = line.split(|c: char| c.is_whitespace()).next().unwrap_or("");
            if let Some(number) = label.strip_prefix('f').and_then(|rest| rest.strip_suffix(':'))
                && let Ok(number) = number.parse::<usize>()
            {
                if let Some((done, body)) = current.take() {
                    bodies.insert(done, body);
                }
                current = Some((number, Vec::new()));
            } else if label.starts_with(".Lfunc_end")
                && let Some((done, body)) = current.take()
            {
                bodies.insert(done, body);
            }
            continue;
        }
        let Some((_, body)) = current.as_mut() else { continue };
        let code = match syntax {
            Syntax::Att => line.split('#').next().unwrap_or(""),
            Syntax::Arm => line.split("//").next().unwrap_or(""),
        }
        .trim();
        if code.is_empty() || code.starts_with('.') {
            continue;
        }
        body.push(code.to_string());
    }
    if let Some((done, body)) = current.take() {
        bodies.insert(done, body);
    }
    bodies
}

/// What a register or memory word holds, in terms of the incoming arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    /// The incoming value of a register (canonical name).
    Incoming(String),
    /// Bytes loaded from the incoming argument area at this offset.
    Stack(i64),
    /// The address of this offset of the incoming argument area (negative: below it, the callee's frame).
    StackAddress(i64),
    /// The address of a global plus an offset.
    Global(String, i64),
    /// Bytes loaded from a global at this offset.
    Loaded(String, i64),
    /// The incoming value of a register (canonical name) plus an offset: an address passed in it.
    Pointer(String, i64),
    Unknown(String),
}

impl Value {
    fn plus(self, delta: i64) -> Value {
        match self {
            Value::StackAddress(offset) => Value::StackAddress(offset + delta),
            Value::Global(symbol, offset) => Value::Global(symbol, offset + delta),
            Value::Incoming(name) => Value::Pointer(name, delta),
            Value::Pointer(name, offset) => Value::Pointer(name, offset + delta),
            other => Value::Unknown(format!("{other:?} + {delta}")),
        }
    }

    fn location(&self) -> Loc {
        match self {
            Value::Incoming(name) => Loc::Register(name.clone()),
            Value::Stack(offset) => Loc::Stack(*offset),
            Value::StackAddress(offset) => Loc::StackAddress(*offset),
            Value::Global(symbol, offset) => Loc::Unknown(format!("&{symbol}+{offset}")),
            Value::Loaded(symbol, offset) => Loc::Unknown(format!("{symbol}+{offset}")),
            Value::Pointer(name, offset) => Loc::Unknown(format!("{name}+{offset}")),
            Value::Unknown(what) => Loc::Unknown(what.clone()),
        }
    }
}

/// A tiny emulator of a callee's straight-line code: registers, spill slots and the x87 stack.
struct Machine<'t> {
    target: &'t TargetRecord,
    stack_pointer: String,
    registers: HashMap<String, Value>,
    frame: HashMap<i64, Value>,
    x87: Vec<Value>,
    /// Stores to globals: symbol, offset, value.
    stores: Vec<(String, i64, Value)>,
    /// Stores through an incoming register: the register, the offset, the value.
    through_pointer: Vec<(String, i64, Value)>,
}

impl<'t> Machine<'t> {
    fn new(target: &'t TargetRecord, oracle: &OracleTarget) -> Machine<'t> {
        let stack_pointer = match oracle.syntax {
            Syntax::Att => "rsp",
            Syntax::Arm => "sp",
        };
        let stack_pointer = canonical(target, stack_pointer).expect("the stack pointer is a declared register");
        let registers = HashMap::from([(
            stack_pointer.clone(),
            Value::StackAddress(-oracle.entry_sp_below_arguments),
        )]);
        Machine {
            target,
            stack_pointer,
            registers,
            frame: HashMap::new(),
            x87: Vec::new(),
            stores: Vec::new(),
            through_pointer: Vec::new(),
        }
    }

    fn read(&self, register: &str) -> Value {
        match canonical(self.target, register) {
            Some(name) => self.registers.get(&name).cloned().unwrap_or(Value::Incoming(name)),
            None => Value::Unknown(format!("register {register}")),
        }
    }

    fn write(&mut self, register: &str, value: Value) {
        if let Some(name) = canonical(self.target, register) {
            self.registers.insert(name, value);
        }
    }

    fn load(&self, address: &Value) -> Value {
        match address {
            Value::StackAddress(offset) => match self.frame.get(offset) {
                Some(value) => value.clone(),
                None if *offset >= 0 => Value::Stack(*offset),
                None => Value::Unknown(format!("load from the frame at {offset}")),
            },
            Value::Global(symbol, offset) => Value::Loaded(symbol.clone(), *offset),
            other => Value::Unknown(format!("load from {other:?}")),
        }
    }

    fn store(&mut self, address: &Value, value: Value) {
        match address {
            Value::Global(symbol, offset) => self.stores.push((symbol.clone(), *offset, value)),
            Value::StackAddress(offset) => {
                self.frame.insert(*offset, value);
            }
            Value::Pointer(name, offset) => self.through_pointer.push((name.clone(), *offset, value)),
            _ => {}
        }
    }

    fn adjust_stack_pointer(&mut self, delta: i64) {
        let sp = self.stack_pointer.clone();
        let value = self.read(&sp).plus(delta);
        self.write(&sp, value);
    }
}

/// The canonical name of a register spelling (`%edi` -> `rdi`, `w9` -> `x9`, `v3.16b` -> `v3`).
fn canonical(target: &TargetRecord, spelling: &str) -> Option<String> {
    let name = spelling.trim().trim_start_matches('%');
    let name = name.split('.').next().unwrap_or(name);
    target
        .resolve_register(name)
        .map(|resolved| target.registers[resolved.register].name.to_string())
}

/// Traces every `store` of `fN` to `@gN_i` back to where its bytes came from, per parameter, and where the
/// bytes of `@hN` are at the return: in registers, or stored through an incoming pointer.
fn trace(target: &TargetRecord, oracle: &OracleTarget, number: usize, count: usize, body: &[String]) -> Observed {
    let mut machine = Machine::new(target, oracle);
    for line in body {
        let (mnemonic, operands) = line.split_once(char::is_whitespace).unwrap_or((line.as_str(), ""));
        let operands: Vec<&str> = split_operands(operands.trim());
        let done = match oracle.syntax {
            Syntax::Att => step_att(&mut machine, mnemonic, &operands),
            Syntax::Arm => step_arm(&mut machine, mnemonic, &operands),
        };
        if done {
            break;
        }
    }
    let mut arguments: Vec<BTreeMap<u64, Vec<Loc>>> = vec![BTreeMap::new(); count];
    let prefix = format!("g{number}_");
    for (symbol, offset, value) in machine.stores {
        let Some(index) = symbol
            .strip_prefix(&prefix)
            .and_then(|index| index.parse::<usize>().ok())
        else {
            continue;
        };
        if index < count {
            arguments[index]
                .entry(offset as u64)
                .or_default()
                .push(value.location());
        }
    }
    let returned_symbol = format!("h{number}");
    let through_pointer = machine
        .through_pointer
        .iter()
        .filter_map(|(base, offset, value)| match value {
            Value::Loaded(symbol, byte) if *symbol == returned_symbol => Some((base.clone(), *offset, *byte)),
            _ => None,
        })
        .collect();
    let mut returned: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (register, value) in &machine.registers {
        if let Value::Loaded(symbol, byte) = value
            && *symbol == returned_symbol
            && *register != machine.stack_pointer
        {
            returned.entry(*byte as u64).or_default().push(register.clone());
        }
    }
    for registers in returned.values_mut() {
        registers.sort();
    }
    Observed {
        arguments,
        returned,
        through_pointer,
    }
}

/// Operands split at commas outside `()`, `[]` and `{}`.
fn split_operands(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..index].trim());
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts
}

fn parse_number(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if negative { -value } else { value })
}

/// `sym`, `sym+8`, `sym-8` -> symbol and offset.
fn symbol_plus(text: &str) -> (String, i64) {
    match text.find(['+', '-']) {
        Some(at) if at > 0 => (text[..at].to_string(), parse_number(&text[at..]).unwrap_or(0)),
        _ => (text.to_string(), 0),
    }
}

// --- x86-64, AT&T syntax: `op src, dst`.

enum Att {
    Register(String),
    Immediate,
    Memory {
        symbol: Option<(String, i64)>,
        displacement: i64,
        base: Option<String>,
    },
}

fn parse_att(operand: &str) -> Att {
    if let Some(register) = operand.strip_prefix('%') {
        return Att::Register(register.to_string());
    }
    if operand.starts_with('$') {
        return Att::Immediate;
    }
    let (displacement, base) = match operand.split_once('(') {
        Some((displacement, rest)) => {
            let base = rest
                .trim_end_matches(')')
                .split(',')
                .next()
                .unwrap_or("")
                .trim()
                .trim_start_matches('%');
            (displacement.trim(), (!base.is_empty()).then(|| base.to_string()))
        }
        None => (operand.trim(), None),
    };
    match parse_number(displacement) {
        Some(number) => Att::Memory {
            symbol: None,
            displacement: number,
            base,
        },
        None if displacement.is_empty() => Att::Memory {
            symbol: None,
            displacement: 0,
            base,
        },
        None => Att::Memory {
            symbol: Some(symbol_plus(displacement)),
            displacement: 0,
            base,
        },
    }
}

fn att_address(machine: &Machine<'_>, operand: &Att) -> Value {
    match operand {
        Att::Memory {
            symbol: Some((symbol, offset)),
            base,
            ..
        } if base.as_deref().is_none_or(|b| b == "rip") => Value::Global(symbol.clone(), *offset),
        Att::Memory {
            symbol: None,
            displacement,
            base: Some(base),
        } => machine.read(base).plus(*displacement),
        _ => Value::Unknown("address".into()),
    }
}

/// One AT&T instruction; true at the return.
fn step_att(machine: &mut Machine<'_>, mnemonic: &str, operands: &[&str]) -> bool {
    let parsed: Vec<Att> = operands.iter().map(|operand| parse_att(operand)).collect();
    let unknown = Value::Unknown(mnemonic.to_string());
    match (mnemonic, parsed.as_slice()) {
        (m, _) if m.starts_with("ret") => return true,
        ("pushq" | "push", [Att::Register(register)]) => {
            let value = machine.read(register);
            machine.adjust_stack_pointer(-8);
            let sp = machine.read(&machine.stack_pointer.clone());
            machine.store(&sp, value);
        }
        ("popq" | "pop", [Att::Register(register)]) => {
            let sp = machine.read(&machine.stack_pointer.clone());
            let value = machine.load(&sp);
            machine.write(register, value);
            machine.adjust_stack_pointer(8);
        }
        ("subq" | "addq", [Att::Immediate, Att::Register(register)])
            if canonical(machine.target, register).as_deref() == Some(machine.stack_pointer.as_str()) =>
        {
            let amount = operands[0].trim_start_matches('$');
            let amount = parse_number(amount).unwrap_or(0);
            machine.adjust_stack_pointer(if mnemonic == "subq" { -amount } else { amount });
        }
        (m, [memory @ Att::Memory { .. }, Att::Register(register)]) if m.starts_with("lea") => {
            let address = att_address(machine, memory);
            machine.write(register, address);
        }
        (m, [memory @ Att::Memory { .. }]) if m.starts_with("fld") => {
            let address = att_address(machine, memory);
            let value = machine.load(&address);
            machine.x87.push(value);
        }
        (m, rest) if m.starts_with("fstp") => {
            let value = machine.x87.pop().unwrap_or(Value::Unknown("empty x87 stack".into()));
            if let [memory @ Att::Memory { .. }] = rest {
                let address = att_address(machine, memory);
                machine.store(&address, value);
            }
        }
        (m, [source, destination]) if m.starts_with("mov") => {
            let value = match source {
                Att::Register(register) => machine.read(register),
                memory @ Att::Memory { .. } => {
                    let address = att_address(machine, memory);
                    machine.load(&address)
                }
                Att::Immediate => unknown,
            };
            match destination {
                Att::Register(register) => machine.write(register, value),
                memory @ Att::Memory { .. } => {
                    let address = att_address(machine, memory);
                    machine.store(&address, value);
                }
                Att::Immediate => {}
            }
        }
        (_, [.., last]) => match last {
            Att::Register(register) => machine.write(register, unknown),
            memory @ Att::Memory { .. } => {
                let address = att_address(machine, memory);
                machine.store(&address, unknown);
            }
            Att::Immediate => {}
        },
        _ => {}
    }
    false
}

// --- AArch64: `op dst, src`.

enum Arm {
    Register(String),
    Immediate(i64),
    /// `[base, #imm]`, `[base, :lo12:sym+k]`, `[base, #imm]!`.
    Memory {
        base: String,
        offset: ArmOffset,
        pre_index: bool,
    },
    /// `:lo12:sym+k` or a bare `sym+k`.
    Symbol(String, i64),
    RegisterList(String),
}

enum ArmOffset {
    Immediate(i64),
    Low12(String, i64),
}

fn parse_arm(operand: &str) -> Arm {
    let operand = operand.trim();
    if let Some(inner) = operand.strip_prefix('[') {
        let pre_index = inner.ends_with('!');
        let inner = inner.trim_end_matches('!').trim_end_matches(']');
        let mut parts = inner.split(',').map(str::trim);
        let base = parts.next().unwrap_or("").to_string();
        let offset = match parts.next() {
            Some(low) if low.starts_with(":lo12:") => {
                let (symbol, offset) = symbol_plus(&low[":lo12:".len()..]);
                ArmOffset::Low12(symbol, offset)
            }
            Some(immediate) => ArmOffset::Immediate(parse_number(immediate.trim_start_matches('#')).unwrap_or(0)),
            None => ArmOffset::Immediate(0),
        };
        return Arm::Memory {
            base,
            offset,
            pre_index,
        };
    }
    if let Some(list) = operand.strip_prefix('{') {
        return Arm::RegisterList(list.trim_end_matches('}').trim().to_string());
    }
    if let Some(immediate) = operand.strip_prefix('#') {
        return Arm::Immediate(parse_number(immediate).unwrap_or(0));
    }
    if let Some(symbol) = operand.strip_prefix(":lo12:") {
        let (symbol, offset) = symbol_plus(symbol);
        return Arm::Symbol(symbol, offset);
    }
    if is_arm_register(operand) {
        return Arm::Register(operand.to_string());
    }
    let (symbol, offset) = symbol_plus(operand);
    Arm::Symbol(symbol, offset)
}

/// `x0`, `w9`, `s5`, `q3`, `v2.16b`, `sp`, `xzr`, ...: a register, not a symbol.
fn is_arm_register(operand: &str) -> bool {
    let name = operand.split('.').next().unwrap_or(operand);
    if matches!(name, "sp" | "wsp" | "xzr" | "wzr" | "lr" | "fp") {
        return true;
    }
    let mut chars = name.chars();
    matches!(chars.next(), Some('x' | 'w' | 'b' | 'h' | 's' | 'd' | 'q' | 'v'))
        && !chars.as_str().is_empty()
        && chars.all(|c| c.is_ascii_digit())
}

/// Bytes a register spelling moves (`w`/`s`: 4, `x`/`d`: 8, `q`: 16, `h`: 2, `b`: 1).
fn arm_register_bytes(register: &str) -> i64 {
    match register.chars().next() {
        Some('w' | 's') => 4,
        Some('q') => 16,
        Some('h') => 2,
        Some('b') => 1,
        _ => 8,
    }
}

/// The address of a memory operand, applying a pre-index write-back.
fn arm_address(machine: &mut Machine<'_>, base: &str, offset: &ArmOffset, pre_index: bool) -> Value {
    let address = match offset {
        ArmOffset::Low12(symbol, offset) => Value::Global(symbol.clone(), *offset),
        ArmOffset::Immediate(offset) => machine.read(base).plus(*offset),
    };
    if pre_index {
        machine.write(base, address.clone());
    }
    address
}

fn arm_post_index(machine: &mut Machine<'_>, base: &str, rest: &[Arm]) {
    if let [Arm::Immediate(delta)] = rest {
        let value = machine.read(base).plus(*delta);
        machine.write(base, value);
    }
}

/// One AArch64 instruction; true at the return.
fn step_arm(machine: &mut Machine<'_>, mnemonic: &str, operands: &[&str]) -> bool {
    let parsed: Vec<Arm> = operands.iter().map(|operand| parse_arm(operand)).collect();
    let unknown = Value::Unknown(mnemonic.to_string());
    let is_load = mnemonic.starts_with("ldr") || mnemonic.starts_with("ldur");
    let is_store = mnemonic.starts_with("str") || mnemonic.starts_with("stur");
    match (mnemonic, parsed.as_slice()) {
        ("ret", _) => return true,
        ("mov" | "fmov", [Arm::Register(destination), Arm::Register(source)]) => {
            let value = machine.read(source);
            machine.write(destination, value);
        }
        ("orr", [Arm::Register(destination), Arm::Register(first), Arm::Register(second)]) if first == second => {
            let value = machine.read(first);
            machine.write(destination, value);
        }
        (
            "add" | "sub",
            [
                Arm::Register(destination),
                Arm::Register(source),
                Arm::Immediate(amount),
            ],
        ) => {
            let delta = if mnemonic == "add" { *amount } else { -amount };
            let value = machine.read(source).plus(delta);
            machine.write(destination, value);
        }
        (
            "add",
            [
                Arm::Register(destination),
                Arm::Register(_),
                Arm::Symbol(symbol, offset),
            ],
        ) => {
            machine.write(destination, Value::Global(symbol.clone(), *offset));
        }
        (
            _,
            [
                Arm::Register(target),
                Arm::Memory {
                    base,
                    offset,
                    pre_index,
                },
                rest @ ..,
            ],
        ) if is_load => {
            let address = arm_address(machine, base, offset, *pre_index);
            let value = machine.load(&address);
            machine.write(target, value);
            arm_post_index(machine, base, rest);
        }
        (
            "ldp" | "ldnp",
            [
                Arm::Register(first),
                Arm::Register(second),
                Arm::Memory {
                    base,
                    offset,
                    pre_index,
                },
                rest @ ..,
            ],
        ) => {
            let address = arm_address(machine, base, offset, *pre_index);
            let low = machine.load(&address);
            let high = machine.load(&address.clone().plus(arm_register_bytes(first)));
            machine.write(first, low);
            machine.write(second, high);
            arm_post_index(machine, base, rest);
        }
        (
            _,
            [
                Arm::Register(source),
                Arm::Memory {
                    base,
                    offset,
                    pre_index,
                },
                rest @ ..,
            ],
        ) if is_store => {
            let value = machine.read(source);
            let address = arm_address(machine, base, offset, *pre_index);
            machine.store(&address, value);
            arm_post_index(machine, base, rest);
        }
        (
            "stp" | "stnp",
            [
                Arm::Register(first),
                Arm::Register(second),
                Arm::Memory {
                    base,
                    offset,
                    pre_index,
                },
                rest @ ..,
            ],
        ) => {
            let (low, high) = (machine.read(first), machine.read(second));
            let address = arm_address(machine, base, offset, *pre_index);
            machine.store(&address, low);
            machine.store(&address.clone().plus(arm_register_bytes(first)), high);
            arm_post_index(machine, base, rest);
        }
        (
            "st1",
            [
                Arm::RegisterList(list),
                Arm::Memory {
                    base,
                    offset,
                    pre_index,
                },
                rest @ ..,
            ],
        ) if !list.contains(',') => {
            let value = machine.read(list);
            let address = arm_address(machine, base, offset, *pre_index);
            machine.store(&address, value);
            arm_post_index(machine, base, rest);
        }
        (_, [Arm::Register(destination), ..]) if !is_store && !mnemonic.starts_with("st") => {
            machine.write(destination, unknown);
        }
        _ => {}
    }
    false
}
