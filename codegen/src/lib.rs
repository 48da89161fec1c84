//! Turns validated declarations into Rust source: const tables with `const fn` lookups.
//!
//! One handlebars template per output (`templates/`), strict mode, no HTML escaping; every output is
//! parsed and formatted with prettyplease and starts with a header naming its source. The same inputs
//! always give the same bytes.

pub mod build_support;
pub mod conformance;
mod plugin_abi;
mod plugin_abi_types;
mod target_headers;

pub use plugin_abi::plugin_abi;
pub use plugin_abi_types::{HEADER_DIR, plugin_abi_layout_program, plugin_headers};
pub use target_headers::{TARGET_HEADER_DIR, target_headers};

use std::path::Path;

use handlebars::{Context, Handlebars, Helper, HelperDef, HelperResult, Output, RenderContext, RenderErrorReason};
use neverc_records::{PhaseRecordIn, PhaseTablesIn, RelocationBase, TargetRecordIn};
use neverc_schema::{Bump, Declarations, ObserverPoint, PolicyFlag, RegisterFlag, lower_phase_schema, lower_target};
use serde_json::{Value, json};

const PHASES_TEMPLATE: &str = include_str!("../templates/phases.rs.hbs");
const STATE_MACHINES_TEMPLATE: &str = include_str!("../templates/state_machines.rs.hbs");
const TARGET_TEMPLATE: &str = include_str!("../templates/target.rs.hbs");
const TARGETS_TEMPLATE: &str = include_str!("../templates/targets.rs.hbs");
const RELOCATION_KINDS_TEMPLATE: &str = include_str!("../templates/relocation_kinds.rs.hbs");

/// Where the relocation-kind vocabulary is declared, and where the enum generated from it is committed
/// (the records crate cannot be generated at build time: the generator depends on it). A test keeps the
/// committed file fresh.
pub const RELOCATION_KINDS_SOURCE: &str = "runtime/tables/records/relocation_kinds.toml";
pub const RELOCATION_KINDS_OUTPUT: &str = "runtime/tables/records/src/relocation_kinds.rs";

/// Rust keywords, which cannot name a generated module.
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "unsafe", "use", "where", "while",
    "yield", "abstract", "become", "do", "final", "macro", "override", "typeof", "unsized", "virtual",
];

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("declarations cannot be lowered: {0}")]
    Lowering(String),
    #[error("template `{template}` failed: {message}")]
    Template { template: &'static str, message: String },
    #[error("generated `{file}` is not valid Rust: {message}")]
    InvalidRust { file: String, message: String },
    #[error("`{name}` cannot name a generated module: {why}")]
    InvalidIdentifier { name: String, why: &'static str },
    #[error("the relocation-kind vocabulary is invalid: {0}")]
    Vocabulary(String),
}

/// One generated source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    pub name: String,
    pub contents: String,
}

/// How sources are named in generated headers: relative to the directory that holds the declarations.
fn display_source(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

fn registry() -> Handlebars<'static> {
    let mut handlebars = Handlebars::new();
    handlebars.set_strict_mode(true);
    handlebars.register_escape_fn(handlebars::no_escape);
    handlebars.register_helper(
        "rust_str",
        value_helper("rust_str", "string", |value| {
            value.as_str().map(|text| format!("{text:?}"))
        }),
    );
    handlebars.register_helper(
        "option_index",
        value_helper("option_index", "an index or null", |value| match value {
            Value::Null => Some("None".to_string()),
            other => other.as_u64().map(|index| format!("Some({index})")),
        }),
    );
    handlebars.register_helper(
        "template",
        value_helper("template", "template parts", template_expression),
    );
    handlebars.register_helper(
        "hex",
        value_helper("hex", "u64", |value| {
            value.as_u64().map(|number| format!("0x{number:016x}"))
        }),
    );
    handlebars.register_helper(
        "policy_bits",
        value_helper("policy_bits", "u32", |value| {
            let bits = value.as_u64()?;
            Some(bits_expression(
                PolicyFlag::ALL
                    .iter()
                    .filter(|flag| bits & u64::from(flag.bit()) != 0)
                    .map(|flag| format!("POLICY_{}", flag.schema_name()))
                    .collect(),
            ))
        }),
    );
    handlebars.register_helper(
        "point_bits",
        value_helper("point_bits", "u32", |value| {
            let bits = value.as_u64()?;
            Some(bits_expression(
                ObserverPoint::ALL
                    .iter()
                    .filter(|point| bits & u64::from(point.bit()) != 0)
                    .map(|point| format!("POINT_{}", point.schema_name()))
                    .collect(),
            ))
        }),
    );
    handlebars.register_helper(
        "register_flags",
        value_helper("register_flags", "u32", |value| {
            let bits = value.as_u64()?;
            Some(bits_expression(
                RegisterFlag::ALL
                    .iter()
                    .filter(|flag| bits & u64::from(flag.bit()) != 0)
                    .map(|flag| format!("super::REGISTER_FLAG_{}", flag.schema_name().to_ascii_uppercase()))
                    .collect(),
            ))
        }),
    );
    handlebars.register_helper(
        "enum_variant",
        value_helper("enum_variant", "string", |value| value.as_str().map(camel_case)),
    );
    handlebars.register_helper(
        "c_doc",
        value_helper("c_doc", "string", |value| {
            value.as_str().map(|text| text.replace("*/", "* /"))
        }),
    );
    handlebars.register_helper(
        "upper",
        value_helper("upper", "string", |value| value.as_str().map(str::to_ascii_uppercase)),
    );
    handlebars
}

/// A lowering template (the serialized `TemplatePart`s) as a Rust slice expression.
fn template_expression(value: &Value) -> Option<String> {
    let mut parts = Vec::new();
    for part in value.as_array()? {
        let kind = part.get("part")?.as_str()?;
        let content = part.get("value");
        parts.push(match kind {
            "Text" => format!("TemplatePart::Text({:?})", content?.as_str()?),
            "Register" => format!("TemplatePart::Register({})", content?.as_u64()?),
            "Source" | "Base" | "Offset" | "Size" | "Symbol" => format!("TemplatePart::{kind}"),
            _ => return None,
        });
    }
    Some(format!("&[{}]", parts.join(", ")))
}

/// A helper that turns its one parameter into text, refusing a parameter of another type.
fn value_helper(
    name: &'static str,
    expected: &'static str,
    map: fn(&Value) -> Option<String>,
) -> Box<dyn HelperDef + Send + Sync> {
    Box::new(
        move |helper: &Helper<'_>,
              _: &Handlebars<'_>,
              _: &Context,
              _: &mut RenderContext<'_, '_>,
              out: &mut dyn Output|
              -> HelperResult {
            let value = helper
                .param(0)
                .map(|param| param.value())
                .ok_or(RenderErrorReason::ParamNotFoundForIndex(name, 0))?;
            let text = map(value).ok_or(RenderErrorReason::InvalidParamType(expected))?;
            out.write(&text)?;
            Ok(())
        },
    )
}

fn check_module_name(name: &str) -> Result<(), CodegenError> {
    let well_formed = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(CodegenError::InvalidIdentifier {
            name: name.to_string(),
            why: "use lowercase letters, digits and `_`, starting with a letter",
        });
    }
    if RUST_KEYWORDS.contains(&name) {
        return Err(CodegenError::InvalidIdentifier {
            name: name.to_string(),
            why: "it is a Rust keyword",
        });
    }
    Ok(())
}

fn render(
    template_name: &'static str,
    template: &str,
    data: &Value,
    file: &str,
    source: &str,
) -> Result<GeneratedFile, CodegenError> {
    render_with_advice(
        template_name,
        template,
        data,
        file,
        source,
        "change the declaration and rebuild, or run `neverc-spec gen --out DIR`",
    )
}

/// Like [`render`], with `advice` saying how to regenerate the file.
fn render_with_advice(
    template_name: &'static str,
    template: &str,
    data: &Value,
    file: &str,
    source: &str,
    advice: &str,
) -> Result<GeneratedFile, CodegenError> {
    let handlebars = registry();
    let code = handlebars
        .render_template(template, data)
        .map_err(|error| CodegenError::Template {
            template: template_name,
            message: error.to_string(),
        })?;
    let syntax = syn::parse_file(&code).map_err(|error| CodegenError::InvalidRust {
        file: file.to_string(),
        message: error.to_string(),
    })?;
    let formatted = prettyplease::unparse(&syntax);
    let header = format!(
        "// @generated by neverc-codegen from `{source}` with template `{template_name}`.\n// Do not edit: {advice}.\n\n"
    );
    Ok(GeneratedFile {
        name: file.to_string(),
        contents: format!("{header}{formatted}"),
    })
}

/// `LINK_INPUT_PROBE` or `symbol_binding` → `LinkInputProbe`, `SymbolBinding`; already camel-cased names
/// (`RebindSymbol`) stay as they are.
fn camel_case(name: &str) -> String {
    name.split(['_', '.'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            let rest: String = if part.chars().any(|c| c.is_ascii_lowercase()) {
                chars.collect()
            } else {
                chars.map(|c| c.to_ascii_lowercase()).collect()
            };
            first.into_iter().chain(rest.chars()).collect::<String>()
        })
        .collect()
}

/// Variant names for `names`, which must be distinct identifiers.
fn variants<'a>(names: impl IntoIterator<Item = (&'a str, String)>) -> Result<Vec<String>, CodegenError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut variants = Vec::new();
    for (source, variant) in names {
        if !variant.starts_with(|c: char| c.is_ascii_uppercase()) || !variant.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(CodegenError::InvalidIdentifier {
                name: source.to_string(),
                why: "its enum variant would not be a Rust identifier",
            });
        }
        if !seen.insert(variant.clone()) {
            return Err(CodegenError::InvalidIdentifier {
                name: source.to_string(),
                why: "two declarations would get the same enum variant",
            });
        }
        variants.push(variant);
    }
    Ok(variants)
}

/// One enum per domain, variants named after the phases' symbols without the domain's prefix.
fn domains_data(model: &PhaseTablesIn<'_>) -> Result<Vec<Value>, CodegenError> {
    let mut domains: Vec<&str> = Vec::new();
    for phase in model.phases {
        if !domains.contains(&phase.domain) {
            domains.push(phase.domain);
        }
    }
    let mut data = Vec::new();
    for domain in domains {
        check_module_name(domain)?;
        let prefix = format!("{}_", domain.to_ascii_uppercase());
        let members: Vec<(usize, &PhaseRecordIn<'_>)> = model
            .phases
            .iter()
            .enumerate()
            .filter(|(_, phase)| phase.domain == domain)
            .collect();
        let names = variants(members.iter().map(|(_, phase)| {
            let short = phase.symbol.strip_prefix(&prefix).unwrap_or(phase.symbol);
            let variant = camel_case(short);
            let variant = if variant.starts_with(|c: char| c.is_ascii_digit()) {
                camel_case(phase.symbol)
            } else {
                variant
            };
            (phase.symbol, variant)
        }))?;
        let phases: Vec<Value> = members
            .iter()
            .zip(names)
            .map(|((index, phase), variant)| {
                json!({
                    "variant": variant,
                    "symbol": phase.symbol,
                    "name": phase.name,
                    "short_name": phase.name.rsplit('.').next().unwrap_or(phase.name),
                    "index": index,
                })
            })
            .collect();
        data.push(json!({ "name": domain, "count": phases.len(), "phases": phases }));
    }
    Ok(data)
}

fn bits_expression(names: Vec<String>) -> String {
    if names.is_empty() {
        "0".to_string()
    } else {
        names.join(" | ")
    }
}

/// A record as the template sees it: its serialized fields, plus `extra` (names derived for the template).
fn record_data(record: &impl serde::Serialize, extra: Value) -> Result<Value, CodegenError> {
    let mut value = serde_json::to_value(record).map_err(|error| CodegenError::Lowering(error.to_string()))?;
    if let (Value::Object(fields), Value::Object(extra)) = (&mut value, extra) {
        fields.extend(extra);
    }
    Ok(value)
}

fn phases_data(model: &PhaseTablesIn<'_>) -> Result<Value, CodegenError> {
    record_data(
        model,
        json!({
            "domains": domains_data(model)?,
            "policy_flags": PolicyFlag::ALL.iter().map(|flag| json!({"name": flag.schema_name(), "bit": flag.bit()})).collect::<Vec<_>>(),
            "observer_points": ObserverPoint::ALL.iter().map(|point| json!({"name": point.schema_name(), "bit": point.bit()})).collect::<Vec<_>>(),
        }),
    )
}

fn state_machines_data(model: &PhaseTablesIn<'_>) -> Result<Value, CodegenError> {
    let mut machines = Vec::new();
    for machine in model.state_machines {
        check_module_name(machine.name)?;
        let symbol = |index: usize| model.phases.get(index).map(|phase| phase.symbol).unwrap_or_default();
        let state_variants = variants(machine.states.iter().map(|state| (*state, camel_case(state))))?;
        let class_variants = variants(
            machine
                .mutation_classes
                .iter()
                .map(|class| (class.name, camel_case(class.name))),
        )?;
        let mut operations = Vec::new();
        for (class, variant) in machine.mutation_classes.iter().zip(&class_variants) {
            for operation in class.operations {
                operations.push((*operation, variant.clone(), class.name));
            }
        }
        let operation_variants = variants(
            operations
                .iter()
                .map(|(operation, ..)| (*operation, camel_case(operation))),
        )?;
        machines.push(record_data(
            machine,
            json!({
                "transition_symbols": machine.transitions.iter().map(|transition| symbol(transition.phase)).collect::<Vec<_>>(),
                "finalization_symbols": machine.finalization.iter().map(|index| symbol(*index)).collect::<Vec<_>>(),
                "state_variants": machine.states.iter().zip(&state_variants).map(|(name, variant)| json!({"name": name, "variant": variant})).collect::<Vec<_>>(),
                "class_variants": machine.mutation_classes.iter().zip(&class_variants).map(|(class, variant)| json!({"name": class.name, "variant": variant})).collect::<Vec<_>>(),
                "operation_variants": operations.iter().zip(&operation_variants).map(|((name, class, class_name), variant)| json!({"name": name, "variant": variant, "class": class, "class_name": class_name})).collect::<Vec<_>>(),
            }),
        )?);
    }
    Ok(json!({ "state_machines": machines }))
}

fn target_data(model: &TargetRecordIn<'_>) -> Result<Value, CodegenError> {
    record_data(
        model,
        json!({
            "has_subregisters": model.registers.iter().any(|register| !register.subregisters.is_empty()),
            "has_instruction_fields": model.relocations.iter().any(|relocation| !relocation.bits.is_empty()),
        }),
    )
}

/// One kind of the vocabulary file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KindDeclaration {
    name: String,
    description: String,
    relative_to: Vec<String>,
    #[serde(default = "patches_place_by_default")]
    patches_place: bool,
}

fn patches_place_by_default() -> bool {
    true
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Vocabulary {
    kinds: Vec<KindDeclaration>,
}

/// The `RelocationKind` enum of `neverc-records`, from the vocabulary file's text (`source` names it).
pub fn relocation_kinds(vocabulary: &str, source: &str) -> Result<GeneratedFile, CodegenError> {
    let vocabulary: Vocabulary =
        toml::from_str(vocabulary).map_err(|error| CodegenError::Vocabulary(error.to_string()))?;
    if vocabulary.kinds.is_empty() {
        return Err(CodegenError::Vocabulary("it declares no kind".into()));
    }
    let mut kinds = Vec::new();
    let names = variants(
        vocabulary
            .kinds
            .iter()
            .map(|kind| (kind.name.as_str(), camel_case(&kind.name))),
    )?;
    for (kind, variant) in vocabulary.kinds.iter().zip(names) {
        if !kind.name.starts_with(|c: char| c.is_ascii_lowercase())
            || !kind
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(CodegenError::Vocabulary(format!(
                "kind `{}` is not snake_case",
                kind.name
            )));
        }
        let mut bases = Vec::new();
        for name in &kind.relative_to {
            let base = RelocationBase::ALL
                .into_iter()
                .find(|base| base.name() == name)
                .ok_or_else(|| CodegenError::Vocabulary(format!("kind `{}` names unknown base `{name}`", kind.name)))?;
            if bases.contains(&base) {
                return Err(CodegenError::Vocabulary(format!(
                    "kind `{}` lists base `{name}` twice",
                    kind.name
                )));
            }
            bases.push(base);
        }
        if bases.is_empty() {
            return Err(CodegenError::Vocabulary(format!("kind `{}` allows no base", kind.name)));
        }
        kinds.push(json!({
            "name": kind.name,
            "ident": variant,
            "description": kind.description,
            "doc": format!(" {}", kind.description),
            "patches_place": kind.patches_place,
            "bases": bases.iter().map(|base| camel_case(base.name())).collect::<Vec<_>>(),
        }));
    }
    render_with_advice(
        "relocation_kinds.rs.hbs",
        RELOCATION_KINDS_TEMPLATE,
        &json!({ "kinds": kinds, "count": kinds.len() }),
        "relocation_kinds.rs",
        source,
        "change the vocabulary and rerun the tests with NEVERC_BLESS=1",
    )
}

/// Generates every output for the declarations. `root` is the directory source paths are shown relative to.
pub fn generate(declarations: &Declarations, root: &Path) -> Result<Vec<GeneratedFile>, CodegenError> {
    let schema_source = display_source(root, &declarations.phase_schema_path);
    let arena = Bump::new();
    let model = lower_phase_schema(&declarations.phase_schema, &arena).map_err(CodegenError::Lowering)?;
    let mut files = vec![
        render(
            "phases.rs.hbs",
            PHASES_TEMPLATE,
            &phases_data(&model)?,
            "phases.rs",
            &schema_source,
        )?,
        render(
            "state_machines.rs.hbs",
            STATE_MACHINES_TEMPLATE,
            &state_machines_data(&model)?,
            "state_machines.rs",
            &schema_source,
        )?,
    ];
    let mut targets = Vec::new();
    for target in &declarations.targets {
        check_module_name(&target.stem)?;
        let source = display_source(root, &target.path);
        let model = lower_target(&target.declaration, &arena).map_err(CodegenError::Lowering)?;
        let file = format!("target_{}.rs", target.stem);
        files.push(render(
            "target.rs.hbs",
            TARGET_TEMPLATE,
            &target_data(&model)?,
            &file,
            &source,
        )?);
        targets.push(json!({ "name": model.name, "module": target.stem, "source": source }));
    }
    let registry_data = json!({
        "register_flags": RegisterFlag::ALL.iter().map(|flag| json!({"name": flag.schema_name(), "bit": flag.bit()})).collect::<Vec<_>>(),
        "target_count": targets.len(),
        "targets": targets,
    });
    let target_sources: Vec<String> = declarations
        .targets
        .iter()
        .map(|target| display_source(root, &target.path))
        .collect();
    let registry_source = if target_sources.is_empty() {
        "targets/".to_string()
    } else {
        target_sources.join("`, `")
    };
    files.push(render(
        "targets.rs.hbs",
        TARGETS_TEMPLATE,
        &registry_data,
        "targets.rs",
        &registry_source,
    )?);
    Ok(files)
}
