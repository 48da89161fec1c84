//! The neverc-spec runtime: it trusts only tables generated from validated declarations.
//!
//! [`generated`] holds the bundled tables (from `PhaseSchema.json` and `targets/*.toml`, built by
//! `build.rs`); [`loaded`] builds tables of the same types from files at run time.

pub mod cc;
pub mod loaded;
pub mod tables;

/// Tables generated at build time from the bundled declarations.
pub mod generated {
    /// Phase policy table, from `PhaseSchema.json`.
    pub mod phases {
        include!(concat!(env!("OUT_DIR"), "/phases.rs"));
    }

    /// State-machine tables, from the `state_machines` extension of `PhaseSchema.json`.
    pub mod state_machines {
        include!(concat!(env!("OUT_DIR"), "/state_machines.rs"));
    }

    /// Target registry and one register resolver per target, from `targets/*.toml`.
    pub mod targets {
        include!(concat!(env!("OUT_DIR"), "/targets.rs"));
    }
}

pub use generated::phases::TABLES as BUNDLED_PHASES;
pub use generated::targets::{TARGETS as BUNDLED_TARGETS, target_by_name};
