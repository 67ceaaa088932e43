//! Fuzzes the fence's defang step; the body lives in `promptstack_fence::fuzzing::fence_defang`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_fence::fuzzing::fence_defang(data));
