//! Semantic checks of one target declaration, and of a set of targets together.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::Finding;
use crate::lowering::{Placeholder, parse_template};
use crate::model::{Spelling, name_table};
use crate::rule::Rule;
use crate::spec_text::{Spec, SpecList, is_stack_token};
use crate::target::{RegisterClassKind, RelocationDeclaration, TargetDeclaration, TlsVariantName};
use neverc_records::{Overflow, RelocationBase, RelocationFormat, TemplatePart};

/// Whether `ty` is an IR scalar type or a vector `<N x T>` of one (N from 1), as LLVM spells them.
fn is_scalar_or_vector(ty: &str) -> bool {
    if IR_SCALAR_TYPES.contains(&ty) {
        return true;
    }
    let Some((count, element)) = ty
        .strip_prefix('<')
        .and_then(|rest| rest.strip_suffix('>'))
        .and_then(|inner| inner.split_once(" x "))
    else {
        return false;
    };
    count.parse::<u32>().is_ok_and(|count| count > 0) && !count.starts_with('0') && IR_SCALAR_TYPES.contains(&element)
}

/// IR type spellings a `stack_only_types` or `standard_deviations` entry may name.
const IR_SCALAR_TYPES: &[&str] = &[
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "ptr",
    "half",
    "bfloat",
    "float",
    "double",
    "fp128",
    "x86_fp80",
    "ppc_fp128",
];

/// IR floating-point type spellings an `[abi.rules.array_blocks]` `float_types` entry may name.
const IR_FLOAT_TYPES: &[&str] = &["half", "bfloat", "float", "double", "fp128", "x86_fp80", "ppc_fp128"];

/// Prefix of schema digests whose plan numbers are DWARF numbers plus one.
pub const DWARF_PLUS_ONE_DIGEST_PREFIX: &str = "dwarf+1-";
/// Prefix of schema digests that name an LLVM build's register enumeration for a triple.
pub const LLVM_DIGEST_PREFIX: &str = "llvm-";

pub(crate) fn target_findings(declaration: &TargetDeclaration) -> Vec<Finding> {
    let mut findings = Vec::new();
    check_identity(declaration, &mut findings);
    check_classes(declaration, &mut findings);
    check_registers(declaration, &mut findings);
    let names = name_table(declaration);
    let reserved = check_reserved(declaration, &names, &mut findings);
    let context = Context {
        declaration,
        names: &names,
        reserved: &reserved,
    };
    context.check_callee_saved(&mut findings);
    context.check_abi(&mut findings);
    context.check_specs(&mut findings);
    context.check_lowering(&mut findings);
    check_elf(declaration, &mut findings);
    check_relocations(declaration, &mut findings);
    findings
}

fn power_of_two(value: u32) -> bool {
    value != 0 && value.is_power_of_two()
}

fn check_identity(declaration: &TargetDeclaration, findings: &mut Vec<Finding>) {
    let identity = &declaration.identity;
    if !power_of_two(identity.stack_alignment) {
        findings.push(Finding::error(
            Rule::Identity,
            "/identity/stack_alignment",
            format!("stack alignment {} is not a power of two", identity.stack_alignment),
        ));
    }
    if !matches!(identity.pointer_width, 16 | 32 | 64) {
        findings.push(Finding::error(
            Rule::Identity,
            "/identity/pointer_width",
            format!("pointer width {} is not 16, 32 or 64 bits", identity.pointer_width),
        ));
    }
    let mut seen = HashSet::from([identity.name.to_ascii_lowercase()]);
    for (index, alias) in identity.aliases.iter().enumerate() {
        if !seen.insert(alias.to_ascii_lowercase()) {
            findings.push(Finding::error(
                Rule::DuplicateName,
                format!("/identity/aliases/{index}"),
                format!("target name `{alias}` is listed twice"),
            ));
        }
    }
    if identity.schema_digest.starts_with(LLVM_DIGEST_PREFIX)
        && identity.schema_digest != format!("{LLVM_DIGEST_PREFIX}{}", identity.triple)
    {
        findings.push(Finding::error(
            Rule::SchemaDigest,
            "/identity/schema_digest",
            format!(
                "an LLVM numbering digest must be `{LLVM_DIGEST_PREFIX}{}`, the triple's",
                identity.triple
            ),
        ));
    }
    if identity.schema_digest.starts_with(DWARF_PLUS_ONE_DIGEST_PREFIX) {
        for (index, register) in declaration.registers.iter().enumerate() {
            if u64::from(register.plan_number) != u64::from(register.dwarf) + 1 {
                findings.push(Finding::error(
                    Rule::SchemaDigest,
                    format!("/registers/{index}/plan_number"),
                    format!(
                        "digest `{}` promises plan number = DWARF + 1, but `{}` has plan number {} and DWARF {}",
                        identity.schema_digest, register.name, register.plan_number, register.dwarf
                    ),
                ));
            }
        }
    }
}

fn check_elf(declaration: &TargetDeclaration, findings: &mut Vec<Finding>) {
    let Some(elf) = &declaration.elf else {
        return;
    };
    if elf.machine == 0 {
        findings.push(Finding::error(
            Rule::Elf,
            "/elf/machine",
            "ELF machine 0 is `EM_NONE`, no machine",
        ));
    }
    if elf.class != declaration.identity.pointer_width || !matches!(elf.class, 32 | 64) {
        findings.push(Finding::error(
            Rule::Elf,
            "/elf/class",
            format!(
                "ELF class {} must be 32 or 64 and equal the pointer width ({} bits)",
                elf.class, declaration.identity.pointer_width
            ),
        ));
    }
    for (key, size) in [
        ("common_page_size", elf.common_page_size),
        ("max_page_size", elf.max_page_size),
    ] {
        if size == 0 || !size.is_power_of_two() {
            findings.push(Finding::error(
                Rule::PageSize,
                format!("/elf/{key}"),
                format!("page size {size} is not a power of two"),
            ));
        }
    }
    if elf.max_page_size < elf.common_page_size {
        findings.push(Finding::error(
            Rule::PageSize,
            "/elf/max_page_size",
            format!(
                "the maximum page size {} is smaller than the common page size {}",
                elf.max_page_size, elf.common_page_size
            ),
        ));
    }
    match (elf.tls.variant, elf.tls.tcb_size) {
        (TlsVariantName::I, None) => findings.push(Finding::error(
            Rule::TlsVariant,
            "/elf/tls",
            "TLS variant I needs `tcb_size`, the size of the thread control block the thread pointer points at \
             (AArch64 16, RISC-V 0)",
        )),
        (TlsVariantName::II, Some(size)) => findings.push(Finding::error(
            Rule::TlsVariant,
            "/elf/tls/tcb_size",
            format!(
                "TLS variant II has no thread control block before the TLS block (it ends at the thread pointer), \
                 so `tcb_size = {size}` means nothing"
            ),
        )),
        _ => {}
    }
    let mut emulations = HashSet::new();
    for (index, emulation) in elf.emulations.iter().enumerate() {
        if !emulations.insert(emulation) {
            findings.push(Finding::error(
                Rule::DuplicateEmulation,
                format!("/elf/emulations/{index}"),
                format!("emulation `{emulation}` is listed twice"),
            ));
        }
    }
    let mut errata = HashSet::new();
    for (index, erratum) in elf.errata.iter().enumerate() {
        if !errata.insert(erratum) {
            findings.push(Finding::error(
                Rule::DuplicateErratum,
                format!("/elf/errata/{index}"),
                format!("erratum `{erratum}` is listed twice"),
            ));
        }
    }
}

fn check_relocations(declaration: &TargetDeclaration, findings: &mut Vec<Finding>) {
    let mut numbers: HashMap<(RelocationFormat, u32), &str> = HashMap::new();
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (index, relocation) in declaration.relocations.iter().enumerate() {
        let pointer = format!("/relocations/{index}");
        if relocation.format == RelocationFormat::Elf && declaration.elf.is_none() {
            findings.push(Finding::error(
                Rule::RelocationFormat,
                format!("{pointer}/format"),
                format!(
                    "`{}` is an ELF relocation, and the target declares no `[elf]` facts (machine, class, page sizes)",
                    relocation.name
                ),
            ));
        }
        if let Some(first) = numbers.insert((relocation.format, relocation.number), &relocation.name) {
            findings.push(Finding::error(
                Rule::DuplicateRelocationNumber,
                format!("{pointer}/number"),
                format!(
                    "`{}` reuses {} relocation number {} of `{first}`",
                    relocation.name,
                    relocation.format.name(),
                    relocation.number
                ),
            ));
        }
        if let Some(first) = names.insert(&relocation.name, index) {
            findings.push(Finding::error(
                Rule::DuplicateRelocationName,
                format!("{pointer}/name"),
                format!(
                    "relocation `{}` is already declared as number {}",
                    relocation.name, declaration.relocations[first].number
                ),
            ));
        }
        check_relocation_kind(relocation, &pointer, findings);
        check_relocation_field(relocation, &pointer, findings);
    }
}

fn check_relocation_kind(relocation: &RelocationDeclaration, pointer: &str, findings: &mut Vec<Finding>) {
    let kind = relocation.kind;
    if !kind.allows(relocation.relative_to) {
        let allowed: Vec<&str> = RelocationBase::ALL
            .into_iter()
            .filter(|base| kind.allows(*base))
            .map(RelocationBase::name)
            .collect();
        findings.push(Finding::error(
            Rule::RelocationKind,
            format!("{pointer}/relative_to"),
            format!(
                "`{}` is of kind `{}`, which cannot be relative to `{}` (only {})",
                relocation.name,
                kind.name(),
                relocation.relative_to.name(),
                allowed.join(", ")
            ),
        ));
    }
    if relocation.relative_to == RelocationBase::Page && relocation.instruction.is_none() {
        findings.push(Finding::error(
            Rule::RelocationKind,
            format!("{pointer}/relative_to"),
            format!(
                "`{}` is page-relative, which only an instruction field can be (ADRP: `instruction = {{ shift = 12, bits = ... }}`)",
                relocation.name
            ),
        ));
    }
    if kind.patches_place() != (relocation.size != 0) {
        let what = if kind.patches_place() {
            "patches its place, so its size cannot be 0"
        } else {
            "is a marker that patches nothing, so its size must be 0"
        };
        findings.push(Finding::error(
            Rule::RelocationKind,
            format!("{pointer}/size"),
            format!("`{}` is of kind `{}`, which {what}", relocation.name, kind.name()),
        ));
    }
}

fn check_relocation_field(relocation: &RelocationDeclaration, pointer: &str, findings: &mut Vec<Finding>) {
    let name = &relocation.name;
    let size = relocation.size;
    if !matches!(size, 0 | 8 | 16 | 32 | 64) {
        findings.push(Finding::error(
            Rule::RelocationField,
            format!("{pointer}/size"),
            format!("`{name}` patches {size} bits; a place is 0 (a marker), 8, 16, 32 or 64 bits"),
        ));
    }
    if size == 0 && (relocation.overflow != Overflow::None || relocation.instruction.is_some()) {
        findings.push(Finding::error(
            Rule::RelocationField,
            format!("{pointer}/size"),
            format!("`{name}` patches no bits, so it has no overflow rule (`none`) and no instruction field"),
        ));
    }
    let Some(field) = &relocation.instruction else {
        return;
    };
    let at = format!("{pointer}/instruction");
    if field.shift >= 64 {
        findings.push(Finding::error(
            Rule::RelocationField,
            format!("{at}/shift"),
            format!("`{name}` shifts its value by {}; a shift is below 64", field.shift),
        ));
    }
    if field.round >= 64 {
        findings.push(Finding::error(
            Rule::RelocationField,
            format!("{at}/round"),
            format!(
                "`{name}` rounds its value at bit {}; rounding is at a bit below 64",
                field.round
            ),
        ));
    }
    let mut used = 0u64;
    let mut total = 0u64;
    for (index, bits) in field.bits.iter().enumerate() {
        let end = u64::from(bits.lsb) + u64::from(bits.width);
        if bits.width == 0 || end > u64::from(size) {
            findings.push(Finding::error(
                Rule::RelocationField,
                format!("{at}/bits/{index}"),
                format!(
                    "bits {}..{end} of `{name}` are not a non-empty run inside its {size}-bit place",
                    bits.lsb
                ),
            ));
            continue;
        }
        let mask = (u64::MAX >> (64 - bits.width)) << bits.lsb;
        if used & mask != 0 {
            findings.push(Finding::error(
                Rule::RelocationField,
                format!("{at}/bits/{index}"),
                format!("bits {}..{end} of `{name}` overlap an earlier run", bits.lsb),
            ));
        }
        used |= mask;
        total += u64::from(bits.width);
    }
    if total > 0 && total + u64::from(field.shift) > 64 {
        findings.push(Finding::error(
            Rule::RelocationField,
            format!("{at}/shift"),
            format!(
                "`{name}` takes {total} bits above a shift of {}, past bit 63 of the value",
                field.shift
            ),
        ));
    }
}

fn check_classes(declaration: &TargetDeclaration, findings: &mut Vec<Finding>) {
    let mut names = HashMap::new();
    for (index, class) in declaration.register_classes.iter().enumerate() {
        let pointer = format!("/register_classes/{index}");
        if names.insert(class.name.as_str(), index).is_some() {
            findings.push(Finding::error(
                Rule::DuplicateClass,
                format!("{pointer}/name"),
                format!("register class `{}` is declared twice", class.name),
            ));
        }
        if !power_of_two(class.width) || class.width < 8 {
            findings.push(Finding::error(
                Rule::Width,
                format!("{pointer}/width"),
                format!("class width {} is not a power of two of at least 8 bits", class.width),
            ));
        }
        for (position, width) in class.widths.iter().enumerate() {
            if !power_of_two(*width) || *width < 8 || *width > class.width {
                findings.push(Finding::error(
                    Rule::Width,
                    format!("{pointer}/widths/{position}"),
                    format!(
                        "width {width} of class `{}` must be a power of two between 8 and {}",
                        class.name, class.width
                    ),
                ));
            }
        }
    }
}

fn check_registers(declaration: &TargetDeclaration, findings: &mut Vec<Finding>) {
    let mut spellings: HashMap<String, String> = HashMap::new();
    let mut numbers: HashMap<u32, String> = HashMap::new();
    let mut dwarf: HashMap<u32, usize> = HashMap::new();
    for (index, register) in declaration.registers.iter().enumerate() {
        let pointer = format!("/registers/{index}");
        let class = declaration
            .register_classes
            .iter()
            .find(|class| class.name == register.class);
        if class.is_none() {
            findings.push(Finding::error(
                Rule::UnknownClass,
                format!("{pointer}/class"),
                format!(
                    "register `{}` names undeclared class `{}`",
                    register.name, register.class
                ),
            ));
        }
        let width = register.width.or(class.map(|class| class.width)).unwrap_or(0);
        if let (Some(class), Some(own)) = (class, register.width)
            && (own > class.width || !class.widths.contains(&own))
        {
            findings.push(Finding::error(
                Rule::Width,
                format!("{pointer}/width"),
                format!(
                    "width {own} of `{}` is not legal for class `{}`",
                    register.name, class.name
                ),
            ));
        }
        let mut claim = |spelling: &str, at: String, findings: &mut Vec<Finding>| {
            let key = spelling.to_ascii_lowercase();
            if let Some(owner) = spellings.get(&key) {
                findings.push(Finding::error(
                    Rule::DuplicateRegisterName,
                    at,
                    format!("register name `{spelling}` is already used by `{owner}`"),
                ));
            } else {
                spellings.insert(key, register.name.clone());
            }
        };
        claim(&register.name, format!("{pointer}/name"), findings);
        for (position, alias) in register.aliases.iter().enumerate() {
            claim(alias, format!("{pointer}/aliases/{position}"), findings);
        }
        for (position, sub) in register.subregisters.iter().enumerate() {
            claim(&sub.name, format!("{pointer}/subregisters/{position}/name"), findings);
            if let Some(class) = class
                && (!class.widths.contains(&sub.width) || sub.width > width)
            {
                findings.push(Finding::error(
                    Rule::Width,
                    format!("{pointer}/subregisters/{position}/width"),
                    format!("sub-register `{}` has width {}, which is not legal for class `{}` (widths {:?}) or exceeds `{}` ({width} bits)", sub.name, sub.width, class.name, class.widths, register.name),
                ));
            }
        }
        let mut number = |value: u32, what: &str, at: String, findings: &mut Vec<Finding>| {
            if value == 0 {
                findings.push(Finding::error(
                    Rule::RegisterNumber,
                    at,
                    format!("{what} has plan number 0, which plans reserve for `no register`"),
                ));
            } else if let Some(owner) = numbers.get(&value) {
                findings.push(Finding::error(
                    Rule::DuplicateRegisterNumber,
                    at,
                    format!("{what} reuses plan number {value} of {owner}"),
                ));
            } else {
                numbers.insert(value, what.to_string());
            }
        };
        number(
            register.plan_number,
            &format!("register `{}`", register.name),
            format!("{pointer}/plan_number"),
            findings,
        );
        for (position, sub) in register.subregisters.iter().enumerate() {
            if let Some(value) = sub.plan_number {
                number(
                    value,
                    &format!("sub-register `{}`", sub.name),
                    format!("{pointer}/subregisters/{position}/plan_number"),
                    findings,
                );
            }
        }
        if let Some(first) = dwarf.insert(register.dwarf, index) {
            findings.push(Finding::error(
                Rule::DuplicateDwarfNumber,
                format!("{pointer}/dwarf"),
                format!(
                    "`{}` reuses DWARF number {} of `{}`",
                    register.name, register.dwarf, declaration.registers[first].name
                ),
            ));
        }
        let mut flags = HashSet::new();
        for (position, flag) in register.flags.iter().enumerate() {
            if !flags.insert(*flag) {
                findings.push(Finding::error(
                    Rule::DuplicateFlag,
                    format!("{pointer}/flags/{position}"),
                    format!("flag `{}` is listed twice", flag.schema_name()),
                ));
            }
        }
    }
}

fn check_reserved(
    declaration: &TargetDeclaration,
    names: &HashMap<String, Spelling>,
    findings: &mut Vec<Finding>,
) -> HashSet<usize> {
    let mut reserved = HashSet::new();
    for (index, name) in declaration.reserved.iter().enumerate() {
        match names.get(&name.to_ascii_lowercase()) {
            Some(entry) => {
                if !reserved.insert(entry.register) {
                    findings.push(Finding::error(
                        Rule::DuplicateReserved,
                        format!("/reserved/{index}"),
                        format!("reserved register `{name}` is listed twice"),
                    ));
                }
            }
            None => findings.push(Finding::error(
                Rule::UnknownRegister,
                format!("/reserved/{index}"),
                format!("reserved register `{name}` is not declared"),
            )),
        }
    }
    reserved
}

struct Context<'a> {
    declaration: &'a TargetDeclaration,
    names: &'a HashMap<String, Spelling>,
    reserved: &'a HashSet<usize>,
}

/// What a list of register names must hold.
#[derive(Clone, Copy)]
enum Want {
    General,
    FloatingPoint,
    Either,
}

impl Context<'_> {
    fn class_kind(&self, register: usize) -> Option<RegisterClassKind> {
        let class = &self.declaration.registers.get(register)?.class;
        self.declaration
            .register_classes
            .iter()
            .find(|candidate| &candidate.name == class)
            .map(|class| class.kind)
    }

    /// Resolves a name at `pointer`, reporting unknown, reserved and wrong-class names.
    fn check_name(
        &self,
        name: &str,
        pointer: String,
        want: Want,
        what: &str,
        findings: &mut Vec<Finding>,
    ) -> Option<usize> {
        let Some(entry) = self.names.get(&name.to_ascii_lowercase()) else {
            findings.push(Finding::error(
                Rule::UnknownRegister,
                pointer,
                format!("{what} names `{name}`, which is not a declared register, alias or sub-register"),
            ));
            return None;
        };
        if self.reserved.contains(&entry.register) {
            findings.push(Finding::error(
                Rule::ReservedRegister,
                pointer.clone(),
                format!("{what} names reserved register `{name}`"),
            ));
        }
        let kind = self.class_kind(entry.register);
        let fits = match (want, kind) {
            (Want::General, Some(kind)) => !kind.holds_floating_point(),
            (Want::FloatingPoint, Some(kind)) => kind.holds_floating_point(),
            _ => true,
        };
        if !fits {
            let expected = if matches!(want, Want::General) {
                "a general-purpose"
            } else {
                "a floating-point or vector"
            };
            findings.push(Finding::error(
                Rule::RegisterClass,
                pointer,
                format!("{what} needs {expected} register, but `{name}` is not one"),
            ));
        }
        Some(entry.register)
    }

    fn check_list(&self, list: &[String], pointer: &str, want: Want, what: &str, findings: &mut Vec<Finding>) {
        let mut seen = HashSet::new();
        for (index, name) in list.iter().enumerate() {
            if let Some(register) = self.check_name(name, format!("{pointer}/{index}"), want, what, findings)
                && !seen.insert(register)
            {
                findings.push(Finding::error(
                    Rule::DuplicateRegister,
                    format!("{pointer}/{index}"),
                    format!("{what} lists `{name}` twice"),
                ));
            }
        }
    }

    fn check_callee_saved(&self, findings: &mut Vec<Finding>) {
        self.check_list(
            &self.declaration.callee_saved,
            "/callee_saved",
            Want::Either,
            "the callee-saved set",
            findings,
        );
    }

    fn check_abi(&self, findings: &mut Vec<Finding>) {
        let abi = &self.declaration.abi;
        self.check_list(
            &abi.integer_arguments,
            "/abi/integer_arguments",
            Want::General,
            "the integer argument pool",
            findings,
        );
        self.check_list(
            &abi.float_arguments,
            "/abi/float_arguments",
            Want::FloatingPoint,
            "the float argument pool",
            findings,
        );
        self.check_list(
            &abi.integer_returns,
            "/abi/integer_returns",
            Want::General,
            "the integer return pool",
            findings,
        );
        self.check_list(
            &abi.float_returns,
            "/abi/float_returns",
            Want::FloatingPoint,
            "the float return pool",
            findings,
        );
        self.check_name(
            &abi.sret_register,
            "/abi/sret_register".into(),
            Want::General,
            "the sret register",
            findings,
        );
        if !power_of_two(abi.stack.slot_size) {
            findings.push(Finding::error(
                Rule::AbiStack,
                "/abi/stack/slot_size",
                format!("stack slot size {} is not a power of two", abi.stack.slot_size),
            ));
        }
        if !power_of_two(abi.stack.max_alignment) || abi.stack.max_alignment < abi.stack.slot_size {
            findings.push(Finding::error(
                Rule::AbiStack,
                "/abi/stack/max_alignment",
                format!(
                    "maximum stack alignment {} must be a power of two no smaller than the slot size",
                    abi.stack.max_alignment
                ),
            ));
        }
        if abi.rules.vector_register_bytes != 0 && !power_of_two(abi.rules.vector_register_bytes) {
            findings.push(Finding::error(
                Rule::AbiRule,
                "/abi/rules/vector_register_bytes",
                format!("{} is not a power of two", abi.rules.vector_register_bytes),
            ));
        }
        for (index, ty) in abi.rules.stack_only_types.iter().enumerate() {
            if !IR_SCALAR_TYPES.contains(&ty.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiRule,
                    format!("/abi/rules/stack_only_types/{index}"),
                    format!("`{ty}` is not an IR scalar type ({})", IR_SCALAR_TYPES.join(", ")),
                ));
            }
        }
        self.check_array_blocks(findings);
        if abi.sret_takes_argument_register
            && let (Some(sret), Some(first)) = (
                self.names.get(&abi.sret_register.to_ascii_lowercase()),
                abi.integer_arguments.first(),
            )
            && self.names.get(&first.to_ascii_lowercase()).map(|entry| entry.register) != Some(sret.register)
        {
            findings.push(Finding::error(
                Rule::AbiSret,
                "/abi/sret_register",
                format!("the sret pointer takes an argument register, so it must be the first one, `{first}`"),
            ));
        }
    }

    /// The widths the class of a pool's first register declares, when it resolves.
    fn pool_widths(&self, pool: &[String]) -> Option<&[u32]> {
        let entry = self.names.get(&pool.first()?.to_ascii_lowercase())?;
        let class = &self.declaration.registers.get(entry.register)?.class;
        self.declaration
            .register_classes
            .iter()
            .find(|candidate| &candidate.name == class)
            .map(|class| class.widths.as_slice())
    }

    /// `[abi.rules.array_blocks]`: every integer width one the integer argument registers hold and no wider
    /// than a pointer, every vector width one the float argument registers hold and no wider than a vector
    /// register, every float type an IR floating-point type, nothing listed twice, and at least one piece.
    fn check_array_blocks(&self, findings: &mut Vec<Finding>) {
        let abi = &self.declaration.abi;
        let Some(blocks) = &abi.rules.array_blocks else {
            return;
        };
        const BASE: &str = "/abi/rules/array_blocks";
        if blocks.integer_bits.is_empty() && blocks.float_types.is_empty() && blocks.vector_bits.is_empty() {
            findings.push(Finding::error(
                Rule::AbiRule,
                BASE,
                "the table names no piece, so no array would be a block: leave it out".to_string(),
            ));
        }
        let pointer_width = self.declaration.identity.pointer_width;
        let vector_bits = abi.rules.vector_register_bytes.saturating_mul(8);
        let widths = [
            (
                "integer_bits",
                &blocks.integer_bits,
                self.pool_widths(&abi.integer_arguments),
                "the integer argument registers",
                pointer_width,
                "a pointer",
            ),
            (
                "vector_bits",
                &blocks.vector_bits,
                self.pool_widths(&abi.float_arguments),
                "the float argument registers",
                vector_bits,
                "a vector register (`vector_register_bytes`)",
            ),
        ];
        for (key, list, held, holder, limit, limit_name) in widths {
            for (index, bits) in list.iter().enumerate() {
                let pointer = format!("{BASE}/{key}/{index}");
                let problem = if list[..index].contains(bits) {
                    Some(format!("{bits} is listed twice"))
                } else if held.is_some_and(|widths| !widths.contains(bits)) {
                    Some(format!(
                        "{holder} hold no {bits}-bit piece: their class does not declare that width"
                    ))
                } else if *bits > limit {
                    Some(format!(
                        "no piece is {bits} bits wide: none is wider than {limit_name}, {limit} bits"
                    ))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    findings.push(Finding::error(Rule::AbiRule, pointer, problem));
                }
            }
        }
        for (index, ty) in blocks.float_types.iter().enumerate() {
            let pointer = format!("{BASE}/float_types/{index}");
            if !IR_FLOAT_TYPES.contains(&ty.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiRule,
                    pointer,
                    format!(
                        "`{ty}` is not an IR floating-point type ({})",
                        IR_FLOAT_TYPES.join(", ")
                    ),
                ));
            } else if blocks.float_types[..index].contains(ty) {
                findings.push(Finding::error(
                    Rule::AbiRule,
                    pointer,
                    format!("`{ty}` is listed twice"),
                ));
            }
        }
    }

    fn check_specs(&self, findings: &mut Vec<Finding>) {
        let conventions = &self.declaration.conventions;
        self.check_spec(
            &conventions.default_spec,
            "/conventions/default_spec",
            "the default spec",
            findings,
        );
        for (index, layout) in conventions.shuffle_layouts.iter().enumerate() {
            self.check_spec(
                layout,
                &format!("/conventions/shuffle_layouts/{index}"),
                &format!("shuffle layout {index}"),
                findings,
            );
        }
    }

    fn check_spec(&self, spec: &str, pointer: &str, what: &str, findings: &mut Vec<Finding>) {
        let parsed = Spec::parse(spec);
        for segment in &parsed.segments {
            let Some(list) = segment.list else {
                findings.push(Finding::error(
                    Rule::Spec,
                    pointer,
                    format!("{what} `{spec}` has unknown key `{}`", segment.key.text),
                ));
                continue;
            };
            let want = match list {
                SpecList::IntegerArguments | SpecList::IntegerReturn => Want::General,
                SpecList::FloatArguments | SpecList::FloatReturn => Want::FloatingPoint,
                SpecList::Positional | SpecList::CalleeSaved => Want::Either,
            };
            for item in &segment.items {
                if list == SpecList::Positional && is_stack_token(item.text) {
                    continue;
                }
                self.check_name(item.text, pointer.to_string(), want, what, findings);
            }
        }
        let has_registers = !parsed.is_empty();
        if !has_registers {
            findings.push(Finding::error(
                Rule::Spec,
                pointer,
                format!("{what} `{spec}` has no argument or return registers"),
            ));
        }
    }
}

/// Checks across all targets: names, aliases, ids and GNU ld emulations must not collide.
pub(crate) fn registry_findings(targets: &[&TargetDeclaration]) -> Vec<(usize, Finding)> {
    let mut findings = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut ids: HashMap<(u64, u64), usize> = HashMap::new();
    let mut emulations: HashMap<&str, usize> = HashMap::new();
    for (file, target) in targets.iter().enumerate() {
        for (index, emulation) in target.elf.iter().flat_map(|elf| elf.emulations.iter().enumerate()) {
            let first = *emulations.entry(emulation).or_insert(file);
            if first != file {
                findings.push((
                    file,
                    Finding::error(
                        Rule::DuplicateEmulation,
                        format!("/elf/emulations/{index}"),
                        format!(
                            "emulation `{emulation}` is already declared by target `{}`",
                            targets[first].identity.name
                        ),
                    ),
                ));
            }
        }
        let identity = &target.identity;
        let spellings = std::iter::once(("/identity/name".to_string(), &identity.name)).chain(
            identity
                .aliases
                .iter()
                .enumerate()
                .map(|(index, alias)| (format!("/identity/aliases/{index}"), alias)),
        );
        for (pointer, spelling) in spellings {
            if let Some(first) = names.insert(spelling.to_ascii_lowercase(), file)
                && first != file
            {
                findings.push((
                    file,
                    Finding::error(
                        Rule::DuplicateTarget,
                        pointer,
                        format!(
                            "target name `{spelling}` is already used by target `{}`",
                            targets[first].identity.name
                        ),
                    ),
                ));
            }
        }
        if let Some(first) = ids.insert((identity.target_id.high, identity.target_id.low), file) {
            findings.push((
                file,
                Finding::error(
                    Rule::DuplicateTarget,
                    "/identity/target_id",
                    format!(
                        "target id {} is already used by target `{}`",
                        identity.target_id, targets[first].identity.name
                    ),
                ),
            ));
        }
    }
    findings
}

/// Which placeholders a template may use, and which it must.
struct TemplateRule {
    allowed: &'static [Placeholder],
    required: &'static [Placeholder],
}

const SYMBOL_DIRECTIVE: TemplateRule = TemplateRule {
    allowed: &[Placeholder::Symbol],
    required: &[Placeholder::Symbol],
};
const PLAIN_DIRECTIVE: TemplateRule = TemplateRule {
    allowed: &[],
    required: &[],
};
const MEMORY: TemplateRule = TemplateRule {
    allowed: &[Placeholder::Register, Placeholder::Base, Placeholder::Offset],
    required: &[Placeholder::Register, Placeholder::Base, Placeholder::Offset],
};

impl Context<'_> {
    /// The `[lowering]` table: its registers, every template's placeholders, and the loads and stores an
    /// adapter needs.
    fn check_lowering(&self, findings: &mut Vec<Finding>) {
        let Some(lowering) = &self.declaration.lowering else {
            return;
        };
        let lookup = |name: &str, pointer: String, what: &str, findings: &mut Vec<Finding>| {
            let found = self.names.get(&name.to_ascii_lowercase()).map(|entry| entry.register);
            if found.is_none() {
                findings.push(Finding::error(
                    Rule::Lowering,
                    pointer,
                    format!("{what} `{name}` is not a declared register"),
                ));
            }
            found
        };
        let stack_pointer = lookup(
            &lowering.stack_pointer,
            "/lowering/stack_pointer".into(),
            "the stack pointer",
            findings,
        );
        if let Some(name) = &lowering.hidden_pointer_result {
            lookup(
                name,
                "/lowering/hidden_pointer_result".into(),
                "the hidden pointer's result register",
                findings,
            );
        }
        let link = lowering
            .link_register
            .as_ref()
            .and_then(|name| lookup(name, "/lowering/link_register".into(), "the link register", findings));
        let saved: HashSet<usize> = self
            .declaration
            .callee_saved
            .iter()
            .filter_map(|name| self.names.get(&name.to_ascii_lowercase()).map(|entry| entry.register))
            .collect();
        let mut seen = HashSet::new();
        for (index, name) in lowering.scratch.iter().enumerate() {
            let pointer = format!("/lowering/scratch/{index}");
            let Some(register) = lookup(name, pointer.clone(), "scratch register", findings) else {
                continue;
            };
            let why = if !seen.insert(register) {
                Some("is listed twice")
            } else if self
                .class_kind(register)
                .is_some_and(|kind| kind.holds_floating_point())
            {
                Some("is not a general-purpose register")
            } else if self.reserved.contains(&register) {
                Some("is reserved")
            } else if saved.contains(&register) {
                Some("is callee-saved in the standard convention")
            } else if Some(register) == stack_pointer || Some(register) == link {
                Some("is the stack pointer or the link register")
            } else {
                None
            };
            if let Some(why) = why {
                findings.push(Finding::error(
                    Rule::Lowering,
                    pointer,
                    format!("scratch register `{name}` {why}: an adapter clobbers its scratch registers"),
                ));
            }
        }

        for (index, ty) in lowering.standard_deviations.iter().enumerate() {
            if !is_scalar_or_vector(ty) {
                findings.push(Finding::error(
                    Rule::Lowering,
                    format!("/lowering/standard_deviations/{index}"),
                    format!(
                        "`{ty}` is not an IR scalar type ({}) nor a vector `<N x T>` of one",
                        IR_SCALAR_TYPES.join(", ")
                    ),
                ));
            }
        }
        if lowering.max_unaligned_offset > lowering.max_offset {
            findings.push(Finding::error(
                Rule::Lowering,
                "/lowering/max_unaligned_offset",
                format!(
                    "max_unaligned_offset {} is above max_offset {}",
                    lowering.max_unaligned_offset, lowering.max_offset
                ),
            ));
        }
        let directives = &lowering.directives;
        for (key, text, rule) in [
            ("section", &directives.section, &PLAIN_DIRECTIVE),
            ("global", &directives.global, &SYMBOL_DIRECTIVE),
            ("weak", &directives.weak, &SYMBOL_DIRECTIVE),
            ("hidden", &directives.hidden, &SYMBOL_DIRECTIVE),
            ("protected", &directives.protected, &SYMBOL_DIRECTIVE),
            ("align", &directives.align, &PLAIN_DIRECTIVE),
            ("function", &directives.function, &SYMBOL_DIRECTIVE),
            ("size", &directives.size, &SYMBOL_DIRECTIVE),
        ] {
            check_template(text, &format!("/lowering/directives/{key}"), rule, findings);
        }
        check_template(
            &lowering.macros.open,
            "/lowering/macros/open",
            &SYMBOL_DIRECTIVE,
            findings,
        );
        check_template(
            &lowering.macros.close,
            "/lowering/macros/close",
            &PLAIN_DIRECTIVE,
            findings,
        );
        for (key, text) in [
            ("parameter", &lowering.macros.parameter),
            ("join", &lowering.macros.join),
        ] {
            if text.is_empty() || text.contains(['{', '}', '\n', '\r']) {
                findings.push(Finding::error(
                    Rule::Lowering,
                    format!("/lowering/macros/{key}"),
                    format!("`{key}` must be non-empty text of one line, without braces"),
                ));
            }
        }
        let instructions = &lowering.instructions;
        let size_only = TemplateRule {
            allowed: &[Placeholder::Size],
            required: &[Placeholder::Size],
        };
        for (key, text, rule) in [
            ("allocate", &instructions.allocate, &size_only),
            ("release", &instructions.release, &size_only),
            (
                "move",
                &instructions.move_register,
                &TemplateRule {
                    allowed: &[Placeholder::Register, Placeholder::Source],
                    required: &[Placeholder::Register, Placeholder::Source],
                },
            ),
            (
                "align_down",
                &instructions.align_down,
                &TemplateRule {
                    allowed: &[Placeholder::Register, Placeholder::Size],
                    required: &[Placeholder::Register, Placeholder::Size],
                },
            ),
            ("address", &instructions.address, &MEMORY),
            ("call", &instructions.call, &SYMBOL_DIRECTIVE),
            ("jump", &instructions.jump, &SYMBOL_DIRECTIVE),
            (
                "call_register",
                &instructions.call_register,
                &TemplateRule {
                    allowed: &[Placeholder::Register],
                    required: &[Placeholder::Register],
                },
            ),
            ("return", &instructions.return_, &PLAIN_DIRECTIVE),
        ] {
            check_template(text, &format!("/lowering/instructions/{key}"), rule, findings);
        }
        let address_of = TemplateRule {
            allowed: &[Placeholder::Register, Placeholder::Symbol],
            required: &[Placeholder::Register],
        };
        for (index, text) in instructions.address_of.iter().enumerate() {
            check_template(
                text,
                &format!("/lowering/instructions/address_of/{index}"),
                &address_of,
                findings,
            );
        }
        if !instructions.address_of.iter().any(|text| text.contains("{symbol}")) {
            findings.push(Finding::error(
                Rule::Lowering,
                "/lowering/instructions/address_of",
                "`address_of` needs `{symbol}` in one of its instructions".to_string(),
            ));
        }
        self.check_memory_templates(findings);
    }

    fn check_memory_templates(&self, findings: &mut Vec<Finding>) {
        let Some(lowering) = &self.declaration.lowering else {
            return;
        };
        let classes = &self.declaration.register_classes;
        let mut declared = HashSet::new();
        for (index, entry) in lowering.memory.iter().enumerate() {
            let pointer = format!("/lowering/memory/{index}");
            let Some(class) = classes.iter().find(|class| class.name == entry.class) else {
                findings.push(Finding::error(
                    Rule::Lowering,
                    format!("{pointer}/class"),
                    format!("`{}` is not a declared register class", entry.class),
                ));
                continue;
            };
            let views = |width: u32| width == class.width || class.widths.contains(&width);
            if !matches!(entry.width, 8 | 16 | 32 | 64 | 128) || entry.width > class.width {
                findings.push(Finding::error(
                    Rule::Lowering,
                    format!("{pointer}/width"),
                    format!(
                        "a load or store moves 8, 16, 32, 64 or 128 bits, at most the class's {}, not {}",
                        class.width, entry.width
                    ),
                ));
            }
            if !declared.insert((class.name.as_str(), entry.width)) {
                findings.push(Finding::error(
                    Rule::Lowering,
                    pointer.clone(),
                    format!(
                        "loads and stores of `{}` at {} bits are declared twice",
                        class.name, entry.width
                    ),
                ));
            }
            let general = class.kind == RegisterClassKind::General;
            // Below 32 bits a sign-extending load is required; at 32 bits it may be declared for a wider general
            // class, whose 32-bit values the standard convention widens to the whole register (RISC-V).
            let required = general && entry.width < 32;
            let allowed = required || (general && entry.width == 32 && class.width > 32);
            match (&entry.load_signed, required) {
                (None, true) => findings.push(Finding::error(
                    Rule::Lowering,
                    pointer.clone(),
                    format!(
                        "`{}` at {} bits needs `load_signed`: adapters sign-extend narrow arguments",
                        class.name, entry.width
                    ),
                )),
                (Some(_), false) if !allowed => findings.push(Finding::error(
                    Rule::Lowering,
                    format!("{pointer}/load_signed"),
                    "`load_signed` is declared only for general classes below 32 bits, and at 32 bits for wider ones"
                        .to_string(),
                )),
                _ => {}
            }
            let templates = [
                ("load", Some(&entry.load)),
                ("store", Some(&entry.store)),
                ("load_signed", entry.load_signed.as_ref()),
            ];
            for (key, text) in templates {
                let Some(text) = text else { continue };
                let at = format!("{pointer}/{key}");
                let Some(parts) = check_template(text, &at, &MEMORY, findings) else {
                    continue;
                };
                for part in parts {
                    let TemplatePart::Register(width) = part else { continue };
                    let view = if width == 0 { entry.width } else { width };
                    if !views(view) {
                        findings.push(Finding::error(
                            Rule::Lowering,
                            at.clone(),
                            format!(
                                "`{}` has no {view}-bit view (its widths: {:?}); name one with `{{register:W}}`",
                                class.name, class.widths
                            ),
                        ));
                    }
                }
            }
        }
        for class in classes {
            let mut needed = vec![class.width];
            if class.kind == RegisterClassKind::General {
                needed.extend([8, 16, 32, 64].into_iter().filter(|width| *width < class.width));
            }
            for width in needed {
                if !declared.contains(&(class.name.as_str(), width)) {
                    findings.push(Finding::error(
                        Rule::Lowering,
                        "/lowering/memory",
                        format!("adapters need loads and stores of `{}` at {width} bits", class.name),
                    ));
                }
            }
        }
    }
}

/// Parses a template at `pointer` and checks its placeholders; the parts when it parses.
fn check_template<'t>(
    text: &'t str,
    pointer: &str,
    rule: &TemplateRule,
    findings: &mut Vec<Finding>,
) -> Option<Vec<TemplatePart<'t>>> {
    let parts = match parse_template(text) {
        Ok(parts) => parts,
        Err(message) => {
            findings.push(Finding::error(Rule::Lowering, pointer, message));
            return None;
        }
    };
    let used: Vec<Placeholder> = parts.iter().filter_map(Placeholder::of).collect();
    for placeholder in &used {
        if !rule.allowed.contains(placeholder) {
            findings.push(Finding::error(
                Rule::Lowering,
                pointer,
                format!("this template cannot use `{{{}}}`", placeholder.name()),
            ));
        }
    }
    for placeholder in rule.required {
        if !used.contains(placeholder) {
            findings.push(Finding::error(
                Rule::Lowering,
                pointer,
                format!("this template needs `{{{}}}`", placeholder.name()),
            ));
        }
    }
    Some(parts)
}
