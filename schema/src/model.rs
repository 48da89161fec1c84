//! The lowered form of a validated target: flat, indexed and sorted, ready to become const tables.
//!
//! Both the code generator and the run-time loader (`--target-file`) build their tables from this one
//! lowering, so generated and loaded targets cannot disagree.

use std::collections::HashMap;

use serde::Serialize;

use crate::target::{AbiRules, Endianness, Int128Registers, RegisterClassKind, TargetDeclaration};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TargetModel {
    pub name: String,
    pub aliases: Vec<String>,
    pub triple: String,
    pub target_id: (u64, u64),
    pub convention_id: (u64, u64),
    pub schema_digest: String,
    pub pointer_width: u32,
    pub little_endian: bool,
    pub stack_alignment: u32,
    pub classes: Vec<ClassModel>,
    pub registers: Vec<RegisterModel>,
    /// Every accepted spelling, lowercase, sorted by name.
    pub names: Vec<NameModel>,
    /// Every plan number, sorted.
    pub numbers: Vec<NumberModel>,
    pub reserved: Vec<usize>,
    pub callee_saved: Vec<RegisterView>,
    pub abi: AbiModel,
    pub default_spec: String,
    pub shuffle_layouts: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassModel {
    pub name: String,
    pub kind: RegisterClassKind,
    pub width: u32,
    pub widths: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegisterModel {
    pub name: String,
    pub class: usize,
    pub width: u32,
    pub plan_number: u32,
    pub dwarf: u32,
    pub flags: u32,
    pub aliases: Vec<String>,
    pub subregisters: Vec<SubRegisterModel>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SubRegisterModel {
    pub name: String,
    pub width: u32,
    pub plan_number: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NameKind {
    Canonical,
    Alias,
    SubRegister,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NameModel {
    pub name: String,
    pub register: usize,
    pub width: u32,
    /// The sub-register's own plan number where it has one, else the register's.
    pub plan_number: u32,
    pub kind: NameKind,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NumberModel {
    pub number: u32,
    pub register: usize,
    pub width: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RegisterView {
    pub register: usize,
    pub width: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbiModel {
    pub name: String,
    pub integer_arguments: Vec<usize>,
    pub float_arguments: Vec<usize>,
    pub integer_returns: Vec<usize>,
    pub float_returns: Vec<usize>,
    pub sret_register: usize,
    pub sret_takes_argument_register: bool,
    pub stack_slot_size: u32,
    pub stack_max_alignment: u32,
    pub int128_even_pair: bool,
    pub split_between_registers_and_stack: bool,
    pub reuse_skipped_registers: bool,
    pub vector_register_bytes: u32,
    pub short_vectors_widen_to_register: bool,
    pub homogeneous_aggregate_max_members: u32,
    pub stack_aggregate_exhausts_float_registers: bool,
    pub float_falls_back_to_integer_registers: bool,
    pub stack_only_types: Vec<String>,
}

/// Lowercase spelling → (register index, width, plan number, kind), for a declaration whose names may still
/// collide: later duplicates are ignored (the checks report them).
pub(crate) fn name_table(declaration: &TargetDeclaration) -> HashMap<String, NameModel> {
    let class_width = |class: &str| {
        declaration
            .register_classes
            .iter()
            .find(|candidate| candidate.name == class)
            .map_or(0, |candidate| candidate.width)
    };
    let mut names = HashMap::new();
    for (index, register) in declaration.registers.iter().enumerate() {
        let width = register.width.unwrap_or_else(|| class_width(&register.class));
        let mut add = |name: &str, width: u32, plan_number: u32, kind: NameKind| {
            names.entry(name.to_ascii_lowercase()).or_insert(NameModel {
                name: name.to_ascii_lowercase(),
                register: index,
                width,
                plan_number,
                kind,
            });
        };
        add(&register.name, width, register.plan_number, NameKind::Canonical);
        for alias in &register.aliases {
            add(alias, width, register.plan_number, NameKind::Alias);
        }
        for sub in &register.subregisters {
            add(
                &sub.name,
                sub.width,
                sub.plan_number.unwrap_or(register.plan_number),
                NameKind::SubRegister,
            );
        }
    }
    names
}

/// Lowers a declaration that passed validation. Fails only if it did not (a name that does not resolve).
pub fn lower_target(declaration: &TargetDeclaration) -> Result<TargetModel, String> {
    let names = name_table(declaration);
    let resolve = |name: &str| -> Result<RegisterView, String> {
        names
            .get(&name.to_ascii_lowercase())
            .map(|entry| RegisterView {
                register: entry.register,
                width: entry.width,
            })
            .ok_or_else(|| format!("register `{name}` is not declared"))
    };
    let resolve_all = |list: &[String]| -> Result<Vec<usize>, String> {
        list.iter()
            .map(|name| resolve(name).map(|view| view.register))
            .collect()
    };
    let classes: Vec<ClassModel> = declaration
        .register_classes
        .iter()
        .map(|class| ClassModel {
            name: class.name.clone(),
            kind: class.kind,
            width: class.width,
            widths: class.widths.clone(),
        })
        .collect();
    let mut registers = Vec::new();
    for register in &declaration.registers {
        let class = classes
            .iter()
            .position(|class| class.name == register.class)
            .ok_or_else(|| format!("register class `{}` is not declared", register.class))?;
        registers.push(RegisterModel {
            name: register.name.clone(),
            class,
            width: register.width.unwrap_or(classes[class].width),
            plan_number: register.plan_number,
            dwarf: register.dwarf,
            flags: register.flags.iter().fold(0, |bits, flag| bits | flag.bit()),
            aliases: register.aliases.clone(),
            subregisters: register
                .subregisters
                .iter()
                .map(|sub| SubRegisterModel {
                    name: sub.name.clone(),
                    width: sub.width,
                    plan_number: sub.plan_number.unwrap_or(register.plan_number),
                })
                .collect(),
        });
    }
    let mut sorted_names: Vec<NameModel> = names.values().cloned().collect();
    sorted_names.sort_by(|a, b| a.name.cmp(&b.name));
    let mut numbers: Vec<NumberModel> = Vec::new();
    for (index, register) in registers.iter().enumerate() {
        numbers.push(NumberModel {
            number: register.plan_number,
            register: index,
            width: register.width,
        });
        for sub in &declaration.registers[index].subregisters {
            if let Some(number) = sub.plan_number {
                numbers.push(NumberModel {
                    number,
                    register: index,
                    width: sub.width,
                });
            }
        }
    }
    numbers.sort_by_key(|entry| entry.number);
    let abi = &declaration.abi;
    let rules: &AbiRules = &abi.rules;
    let identity = &declaration.identity;
    Ok(TargetModel {
        name: identity.name.clone(),
        aliases: identity.aliases.clone(),
        triple: identity.triple.clone(),
        target_id: (identity.target_id.high, identity.target_id.low),
        convention_id: (identity.convention_id.high, identity.convention_id.low),
        schema_digest: identity.schema_digest.clone(),
        pointer_width: identity.pointer_width,
        little_endian: identity.endianness == Endianness::Little,
        stack_alignment: identity.stack_alignment,
        classes,
        registers,
        names: sorted_names,
        numbers,
        reserved: resolve_all(&declaration.reserved)?,
        callee_saved: declaration
            .callee_saved
            .iter()
            .map(|name| resolve(name))
            .collect::<Result<_, _>>()?,
        abi: AbiModel {
            name: abi.name.clone(),
            integer_arguments: resolve_all(&abi.integer_arguments)?,
            float_arguments: resolve_all(&abi.float_arguments)?,
            integer_returns: resolve_all(&abi.integer_returns)?,
            float_returns: resolve_all(&abi.float_returns)?,
            sret_register: resolve(&abi.sret_register)?.register,
            sret_takes_argument_register: abi.sret_takes_argument_register,
            stack_slot_size: abi.stack.slot_size,
            stack_max_alignment: abi.stack.max_alignment,
            int128_even_pair: rules.int128_registers == Int128Registers::EvenAlignedPair,
            split_between_registers_and_stack: rules.split_between_registers_and_stack,
            reuse_skipped_registers: rules.reuse_skipped_registers,
            vector_register_bytes: rules.vector_register_bytes,
            short_vectors_widen_to_register: rules.short_vectors_widen_to_register,
            homogeneous_aggregate_max_members: rules.homogeneous_aggregate_max_members,
            stack_aggregate_exhausts_float_registers: rules.stack_aggregate_exhausts_float_registers,
            float_falls_back_to_integer_registers: rules.float_falls_back_to_integer_registers,
            stack_only_types: rules.stack_only_types.clone(),
        },
        default_spec: declaration.conventions.default_spec.clone(),
        shuffle_layouts: declaration.conventions.shuffle_layouts.clone(),
    })
}
