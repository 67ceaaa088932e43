//! Placeholder until the fence benchmark lands.
fn main() {}
