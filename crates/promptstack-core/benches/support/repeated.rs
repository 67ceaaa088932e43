//! A long conversation made of one recorded turn, shared by the request bench and the
//! `conversation_cost` example so both measure the same input.

use promptstack_core::provider::{Conversation, Message};

/// `turn` repeated until the conversation has `size` messages, each repetition's call ids made
/// unique (the texts repeat, so token counts come from the memo at every size alike).
pub fn repeated(turn: &Conversation, size: usize) -> Conversation {
    let mut messages = Vec::with_capacity(size);
    let mut round = 0;
    while messages.len() < size {
        for message in turn.messages.iter().take(size - messages.len()) {
            let mut message = message.clone();
            match &mut message {
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls {
                        call.id = format!("{}_{round}", call.id);
                    }
                }
                Message::Tool { call_id, .. } => *call_id = format!("{call_id}_{round}"),
                Message::User { .. } => {}
            }
            messages.push(message);
        }
        round += 1;
    }
    Conversation { messages }
}
