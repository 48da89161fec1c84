//! The plugin ABI's tables and types (`plugin_abi.rs`), from the validated `abi/*.toml` files: per file a
//! module with its records, one Rust enum per enumeration and one flag type per flag set, so that the
//! runtime names ABI values only through them.

use std::path::Path;

use neverc_schema::abi_types::AbiPrimitive;
use neverc_schema::{AbiDescriptorRules, AbiFlags, AbiInterface, LoadedAbiPart, Stability};
use serde_json::{Value, json};

use crate::{CodegenError, GeneratedFile, camel_case, check_module_name, display_source, render, variants};

const PLUGIN_ABI_TEMPLATE: &str = include_str!("../templates/plugin_abi.rs.hbs");

/// `LTOSymbolResolutionFlags` → `LtoSymbolResolutionFlags`: a run of capitals is one word, whose last
/// capital starts the next word when a lowercase letter follows it. A trailing `API` is a word of its own
/// (`LTOAPI` → `LtoApi`).
pub(crate) fn rust_type_name(name: &str) -> String {
    if let Some(stem) = name.strip_suffix("API").filter(|stem| !stem.is_empty()) {
        return format!("{}Api", rust_type_name(stem));
    }
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (index, &c) in chars.iter().enumerate() {
        let previous_upper = index > 0 && chars[index - 1].is_ascii_uppercase();
        let next_lower = chars.get(index + 1).is_some_and(|next| next.is_ascii_lowercase());
        if c.is_ascii_uppercase() && previous_upper && !next_lower {
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The Rust integer type of a C type `width` bits wide.
fn repr(width: u32, signed: bool) -> Result<&'static str, CodegenError> {
    AbiPrimitive::of_width(width, signed)
        .map(AbiPrimitive::rust)
        .ok_or_else(|| CodegenError::Lowering(format!("width {width} is not 8, 16, 32 or 64 (or 32 or 64 signed)")))
}

fn part_data(part: &LoadedAbiPart) -> Result<Value, CodegenError> {
    check_module_name(&part.stem)?;
    let declaration = &part.declaration;
    let type_names = variants(
        declaration
            .enums
            .iter()
            .map(|item| (item.name.as_str(), rust_type_name(&item.name)))
            .chain(
                declaration
                    .flags
                    .iter()
                    .map(|item| (item.name.as_str(), rust_type_name(&item.name))),
            ),
    )?;
    let (enum_names, flag_names) = type_names.split_at(declaration.enums.len());
    let unresolved = declaration
        .enums
        .iter()
        .filter(|item| item.values.is_empty())
        .map(|item| item.name.as_str())
        .chain(
            declaration
                .flags
                .iter()
                .filter(|item| item.bits.is_empty())
                .map(|item| item.name.as_str()),
        )
        .next();
    if let Some(name) = unresolved {
        return Err(CodegenError::Lowering(format!(
            "`{name}` takes its values from the phase schema: load the ABI with `load_plugin_abi_with`"
        )));
    }
    let mut enums = Vec::new();
    for (item, rust_name) in declaration.enums.iter().zip(enum_names) {
        let value_variants = variants(
            item.values
                .iter()
                .map(|value| (value.name.as_str(), camel_case(&value.name))),
        )?;
        enums.push(json!({
            "name": item.name,
            "aliases": item.aliases,
            "c_prefix": item.c_prefix,
            "width": item.width,
            "doc": item.doc,
            "type_doc": format!(" {} (`Neverc{}`, constants `{}*`).", item.doc, item.name, item.c_prefix),
            "rust_name": rust_name,
            "repr": repr(item.width, item.signed)?,
            "value_count": item.values.len(),
            "values": item.values.iter().zip(value_variants).map(|(value, variant)| json!({
                "name": value.name,
                "value": value.value,
                "doc": value.doc,
                "variant": variant,
            })).collect::<Vec<_>>(),
        }));
    }
    let mut flags = Vec::new();
    for (item, rust_name) in declaration.flags.iter().zip(flag_names) {
        let descriptor = item
            .descriptor
            .as_ref()
            .map(|rules| descriptor_data(item, rules))
            .transpose()?;
        flags.push(json!({
            "descriptor": descriptor,
            "name": item.name,
            "c_prefix": item.c_prefix,
            "width": item.width,
            "none": item.none,
            "doc": item.doc,
            "type_doc": format!(" {} (`Neverc{}`, constants `{}*`).", item.doc, item.name, item.c_prefix),
            "rust_name": rust_name,
            "repr": repr(item.width, false)?,
            "bit_count": item.bits.len(),
            "known": item.bits.iter().fold(0u64, |mask, bit| mask | 1u64.checked_shl(bit.bit).unwrap_or(0)),
            "bits": item.bits.iter().map(|bit| json!({"name": bit.name, "bit": bit.bit, "doc": bit.doc})).collect::<Vec<_>>(),
        }));
    }
    let interfaces: Vec<Value> = declaration.interfaces.iter().map(interface_data).collect();
    Ok(json!({
        "module": part.stem,
        "module_doc": format!(" The part of the plugin ABI declared in `abi/{}.toml`.", part.stem),
        "interface_count": interfaces.len(),
        "interfaces": interfaces,
        "enum_count": enums.len(),
        "enums": enums,
        "flags_count": flags.len(),
        "flags": flags,
    }))
}

/// An interface's template data: its name, id halves, version, stability and doc.
pub(crate) fn interface_data(interface: &AbiInterface) -> Value {
    json!({
        "name": interface.name,
        "high": interface.id.high,
        "low": interface.id.low,
        "major": interface.major,
        "minor": interface.minor,
        "stability": match interface.stability {
            Stability::Stable => "Stable",
            Stability::Experimental => "Experimental",
        },
        "doc": interface.doc,
    })
}

/// The registration rules of a descriptor: its callbacks as an enum, the rules as constants of the flag type.
fn descriptor_data(item: &AbiFlags, rules: &AbiDescriptorRules) -> Result<Value, CodegenError> {
    let callbacks = variants(rules.callbacks.iter().map(|name| (name.as_str(), name.clone())))?;
    let one_of_mask = item
        .bits
        .iter()
        .filter(|bit| rules.one_of.contains(&bit.name))
        .fold(0u64, |mask, bit| mask | 1u64.checked_shl(bit.bit).unwrap_or(0));
    Ok(json!({
        "name": rules.name,
        "callback_type": format!("{}Callback", rust_type_name(&rules.name)),
        "callback_count": callbacks.len(),
        "callbacks": callbacks,
        "required_count": rules.required_callbacks.len(),
        "required": rules.required_callbacks,
        "one_of_mask": one_of_mask,
        "bit_requires_count": rules.bit_requires.len(),
        "bit_requires": rules.bit_requires.iter().map(|rule| json!({"bit": rule.bit, "callback": rule.callback})).collect::<Vec<_>>(),
        "unique_id": rules.unique_id,
    }))
}

/// `plugin_abi.rs`: the records, enums and flag types of every ABI file, and their `#[repr(C)]` mirror types
/// in `ffi`. `root` is the directory source paths are shown relative to.
pub fn plugin_abi(parts: &[LoadedAbiPart], root: &Path) -> Result<GeneratedFile, CodegenError> {
    let data: Vec<Value> = parts.iter().map(part_data).collect::<Result<_, _>>()?;
    let sources: Vec<String> = parts.iter().map(|part| display_source(root, &part.path)).collect();
    let source = if sources.is_empty() {
        "abi/".to_string()
    } else {
        sources.join("`, `")
    };
    render(
        "plugin_abi.rs.hbs",
        PLUGIN_ABI_TEMPLATE,
        &json!({ "count": data.len(), "parts": data, "ffi": crate::plugin_abi_types::ffi_source(parts)? }),
        "plugin_abi.rs",
        &source,
    )
}

#[cfg(test)]
mod tests {
    use super::rust_type_name;

    #[test]
    fn acronyms_become_one_capitalized_word() {
        assert_eq!(rust_type_name("LTOSymbolResolutionFlags"), "LtoSymbolResolutionFlags");
        assert_eq!(rust_type_name("LTOType"), "LtoType");
        assert_eq!(rust_type_name("ABITypeKind"), "AbiTypeKind");
        assert_eq!(rust_type_name("LinkPhase"), "LinkPhase");
        assert_eq!(rust_type_name("CC"), "Cc");
        assert_eq!(rust_type_name("LTOAPI"), "LtoApi");
        assert_eq!(rust_type_name("LTORegistrarAPI"), "LtoRegistrarApi");
        assert_eq!(rust_type_name("LinkAPI"), "LinkApi");
    }
}
