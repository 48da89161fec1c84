//! The typed part of the plugin ABI (typedefs, handles, structures, callbacks, API tables) as C and Rust: the
//! C headers `include/neverc/Plugin/*.h` (template `plugin_header.h.hbs`), the Rust `#[repr(C)]` mirror
//! `neverc_tables::plugin_abi::ffi` (template `plugin_abi_ffi.rs.hbs`, included in `plugin_abi.rs`) and the C
//! program that prints the layout a C compiler gives every structure (template `plugin_abi_layout.c.hbs`).

use std::collections::{BTreeSet, HashMap};

use neverc_schema::abi_types::{AbiParam, AbiPrimitive, AbiType, AbiTypeKind, AbiTypeTable, handle_type_name};
use neverc_schema::{AbiStruct, LoadedAbiPart, PluginAbiDeclaration};
use serde_json::{Value, json};

use crate::plugin_abi::{interface_data, rust_type_name};
use crate::{CodegenError, RUST_KEYWORDS, registry};

const HEADER_TEMPLATE: &str = include_str!("../templates/plugin_header.h.hbs");
const FFI_TEMPLATE: &str = include_str!("../templates/plugin_abi_ffi.rs.hbs");
const LAYOUT_TEMPLATE: &str = include_str!("../templates/plugin_abi_layout.c.hbs");

/// Where the generated headers live, relative to the repository root.
pub const HEADER_DIR: &str = "include/neverc/Plugin";

/// The C name of a declared type.
fn c_name(name: &str) -> String {
    format!("Neverc{name}")
}

/// `StructSize` → `struct_size`, `LLVMCallingConvention` → `llvm_calling_convention`, `Type` → `r#type`.
pub(crate) fn snake_name(name: &str) -> String {
    let mut out = String::new();
    for (index, c) in rust_type_name(name).chars().enumerate() {
        if c.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    if RUST_KEYWORDS.contains(&out.as_str()) {
        format!("r#{out}")
    } else {
        out
    }
}

fn parse(text: &str) -> Result<AbiType, CodegenError> {
    AbiType::parse(text).map_err(|error| CodegenError::Lowering(error.to_string()))
}

fn param(text: &str) -> Result<AbiParam, CodegenError> {
    AbiParam::parse(text).map_err(|error| CodegenError::Lowering(error.to_string()))
}

/// Spells declared types in C and Rust, knowing what each name is.
struct Spelling<'a> {
    table: AbiTypeTable<'a>,
}

impl Spelling<'_> {
    fn kind(&self, name: &str) -> Result<&AbiTypeKind, CodegenError> {
        self.table
            .kinds
            .get(name)
            .map(|(kind, _)| kind)
            .ok_or_else(|| CodegenError::Lowering(format!("type `{name}` is not declared")))
    }

    /// The C declaration of `declarator` with type `ty` (`const NevercLinkRequest *Request`, `uint8_t X[32]`).
    fn c_declaration(&self, ty: &AbiType, declarator: &str) -> Result<String, CodegenError> {
        Ok(match ty {
            AbiType::Void => format!("void {declarator}"),
            AbiType::Primitive(primitive) => format!("{} {declarator}", primitive.c()),
            AbiType::Named(name) => {
                self.kind(name)?;
                format!("{} {declarator}", c_name(name))
            }
            AbiType::Pointer { constant, target } => {
                let qualifier = if *constant { "const " } else { "" };
                let inner = self.c_declaration(target, &format!("*{declarator}"))?;
                format!("{qualifier}{inner}")
            }
            AbiType::Array { element, length } => self.c_declaration(element, &format!("{declarator}[{length}]"))?,
        })
    }

    /// The Rust type of `ty` in the `ffi` module: enumerations and flag sets are their raw integers.
    fn rust(&self, ty: &AbiType) -> Result<String, CodegenError> {
        Ok(match ty {
            AbiType::Void => "()".to_string(),
            AbiType::Primitive(primitive) => primitive.rust().to_string(),
            AbiType::Named(name) => match self.kind(name)? {
                AbiTypeKind::Integer(primitive) => primitive.rust().to_string(),
                AbiTypeKind::Typedef(_)
                | AbiTypeKind::Handle
                | AbiTypeKind::Struct
                | AbiTypeKind::Callback
                | AbiTypeKind::Api => rust_type_name(name),
            },
            AbiType::Pointer { constant, target } => {
                let target = match target.as_ref() {
                    AbiType::Void => "::core::ffi::c_void".to_string(),
                    other => self.rust(other)?,
                };
                format!("*{} {target}", if *constant { "const" } else { "mut" })
            }
            AbiType::Array { element, length } => format!("[{}; {length}]", self.rust(element)?),
        })
    }

    /// Whether a value of `ty` is plain data (integers all the way down): it can derive `Default`, `Eq`, `Hash`.
    fn plain(&self, ty: &AbiType) -> bool {
        match ty {
            AbiType::Primitive(_) => true,
            AbiType::Array { element, .. } => self.plain(element),
            AbiType::Void | AbiType::Pointer { .. } => false,
            AbiType::Named(name) => match self.table.kinds.get(name) {
                Some((AbiTypeKind::Integer(_) | AbiTypeKind::Handle, _)) => true,
                Some((AbiTypeKind::Typedef(target), _)) => self.plain(target),
                Some((AbiTypeKind::Struct, _)) => self.table.structs.get(name.as_str()).is_some_and(|item| {
                    item.fields
                        .iter()
                        .all(|field| AbiType::parse(&field.ty).is_ok_and(|ty| self.plain(&ty)))
                }),
                _ => false,
            },
        }
    }

    /// The C parameter list of a function taking `params` (with `Context` first for an API slot).
    fn c_params(&self, params: &[AbiParam], context: bool) -> Result<String, CodegenError> {
        let mut list = Vec::new();
        if context {
            list.push("void *Context".to_string());
        }
        for param in params {
            list.push(self.c_declaration(&param.ty, &param.name)?);
        }
        Ok(if list.is_empty() {
            "void".to_string()
        } else {
            list.join(", ")
        })
    }

    /// A Rust function of the signature that ignores its arguments and answers CAPABILITY_UNAVAILABLE (or
    /// returns nothing, for a `void` function): what an API table's slot holds until the host serves it.
    fn rust_unavailable(
        &self,
        name: &str,
        returns: &AbiType,
        params: &[AbiParam],
        context: bool,
    ) -> Result<String, CodegenError> {
        let mut list = Vec::new();
        if context {
            list.push("_context: *mut ::core::ffi::c_void".to_string());
        }
        for param in params {
            list.push(format!("_{}: {}", snake_name(&param.name), self.rust(&param.ty)?));
        }
        Ok(match returns {
            AbiType::Void => format!("pub(super) extern \"C\" fn {name}({}) {{}}", list.join(", ")),
            other => format!(
                "pub(super) extern \"C\" fn {name}({}) -> {} {{ super::unavailable() }}",
                list.join(", "),
                self.rust(other)?
            ),
        })
    }

    /// The Rust function pointer type of a signature.
    fn rust_fn(&self, returns: &AbiType, params: &[AbiParam], context: bool) -> Result<String, CodegenError> {
        let mut list = Vec::new();
        if context {
            list.push("context: *mut ::core::ffi::c_void".to_string());
        }
        for param in params {
            list.push(format!("{}: {}", snake_name(&param.name), self.rust(&param.ty)?));
        }
        let result = match returns {
            AbiType::Void => String::new(),
            other => format!(" -> {}", self.rust(other)?),
        };
        Ok(format!("Option<unsafe extern \"C\" fn({}){result}>", list.join(", ")))
    }
}

fn returns(text: Option<&str>) -> Result<AbiType, CodegenError> {
    parse(text.unwrap_or("Status"))
}

fn params(texts: &[String]) -> Result<Vec<AbiParam>, CodegenError> {
    texts.iter().map(|text| param(text)).collect()
}

/// A C comment of documentation text (no `*/` inside).
fn c_doc(text: &str) -> String {
    text.replace("*/", "* /")
}

/// C literal of a constant of a `width`-bit type.
fn c_literal(value: u64, width: u32, signed: bool) -> String {
    match (width, signed) {
        (64, false) => format!("UINT64_C({value})"),
        (64, true) => format!("INT64_C({value})"),
        (_, true) => format!("INT32_C({value})"),
        (8 | 16, false) => format!("{value}u"),
        _ => format!("UINT32_C({value})"),
    }
}

/// The structures of a file ordered so that every structure follows those it holds by value from the same
/// file (other files' types are complete through their headers, included first).
fn by_value_order(declaration: &PluginAbiDeclaration) -> Result<Vec<&AbiStruct>, CodegenError> {
    let local: HashMap<&str, &AbiStruct> = declaration
        .structs
        .iter()
        .map(|item| (item.name.as_str(), item))
        .collect();
    let typedefs: HashMap<&str, &str> = declaration
        .typedefs
        .iter()
        .map(|item| (item.name.as_str(), item.ty.as_str()))
        .collect();
    let mut order = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    fn visit<'a>(
        item: &'a AbiStruct,
        local: &HashMap<&str, &'a AbiStruct>,
        typedefs: &HashMap<&str, &str>,
        done: &mut BTreeSet<&'a str>,
        open: &mut Vec<&'a str>,
        order: &mut Vec<&'a AbiStruct>,
    ) -> Result<(), CodegenError> {
        if done.contains(item.name.as_str()) {
            return Ok(());
        }
        if open.contains(&item.name.as_str()) {
            return Err(CodegenError::Lowering(format!("`{}` contains itself", item.name)));
        }
        open.push(&item.name);
        for field in &item.fields {
            let mut ty = parse(&field.ty)?;
            while let AbiType::Array { element, .. } = ty {
                ty = *element;
            }
            let AbiType::Named(mut name) = ty else { continue };
            // A typedef of a structure holds it by value too.
            while let Some(target) = typedefs.get(name.as_str()) {
                match parse(target)? {
                    AbiType::Named(next) => name = next,
                    _ => break,
                }
            }
            if let Some(dependency) = local.get(name.as_str()) {
                visit(dependency, local, typedefs, done, open, order)?;
            }
        }
        open.pop();
        done.insert(&item.name);
        order.push(item);
        Ok(())
    }
    for item in &declaration.structs {
        visit(item, &local, &typedefs, &mut done, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

/// The other parts a part's header includes: those declaring a type it names.
fn includes(
    spelling: &Spelling<'_>,
    parts: &[LoadedAbiPart],
    index: usize,
    declaration: &PluginAbiDeclaration,
) -> Result<Vec<String>, CodegenError> {
    let mut texts: Vec<&str> = Vec::new();
    texts.extend(declaration.typedefs.iter().map(|item| item.ty.as_str()));
    for item in &declaration.structs {
        texts.extend(item.fields.iter().map(|field| field.ty.as_str()));
    }
    let signatures = declaration
        .callbacks
        .iter()
        .map(|item| (&item.returns, &item.params))
        .chain(
            declaration
                .apis
                .iter()
                .flat_map(|api| api.slots.iter().map(|slot| (&slot.returns, &slot.params))),
        );
    let mut owned = Vec::new();
    for (result, list) in signatures {
        owned.push(result.clone().unwrap_or_else(|| "Status".to_string()));
        for text in list {
            owned.push(param(text)?.ty.named().unwrap_or("u8").to_string());
        }
    }
    texts.extend(owned.iter().map(String::as_str));
    let mut files = BTreeSet::new();
    if !declaration.handles.is_empty() {
        files.insert(spelling.table.kinds.get("Handle").map(|(_, file)| *file));
    }
    if !declaration.structs.is_empty() || !declaration.apis.is_empty() {
        files.insert(spelling.table.kinds.get("ABITableHeader").map(|(_, file)| *file));
    }
    for text in texts {
        let ty = parse(text)?;
        if let Some(name) = ty.named() {
            files.insert(spelling.table.kinds.get(name).map(|(_, file)| *file));
        }
    }
    Ok(files
        .into_iter()
        .flatten()
        .filter(|file| *file != index)
        .filter_map(|file| parts.get(file).map(|part| part.declaration.header.clone()))
        .collect())
}

/// The template data of one part's header and its mirror types.
fn part_types(spelling: &Spelling<'_>, parts: &[LoadedAbiPart], index: usize) -> Result<Value, CodegenError> {
    let part = &parts[index];
    let declaration = &part.declaration;
    let guard = format!(
        "NEVERC_PLUGIN_{}_H",
        declaration.header.trim_end_matches(".h").to_ascii_uppercase()
    );
    let mut enums = Vec::new();
    for item in &declaration.enums {
        let primitive = AbiPrimitive::of_width(item.width, item.signed)
            .ok_or_else(|| CodegenError::Lowering(format!("`{}` has no integer type", item.name)))?;
        enums.push(json!({
            "c_name": c_name(&item.name),
            "c_type": primitive.c(),
            "doc": c_doc(&item.doc),
            "aliases": item.aliases.iter().map(|alias| c_name(alias)).collect::<Vec<_>>(),
            "constants": item.values.iter().map(|value| json!({
                "name": format!("{}{}", item.c_prefix, value.name),
                "value": c_literal(value.value, item.width, item.signed),
                "doc": c_doc(&value.doc),
            })).collect::<Vec<_>>(),
        }));
    }
    for item in &declaration.flags {
        let primitive = AbiPrimitive::of_width(item.width, false)
            .ok_or_else(|| CodegenError::Lowering(format!("`{}` has no integer type", item.name)))?;
        let mut constants: Vec<Value> = item
            .none
            .iter()
            .map(|none| {
                json!({"name": format!("{}{none}", item.c_prefix), "value": c_literal(0, item.width, false), "doc": "No flag."})
            })
            .collect();
        constants.extend(item.bits.iter().map(|bit| {
            json!({
                "name": format!("{}{}", item.c_prefix, bit.name),
                "value": c_literal(1u64 << bit.bit.min(63), item.width, false),
                "doc": c_doc(&bit.doc),
            })
        }));
        enums.push(json!({
            "c_name": c_name(&item.name),
            "c_type": primitive.c(),
            "doc": c_doc(&item.doc),
            "aliases": Vec::<String>::new(),
            "constants": constants,
        }));
    }
    let mut typedefs = Vec::new();
    let mut rust_typedefs = Vec::new();
    for item in &declaration.typedefs {
        let ty = parse(&item.ty)?;
        let width = match &ty {
            AbiType::Primitive(primitive) => (primitive.size() * 8) as u32,
            _ => 64,
        };
        typedefs.push(json!({
            "declaration": spelling.c_declaration(&ty, &c_name(&item.name))?,
            "doc": c_doc(&item.doc),
            "constants": item.constants.iter().map(|constant| json!({
                "name": constant.name,
                "value": format!("(({}){})", c_name(&item.name), c_literal(constant.value, width, false)),
                "doc": c_doc(&constant.doc),
            })).collect::<Vec<_>>(),
        }));
        rust_typedefs.push(json!({
            "name": rust_type_name(&item.name),
            "c_name": c_name(&item.name),
            "rust": spelling.rust(&ty)?,
            "doc": format!(" {} (`{}`).", item.doc, c_name(&item.name)),
            "constants": item.constants.iter().map(|constant| json!({
                "name": constant.name,
                "value": constant.value,
                "doc": format!(" {}", constant.doc),
            })).collect::<Vec<_>>(),
        }));
    }
    let handles: Vec<Value> = declaration
        .handles
        .iter()
        .map(|item| {
            let name = handle_type_name(&item.name);
            json!({
                "c_name": c_name(&name),
                "rust_name": rust_type_name(&name),
                "doc": c_doc(&item.doc),
                "rust_doc": format!(" {} (`{}`).", item.doc, c_name(&name)),
            })
        })
        .collect();
    let mut callbacks = Vec::new();
    for item in &declaration.callbacks {
        let result = returns(item.returns.as_deref())?;
        let list = params(&item.params)?;
        callbacks.push(json!({
            "declaration": spelling.c_declaration(
                &result,
                &format!("(NEVERC_CALL *{})({})", c_name(&item.name), spelling.c_params(&list, false)?),
            )?,
            "doc": c_doc(&item.doc),
            "rust_name": rust_type_name(&item.name),
            "rust": spelling.rust_fn(&result, &list, false)?,
            "rust_doc": format!(" {} (`{}`).", item.doc, c_name(&item.name)),
        }));
    }
    let mut structs = Vec::new();
    for item in by_value_order(declaration)? {
        let mut fields = Vec::new();
        let mut plain = true;
        for field in &item.fields {
            let ty = parse(&field.ty)?;
            plain &= spelling.plain(&ty);
            fields.push(json!({
                "name": field.name,
                "declaration": spelling.c_declaration(&ty, &field.name)?,
                "doc": c_doc(&field.doc),
                "rust_name": snake_name(&field.name),
                "rust": spelling.rust(&ty)?,
                "rust_doc": format!(" {} (`{}`: `{}`).", field.doc, field.name, field.ty),
            }));
        }
        structs.push(json!({
            "c_name": c_name(&item.name),
            "rust_name": rust_type_name(&item.name),
            "doc": c_doc(&item.doc),
            "rust_doc": format!(" {} (`{}`).", item.doc, c_name(&item.name)),
            "plain": plain,
            "versioned": !item.primitive,
            "fields": fields,
        }));
    }
    let mut apis = Vec::new();
    for api in &declaration.apis {
        let mut slots = Vec::new();
        for slot in &api.slots {
            let result = returns(slot.returns.as_deref())?;
            let list = params(&slot.params)?;
            slots.push(json!({
                "name": slot.name,
                "declaration": spelling.c_declaration(
                    &result,
                    &format!("(NEVERC_CALL *{})({})", slot.name, spelling.c_params(&list, true)?),
                )?,
                "doc": c_doc(&slot.doc),
                "rust_name": snake_name(&slot.name),
                "rust": spelling.rust_fn(&result, &list, true)?,
                "unavailable": spelling.rust_unavailable(&snake_name(&slot.name), &result, &list, true)?,
                "rust_doc": format!(" {} (`{}`).", slot.doc, slot.name),
            }));
        }
        let interface = api
            .interface
            .as_ref()
            .map(|name| format!(" Asked for by NEVERC_INTERFACE_{name}_{{HIGH,LOW}}."))
            .unwrap_or_default();
        apis.push(json!({
            "c_name": c_name(&api.name),
            "rust_name": rust_type_name(&api.name),
            "stub_module": format!("{}_unavailable", snake_name(&api.name)),
            "doc": c_doc(&format!("{}{interface}", api.doc)),
            "rust_doc": format!(" {}{interface} (`{}`).", api.doc, c_name(&api.name)),
            "slot_count": slots.len(),
            "slots": slots,
        }));
    }
    let interfaces: Vec<Value> = declaration.interfaces.iter().map(interface_data).collect();
    Ok(json!({
        "header": declaration.header,
        "source": format!("abi/{}.toml", part.stem),
        "guard": guard,
        "doc": c_doc(&declaration.doc),
        "core": declaration.structs.iter().any(|item| item.name == "ABITableHeader"),
        "includes": includes(spelling, parts, index, declaration)?,
        "interfaces": interfaces,
        "enums": enums,
        "typedefs": typedefs,
        "rust_typedefs": rust_typedefs,
        "handles": handles,
        "callbacks": callbacks,
        "forward": declaration.structs.iter().map(|item| c_name(&item.name))
            .chain(declaration.apis.iter().map(|api| c_name(&api.name))).collect::<Vec<_>>(),
        "structs": structs,
        "apis": apis,
    }))
}

fn all_parts(parts: &[LoadedAbiPart]) -> Result<Vec<Value>, CodegenError> {
    let declarations: Vec<&PluginAbiDeclaration> = parts.iter().map(|part| &part.declaration).collect();
    let spelling = Spelling {
        table: AbiTypeTable::new(&declarations),
    };
    (0..parts.len())
        .map(|index| part_types(&spelling, parts, index))
        .collect()
}

fn render_text(name: &'static str, template: &str, data: &Value) -> Result<String, CodegenError> {
    registry()
        .render_template(template, data)
        .map_err(|error| CodegenError::Template {
            template: name,
            message: error.to_string(),
        })
}

/// One C header per ABI file, named by the file's `header` (to be written under [`HEADER_DIR`]).
pub fn plugin_headers(parts: &[LoadedAbiPart]) -> Result<Vec<crate::GeneratedFile>, CodegenError> {
    all_parts(parts)?
        .into_iter()
        .map(|data| {
            let name = data["header"].as_str().unwrap_or_default().to_string();
            Ok(crate::GeneratedFile {
                name,
                contents: render_text("plugin_header.h.hbs", HEADER_TEMPLATE, &data)?,
            })
        })
        .collect()
}

/// The Rust mirror types (the body of `plugin_abi::ffi`), as Rust source to include in `plugin_abi.rs`.
pub(crate) fn ffi_source(parts: &[LoadedAbiPart]) -> Result<String, CodegenError> {
    render_text(
        "plugin_abi_ffi.rs.hbs",
        FFI_TEMPLATE,
        &json!({ "parts": all_parts(parts)? }),
    )
}

/// A C program that includes every header and prints, per structure and API table, a line `struct NAME SIZE
/// ALIGN` and per field a line `field NAME.FIELD OFFSET SIZE`: what the C compiler made of the declarations.
pub fn plugin_abi_layout_program(parts: &[LoadedAbiPart]) -> Result<String, CodegenError> {
    render_text(
        "plugin_abi_layout.c.hbs",
        LAYOUT_TEMPLATE,
        &json!({ "parts": all_parts(parts)? }),
    )
}
