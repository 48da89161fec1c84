//! The semantic rules of the typed part of ABI declarations: typedefs, handles, structures, callbacks and API
//! tables, and enumerations or flag sets whose values come from another declaration (`from`). Each file on
//! its own first (type strings, names within a type, `Header` first, known sources), then all files together
//! (every name resolves, no implicit padding).

use std::collections::HashSet;

use crate::abi::{AbiStruct, PluginAbiDeclaration};
use crate::abi_types::{AbiParam, AbiType, AbiTypeKind, AbiTypeTable, HANDLE_STRUCT, HEADER_STRUCT};
use crate::diagnostic::Finding;
use crate::rule::Rule;

/// The name of an enumeration's or flag set's source of values, as written after `from =`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiSource {
    /// `phase_schema:policy`: the policy flags of phases (`OBSERVABLE` ...), with their C bits.
    PolicyFlags,
    /// `phase_schema:observer_points`: the observer points (`BEFORE` ...), with their C bits.
    ObserverPoints,
    /// `phase_schema:state_machines/<domain>/states`: a state machine's states, numbered from 0.
    States(String),
    /// `phase_schema:state_machines/<domain>/mutation_classes`: a state machine's mutation classes,
    /// numbered from 0, named in UPPER_SNAKE.
    MutationClasses(String),
}

impl AbiSource {
    /// Parses a source; `None` when it is not one of the four forms.
    pub fn parse(text: &str) -> Option<AbiSource> {
        let rest = text.strip_prefix("phase_schema:")?;
        match rest {
            "policy" => return Some(AbiSource::PolicyFlags),
            "observer_points" => return Some(AbiSource::ObserverPoints),
            _ => {}
        }
        let rest = rest.strip_prefix("state_machines/")?;
        let (domain, list) = rest.split_once('/')?;
        let well_formed = domain.starts_with(|c: char| c.is_ascii_lowercase())
            && domain
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return None;
        }
        match list {
            "states" => Some(AbiSource::States(domain.to_string())),
            "mutation_classes" => Some(AbiSource::MutationClasses(domain.to_string())),
            _ => None,
        }
    }

    /// Whether the source gives bits (a flag set) rather than values (an enumeration).
    pub fn gives_bits(&self) -> bool {
        matches!(self, AbiSource::PolicyFlags | AbiSource::ObserverPoints)
    }
}

const SOURCES: &str = "`phase_schema:policy`, `phase_schema:observer_points`, \
                       `phase_schema:state_machines/<domain>/states` or `phase_schema:state_machines/<domain>/mutation_classes`";

/// The problems of the typed part of one ABI file on its own.
pub(crate) fn typed_findings(declaration: &PluginAbiDeclaration, findings: &mut Vec<Finding>) {
    check_sources(declaration, findings);
    for (index, item) in declaration.typedefs.iter().enumerate() {
        match AbiType::parse(&item.ty) {
            Ok(AbiType::Void | AbiType::Array { .. }) => findings.push(Finding::error(
                Rule::AbiType,
                format!("/typedefs/{index}/type"),
                format!("typedef `{}` names neither `void` nor an array", item.name),
            )),
            Ok(_) => {}
            Err(error) => findings.push(Finding::error(
                Rule::AbiType,
                format!("/typedefs/{index}/type"),
                error.to_string(),
            )),
        }
    }
    for (index, item) in declaration.structs.iter().enumerate() {
        check_struct(item, &format!("/structs/{index}"), findings);
    }
    for (index, item) in declaration.callbacks.iter().enumerate() {
        let at = format!("/callbacks/{index}");
        check_signature(&item.name, item.returns.as_deref(), &item.params, &at, &[], findings);
    }
    for (index, api) in declaration.apis.iter().enumerate() {
        let at = format!("/apis/{index}");
        let mut names = HashSet::new();
        for (position, slot) in api.slots.iter().enumerate() {
            let at = format!("{at}/slots/{position}");
            if !names.insert(slot.name.as_str()) || matches!(slot.name.as_str(), "Header" | "Context") {
                findings.push(Finding::error(
                    Rule::AbiDuplicateName,
                    format!("{at}/name"),
                    format!("`{}` names two fields of `{}`", slot.name, api.name),
                ));
            }
            check_signature(
                &slot.name,
                slot.returns.as_deref(),
                &slot.params,
                &at,
                &["Context"],
                findings,
            );
        }
    }
}

/// `from` or the values, never both nor neither; a known source of the right kind.
fn check_sources(declaration: &PluginAbiDeclaration, findings: &mut Vec<Finding>) {
    let enums = declaration.enums.iter().enumerate().map(|(index, item)| {
        (
            format!("/enums/{index}"),
            &item.name,
            &item.from,
            item.values.is_empty(),
            false,
        )
    });
    let flags = declaration.flags.iter().enumerate().map(|(index, item)| {
        (
            format!("/flags/{index}"),
            &item.name,
            &item.from,
            item.bits.is_empty(),
            true,
        )
    });
    for (at, name, from, empty, bits) in enums.chain(flags) {
        let what = if bits { "bits" } else { "values" };
        match (from, empty) {
            (None, true) => findings.push(Finding::error(
                Rule::AbiSource,
                format!("{at}/name"),
                format!("`{name}` declares no {what}: list them or name their source with `from`"),
            )),
            (Some(_), false) => findings.push(Finding::error(
                Rule::AbiSource,
                format!("{at}/from"),
                format!("`{name}` has both `from` and {what}: its {what} come from one place"),
            )),
            (Some(source), true) => match AbiSource::parse(source) {
                None => findings.push(Finding::error(
                    Rule::AbiSource,
                    format!("{at}/from"),
                    format!("`{source}` is not a source of values: use {SOURCES}"),
                )),
                Some(parsed) if parsed.gives_bits() != bits => findings.push(Finding::error(
                    Rule::AbiSource,
                    format!("{at}/from"),
                    format!(
                        "`{source}` gives {}, not the {what} of `{name}`",
                        if parsed.gives_bits() { "bits" } else { "values" }
                    ),
                )),
                Some(_) => {}
            },
            (None, false) => {}
        }
    }
}

fn check_struct(item: &AbiStruct, at: &str, findings: &mut Vec<Finding>) {
    let mut names = HashSet::new();
    for (position, field) in item.fields.iter().enumerate() {
        let at = format!("{at}/fields/{position}");
        if !names.insert(field.name.as_str()) {
            findings.push(Finding::error(
                Rule::AbiDuplicateName,
                format!("{at}/name"),
                format!("`{}` names two fields of `{}`", field.name, item.name),
            ));
        }
        match AbiType::parse(&field.ty) {
            Ok(AbiType::Void) => findings.push(Finding::error(
                Rule::AbiType,
                format!("{at}/type"),
                format!("field `{}` cannot be `void`", field.name),
            )),
            Ok(AbiType::Array { length: 0, .. }) => findings.push(Finding::error(
                Rule::AbiType,
                format!("{at}/type"),
                format!("field `{}` is an array of no element", field.name),
            )),
            Ok(_) => {}
            Err(error) => findings.push(Finding::error(Rule::AbiType, format!("{at}/type"), error.to_string())),
        }
    }
    if item.primitive {
        return;
    }
    let starts_with_header = item
        .fields
        .first()
        .is_some_and(|field| field.name == "Header" && field.ty.trim() == HEADER_STRUCT);
    if !starts_with_header {
        findings.push(Finding::error(
            Rule::AbiHeader,
            format!("{at}/fields/0"),
            format!(
                "`{}` must start with `Header: {HEADER_STRUCT}` (or be declared `primitive`)",
                item.name
            ),
        ));
    }
}

/// A return type and parameters: well formed, parameter names unique (and not `reserved`, the implicit ones).
fn check_signature(
    name: &str,
    returns: Option<&str>,
    params: &[String],
    at: &str,
    reserved: &[&str],
    findings: &mut Vec<Finding>,
) {
    if let Some(returns) = returns {
        match AbiType::parse(returns) {
            Ok(AbiType::Array { .. }) => findings.push(Finding::error(
                Rule::AbiType,
                format!("{at}/returns"),
                format!("`{name}` cannot return an array"),
            )),
            Ok(_) => {}
            Err(error) => findings.push(Finding::error(
                Rule::AbiType,
                format!("{at}/returns"),
                error.to_string(),
            )),
        }
    }
    let mut names: HashSet<String> = reserved.iter().map(|name| name.to_string()).collect();
    for (index, param) in params.iter().enumerate() {
        match AbiParam::parse(param) {
            Ok(parsed) => {
                if !names.insert(parsed.name.clone()) {
                    findings.push(Finding::error(
                        Rule::AbiDuplicateName,
                        format!("{at}/params/{index}"),
                        format!("`{}` names two parameters of `{name}`", parsed.name),
                    ));
                }
            }
            Err(error) => findings.push(Finding::error(
                Rule::AbiType,
                format!("{at}/params/{index}"),
                error.to_string(),
            )),
        }
    }
}

/// Every type a file refers to, with where: (pointer, type). Strings that do not parse are left out (reported
/// by [`typed_findings`]).
fn references(declaration: &PluginAbiDeclaration) -> Vec<(String, AbiType)> {
    let mut found = Vec::new();
    let mut push = |pointer: String, text: &str| {
        if let Ok(ty) = AbiType::parse(text) {
            found.push((pointer, ty));
        }
    };
    for (index, item) in declaration.typedefs.iter().enumerate() {
        push(format!("/typedefs/{index}/type"), &item.ty);
    }
    for (index, item) in declaration.structs.iter().enumerate() {
        for (position, field) in item.fields.iter().enumerate() {
            push(format!("/structs/{index}/fields/{position}/type"), &field.ty);
        }
    }
    let signatures = declaration
        .callbacks
        .iter()
        .enumerate()
        .map(|(index, item)| (format!("/callbacks/{index}"), &item.returns, &item.params))
        .chain(declaration.apis.iter().enumerate().flat_map(|(index, api)| {
            api.slots
                .iter()
                .enumerate()
                .map(move |(position, slot)| (format!("/apis/{index}/slots/{position}"), &slot.returns, &slot.params))
        }));
    for (at, returns, params) in signatures {
        match returns {
            Some(returns) => push(format!("{at}/returns"), returns),
            None => push(format!("{at}/name"), "Status"),
        }
        for (position, param) in params.iter().enumerate() {
            if let Some((_, ty)) = param.split_once(':') {
                push(format!("{at}/params/{position}"), ty);
            }
        }
    }
    found
}

/// The problems of the typed parts of all files together, each with the index of its file: names that do
/// not resolve, API tables used by value, interfaces an API table names that no file declares, structures
/// that contain themselves or that a compiler would pad.
pub(crate) fn typed_registry_findings(declarations: &[&PluginAbiDeclaration], findings: &mut Vec<(usize, Finding)>) {
    let table = AbiTypeTable::new(declarations);
    let interfaces: HashSet<&str> = declarations
        .iter()
        .flat_map(|declaration| declaration.interfaces.iter().map(|interface| interface.name.as_str()))
        .collect();
    for (file, declaration) in declarations.iter().enumerate() {
        let mut unresolved = false;
        for (pointer, ty) in references(declaration) {
            let Some(name) = ty.named() else { continue };
            match table.kinds.get(name) {
                None => {
                    unresolved = true;
                    findings.push((
                        file,
                        Finding::error(
                            Rule::AbiUnknownName,
                            pointer,
                            format!("type `{name}` is not declared in any ABI file"),
                        ),
                    ));
                }
                Some((AbiTypeKind::Api, _)) if !matches!(ty, AbiType::Pointer { .. }) => findings.push((
                    file,
                    Finding::error(
                        Rule::AbiType,
                        pointer,
                        format!("API table `{name}` is only passed through a pointer"),
                    ),
                )),
                Some(_) => {}
            }
        }
        for (index, handle) in declaration.handles.iter().enumerate() {
            if !table.structs.contains_key(HANDLE_STRUCT) {
                unresolved = true;
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiUnknownName,
                        format!("/handles/{index}/name"),
                        format!(
                            "handle `{}` is a `{HANDLE_STRUCT}`, which no ABI file declares",
                            handle.name
                        ),
                    ),
                ));
            }
        }
        for (index, api) in declaration.apis.iter().enumerate() {
            let Some(interface) = &api.interface else { continue };
            if !interfaces.contains(interface.as_str()) {
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiUnknownName,
                        format!("/apis/{index}/interface"),
                        format!("interface `{interface}` is not declared in any ABI file"),
                    ),
                ));
            }
        }
        if !unresolved {
            check_layouts(&table, declaration, file, findings);
        }
    }
}

/// Every structure's fields sit where their alignment puts them with nothing between them, and the structure
/// ends where its last field does: padding is declared (`Reserved`), never left to the compiler.
fn check_layouts(
    table: &AbiTypeTable<'_>,
    declaration: &PluginAbiDeclaration,
    file: usize,
    findings: &mut Vec<(usize, Finding)>,
) {
    for (index, item) in declaration.structs.iter().enumerate() {
        let at = format!("/structs/{index}");
        let Some(layout) = table.struct_layout(item) else {
            findings.push((
                file,
                Finding::error(
                    Rule::AbiLayout,
                    format!("{at}/name"),
                    format!(
                        "`{}` has no size: it contains itself, or an API table or `void` by value",
                        item.name
                    ),
                ),
            ));
            continue;
        };
        for (position, (field, placed)) in item.fields.iter().zip(&layout.fields).enumerate() {
            if placed.padding_before != 0 {
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiLayout,
                        format!("{at}/fields/{position}/type"),
                        format!(
                            "`{}.{}` would follow {} byte(s) of padding at offset {}: declare a reserved field before it",
                            item.name,
                            field.name,
                            placed.padding_before,
                            placed.offset - placed.padding_before
                        ),
                    ),
                ));
            }
        }
        if layout.tail_padding != 0 {
            findings.push((
                file,
                Finding::error(
                    Rule::AbiLayout,
                    format!("{at}/name"),
                    format!(
                        "`{}` would end with {} byte(s) of padding (size {}, alignment {}): declare a reserved field at its end",
                        item.name, layout.tail_padding, layout.size, layout.align
                    ),
                ),
            ));
        }
    }
}

/// Fills the values or bits of every enumeration and flag set declared with `from`, from the phase schema
/// (`None`: only the sources the schema format itself fixes, policy flags and observer points). Returns the
/// problems, each with the index of its declaration: a state machine the phase schema does not declare.
pub(crate) fn resolve_sources(
    declarations: &mut [&mut PluginAbiDeclaration],
    phase_schema: Option<&crate::phase::PhaseSchemaDocument>,
) -> Vec<(usize, Finding)> {
    use crate::abi::{AbiEnumValue, AbiFlagBit};
    use crate::phase::{ObserverPoint, PolicyFlag};
    let mut findings = Vec::new();
    for (file, declaration) in declarations.iter_mut().enumerate() {
        for item in &mut declaration.flags {
            let source = item.from.as_deref().and_then(AbiSource::parse);
            let named: Vec<(u32, &str)> = match source {
                Some(AbiSource::PolicyFlags) => PolicyFlag::ALL
                    .iter()
                    .map(|flag| (flag.bit(), flag.schema_name()))
                    .collect(),
                Some(AbiSource::ObserverPoints) => ObserverPoint::ALL
                    .iter()
                    .map(|point| (point.bit(), point.schema_name()))
                    .collect(),
                _ => continue,
            };
            item.bits = named
                .into_iter()
                .map(|(mask, name)| AbiFlagBit {
                    name: name.to_string(),
                    bit: mask.trailing_zeros(),
                    doc: format!("`{name}` of PhaseSchema.json."),
                })
                .collect();
        }
        let Some(schema) = phase_schema else { continue };
        for (index, item) in declaration.enums.iter_mut().enumerate() {
            let (domain, states) = match item.from.as_deref().and_then(AbiSource::parse) {
                Some(AbiSource::States(domain)) => (domain, true),
                Some(AbiSource::MutationClasses(domain)) => (domain, false),
                _ => continue,
            };
            let machine = schema
                .state_machines
                .as_ref()
                .and_then(|machines| machines.values().find(|machine| machine.domain == domain));
            let Some(machine) = machine else {
                findings.push((
                    file,
                    Finding::error(
                        Rule::AbiSource,
                        format!("/enums/{index}/from"),
                        format!("the phase schema declares no state machine for the `{domain}` domain"),
                    ),
                ));
                continue;
            };
            item.values = if states {
                machine
                    .states
                    .iter()
                    .enumerate()
                    .map(|(value, state)| {
                        let reached = machine
                            .transitions
                            .iter()
                            .find(|transition| &transition.to == state)
                            .map_or_else(
                                || "the initial state".to_string(),
                                |transition| format!("reached by `{}`", transition.phase),
                            );
                        AbiEnumValue {
                            name: state.clone(),
                            value: value as u64,
                            doc: format!("State `{state}` of the `{domain}` state machine: {reached}."),
                        }
                    })
                    .collect()
            } else {
                machine
                    .mutation_classes
                    .iter()
                    .enumerate()
                    .map(|(value, class)| AbiEnumValue {
                        name: class.name.to_ascii_uppercase(),
                        value: value as u64,
                        doc: format!(
                            "Mutation class `{}`: invalidates `{}` and every later state ({}).",
                            class.name,
                            class.earliest_invalidated,
                            class.operations.join(", ")
                        ),
                    })
                    .collect()
            };
        }
    }
    findings
}
