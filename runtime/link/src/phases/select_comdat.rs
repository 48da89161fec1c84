//! `neverc.link.select_comdat`: of the section groups that share a name, the first in link order is kept;
//! the sections of the others are discarded (their symbols resolve to the kept group's definitions).

use rustc_hash::FxHashMap;

use crate::context::{LinkContext, PhaseError};
use crate::graph::ComdatId;

pub(crate) fn run(context: &mut LinkContext, _phase: u16) -> Result<(), PhaseError> {
    let graph = &mut context.graph;
    let mut kept: FxHashMap<&str, ComdatId> = FxHashMap::default();
    let mut selections = Vec::with_capacity(graph.comdats.len());
    for (index, comdat) in graph.comdats.iter().enumerate() {
        let id = ComdatId(index as u32);
        selections.push(*kept.entry(comdat.name.as_str()).or_insert(id));
    }
    for (comdat, selected) in graph.comdats.iter_mut().zip(selections) {
        comdat.selected = Some(selected);
    }
    Ok(())
}
