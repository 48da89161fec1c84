//! The check GNU ld makes of a dynamically linked executable's shared libraries (`--no-allow-shlib-undefined`,
//! its default for executables): every global name a shared library of the link leaves undefined must be
//! defined by the executable, by a shared library of the link, or by a library one of them needs. The
//! libraries only needed (a `DT_NEEDED` entry of a library, not an input) are looked for as GNU ld looks for
//! them: in the `-rpath-link` directories, the `-rpath` ones, then the library search directories. A needed
//! library found nowhere is a warning, as with GNU ld; the names only it would define are then undefined.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use neverc_userfile::{LINK_INPUT_LIMIT, read_user_file_shared};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::graph::{Definition, LinkGraph, SymbolId};
use crate::read::shared_library::dynamic_facts;
use crate::symbol_name;

/// What the check found: the undefined references (a library and a name, in the order of the libraries and
/// of their symbol tables) and the warnings about needed libraries not found.
#[derive(Debug, Default)]
pub(crate) struct ShlibReferences {
    pub undefined: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

impl ShlibReferences {
    /// The undefined references as GNU ld reports them, as errors or as warnings.
    pub(crate) fn messages(&self, as_warnings: bool) -> Vec<String> {
        let warning = if as_warnings { "warning: " } else { "" };
        self.undefined
            .iter()
            .map(|(library, name)| {
                format!(
                    "{library}: {warning}undefined reference to `{}'",
                    symbol_name::display(name)
                )
            })
            .collect()
    }
}

/// Checks the references of the shared libraries of `graph` against the definitions of the link
/// (`table`, resolved) and of the libraries they need, looked for in `dirs` in order.
pub(crate) fn check(graph: &LinkGraph, table: &FxHashMap<String, SymbolId>, dirs: &[PathBuf]) -> ShlibReferences {
    let mut found = ShlibReferences::default();
    let mut defined: FxHashSet<String> = FxHashSet::default();
    let mut loaded: FxHashSet<String> = FxHashSet::default();
    let mut queue: VecDeque<(String, String)> = VecDeque::new();
    // The machine the needed libraries must be for: a library of another one in a directory is skipped, as
    // GNU ld skips it.
    let mut machine = None;
    for library in &graph.shared_libraries {
        let input = &graph.inputs[library.input.index()];
        machine = machine.or(input.machine);
        loaded.insert(library.install_name.clone());
        if let Some(file) = Path::new(&input.logical_name).file_name() {
            loaded.insert(file.to_string_lossy().into_owned());
        }
        defined.extend(library.hidden_definitions.iter().cloned());
    }
    for library in &graph.shared_libraries {
        let input = &graph.inputs[library.input.index()];
        for needed in &library.needed {
            queue.push_back((needed.clone(), input.logical_name.clone()));
        }
    }
    while let Some((needed, needed_by)) = queue.pop_front() {
        if !loaded.insert(needed.clone()) {
            continue;
        }
        let candidate = dirs
            .iter()
            .map(|dir| dir.join(&needed))
            .filter(|path| path.is_file())
            .find_map(|path| {
                let bytes = read_user_file_shared(&path, LINK_INPUT_LIMIT).ok()?;
                let facts = dynamic_facts(&path.display().to_string(), &bytes).ok()?;
                (machine.is_none_or(|machine| machine.0 == facts.machine)).then_some((path, facts))
            });
        let Some((path, facts)) = candidate else {
            found.warnings.push(format!(
                "{needed}, needed by {needed_by}, not found (try using -rpath or -rpath-link)"
            ));
            continue;
        };
        defined.extend(facts.definitions.into_iter().map(|definition| definition.name));
        let name = path.display().to_string();
        for next in facts.needed {
            queue.push_back((next, name.clone()));
        }
    }
    let is_defined = |name: &str| {
        defined.contains(name)
            || table
                .get(name)
                .is_some_and(|id| graph.symbols[id.index()].definition != Definition::Undefined)
    };
    for library in &graph.shared_libraries {
        let input = &graph.inputs[library.input.index()];
        for name in &library.references {
            if !is_defined(name) {
                found.undefined.push((input.logical_name.clone(), name.clone()));
            }
        }
    }
    found
}
