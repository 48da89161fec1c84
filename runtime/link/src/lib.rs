//! The link runtime: a normalized link graph read from real object files, the link state machine of
//! `PhaseSchema.json` executed from the generated tables, builtin phases that produce a static ELF
//! executable, and plugins that observe, intercept, replace or skip phases exactly as the declared policy
//! allows.

mod address;
mod arch;
pub mod context;
pub mod execute;
pub mod frame;
pub mod graph;
pub mod image;
mod kept_relocations;
mod linker_defined;
pub mod lto;
mod merge;
mod needed_libraries;
pub mod ordering;
pub mod output_kind;
mod phases;
mod place;
mod scan;
mod shrink;
pub use phases::{LinkPhase, lay_out_and_relocate, lay_out_as, lay_out_within, merge_relocatable};
pub mod plugin;
pub mod read;
pub mod response_file;
pub mod script;
pub mod search;
pub mod sections;
pub mod symbol_name;
pub mod symbol_options;
mod synth;
pub use neverc_tables::status;
