//! The refresher: keeps a live session's prompt current when session variables change or the
//! conversation moves to another subagent topic.
//!
//! On each change it removes exactly the capability segments it recorded (each must still be
//! there, byte for byte), re-renders the authored text of the prompt now active, appends the
//! segments visible in that prompt, and re-renders the tail (the tenant instructions with their
//! closer, and the platform context) with the clock of the refresh: each refresh takes the
//! moment it happens, so the date and time the model reads are never those of the first build. It
//! never duplicates a segment and never strips one that should stay: the refreshed prompt equals a
//! fresh assembly with the final variables, topic and clock.
//!
//! The target it keeps must end with the stage's body (`@body`, or `@stable` then `@volatile`);
//! a target that places notes after the injected blocks is refused.

use std::collections::BTreeMap;

use crate::compose::Composition;
use crate::context::{Now, SendContext};
use crate::error::{Error, ErrorKind};
use crate::inject::manifests::{CapabilitySegment, is_ambient};
use crate::inject::{self, CAPABILITY_PREFIX};
use crate::{Agent, Assembly};

/// A change to a live session.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Session variables changed (merged into the current ones; `null` removes one).
    Variables(BTreeMap<String, serde_json::Value>),
    /// The conversation moved to a subagent topic, or back to the main prompt (`None`).
    Topic(Option<String>),
}

/// A session's prompt, kept current across changes.
#[derive(Debug)]
pub struct Refresher<'a> {
    agent: &'a Agent,
    target: String,
    ctx: SendContext,
    separator: String,
    segments: Vec<(String, CapabilitySegment)>,
    tail: String,
    text: String,
    refreshes: u64,
}

impl<'a> Refresher<'a> {
    /// Builds the first prompt for `ctx` and records the segments sidecar and the tail.
    ///
    /// # Errors
    ///
    /// As [`Agent::assemble`] and [`Assembly::compose`]; [`ErrorKind::NotFound`] for an agent
    /// without a stage.
    pub fn new(agent: &'a Agent, ctx: SendContext, target: &str) -> Result<Self, Error> {
        let Some(stage) = &agent.inner.stage else {
            return Err(Error::new(
                ErrorKind::NotFound,
                "the refresher needs a spec with a [stage]",
            ));
        };
        let overrides = inject::overrides_for(agent.inner.spec.auto_injections.as_ref(), &ctx);
        let segments = inject::capability_segments(stage, &overrides);
        let assembly = agent.assemble(&ctx)?;
        let composition = assembly.compose(target)?;
        let separator = assembly.separator().to_owned();
        // Everything after the authored text must be injected blocks: the refresher rebuilds
        // exactly that suffix.
        let injected = |id: &str| id.starts_with(CAPABILITY_PREFIX) || is_ambient(id);
        if let Some(first) = composition.parts.iter().position(|p| injected(&p.id))
            && let Some(other) = composition.parts[first..].iter().find(|p| !injected(&p.id))
        {
            return Err(Error::new(
                ErrorKind::Context,
                format!(
                    "target `{target}` places `{}` after the stage's injected blocks; the refresher needs a target whose text ends with the stage's body",
                    other.id
                ),
            ));
        }
        let tail = tail(&composition).to_owned();
        Ok(Self {
            agent,
            target: target.to_owned(),
            text: composition.system,
            ctx,
            separator,
            segments,
            tail,
            refreshes: 0,
        })
    }

    /// The current prompt.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The current send context.
    pub fn context(&self) -> &SendContext {
        &self.ctx
    }

    /// The recorded segments sidecar: each capability's exact text and visibility, by block id.
    pub fn segments(&self) -> &[(String, CapabilitySegment)] {
        &self.segments
    }

    /// How many refreshes ran.
    pub fn refreshes(&self) -> u64 {
        self.refreshes
    }

    /// Applies a change at the moment `now` and returns the refreshed prompt.
    ///
    /// `now` becomes the send context's clock: the platform context shows the date and time of
    /// this refresh, not of the first build.
    ///
    /// # Errors
    ///
    /// The current text no longer ends with the recorded segments and tail (it was edited outside
    /// the refresher), or re-rendering failed. The prompt is left unchanged then.
    pub fn apply(&mut self, change: Change, now: Now) -> Result<&str, Error> {
        let mut ctx = self.ctx.clone();
        ctx.now = now;
        match change {
            Change::Variables(values) => {
                for (name, value) in values {
                    if value.is_null() {
                        ctx.variables.remove(&name);
                    } else {
                        ctx.variables.insert(name, value);
                    }
                }
            }
            Change::Topic(topic) => ctx.topic = topic,
        }
        let old_prompt = self.agent.inner.active_prompt(&self.ctx)?;
        let new_prompt = self.agent.inner.active_prompt(&ctx)?;
        // 1. Take off the tail, then exactly the segments the old prompt shows, last first.
        let mut rest = self.strip(&self.text, &self.tail, "the captured tail")?;
        for (id, segment) in self.segments.iter().rev() {
            if segment.visible_in(old_prompt) {
                rest = self.strip(rest, &segment.text, id)?;
            }
        }
        // 2. What remains is the old prompt's authored text; render the new one, and the tail
        //    with this refresh's clock.
        let (authored, tail) = self.render(&ctx)?;
        // 3. Recompose: authored text, the segments visible now, the tail.
        let mut text = authored;
        let parts = self
            .segments
            .iter()
            .filter(|(_, s)| s.visible_in(new_prompt))
            .map(|(_, s)| s.text.as_str())
            .chain(Some(tail.as_str()).filter(|t| !t.is_empty()));
        for part in parts {
            if !text.is_empty() {
                text.push_str(&self.separator);
            }
            text.push_str(part);
        }
        self.text = text;
        self.tail = tail;
        self.ctx = ctx;
        self.refreshes += 1;
        Ok(&self.text)
    }

    /// Removes `suffix` (and the separator before it) from the end of `text`.
    fn strip<'t>(&self, text: &'t str, suffix: &str, what: &str) -> Result<&'t str, Error> {
        if suffix.is_empty() {
            return Ok(text);
        }
        let rest = text.strip_suffix(suffix).ok_or_else(|| {
            Error::new(
                ErrorKind::Context,
                format!("the session prompt no longer ends with {what}; it was changed outside the refresher"),
            )
        })?;
        Ok(rest.strip_suffix(self.separator.as_str()).unwrap_or(rest))
    }

    /// The authored text of the active prompt for `ctx` (the composed target up to the first
    /// injected part) and its tail.
    fn render(&self, ctx: &SendContext) -> Result<(String, String), Error> {
        let assembly: Assembly = self.agent.assemble(ctx)?;
        let composition = assembly.compose(&self.target)?;
        Ok((
            composition.authored().to_owned(),
            tail(&composition).to_owned(),
        ))
    }
}

/// The tail of a composed prompt: the run of ambient parts at its end (empty without one).
fn tail(composition: &Composition) -> &str {
    let first_ambient = composition
        .parts
        .iter()
        .rposition(|p| !is_ambient(&p.id))
        .map_or(0, |i| i + 1);
    composition
        .parts
        .get(first_ambient)
        .map_or("", |p| &composition.system[p.range.start..])
}
