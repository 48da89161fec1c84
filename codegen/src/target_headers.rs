//! One C header per target (`include/neverc/Targets/<name>.h`): what a C plugin needs to plan for the target
//! without spelling a number — its identity, every register spelling with its plan number, and the example
//! plugin's conventions — from the same lowered record the runtime's tables come from.

use std::path::Path;

use neverc_records::{RegisterClassKind, TargetRecordIn};
use neverc_schema::{Bump, Declarations, lower_target};
use serde_json::{Value, json};

use crate::{CodegenError, GeneratedFile, check_module_name, display_source, registry};

const TEMPLATE: &str = include_str!("../templates/target_header.h.hbs");

/// Where the target headers are committed, relative to the repository.
pub const TARGET_HEADER_DIR: &str = "include/neverc/Targets";

/// `text` as the inside of a C string literal; a declaration with a character that would need escaping is
/// refused rather than escaped, so that the header reads as the declaration does.
fn c_text(text: &str, what: &str) -> Result<String, CodegenError> {
    if text.chars().all(|c| c.is_ascii_graphic() || c == ' ') && !text.contains(['"', '\\']) {
        Ok(text.to_string())
    } else {
        Err(CodegenError::Lowering(format!(
            "{what} `{text}` cannot be written as a plain C string"
        )))
    }
}

fn header_data(model: &TargetRecordIn<'_>, stem: &str, source: &str) -> Result<Value, CodegenError> {
    let prefix = format!("NEVERC_TARGET_{}", stem.to_ascii_uppercase());
    let mut names = Vec::new();
    for (index, entry) in model.names.iter().enumerate() {
        let register = &model.registers[entry.register];
        let floating = model
            .classes
            .get(register.class)
            .is_some_and(|class| class.kind != RegisterClassKind::General);
        names.push(json!({
            "name": c_text(entry.name, "a register name")?,
            "plan_number": entry.plan_number,
            "register_number": register.plan_number,
            "register_width": register.width,
            "floating": u8::from(floating),
            "reserved": u8::from(model.reserved.contains(&entry.register)),
            // The macro's lines but the last end in a backslash (which a template cannot write before `{{`).
            "continuation": if index + 1 < model.names.len() { " \\" } else { "" },
        }));
    }
    let registers: Vec<Value> = model
        .registers
        .iter()
        .map(|register| json!({ "name": register.name, "plan_number": register.plan_number }))
        .collect();
    let layouts = model
        .shuffle_layouts
        .iter()
        .map(|layout| c_text(layout, "a shuffle layout"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "source": source,
        "guard": format!("{prefix}_H"),
        "prefix": prefix,
        "name": c_text(model.name, "the target name")?,
        "triple": c_text(model.triple, "the triple")?,
        "target_id": { "high": model.target_id.high, "low": model.target_id.low },
        "convention_id": { "high": model.convention_id.high, "low": model.convention_id.low },
        "schema_digest": c_text(model.schema_digest, "the schema digest")?,
        "pointer_width": model.pointer_width,
        "stack_alignment": model.stack_alignment,
        "default_spec": c_text(model.default_spec, "the default spec")?,
        "shuffle_count": layouts.len(),
        "shuffle_layouts": layouts,
        "registers": registers,
        "names": names,
    }))
}

/// One header per target of `declarations`, named `<stem>.h` (to be written under [`TARGET_HEADER_DIR`]).
pub fn target_headers(declarations: &Declarations, root: &Path) -> Result<Vec<GeneratedFile>, CodegenError> {
    let arena = Bump::new();
    let mut files = Vec::new();
    for target in &declarations.targets {
        check_module_name(&target.stem)?;
        let model = lower_target(&target.declaration, &arena).map_err(CodegenError::Lowering)?;
        let data = header_data(&model, &target.stem, &display_source(root, &target.path))?;
        let contents = registry()
            .render_template(TEMPLATE, &data)
            .map_err(|error| CodegenError::Template {
                template: "target_header.h.hbs",
                message: error.to_string(),
            })?;
        files.push(GeneratedFile {
            name: format!("{}.h", target.stem),
            contents,
        });
    }
    Ok(files)
}
