//! The stream processor gives the same output however its input is split into deltas.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    promptstack_stream::fuzzing::stream_chunking(data);
});
