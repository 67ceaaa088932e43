//! A template compiled for rendering: minijinja's parser and code generator over a copy of the
//! syntax tree with the guards in place ([`super::guard`]), run by minijinja's own machine.
//!
//! The environment still holds every template as minijinja compiles it (for its syntax errors,
//! its static analysis and its source); renders run the guarded program instead, with the same
//! environment, filters, fuel, undefined handling and error locations.

use minijinja::machinery::{self, CodeGenerator, CompiledTemplate};
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error};

/// The name and source a program was compiled from, which its instructions borrow.
struct Source {
    name: Box<str>,
    text: Box<str>,
}

self_cell::self_cell!(
    /// A guarded template's instructions and the source they borrow.
    struct Compiled {
        owner: Source,
        #[covariant]
        dependent: CompiledTemplate,
    }
);

/// A template compiled with its guards, ready to render.
pub(crate) struct Program(Compiled);

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Program")
            .field(&self.0.borrow_owner().name)
            .finish()
    }
}

impl Program {
    /// Compiles `source` under `name` with `syntax`, guards in place.
    ///
    /// # Errors
    ///
    /// A syntax error, as minijinja reports it (the caller compiles the same source with the
    /// environment first, so this normally cannot fail).
    pub(crate) fn compile(
        name: &str,
        source: &str,
        syntax: &minijinja::syntax::SyntaxConfig,
    ) -> Result<Self, Error> {
        let owner = Source {
            name: name.into(),
            text: source.into(),
        };
        Compiled::try_new(owner, |owner| {
            let tree = machinery::parse(&owner.text, &owner.name, syntax.clone())?;
            let guarded = super::guard::guard(&tree)?;
            let mut generator = CodeGenerator::new(&owner.name, &owner.text);
            generator.compile_stmt(&guarded);
            let buffer_size_hint = generator.buffer_size_hint();
            let (instructions, blocks) = generator.finish();
            Ok(CompiledTemplate {
                instructions,
                blocks,
                buffer_size_hint,
                syntax_config: syntax.clone(),
                initial_auto_escape: AutoEscape::None,
            })
        })
        .map(Program)
    }

    /// Renders the program against `root` in `env` (whose filters, fuel, formatter and
    /// undefined handling apply), returning its text.
    pub(crate) fn render(&self, env: &Environment<'static>, root: Value) -> Result<String, Error> {
        let compiled = self.0.borrow_dependent();
        let mut text = String::with_capacity(compiled.buffer_size_hint);
        let mut out = machinery::make_string_output(&mut text);
        machinery::eval(
            env,
            &compiled.instructions,
            root,
            &compiled.blocks,
            &mut out,
            compiled.initial_auto_escape.clone(),
        )?;
        Ok(text)
    }
}
