//! Fuzzes the provider caching-rules table parser; the body lives in `promptstack_core::fuzzing::provider_rules`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_core::fuzzing::provider_rules(data));
