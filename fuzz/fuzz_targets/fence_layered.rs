//! Fuzzes the fence with layered escapes and line separators inside forged markers; the body
//! lives in `promptstack_fence::fuzzing::fence_layered`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| promptstack_fence::fuzzing::fence_layered(data));
