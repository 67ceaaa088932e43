//! The fence's integration tests: defanging cases, fidelity fixtures, the attack corpus, generated
//! marker families, properties G1–G10 and the fuzz smoke runs.

mod cases;
mod corpus;
mod families;
mod fidelity;
mod fuzz_smoke;
mod oracle;
mod properties;
