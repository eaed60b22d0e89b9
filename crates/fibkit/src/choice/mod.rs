//! Engine choice: which engine a table gets when the caller names none
//! ([`default_spec`]) or asks the performance model to pick (`auto`).
//!
//! This layer sits above the engines and the model, which it chooses
//! among, and below the registry, which lists `auto` as an engine: nothing
//! here imports the registry or the handles.

pub mod auto;
mod default;

pub use default::default_spec;
