//! Cases of a target file, run against the register and relocation tables and the calling-convention planner.

use neverc_cc::assignment::{Place, ValueRef};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan_validation::validate_plan;
use neverc_cc::planner::plan_from_spec;
use neverc_cc::signature::Signature;
use neverc_tables::{NameKind, RelocationFormat, TargetRecord, TlsVariant, find_target_by_emulation};

use crate::{Check, Environment, Outcome};

fn target<'e>(environment: &'e Environment, name: &str) -> Result<&'e TargetRecord, String> {
    environment
        .targets
        .iter()
        .copied()
        .find(|target| target.name == name)
        .ok_or_else(|| format!("target `{name}` is not loaded"))
}

fn kind_name(kind: NameKind) -> &'static str {
    match kind {
        NameKind::Canonical => "canonical",
        NameKind::Alias => "alias",
        NameKind::SubRegister => "sub_register",
    }
}

pub(crate) fn run(environment: &Environment, check: &Check) -> Outcome {
    match run_checked(environment, check) {
        Ok(()) => Outcome::Passed,
        Err(message) => Outcome::Failed(message),
    }
}

fn run_checked(environment: &Environment, check: &Check) -> Result<(), String> {
    match check {
        Check::RegisterResolves {
            target: name,
            name: register,
            name_kind,
            number,
            width,
        } => {
            let target = target(environment, name)?;
            for spelling in [register.clone(), register.to_ascii_uppercase()] {
                let resolved = target
                    .resolve_register(&spelling)
                    .ok_or_else(|| format!("`{spelling}` does not resolve on {name}"))?;
                let found = (kind_name(resolved.kind), resolved.plan_number, resolved.width);
                if found != (name_kind.as_str(), *number, *width) {
                    return Err(format!(
                        "`{spelling}` resolves to {found:?}; declared ({name_kind}, {number}, {width})"
                    ));
                }
            }
            Ok(())
        }
        Check::ReservedSkipped {
            target: name,
            name: reserved,
            spec,
            signature,
            expected_register,
        } => {
            let target = target(environment, name)?;
            let parsed = Signature::parse(signature).map_err(|error| error.message)?;
            let planned = plan_from_spec(target, spec, &parsed, &TypeTable::new(), "f")
                .map_err(|error| format!("planning `{spec}` failed: {error}"))?;
            if !planned
                .notes
                .iter()
                .any(|note| note.message.contains(&format!("`{reserved}`")) && note.message.contains("reserved"))
            {
                return Err(format!("no note says `{reserved}` is reserved: {:?}", planned.notes));
            }
            let expected = target
                .resolve_register(expected_register)
                .ok_or_else(|| format!("`{expected_register}` does not resolve"))?;
            let argument = planned
                .assignments
                .iter()
                .find(|assignment| assignment.value == ValueRef::Argument(0))
                .ok_or_else(|| "the argument has no assignment".to_string())?;
            for piece in &argument.pieces {
                match piece.place {
                    Place::Register { register, .. } if register == expected.register => {}
                    other => {
                        return Err(format!(
                            "the argument went to {}, not `{expected_register}`",
                            other.describe(target)
                        ));
                    }
                }
            }
            Ok(())
        }
        Check::SpecPlans {
            target: name,
            spec,
            signature,
            origin,
        } => {
            let target = target(environment, name)?;
            let parsed = Signature::parse(signature).map_err(|error| error.message)?;
            let planned = plan_from_spec(target, spec, &parsed, &TypeTable::new(), "f")
                .map_err(|error| format!("planning the {origin} `{spec}` failed: {error}"))?;
            // Freshly planned stack slots are at least 8 bytes wide, wider than a small value: NeverC checks
            // piece sizes against value sizes only for plans a plugin callback returns, so neither do we here.
            validate_plan(&planned.plan, target, None)
                .map_err(|error| format!("the plan of the {origin} `{spec}` is invalid: {error}"))
        }
        Check::ElfFacts {
            target: name,
            machine,
            class,
            common_page_size,
            max_page_size,
            tls_variant,
            tcb_size,
            emulations,
        } => {
            let target = target(environment, name)?;
            let elf = target.elf.ok_or_else(|| format!("{name} has no ELF facts"))?;
            let found = (elf.machine, elf.class, elf.common_page_size, elf.max_page_size);
            let declared = (*machine, *class, *common_page_size, *max_page_size);
            if found != declared {
                return Err(format!("{name}: ELF facts {found:?}; declared {declared:?}"));
            }
            if !target.matches_elf(*machine, *class, target.little_endian) {
                return Err(format!("{name} does not answer to its own ELF header facts"));
            }
            // The variant as the linker reads it.
            let tls = match (tls_variant.as_str(), *tcb_size) {
                ("I", Some(tcb_size)) => TlsVariant::I { tcb_size },
                ("II", None) => TlsVariant::II,
                other => return Err(format!("`{other:?}` is no TLS variant (I with a TCB size, or II)")),
            };
            let found = TlsVariant::of(Some(target));
            if found != tls {
                return Err(format!("{name}: TLS {found:?}; declared {tls:?}"));
            }
            if elf.emulations != emulations.as_slice() {
                return Err(format!(
                    "{name}: emulations {:?}; declared {emulations:?}",
                    elf.emulations
                ));
            }
            for emulation in emulations {
                let chosen = find_target_by_emulation(&environment.targets, emulation).map(|target| target.name);
                if chosen != Some(target.name) {
                    return Err(format!(
                        "emulation `{emulation}` chooses {chosen:?} among the loaded targets, not {name}"
                    ));
                }
            }
            Ok(())
        }
        Check::RelocationResolves {
            target: name,
            format,
            number,
            name: relocation_name,
            relocation_kind,
            relative_to,
            size,
            overflow,
            shift,
            round,
            bits,
        } => {
            let target = target(environment, name)?;
            let format_record = RelocationFormat::ALL
                .into_iter()
                .find(|candidate| candidate.name() == format)
                .ok_or_else(|| format!("unknown relocation format `{format}`"))?;
            let by_number = target
                .relocation(format_record, *number)
                .ok_or_else(|| format!("{format} relocation {number} is not in the tables of {name}"))?;
            let by_name = target
                .relocation_by_name(relocation_name)
                .ok_or_else(|| format!("`{relocation_name}` is not in the tables of {name}"))?;
            if by_number != by_name {
                return Err(format!(
                    "{format} relocation {number} is `{}`, not `{relocation_name}`",
                    by_number.name
                ));
            }
            let found = (
                by_number.kind.name(),
                by_number.relative_to.name(),
                by_number.size,
                by_number.overflow.name(),
                by_number.shift,
                by_number.round,
                by_number
                    .bits
                    .iter()
                    .map(|bits| [bits.lsb, bits.width])
                    .collect::<Vec<_>>(),
            );
            let declared = (
                relocation_kind.as_str(),
                relative_to.as_str(),
                *size,
                overflow.as_str(),
                *shift,
                *round,
                bits.clone(),
            );
            if found != declared {
                return Err(format!("`{relocation_name}` is {found:?}; declared {declared:?}"));
            }
            Ok(())
        }
        _ => Err("not a target case".to_string()),
    }
}
