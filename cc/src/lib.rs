//! The calling-convention engine: plan strings, and (to come) the planner and materializer.

pub mod assignment;
pub mod layout;
pub mod ll_reader;
pub mod materialize;
mod name_table;
pub mod plan;
pub mod plan_validation;
pub mod planner;
pub mod plugin;
pub mod signature;
pub mod standard_abi;
