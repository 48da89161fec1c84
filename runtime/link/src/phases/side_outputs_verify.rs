//! `neverc.link.side_outputs_verify` (a sealed gate): side outputs (the `-Map` file, or the map `-M` prints)
//! are made from the final layout and checked against the image layout before anything is committed.

use crate::context::{LinkContext, PhaseError};
use crate::graph::{LinkGraph, Symbol, SymbolType};
use crate::image::{MapFile, MapInputPiece, MapOutputSection, MapSymbol, verify_map_file, write_map_file};
use crate::phases::LinkPhase;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    if context.options.map_file.is_none() && !context.options.print_map {
        return Ok(());
    }
    let layout = context.required_layout(LinkPhase::SideOutputsVerify)?;
    let Some(image_layout) = context.image_layout() else {
        return Err(PhaseError::new(
            LinkPhase::SideOutputsVerify,
            "needs the emitted image's layout, which neverc.link.emit_image has not produced",
        ));
    };
    let graph = &context.graph;
    let symbols_by_atom = map_symbols_by_atom(graph);
    let map = MapFile {
        output_sections: layout
            .sections
            .iter()
            .map(|section| MapOutputSection {
                name: section.name.clone(),
                address: section.address,
                size: section.size,
                alignment: section.alignment,
                inputs: section
                    .atoms
                    .iter()
                    .map(|atom| {
                        let entry = &graph.atoms[atom.index()];
                        let mut symbols: Vec<MapSymbol> = symbols_by_atom[atom.index()]
                            .iter()
                            .map(|symbol| MapSymbol {
                                name: symbol.name.clone(),
                                address: entry.address + symbol.value,
                                size: symbol.size,
                            })
                            .collect();
                        symbols.sort_by(|a, b| (a.address, &a.name).cmp(&(b.address, &b.name)));
                        MapInputPiece {
                            file: graph.input_name(entry.origin.input()).to_string(),
                            section: entry.name.clone(),
                            address: entry.address,
                            size: entry.size(),
                            alignment: entry.alignment,
                            symbols,
                        }
                    })
                    .collect(),
            })
            .collect(),
    };
    let text = write_map_file(&map);
    let findings = verify_map_file(&text, image_layout);
    if !findings.is_empty() {
        let lines: Vec<String> = findings.iter().map(|finding| finding.to_string()).collect();
        return Err(PhaseError::new(LinkPhase::SideOutputsVerify, lines.join("\n")));
    }
    context.set_map_text(text);
    Ok(())
}

/// The symbols a map file lists, grouped by the atom they are defined in (one pass over the symbols, not one
/// per atom): named, not local labels, not section symbols.
fn map_symbols_by_atom(graph: &LinkGraph) -> Vec<Vec<&Symbol>> {
    let mut by_atom = vec![Vec::new(); graph.atoms.len()];
    for symbol in &graph.symbols {
        let listed =
            !symbol.name.is_empty() && !symbol.name.starts_with(".L") && symbol.symbol_type != SymbolType::Section;
        if let Some(atom) = symbol.atom.filter(|_| listed)
            && let Some(slot) = by_atom.get_mut(atom.index())
        {
            slot.push(symbol);
        }
    }
    by_atom
}
