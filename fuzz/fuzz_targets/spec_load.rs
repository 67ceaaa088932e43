//! Fuzzes the agent spec loader and the assembly of what it accepts; the body lives in `promptstack_core::fuzzing::spec_load`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_core::fuzzing::spec_load(data));
