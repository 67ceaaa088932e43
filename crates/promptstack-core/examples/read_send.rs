//! Reads the chat-assistant `research` send N times for the chat-assistant spec, as the server and
//! the CLI read every send, for counting the instructions one read costs.
//!
//! `cargo build --release -p promptstack-core --example read_send`, then
//! `valgrind --tool=callgrind --toggle-collect='read_send::read_all' target/release/examples/read_send N`:
//! loading the spec and the file stays outside the count; divide the total by N.

// The example reads the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::process::ExitCode;

use promptstack_core::{Agent, SendContext};

#[path = "../benches/support/examples.rs"]
mod examples;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [times] = args.as_slice() else {
        eprintln!("usage: read_send TIMES");
        return ExitCode::from(2);
    };
    let Ok(times) = times.parse::<usize>() else {
        eprintln!("read_send: TIMES must be a whole number, got `{times}`");
        return ExitCode::from(2);
    };
    let agent = examples::chat_agent();
    let send = examples::chat_send_bytes("research");
    // One read outside the count, so that one-time set-up (schemas, validators) is not counted.
    SendContext::from_json_for(&send, "research.json", agent.spec()).expect("the send reads");
    let read = read_all(&agent, &send, times);
    println!("{read} reads of {} bytes", send.len());
    ExitCode::SUCCESS
}

/// Reads the send `times` times; the function an instruction counter is limited to.
#[inline(never)]
fn read_all(agent: &Agent, send: &[u8], times: usize) -> usize {
    let mut read = 0;
    for _ in 0..times {
        let context =
            SendContext::from_json_for(std::hint::black_box(send), "research.json", agent.spec())
                .expect("the send reads");
        read += usize::from(std::hint::black_box(&context).user_message.is_some());
    }
    read
}
