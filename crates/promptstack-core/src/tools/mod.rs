//! Tools the model may call: valid names, MCP namespacing and the labels the UI shows.
//!
//! The pieces here are data in, data out. [`naming`] checks the provider charset and gives every
//! MCP tool a provider-safe name that does not depend on discovery order; [`mcp`] holds what
//! discovery found on each server and merges it into one name map; [`label`] renders a tool's
//! `verb` for the UI while a call runs; [`registry`] says what makes a local tool descriptor valid
//! and refuses the rest.

pub mod label;
pub mod mcp;
pub mod naming;
pub mod registration;
