//! Lowering of a validated target into the records of `neverc-records`: flat, indexed and sorted, ready
//! to become const tables.
//!
//! Both the code generator and the run-time loader (`--target-file`) build their tables with this one
//! lowering, so generated and loaded targets cannot disagree.

use std::collections::HashMap;

use bumpalo::Bump;
use neverc_records::{
    AbiRecordIn, ArrayBlocksIn, BitRange, DirectivesIn, ElfRecordIn, Id128, InstructionsIn, LoweringRecordIn, MacrosIn,
    MemoryTemplatesIn, NameKind, RegisterClassKind as ClassKindRecord, RegisterClassRecordIn, RegisterNameIn,
    RegisterNumber, RegisterRecordIn, RegisterView, RelocationRecordIn, SubRegisterRecordIn, TargetRecordIn, Template,
    TemplatePart, TlsVariant,
};

use crate::lowering::{LoweringDeclaration, parse_template};
use crate::phase_model::{slice, strs};
use crate::target::{
    AbiRules, ElfFacts, Endianness, Int128Registers, RegisterClassKind, TargetDeclaration, TlsVariantName,
};

/// What one spelling of a register (the key of [`name_table`], lowercase) names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spelling {
    pub(crate) register: usize,
    pub(crate) width: u32,
    /// The sub-register's own plan number where it has one, else the register's.
    pub(crate) plan_number: u32,
    pub(crate) kind: NameKind,
}

/// Lowercase spelling → (register index, width, plan number, kind), for a declaration whose names may still
/// collide: later duplicates are ignored (the checks report them).
pub(crate) fn name_table(declaration: &TargetDeclaration) -> HashMap<String, Spelling> {
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
            names.entry(name.to_ascii_lowercase()).or_insert(Spelling {
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

/// Lowers a declaration that passed validation into records allocated in `arena`. Fails only if it did not
/// (a name that does not resolve).
pub fn lower_target<'a>(declaration: &TargetDeclaration, arena: &'a Bump) -> Result<TargetRecordIn<'a>, String> {
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
    let resolve_all = |list: &[String]| -> Result<&'a [usize], String> {
        let registers = list
            .iter()
            .map(|name| resolve(name).map(|view| view.register))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(slice(arena, &registers))
    };
    let classes: Vec<RegisterClassRecordIn<'a>> = declaration
        .register_classes
        .iter()
        .map(|class| RegisterClassRecordIn {
            name: arena.alloc_str(&class.name),
            kind: match class.kind {
                RegisterClassKind::General => ClassKindRecord::General,
                RegisterClassKind::Float => ClassKindRecord::Float,
                RegisterClassKind::Vector => ClassKindRecord::Vector,
            },
            width: class.width,
            widths: slice(arena, &class.widths),
        })
        .collect();
    let mut registers = Vec::new();
    for register in &declaration.registers {
        let class = classes
            .iter()
            .position(|class| class.name == register.class)
            .ok_or_else(|| format!("register class `{}` is not declared", register.class))?;
        let subregisters: Vec<SubRegisterRecordIn<'a>> = register
            .subregisters
            .iter()
            .map(|sub| SubRegisterRecordIn {
                name: arena.alloc_str(&sub.name),
                width: sub.width,
                plan_number: sub.plan_number.unwrap_or(register.plan_number),
            })
            .collect();
        registers.push(RegisterRecordIn {
            name: arena.alloc_str(&register.name),
            class,
            width: register.width.unwrap_or(classes[class].width),
            plan_number: register.plan_number,
            dwarf: register.dwarf,
            flags: register.flags.iter().fold(0, |bits, flag| bits | flag.bit()),
            aliases: strs(arena, &register.aliases),
            subregisters: slice(arena, &subregisters),
        });
    }
    let mut sorted_names: Vec<(&String, &Spelling)> = names.iter().collect();
    sorted_names.sort_by(|a, b| a.0.cmp(b.0));
    let sorted_names: Vec<RegisterNameIn<'a>> = sorted_names
        .into_iter()
        .map(|(name, spelling)| RegisterNameIn {
            name: arena.alloc_str(name),
            register: spelling.register,
            width: spelling.width,
            plan_number: spelling.plan_number,
            kind: spelling.kind,
        })
        .collect();
    let mut numbers: Vec<RegisterNumber> = Vec::new();
    for (index, register) in registers.iter().enumerate() {
        numbers.push(RegisterNumber {
            number: register.plan_number,
            register: index,
            width: register.width,
        });
        for sub in &declaration.registers[index].subregisters {
            if let Some(number) = sub.plan_number {
                numbers.push(RegisterNumber {
                    number,
                    register: index,
                    width: sub.width,
                });
            }
        }
    }
    numbers.sort_by_key(|entry| entry.number);
    let callee_saved = declaration
        .callee_saved
        .iter()
        .map(|name| resolve(name))
        .collect::<Result<Vec<_>, _>>()?;
    let (relocations, relocation_names) = lower_relocations(declaration, arena);
    let abi = &declaration.abi;
    let rules: &AbiRules = &abi.rules;
    let identity = &declaration.identity;
    Ok(TargetRecordIn {
        name: arena.alloc_str(&identity.name),
        aliases: strs(arena, &identity.aliases),
        triple: arena.alloc_str(&identity.triple),
        target_id: Id128 {
            high: identity.target_id.high,
            low: identity.target_id.low,
        },
        convention_id: Id128 {
            high: identity.convention_id.high,
            low: identity.convention_id.low,
        },
        schema_digest: arena.alloc_str(&identity.schema_digest),
        pointer_width: identity.pointer_width,
        little_endian: identity.endianness == Endianness::Little,
        stack_alignment: identity.stack_alignment,
        classes: slice(arena, &classes),
        registers: slice(arena, &registers),
        names: slice(arena, &sorted_names),
        numbers: slice(arena, &numbers),
        reserved: resolve_all(&declaration.reserved)?,
        callee_saved: slice(arena, &callee_saved),
        abi: AbiRecordIn {
            name: arena.alloc_str(&abi.name),
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
            array_blocks: rules.array_blocks.as_ref().map(|blocks| ArrayBlocksIn {
                integer_bits: arena.alloc_slice_copy(&blocks.integer_bits),
                float_types: strs(arena, &blocks.float_types),
                vector_bits: arena.alloc_slice_copy(&blocks.vector_bits),
                stack_exhausts_registers: blocks.stack_exhausts_registers,
            }),
            float_falls_back_to_integer_registers: rules.float_falls_back_to_integer_registers,
            stack_only_types: strs(arena, &rules.stack_only_types),
            max_return_registers: rules.max_return_registers,
        },
        default_spec: arena.alloc_str(&declaration.conventions.default_spec),
        shuffle_layouts: strs(arena, &declaration.conventions.shuffle_layouts),
        elf: declaration.elf.as_ref().map(|elf| lower_elf(elf, arena)).transpose()?,
        relocations,
        relocation_names,
        lowering: declaration
            .lowering
            .as_ref()
            .map(|lowering| lower_lowering(declaration, lowering, &resolve, arena))
            .transpose()?,
    })
}

/// A template split into parts, allocated in `arena`.
fn lower_template<'a>(text: &str, arena: &'a Bump) -> Result<Template<'a>, String> {
    let parts: Vec<TemplatePart<'a>> = parse_template(text)?
        .into_iter()
        .map(|part| match part {
            TemplatePart::Text(text) => TemplatePart::Text(arena.alloc_str(text)),
            TemplatePart::Register(width) => TemplatePart::Register(width),
            TemplatePart::Source => TemplatePart::Source,
            TemplatePart::Base => TemplatePart::Base,
            TemplatePart::Offset => TemplatePart::Offset,
            TemplatePart::Size => TemplatePart::Size,
            TemplatePart::Symbol => TemplatePart::Symbol,
        })
        .collect();
    Ok(slice(arena, &parts))
}

/// The `[lowering]` table: registers resolved to indices, templates split into parts.
fn lower_lowering<'a>(
    declaration: &TargetDeclaration,
    lowering: &LoweringDeclaration,
    resolve: &dyn Fn(&str) -> Result<RegisterView, String>,
    arena: &'a Bump,
) -> Result<LoweringRecordIn<'a>, String> {
    let register = |name: &str| resolve(name).map(|view| view.register);
    let scratch = lowering
        .scratch
        .iter()
        .map(|name| register(name))
        .collect::<Result<Vec<_>, _>>()?;
    let template = |text: &str| lower_template(text, arena);
    let memory = lowering
        .memory
        .iter()
        .map(|entry| {
            let class = declaration
                .register_classes
                .iter()
                .position(|class| class.name == entry.class)
                .ok_or_else(|| format!("register class `{}` is not declared", entry.class))?;
            Ok(MemoryTemplatesIn {
                class,
                width: entry.width,
                load: template(&entry.load)?,
                load_signed: entry.load_signed.as_deref().map(template).transpose()?,
                store: template(&entry.store)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let directives = &lowering.directives;
    let instructions = &lowering.instructions;
    Ok(LoweringRecordIn {
        stack_pointer: register(&lowering.stack_pointer)?,
        scratch: slice(arena, &scratch),
        incoming_arguments_offset: lowering.incoming_arguments_offset,
        hidden_pointer_result: lowering.hidden_pointer_result.as_deref().map(register).transpose()?,
        link_register: lowering.link_register.as_deref().map(register).transpose()?,
        standard_deviations: strs(arena, &lowering.standard_deviations),
        max_offset: lowering.max_offset,
        max_unaligned_offset: lowering.max_unaligned_offset,
        directives: DirectivesIn {
            section: template(&directives.section)?,
            global: template(&directives.global)?,
            weak: template(&directives.weak)?,
            hidden: template(&directives.hidden)?,
            protected: template(&directives.protected)?,
            align: template(&directives.align)?,
            function: template(&directives.function)?,
            size: template(&directives.size)?,
        },
        macros: MacrosIn {
            open: template(&lowering.macros.open)?,
            close: template(&lowering.macros.close)?,
            parameter: arena.alloc_str(&lowering.macros.parameter),
            join: arena.alloc_str(&lowering.macros.join),
        },
        instructions: InstructionsIn {
            allocate: template(&instructions.allocate)?,
            release: template(&instructions.release)?,
            move_register: template(&instructions.move_register)?,
            align_down: template(&instructions.align_down)?,
            address: template(&instructions.address)?,
            call: template(&instructions.call)?,
            call_register: template(&instructions.call_register)?,
            jump: template(&instructions.jump)?,
            address_of: {
                let lines = instructions
                    .address_of
                    .iter()
                    .map(|text| template(text))
                    .collect::<Result<Vec<_>, _>>()?;
                slice(arena, &lines)
            },
            return_: template(&instructions.return_)?,
        },
        memory: slice(arena, &memory),
    })
}

/// The ELF facts; a TLS variant that validation would have refused (`tls-variant`) is an error.
fn lower_elf<'a>(elf: &ElfFacts, arena: &'a Bump) -> Result<ElfRecordIn<'a>, String> {
    let tls = match (elf.tls.variant, elf.tls.tcb_size) {
        (TlsVariantName::I, Some(tcb_size)) => TlsVariant::I { tcb_size },
        (TlsVariantName::II, None) => TlsVariant::II,
        (variant, tcb_size) => {
            return Err(format!(
                "TLS variant {variant:?} with TCB size {tcb_size:?} did not pass validation"
            ));
        }
    };
    Ok(ElfRecordIn {
        machine: elf.machine,
        class: elf.class,
        common_page_size: elf.common_page_size,
        max_page_size: elf.max_page_size,
        image_base: elf.image_base.unwrap_or(DEFAULT_IMAGE_BASE),
        tls,
        dtv_offset: elf.tls.dtv_offset.unwrap_or(0),
        emulations: strs(arena, &elf.emulations),
        errata: strs(arena, &elf.errata),
        interpreter: elf.interpreter.as_deref().map(|path| &*arena.alloc_str(path)),
        output_formats: strs(arena, &elf.output_formats),
    })
}

/// Where an executable starts when a target file does not say: GNU ld's default for most ELF targets.
const DEFAULT_IMAGE_BASE: u64 = 0x40_0000;

/// The relocations sorted by (format, number), and their indices sorted by name.
fn lower_relocations<'a>(
    declaration: &TargetDeclaration,
    arena: &'a Bump,
) -> (&'a [RelocationRecordIn<'a>], &'a [usize]) {
    let mut relocations: Vec<RelocationRecordIn<'a>> = declaration
        .relocations
        .iter()
        .map(|relocation| {
            let (shift, round, bits) = match &relocation.instruction {
                Some(field) => (
                    field.shift,
                    field.round,
                    field
                        .bits
                        .iter()
                        .map(|bits| BitRange {
                            lsb: bits.lsb,
                            width: bits.width,
                        })
                        .collect(),
                ),
                None => (0, 0, Vec::new()),
            };
            RelocationRecordIn {
                format: relocation.format,
                number: relocation.number,
                name: arena.alloc_str(&relocation.name),
                kind: relocation.kind,
                relative_to: relocation.relative_to,
                size: relocation.size,
                overflow: relocation.overflow,
                shift,
                round,
                bits: slice(arena, &bits),
            }
        })
        .collect();
    relocations.sort_by_key(|relocation| (relocation.format, relocation.number));
    let mut names: Vec<usize> = (0..relocations.len()).collect();
    names.sort_by_key(|index| relocations[*index].name);
    (slice(arena, &relocations), slice(arena, &names))
}
