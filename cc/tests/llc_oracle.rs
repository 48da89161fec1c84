#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Oracle: the standard-ABI fallback planner places every argument where LLVM 14 (`llc-14`) does.
//!
//! For each target, a fixed-seed generator makes several hundred IR signatures (after the hand-picked ones
//! of `tests/oracle/edge_cases.txt`). One module per target holds, for each signature `N`, a callee `@fN`
//! that stores every parameter `i` to its own global `@gN_i` with `store volatile` (a `byval` parameter
//! stores its pointer, so the assembly shows the address of the stack copy). `llc-14 -O2` compiles the
//! module once; a small emulator of each callee's assembly traces every store back to the incoming
//! argument register or the incoming stack offset its bytes came from. That is compared, byte offset by
//! byte offset of each parameter, with `standard_assignments`: the physical register (canonical name,
//! not the width) or the offset in the incoming argument area.
//!
//! The one place where we knowingly differ from LLVM 14 is the x86-64 `i128` (see [`Llvm14Quirk`]).
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
use neverc_test_support::{Rng, read_text};

const LLC: &str = "llc-14";
const SEED: u64 = 0x6e65_7665_7263_0014;
const RANDOM_SIGNATURES: usize = 600;
const MAX_PARAMETERS: usize = 12;
const BYVAL_S24: &str = "ptr byval(%struct.S24) align 8";

/// How LLVM 14 is known to differ from the psABI on a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Llvm14Quirk {
    None,
    /// x86-64: LLVM 14 splits an `i128` into two independent `i64`s. With only `r9` left it passes the low
    /// half in `r9` and the high half on the stack, and a stack `i128` gets only 8-byte alignment. The
    /// psABI (and gcc, and LLVM 18, which fixed both: `CC_X86_64_I128`) passes it wholly on the stack,
    /// 16-byte aligned, leaving `r9` to later arguments. The planner follows the psABI; the oracle accepts
    /// that answer only where LLVM 14's placement is exactly what the planner gives for the same signature
    /// with every `i128` written as `i64, i64`, and an `i128` actually hit one of the two cases.
    I128AsTwoI64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syntax {
    Att,
    Arm,
}

struct OracleTarget {
    name: &'static str,
    triple: &'static str,
    syntax: Syntax,
    /// Bytes between the stack pointer at entry and the incoming argument area (x86-64: the return address).
    entry_sp_below_arguments: i64,
    /// Parameter types and their weights.
    menu: &'static [(&'static str, usize)],
    quirk: Llvm14Quirk,
}

// `half` is left out on x86-64: LLVM 14 has no x86 `half` ABI yet and soft-promotes it to an integer in a
// general register (or an 8-byte stack slot); the psABI, and LLVM 15 on, pass `_Float16` in an SSE register.
const X86_64: OracleTarget = OracleTarget {
    name: "x86_64",
    triple: "x86_64-unknown-linux-gnu",
    syntax: Syntax::Att,
    entry_sp_below_arguments: 8,
    menu: &[
        ("i8", 2),
        ("i16", 2),
        ("i32", 3),
        ("i64", 3),
        ("ptr", 3),
        ("i128", 4),
        ("float", 3),
        ("double", 3),
        ("fp128", 2),
        ("<2 x float>", 2),
        ("<4 x float>", 2),
        ("<2 x double>", 2),
        ("<4 x i32>", 2),
        ("<8 x float>", 2),
        ("x86_fp80", 2),
        ("[2 x float]", 1),
        ("[3 x float]", 1),
        ("[4 x float]", 1),
        ("[2 x double]", 1),
        ("[4 x double]", 1),
        (BYVAL_S24, 3),
    ],
    quirk: Llvm14Quirk::I128AsTwoI64,
};

const AARCH64: OracleTarget = OracleTarget {
    name: "aarch64",
    triple: "aarch64-unknown-linux-gnu",
    syntax: Syntax::Arm,
    entry_sp_below_arguments: 0,
    menu: &[
        ("i8", 2),
        ("i16", 2),
        ("i32", 3),
        ("i64", 3),
        ("ptr", 3),
        ("i128", 4),
        ("half", 2),
        ("float", 3),
        ("double", 3),
        ("fp128", 2),
        ("<2 x float>", 2),
        ("<4 x float>", 2),
        ("<2 x double>", 2),
        ("<4 x i32>", 2),
        ("<8 x float>", 2),
        ("[2 x float]", 2),
        ("[3 x float]", 2),
        ("[4 x float]", 2),
        ("[2 x double]", 2),
        ("[4 x double]", 2),
        ("[2 x i64]", 3),
    ],
    quirk: Llvm14Quirk::None,
};

#[test]
fn x86_64_standard_abi_matches_llc_14() {
    check_target(&X86_64);
}

#[test]
fn aarch64_standard_abi_matches_llc_14() {
    check_target(&AARCH64);
}

// ---------------------------------------------------------------------------------------------------------
// Signatures

fn types() -> TypeTable {
    TypeTable::from([(
        "%struct.S24".to_string(),
        IrType::Struct {
            packed: false,
            fields: vec![IrType::Integer(64); 3],
        },
    )])
}

/// The parameter lists to check: the hand-picked edge cases, then the random ones.
fn signatures(oracle: &OracleTarget) -> Vec<Vec<String>> {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/edge_cases.txt");
    let text = read_text(&fixture);
    let mut lists = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        let (target, signature) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("`target: signature` expected: {line}"));
        if target.trim() == oracle.name {
            lists.push(parameter_texts(signature.trim()));
        }
    }
    let total_weight: usize = oracle.menu.iter().map(|(_, weight)| weight).sum();
    // A fixed sequence, the same on every machine.
    let mut rng = Rng::new(SEED ^ oracle.name.len() as u64);
    for _ in 0..RANDOM_SIGNATURES {
        // Biased toward many parameters, so that registers run out and the stack is exercised.
        let count = 1 + rng.below(MAX_PARAMETERS).max(rng.below(MAX_PARAMETERS));
        let list = (0..count)
            .map(|_| {
                let mut pick = rng.below(total_weight);
                let mut chosen = oracle.menu[0].0;
                for (ty, weight) in oracle.menu {
                    if pick < *weight {
                        chosen = ty;
                        break;
                    }
                    pick -= weight;
                }
                chosen.to_string()
            })
            .collect();
        lists.push(list);
    }
    lists
}

/// `void (i32, ptr byval(%struct.S24) align 8)` -> its parameter texts.
fn parameter_texts(signature: &str) -> Vec<String> {
    let inner = signature
        .strip_prefix("void")
        .map(str::trim)
        .and_then(|rest| rest.strip_prefix('('))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("`void (...)` expected: {signature}"));
    split_top_level(inner, ',')
        .into_iter()
        .map(|part| part.trim().to_string())
        .filter(|part| !part.is_empty())
        .collect()
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

fn signature_text(parameters: &[String]) -> String {
    format!("void ({})", parameters.join(", "))
}

/// The type a parameter's global holds: a `byval` parameter stores its pointer.
fn stored_type(parameter: &str) -> &str {
    if parameter.contains("byval") { "ptr" } else { parameter }
}

fn module(signatures: &[Vec<String>]) -> String {
    let mut text = String::from("%struct.S24 = type { i64, i64, i64 }\n\n");
    for (number, parameters) in signatures.iter().enumerate() {
        for (index, parameter) in parameters.iter().enumerate() {
            writeln!(
                text,
                "@g{number}_{index} = dso_local global {} zeroinitializer",
                stored_type(parameter)
            )
            .unwrap();
        }
        let list: Vec<String> = parameters
            .iter()
            .enumerate()
            .map(|(index, parameter)| format!("{parameter} %p{index}"))
            .collect();
        writeln!(text, "define void @f{number}({}) nounwind {{", list.join(", ")).unwrap();
        for (index, parameter) in parameters.iter().enumerate() {
            let ty = stored_type(parameter);
            writeln!(text, "  store volatile {ty} %p{index}, ptr @g{number}_{index}").unwrap();
        }
        text.push_str("  ret void\n}\n\n");
    }
    text
}

fn run_llc(oracle: &OracleTarget, module: &str) -> String {
    let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llc_oracle");
    std::fs::create_dir_all(&directory).unwrap();
    let input = directory.join(format!("{}.ll", oracle.name));
    let output = directory.join(format!("{}.s", oracle.name));
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
        "{LLC} failed on {} ({}):\n{}",
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

/// One piece of a parameter as the planner places it.
#[derive(Clone, Debug)]
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

/// The planner's pieces, per parameter.
fn planned(target: &TargetRecord, parameters: &[String]) -> Result<Vec<Vec<Expected>>, String> {
    let text = signature_text(parameters);
    let signature = Signature::parse(&text).map_err(|error| format!("parse `{text}`: {error}"))?;
    let assignments = standard_assignments(target, &signature, &types()).map_err(|error| error.to_string())?;
    let mut result = vec![Vec::new(); parameters.len()];
    for assignment in assignments {
        let ValueRef::Argument(index) = assignment.value else {
            continue;
        };
        for piece in &assignment.pieces {
            let start = match piece.place {
                Place::Register { register, .. } => Loc::Register(target.registers[register].name.to_string()),
                Place::Stack { offset, .. } if assignment.indirect => Loc::StackAddress(offset as i64),
                Place::Stack { offset, .. } => Loc::Stack(offset as i64),
            };
            result[index as usize].push(Expected {
                offset: piece.offset,
                size: piece.size,
                start,
            });
        }
    }
    Ok(result)
}

/// LLVM 14's x86-64 placement, through the planner: every `i128` written as two `i64`s.
fn planned_as_llvm14(target: &TargetRecord, parameters: &[String]) -> Result<Vec<Vec<Expected>>, String> {
    let mut model = Vec::new();
    let mut origin = Vec::new();
    for (index, parameter) in parameters.iter().enumerate() {
        if parameter == "i128" {
            model.extend(["i64".to_string(), "i64".to_string()]);
            origin.extend([(index, 0), (index, 8)]);
        } else {
            model.push(parameter.clone());
            origin.push((index, 0));
        }
    }
    let mut result = vec![Vec::new(); parameters.len()];
    for (pieces, (index, offset)) in planned(target, &model)?.into_iter().zip(origin) {
        for mut piece in pieces {
            piece.offset += offset;
            result[index].push(piece);
        }
    }
    Ok(result)
}

type Observed = Vec<BTreeMap<u64, Vec<Loc>>>;

/// Indices of the parameters whose observed bytes disagree with the expected pieces.
fn disagreements(expected: &[Vec<Expected>], observed: &Observed) -> Vec<usize> {
    let mut bad = Vec::new();
    for (index, pieces) in expected.iter().enumerate() {
        let seen = &observed[index];
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

// ---------------------------------------------------------------------------------------------------------
// The check

#[derive(Default)]
struct Summary {
    signatures: usize,
    parameters: usize,
    pieces: usize,
    i128_split: usize,
    i128_misaligned: usize,
    exception_signatures: usize,
    mismatches: usize,
    /// Per parameter type: pieces in registers, pieces on the stack.
    coverage: BTreeMap<String, (usize, usize)>,
}

fn check_target(oracle: &OracleTarget) {
    let target = target_by_name(oracle.name).unwrap_or_else(|| panic!("target {} is not bundled", oracle.name));
    let lists = signatures(oracle);
    let asm = run_llc(oracle, &module(&lists));
    let bodies = function_bodies(&asm, oracle.syntax);
    let mut summary = Summary::default();
    let mut report = String::new();
    for (number, parameters) in lists.iter().enumerate() {
        let body = bodies
            .get(&number)
            .unwrap_or_else(|| panic!("no function f{number} in the llc output"));
        let observed = trace(target, oracle, number, parameters.len(), body);
        let expected = match planned(target, parameters) {
            Ok(expected) => expected,
            Err(error) => {
                summary.mismatches += 1;
                writeln!(
                    report,
                    "{} f{number}: {}\n  planner error: {error}",
                    oracle.name,
                    signature_text(parameters)
                )
                .unwrap();
                continue;
            }
        };
        summary.signatures += 1;
        summary.parameters += parameters.len();
        summary.pieces += expected.iter().map(Vec::len).sum::<usize>();
        for (parameter, pieces) in parameters.iter().zip(&expected) {
            let (registers, stack) = summary.coverage.entry(parameter.clone()).or_default();
            for piece in pieces {
                match piece.start {
                    Loc::Register(_) => *registers += 1,
                    _ => *stack += 1,
                }
            }
        }
        let mut bad = disagreements(&expected, &observed);
        let mut note = None;
        if oracle.quirk == Llvm14Quirk::I128AsTwoI64 {
            match i128_exception(target, parameters, &expected, &observed) {
                I128Verdict::NotHit => {}
                I128Verdict::Accepted { split, misaligned } => {
                    summary.i128_split += split;
                    summary.i128_misaligned += misaligned;
                    summary.exception_signatures += 1;
                    continue;
                }
                I128Verdict::Rejected(reason) => {
                    note = Some(reason);
                    if bad.is_empty() {
                        bad = (0..parameters.len())
                            .filter(|index| parameters[*index] == "i128")
                            .collect();
                    }
                }
            }
        }
        if bad.is_empty() {
            continue;
        }
        summary.mismatches += 1;
        writeln!(report, "{} f{number}: {}", oracle.name, signature_text(parameters)).unwrap();
        if let Some(note) = note {
            writeln!(report, "  LLVM 14 i128 bug: {note}").unwrap();
        }
        for (index, parameter) in parameters.iter().enumerate() {
            let mark = if bad.contains(&index) { "!!" } else { "  " };
            writeln!(
                report,
                "  {mark} %p{index} {parameter}\n       planner: {}\n       llc-14:  {}",
                describe_expected(&expected[index]),
                describe_observed(&observed[index])
            )
            .unwrap();
        }
    }
    println!(
        "{}: {} signatures, {} parameters, {} pieces checked against llc-14; psABI exceptions (LLVM 14 i128): \
         {} signatures, {} i128 split r9/stack, {} i128 at an 8-aligned stack offset; {} mismatching signatures",
        oracle.name,
        summary.signatures,
        summary.parameters,
        summary.pieces,
        summary.exception_signatures,
        summary.i128_split,
        summary.i128_misaligned,
        summary.mismatches
    );
    let coverage: Vec<String> = summary
        .coverage
        .iter()
        .map(|(ty, (registers, stack))| format!("{ty}: {registers} reg/{stack} stack"))
        .collect();
    println!("{}: pieces per type: {}", oracle.name, coverage.join("; "));
    assert!(summary.signatures >= 300, "too few signatures checked");
    // The generator must reach the stack with every type of the menu, or the stack rules go unchecked.
    for (ty, _) in oracle.menu {
        let stack = summary.coverage.get(*ty).map_or(0, |(_, stack)| *stack);
        assert!(
            stack > 0,
            "no {ty} argument of {} went to the stack: change the seed or the weights",
            oracle.name
        );
    }
    assert!(
        summary.mismatches == 0,
        "{} of {} signatures disagree with llc-14 on {}:\n{report}",
        summary.mismatches,
        lists.len(),
        oracle.name
    );
}

enum I128Verdict {
    /// No `i128` of the signature is placed differently by LLVM 14 and the psABI: compare as usual.
    NotHit,
    /// LLVM 14's bug explains the whole difference; how many `i128`s hit each case.
    Accepted {
        split: usize,
        misaligned: usize,
    },
    Rejected(String),
}

/// LLVM 14's x86-64 `i128` bug: where it hits a signature, the planner must give the psABI answer and
/// llc-14 must give exactly LLVM 14's.
///
/// LLVM 14's view is the planner's answer for the same signature with every `i128` as two `i64`s. The bug
/// hits when some `i128` is then split between `r9` and the stack or lies at an 8-aligned stack offset.
/// The psABI answer is accepted there only when llc-14's placement equals LLVM 14's view for every
/// parameter, and the planner places every `i128` wholly in two registers or in one 16-byte-aligned stack
/// slot (leaving `r9` to later arguments, which the `i64, i64` view cannot give them).
fn i128_exception(
    target: &TargetRecord,
    parameters: &[String],
    expected: &[Vec<Expected>],
    observed: &Observed,
) -> I128Verdict {
    if !parameters.iter().any(|parameter| parameter == "i128") {
        return I128Verdict::NotHit;
    }
    let llvm14 = match planned_as_llvm14(target, parameters) {
        Ok(llvm14) => llvm14,
        Err(error) => return I128Verdict::Rejected(format!("planner error on the i64, i64 view: {error}")),
    };
    let (mut split, mut misaligned) = (0, 0);
    for (index, parameter) in parameters.iter().enumerate() {
        if parameter != "i128" {
            continue;
        }
        match (&llvm14[index][0].start, &llvm14[index][1].start) {
            (Loc::Register(_), Loc::Stack(_)) => split += 1,
            (Loc::Stack(offset), Loc::Stack(_)) if offset % 16 != 0 => misaligned += 1,
            _ => {}
        }
    }
    if split + misaligned == 0 {
        return I128Verdict::NotHit;
    }
    if !disagreements(&llvm14, observed).is_empty() {
        return I128Verdict::Rejected("llc-14 differs from the planner's i64, i64 view too".into());
    }
    for (index, parameter) in parameters.iter().enumerate() {
        let psabi_shaped = match expected[index].as_slice() {
            [low, high] => matches!((&low.start, &high.start), (Loc::Register(_), Loc::Register(_))),
            [whole] => matches!(whole.start, Loc::Stack(offset) if offset % 16 == 0) && whole.size == 16,
            _ => false,
        };
        if parameter == "i128" && !psabi_shaped {
            return I128Verdict::Rejected(format!(
                "the planner places %p{index} as LLVM 14 does, not as the psABI says (two registers or one \
                 16-aligned stack slot)"
            ));
        }
    }
    I128Verdict::Accepted { split, misaligned }
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
    Unknown(String),
}

impl Value {
    fn plus(self, delta: i64) -> Value {
        match self {
            Value::StackAddress(offset) => Value::StackAddress(offset + delta),
            Value::Global(symbol, offset) => Value::Global(symbol, offset + delta),
            other => Value::Unknown(format!("{other:?} + {delta}")),
        }
    }

    fn location(&self) -> Loc {
        match self {
            Value::Incoming(name) => Loc::Register(name.clone()),
            Value::Stack(offset) => Loc::Stack(*offset),
            Value::StackAddress(offset) => Loc::StackAddress(*offset),
            Value::Global(symbol, offset) => Loc::Unknown(format!("&{symbol}+{offset}")),
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
            other => Value::Unknown(format!("load from {other:?}")),
        }
    }

    fn store(&mut self, address: &Value, value: Value) {
        match address {
            Value::Global(symbol, offset) => self.stores.push((symbol.clone(), *offset, value)),
            Value::StackAddress(offset) => {
                self.frame.insert(*offset, value);
            }
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

/// Traces every `store` of `fN` to `@gN_i` back to where its bytes came from, per parameter.
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
    let mut observed: Observed = vec![BTreeMap::new(); count];
    let prefix = format!("g{number}_");
    for (symbol, offset, value) in machine.stores {
        let Some(index) = symbol
            .strip_prefix(&prefix)
            .and_then(|index| index.parse::<usize>().ok())
        else {
            continue;
        };
        if index < count {
            observed[index].entry(offset as u64).or_default().push(value.location());
        }
    }
    observed
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
