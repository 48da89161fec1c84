//! Tables built at run time from declaration files, for users who cannot rebuild (`--target-file`,
//! `--phase-schema`).
//!
//! Loaded tables go through the same validation and the same lowering as generated ones (the schema crate's
//! `lower_*` functions, into the records of `neverc-records`). Their arena is leaked so that they have the
//! `'static` lifetime of generated tables: load them once per process.

use std::path::Path;

use neverc_schema::{Bump, LoadError, PhaseSchemaDocument, lower_phase_schema, lower_target};
use neverc_tables::{PhaseTables, TargetRecord};

#[derive(Debug, thiserror::Error)]
pub enum LoadTablesError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("validated declarations could not be lowered: {0}")]
    Lowering(String),
}

/// An arena that lives as long as the process.
fn process_arena() -> &'static Bump {
    Box::leak(Box::new(Bump::new()))
}

/// Loads, validates and lowers one target file into a `TargetRecord`.
pub fn load_target_file(path: &Path) -> Result<&'static TargetRecord, LoadTablesError> {
    let mut loaded = neverc_schema::load_targets(&[path.to_path_buf()])?;
    let target = loaded
        .pop()
        .ok_or_else(|| LoadTablesError::Lowering("no target was loaded".into()))?;
    let arena = process_arena();
    let record = lower_target(&target.declaration, arena).map_err(LoadTablesError::Lowering)?;
    Ok(arena.alloc(record))
}

/// Lowers a validated phase schema into `PhaseTables` (for a schema other than the bundled one).
pub fn phase_tables_from_document(document: &PhaseSchemaDocument) -> Result<&'static PhaseTables, LoadTablesError> {
    let arena = process_arena();
    let tables = lower_phase_schema(document, arena).map_err(LoadTablesError::Lowering)?;
    Ok(arena.alloc(tables))
}

/// Loads and validates a phase schema file and lowers it into `PhaseTables`.
pub fn load_phase_tables(path: &Path) -> Result<&'static PhaseTables, LoadTablesError> {
    let document = neverc_schema::load_phase_schema(path)?;
    phase_tables_from_document(&document)
}
