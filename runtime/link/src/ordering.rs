//! `--symbol-ordering-file` (as in lld): the functions and data named in a file, one symbol per line, are
//! placed first in their output sections, in the file's order. It is a plugin like any other: it intercepts
//! `neverc.link.layout` and, before the builtin runs, commits `order` layout constraints for the atoms that
//! define the named symbols.

use crate::LinkPhase;
use crate::graph::{EntityKind, SymbolType};
use crate::plugin::{LinkPlugin, Registrar};
use crate::status::Status;

pub struct SymbolOrderingPlugin {
    names: Vec<String>,
}

impl SymbolOrderingPlugin {
    /// The plugin for the text of an ordering file (blank lines and `#` comments are ignored).
    pub fn from_text(text: &str) -> SymbolOrderingPlugin {
        SymbolOrderingPlugin {
            names: text
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(str::to_string)
                .collect(),
        }
    }
}

impl LinkPlugin for SymbolOrderingPlugin {
    fn name(&self) -> &str {
        "symbol-ordering-file"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let names = self.names.clone();
        let mut done = false;
        registrar.intercept(
            LinkPhase::Layout.name(),
            Box::new(move |frame, next| {
                if !done {
                    done = true;
                    let mut placements = Vec::new();
                    for (position, name) in names.iter().enumerate() {
                        let defining = frame.graph().symbols.iter().find(|symbol| {
                            symbol.name == *name
                                && symbol.atom.is_some()
                                && matches!(symbol.symbol_type, SymbolType::Function | SymbolType::Object)
                        });
                        if let Some(atom) = defining.and_then(|symbol| symbol.atom) {
                            placements.push((frame.handle(EntityKind::Atom, atom.index())?, position as u64));
                        }
                    }
                    let mutation = frame.begin_mutation()?;
                    for (atom, position) in placements {
                        let index = frame.resolve(atom, EntityKind::Atom)?;
                        frame.create_constraint(mutation, "order", index as u64, position, false)?;
                    }
                    frame.commit_mutation(mutation)?;
                }
                next(frame)
            }),
        )
    }
}
