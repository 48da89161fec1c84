//! Cases of a target file, run against the register tables and the calling-convention planner.

use neverc_cc::assignment::{Place, ValueRef};
use neverc_cc::layout::TypeTable;
use neverc_cc::plan_validation::validate_plan;
use neverc_cc::planner::plan_from_spec;
use neverc_cc::signature::Signature;
use neverc_tables::{NameKind, TargetRecord};

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
        _ => Err("not a target case".to_string()),
    }
}
