//! The calling-convention engine: plan strings, and (to come) the planner and materializer.

pub mod plan;
