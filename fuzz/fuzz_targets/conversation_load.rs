//! Fuzzes the prior-conversation parser; the body lives in `promptstack_core::fuzzing::conversation_load`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_core::fuzzing::conversation_load(data));
