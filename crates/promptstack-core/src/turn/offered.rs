//! Building a Turn from what an assembly offered: the spec's `[turn]` configuration, the resolved
//! toolset's descriptors, and the untrusted-content fence for results.

use std::sync::Arc;

use super::{
    ResultOrigin, ResultWrapper, ToolExecutor, TurnBuilder, TurnError, TurnErrorKind, TurnTool,
};
use crate::fence::{ContentKind, Fence, Provenance};
use crate::spec::{ResultFence, ResultTrust};
use crate::toolset::{Tool, Toolset};

impl From<&Tool> for TurnTool {
    /// The Turn's view of an offered tool: its name, whether it is cacheable, its budget class,
    /// whether its results are untrusted (MCP tools always are) and their fence kind.
    fn from(tool: &Tool) -> Self {
        Self {
            name: tool.name.clone(),
            cacheable: tool.cacheable,
            budget_class: tool.budget.clone(),
            untrusted_results: tool.results == ResultTrust::Untrusted,
            fence: tool.fence,
        }
    }
}

impl TurnBuilder<'_> {
    /// Adds every tool of `toolset` with the executor `executor_for` gives it.
    ///
    /// # Errors
    ///
    /// [`TurnErrorKind::MissingExecutor`] for an offered tool without an executor: the model
    /// would be offered a tool that cannot run.
    pub fn toolset(
        mut self,
        toolset: &Toolset,
        mut executor_for: impl FnMut(&Tool) -> Option<Arc<dyn ToolExecutor>>,
    ) -> Result<Self, TurnError> {
        for tool in toolset.tools() {
            let executor = executor_for(tool)
                .ok_or_else(|| TurnErrorKind::MissingExecutor(tool.name.clone()))?;
            self = self.tool(TurnTool::from(tool.as_ref()), executor);
        }
        Ok(self)
    }
}

/// The untrusted-content fence as the Turn's result wrapper: every untrusted part is fenced with
/// the kind its tool declares (`web_content`, `file_content`, else `tool_result`), carrying the
/// tool's name and, for a page or file, its origin.
impl ResultWrapper for Fence {
    fn wrap(&self, content: &str, provenance: &ResultOrigin<'_>) -> String {
        let declared = match provenance.fence {
            ResultFence::ToolResult => ContentKind::ToolResult,
            ResultFence::WebContent => ContentKind::Page,
            ResultFence::FileContent => ContentKind::File,
        };
        // A page or file kind needs an origin: a part without one is a plain tool result.
        let kind = if provenance.url.is_some() {
            declared
        } else {
            ContentKind::ToolResult
        };
        let fenced = Provenance::new(kind, provenance.url, Some(provenance.tool))
            // An origin the fence cannot reduce is left out; the content is still fenced.
            .or_else(|_| Provenance::tool_result(provenance.tool))
            .and_then(|p| Fence::wrap(self, content, &p));
        match fenced {
            Ok(wrapped) => wrapped.text,
            // Never hand over unfenced content: say that it was withheld and why.
            Err(error) => format!("[content withheld: it could not be fenced ({error})]"),
        }
    }
}
