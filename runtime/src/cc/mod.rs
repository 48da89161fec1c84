//! The calling-convention engine: plan strings, and (to come) the planner and materializer.

pub mod plan;
pub mod plan_validation;
pub mod signature;
