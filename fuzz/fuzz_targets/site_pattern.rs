#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    promptstack_core::fuzzing::site_pattern(data);
});
