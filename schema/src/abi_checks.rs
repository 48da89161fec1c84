//! The semantic rules of ABI declarations (`abi/*.toml`): each file on its own, then all of them together
//! (type names, constant names and interface ids are unique across the whole ABI).

use std::collections::{HashMap, HashSet};

use crate::abi::{AbiDescriptorRules, AbiFlags, PluginAbiDeclaration};
use crate::abi_type_checks::{typed_findings, typed_registry_findings};
use crate::abi_types::handle_type_name;
use crate::diagnostic::Finding;
use crate::rule::Rule;

/// The widths a C integer type of the ABI may have.
const WIDTHS: [u32; 4] = [8, 16, 32, 64];

/// The problems of one ABI file on its own.
pub(crate) fn abi_findings(declaration: &PluginAbiDeclaration) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (index, item) in declaration.enums.iter().enumerate() {
        let at = format!("/enums/{index}");
        check_width(item.width, &at, &mut findings);
        check_prefix(&item.name, &item.c_prefix, &at, &mut findings);
        let mut names = HashSet::new();
        let mut values = HashMap::new();
        for (position, value) in item.values.iter().enumerate() {
            let at = format!("{at}/values/{position}");
            if !names.insert(value.name.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiDuplicateName,
                    format!("{at}/name"),
                    format!("`{}` names two values of `{}`", value.name, item.name),
                ));
            }
            if let Some(first) = values.insert(value.value, value.name.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiDuplicateValue,
                    format!("{at}/value"),
                    format!("`{}` has the value {} of `{first}`", value.name, value.value),
                ));
            }
            if item.width < 64 && value.value >> item.width != 0 {
                findings.push(Finding::error(
                    Rule::AbiWidth,
                    format!("{at}/value"),
                    format!(
                        "{} does not fit the {} bits of `{}`",
                        value.value, item.width, item.name
                    ),
                ));
            }
        }
    }
    for (index, item) in declaration.flags.iter().enumerate() {
        let at = format!("/flags/{index}");
        check_width(item.width, &at, &mut findings);
        check_prefix(&item.name, &item.c_prefix, &at, &mut findings);
        let mut names: HashSet<&str> = item.none.iter().map(String::as_str).collect();
        let mut bits = HashMap::new();
        for (position, bit) in item.bits.iter().enumerate() {
            let at = format!("{at}/bits/{position}");
            if !names.insert(bit.name.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiDuplicateName,
                    format!("{at}/name"),
                    format!("`{}` names two constants of `{}`", bit.name, item.name),
                ));
            }
            if let Some(first) = bits.insert(bit.bit, bit.name.as_str()) {
                findings.push(Finding::error(
                    Rule::AbiDuplicateValue,
                    format!("{at}/bit"),
                    format!("`{}` is bit {} like `{first}`", bit.name, bit.bit),
                ));
            }
            if bit.bit >= item.width {
                findings.push(Finding::error(
                    Rule::AbiWidth,
                    format!("{at}/bit"),
                    format!(
                        "bit {} is not one of the {} bits of `{}`",
                        bit.bit, item.width, item.name
                    ),
                ));
            }
        }
        if let Some(rules) = &item.descriptor {
            check_descriptor_rules(item, rules, &format!("{at}/descriptor"), &mut findings);
        }
    }
    let mut interfaces = HashSet::new();
    for (index, interface) in declaration.interfaces.iter().enumerate() {
        if !interfaces.insert(interface.name.as_str()) {
            findings.push(Finding::error(
                Rule::AbiDuplicateName,
                format!("/interfaces/{index}/name"),
                format!("interface `{}` is declared twice", interface.name),
            ));
        }
    }
    typed_findings(declaration, &mut findings);
    findings
}

/// The names a descriptor's rules use must be bits of the set and callbacks of the descriptor.
fn check_descriptor_rules(item: &AbiFlags, rules: &AbiDescriptorRules, at: &str, findings: &mut Vec<Finding>) {
    let mut unknown = |pointer: String, what: &str, name: &str| {
        findings.push(Finding::error(
            Rule::AbiUnknownName,
            pointer,
            format!("`{name}` is not {what} of `{}`", rules.name),
        ));
    };
    let bits: HashSet<&str> = item.bits.iter().map(|bit| bit.name.as_str()).collect();
    let callbacks: HashSet<&str> = rules.callbacks.iter().map(String::as_str).collect();
    for (index, name) in rules.one_of.iter().enumerate() {
        if !bits.contains(name.as_str()) {
            unknown(format!("{at}/one_of/{index}"), "a flag bit", name);
        }
    }
    for (index, name) in rules.required_callbacks.iter().enumerate() {
        if !callbacks.contains(name.as_str()) {
            unknown(format!("{at}/required_callbacks/{index}"), "a callback", name);
        }
    }
    for (index, requirement) in rules.bit_requires.iter().enumerate() {
        if !bits.contains(requirement.bit.as_str()) {
            unknown(format!("{at}/bit_requires/{index}/bit"), "a flag bit", &requirement.bit);
        }
        if !callbacks.contains(requirement.callback.as_str()) {
            unknown(
                format!("{at}/bit_requires/{index}/callback"),
                "a callback",
                &requirement.callback,
            );
        }
    }
}

fn check_width(width: u32, at: &str, findings: &mut Vec<Finding>) {
    if !WIDTHS.contains(&width) {
        findings.push(Finding::error(
            Rule::AbiWidth,
            format!("{at}/width"),
            format!("width {width} is not 8, 16, 32 or 64 bits"),
        ));
    }
}

/// A type's constants must not be spelled like another type's: the prefix may not be empty after `NEVERC_`.
fn check_prefix(name: &str, prefix: &str, at: &str, findings: &mut Vec<Finding>) {
    if prefix == "NEVERC_" {
        findings.push(Finding::error(
            Rule::AbiDuplicateName,
            format!("{at}/c_prefix"),
            format!("the constants of `{name}` need a prefix of their own after `NEVERC_`"),
        ));
    }
}

/// The problems of all ABI files together, each with the index of the file it is reported in: a type name,
/// a C constant or an interface (by name or id) declared in two places.
pub(crate) fn abi_registry_findings(declarations: &[&PluginAbiDeclaration]) -> Vec<(usize, Finding)> {
    let mut findings = Vec::new();
    let mut types: HashMap<String, usize> = HashMap::new();
    let mut constants: HashSet<String> = HashSet::new();
    let mut interfaces: HashMap<(u64, u64), (usize, &str)> = HashMap::new();
    let mut interface_names: HashSet<&str> = HashSet::new();
    let mut headers: HashSet<&str> = HashSet::new();
    for (file, declaration) in declarations.iter().enumerate() {
        if !headers.insert(declaration.header.as_str()) {
            findings.push((
                file,
                Finding::error(
                    Rule::AbiDuplicateName,
                    "/header",
                    format!("header `{}` is generated from another ABI file too", declaration.header),
                ),
            ));
        }
        let mut type_names: Vec<(String, String)> = Vec::new();
        let mut constant_names: Vec<(String, String)> = Vec::new();
        for (index, item) in declaration.enums.iter().enumerate() {
            type_names.push((format!("/enums/{index}/name"), item.name.clone()));
            for (position, alias) in item.aliases.iter().enumerate() {
                type_names.push((format!("/enums/{index}/aliases/{position}"), alias.clone()));
            }
            for (position, value) in item.values.iter().enumerate() {
                constant_names.push((
                    format!("/enums/{index}/values/{position}/name"),
                    format!("{}{}", item.c_prefix, value.name),
                ));
            }
        }
        for (index, item) in declaration.flags.iter().enumerate() {
            type_names.push((format!("/flags/{index}/name"), item.name.clone()));
            if let Some(none) = &item.none {
                constant_names.push((format!("/flags/{index}/none"), format!("{}{none}", item.c_prefix)));
            }
            for (position, bit) in item.bits.iter().enumerate() {
                constant_names.push((
                    format!("/flags/{index}/bits/{position}/name"),
                    format!("{}{}", item.c_prefix, bit.name),
                ));
            }
        }
        for (index, item) in declaration.typedefs.iter().enumerate() {
            type_names.push((format!("/typedefs/{index}/name"), item.name.clone()));
            for (position, constant) in item.constants.iter().enumerate() {
                constant_names.push((
                    format!("/typedefs/{index}/constants/{position}/name"),
                    constant.name.clone(),
                ));
            }
        }
        for (index, item) in declaration.handles.iter().enumerate() {
            type_names.push((format!("/handles/{index}/name"), handle_type_name(&item.name)));
        }
        for (index, item) in declaration.structs.iter().enumerate() {
            type_names.push((format!("/structs/{index}/name"), item.name.clone()));
        }
        for (index, item) in declaration.callbacks.iter().enumerate() {
            type_names.push((format!("/callbacks/{index}/name"), item.name.clone()));
        }
        for (index, item) in declaration.apis.iter().enumerate() {
            type_names.push((format!("/apis/{index}/name"), item.name.clone()));
        }
        for (pointer, name) in type_names {
            if let Some(other) = types.get(name.as_str()) {
                let place = if *other == file {
                    "this file"
                } else {
                    "another ABI file"
                };
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiDuplicateName,
                        pointer,
                        format!("type `Neverc{name}` is declared twice (also in {place})"),
                    ),
                ));
            } else {
                types.insert(name, file);
            }
        }
        for (pointer, constant) in constant_names {
            if !constants.insert(constant.clone()) {
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiDuplicateName,
                        pointer,
                        format!("C constant `{constant}` is declared twice"),
                    ),
                ));
            }
        }
        for (index, interface) in declaration.interfaces.iter().enumerate() {
            let id = (interface.id.high, interface.id.low);
            if let Some((_, other)) = interfaces.get(&id) {
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiDuplicateValue,
                        format!("/interfaces/{index}/id"),
                        format!("interface `{}` has the id of `{other}`", interface.name),
                    ),
                ));
            } else {
                interfaces.insert(id, (file, interface.name.as_str()));
            }
            if !interface_names.insert(interface.name.as_str()) && declarations.len() > 1 {
                // Within one file `abi_findings` reports it; here only across files.
                let first = declarations[..file]
                    .iter()
                    .any(|earlier| earlier.interfaces.iter().any(|other| other.name == interface.name));
                if first {
                    findings.push((
                        file,
                        Finding::error(
                            Rule::AbiDuplicateName,
                            format!("/interfaces/{index}/name"),
                            format!("interface `{}` is declared in another ABI file too", interface.name),
                        ),
                    ));
                }
            }
        }
    }
    typed_registry_findings(declarations, &mut findings);
    findings
}
