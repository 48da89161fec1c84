//! A bitcode input (a file or an archive member) into the graph: one `BitcodeModule` per module of the
//! file, holding the symbols `lto_resolve` resolves — those of the irsymtab that are global and not
//! format-specific, in irsymtab order, which is the order `llvm-lto2` and lld expect one resolution each in.

use neverc_tables::{TargetRecord, target_by_name};

use crate::graph::{
    Binding, BitcodeModule, BitcodeSymbol, Definition, InputId, LinkGraph, LinkTarget, Origin, SymbolType, Visibility,
};
use crate::read::ReadError;
use crate::read::bitcode::{self, BitcodeSymbolTable};

/// Reads the modules of bitcode input `input` into the graph.
pub(crate) fn read_bitcode(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<(), ReadError> {
    let entry = &graph.inputs[input.index()];
    let name = entry.logical_name.clone();
    let data = entry.data.clone();
    let start = entry.object_range.start;
    let member = entry.member;
    let bytes = data
        .get(entry.object_range.clone())
        .ok_or_else(|| ReadError::new(&name, "bitcode range outside the file"))?;
    let table = bitcode::read_symbol_table(bytes)
        .map_err(|error| ReadError::new(&name, format!("cannot read the bitcode's symbol table: {error}")))?;
    let triple = text(&name, table.target_triple)?;
    check_target(graph, &name, &triple)?;
    for (ordinal, module) in table.modules.iter().enumerate() {
        let mut symbols = Vec::new();
        for symbol in table.symbols.get(module.symbols.clone()).unwrap_or_default() {
            if symbol.is_linker_visible() {
                symbols.push(convert(&name, &table, symbol)?);
            }
        }
        let module_triple = match &module.triple {
            Some(bytes) => text(&name, bytes)?,
            None => triple.clone(),
        };
        check_target(graph, &name, &module_triple)?;
        let source_file = module
            .source_file_name
            .as_deref()
            .map_or_else(|| text(&name, table.source_file_name), |bytes| text(&name, bytes))?;
        graph.bitcode_modules.push(BitcodeModule {
            input,
            range: start + module.range.start..start + module.range.end,
            ordinal: ordinal as u32,
            source_file,
            triple: module_triple,
            symbols,
            generated: Vec::new(),
            origin: Origin::made(Some(input), member, ordinal as u32, Some(phase)),
        });
    }
    Ok(())
}

/// The names of the symbols a bitcode file defines for the linker (an archive member's, when its archive
/// has no index); none when it cannot be read.
pub(crate) fn bitcode_definitions(bytes: &[u8]) -> Vec<String> {
    let Ok(table) = bitcode::read_symbol_table(bytes) else {
        return Vec::new();
    };
    table
        .symbols
        .iter()
        .filter(|symbol| symbol.is_linker_visible() && !symbol.flags.is_undefined())
        .filter_map(|symbol| std::str::from_utf8(symbol.name).ok().map(str::to_string))
        .collect()
}

fn text(input: &str, bytes: &[u8]) -> Result<String, ReadError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| ReadError::new(input, "a name in the bitcode's symbol table is not UTF-8"))
}

/// The target a triple names by its architecture (`x86_64-pc-linux-gnu` → `x86_64`).
fn target_of_triple(triple: &str) -> Option<&'static TargetRecord> {
    let architecture = triple.split('-').next()?;
    target_by_name(architecture)
}

/// Refuses bitcode for another machine than the link's, as objects are refused; the first input, when it is
/// bitcode, chooses the target.
fn check_target(graph: &mut LinkGraph, input: &str, triple: &str) -> Result<(), ReadError> {
    let target = target_of_triple(triple);
    match (&graph.target, target) {
        (LinkTarget::AnyMachine, _) => Ok(()),
        (LinkTarget::FromFirstObject, Some(target)) => {
            graph.target = LinkTarget::Fixed {
                target,
                set_by: Some(input.to_string()),
            };
            Ok(())
        }
        (LinkTarget::Fixed { target: link, .. }, Some(target)) if link.name == target.name => Ok(()),
        (LinkTarget::Fixed { target: link, set_by }, _) => Err(ReadError::new(
            input,
            format!(
                "bitcode for `{triple}` cannot be linked for {}{}",
                link.name,
                set_by
                    .as_deref()
                    .map(|by| format!(" (chosen by {by})"))
                    .unwrap_or_default()
            ),
        )),
        (LinkTarget::FromFirstObject, None) => Err(ReadError::new(
            input,
            format!("bitcode for `{triple}`: no declared target has this architecture"),
        )),
    }
}

fn convert(
    input: &str,
    table: &BitcodeSymbolTable<'_>,
    symbol: &bitcode::BitcodeSymbol<'_>,
) -> Result<BitcodeSymbol, ReadError> {
    let flags = symbol.flags;
    let definition = if flags.is_undefined() {
        Definition::Undefined
    } else if flags.is_common() {
        Definition::Common
    } else {
        Definition::Defined
    };
    let comdat = match symbol.comdat {
        Some(index) => {
            let comdat = table
                .comdats
                .get(index as usize)
                .ok_or_else(|| ReadError::new(input, "a bitcode symbol names a COMDAT the file does not have"))?;
            Some(text(input, comdat.name)?)
        }
        None => None,
    };
    let section = symbol.section_name();
    Ok(BitcodeSymbol {
        name: text(input, symbol.name)?,
        binding: if flags.is_weak() {
            Binding::Weak
        } else {
            Binding::Global
        },
        visibility: match symbol.visibility {
            bitcode::Visibility::Default => Visibility::Default,
            bitcode::Visibility::Hidden => Visibility::Hidden,
            bitcode::Visibility::Protected => Visibility::Protected,
        },
        definition,
        symbol_type: if flags.is_tls() {
            SymbolType::Tls
        } else if flags.is_executable() {
            SymbolType::Function
        } else if definition == Definition::Undefined {
            SymbolType::None
        } else {
            SymbolType::Object
        },
        comdat,
        section: if section.is_empty() {
            None
        } else {
            Some(text(input, section)?)
        },
        used: flags.is_used(),
        may_omit: flags.may_omit(),
        common: symbol
            .uncommon
            .filter(|_| definition == Definition::Common)
            .map(|uncommon| (uncommon.common_size, u64::from(uncommon.common_align))),
    })
}
