//! The calling-convention engine: plan strings, the planner, materialization and lowering to adapter thunks.

pub mod adapter;
pub mod assignment;
pub mod layout;
pub mod ll_reader;
pub mod lower;
pub mod materialize;
mod name_table;
pub mod plan;
pub mod plan_validation;
pub mod planner;
pub mod plugin;
pub mod signature;
pub mod standard_abi;
