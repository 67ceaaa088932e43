//! Fuzzes the fence's wrap step; the body lives in `promptstack_fence::fuzzing::fence_wrap`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_fence::fuzzing::fence_wrap(data));
