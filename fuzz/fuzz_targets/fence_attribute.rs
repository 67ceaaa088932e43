//! Fuzzes the fence's attribute step; the body lives in `promptstack_fence::fuzzing::fence_attribute`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_fence::fuzzing::fence_attribute(data));
