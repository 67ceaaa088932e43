#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    promptstack_core::fuzzing::mcp_namespacing(data);
});
