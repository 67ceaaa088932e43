//! [`Fact`]: a field of the send that keeps the digest the stable key reads, so a thread's later
//! sends pay for a lookup instead of hashing their large stable inputs again.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hash::{Key, KeyBuilder};

/// A fact of a send that can be large (skills, context files, variables, settings, the project,
/// a stage's tenant instructions and overrides), kept with its content digest.
///
/// A `Fact<T>` is a `T` to read and write: it dereferences to the value, converts from it
/// (`ctx.skills = skills.into()`), and reads, writes, compares and prints as the value alone (its
/// JSON and its JSON Schema are the value's). What it adds is invisible: the first assembly that
/// keys the send's stable inputs computes the fact's digest and keeps it here, and a clone keeps
/// it too, so a thread's send kept by the application and sent again (with the clock moved, a new
/// message) is keyed by a lookup rather than by hashing every skill and file again.
///
/// The digest never goes stale: mutable access (`DerefMut`, e.g. `ctx.skills.push(skill)`) drops
/// it before handing out the value, and replacing the whole fact replaces it. A send read from
/// JSON or built with the `with_*` setters starts without one.
///
/// ```
/// use std::collections::BTreeMap;
/// use promptstack_core::SendContext;
/// use promptstack_core::context::{Fact, ModelDescriptor};
///
/// let model = ModelDescriptor::new("gpt-4o", "GPT-4o", "openai");
/// let mut ctx = SendContext::new("2026-11-30T09:15:00+01:00".parse().unwrap(), model);
/// ctx.variables.insert("mode".into(), "brief".into());
/// ctx.settings = BTreeMap::from([("web".to_owned(), true.into())]).into();
/// assert_eq!(ctx.settings.len(), 1);
/// assert_eq!(ctx.project, Fact::default());
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fact<T> {
    value: T,
    #[serde(skip)]
    memo: OnceLock<Memo>,
}

/// A digest and the scope it was made in.
#[derive(Debug, Clone, Copy)]
struct Memo {
    scope: Scope,
    key: Key,
}

/// What a fact's digest covers: one input of the send, named by its own domain, and for a
/// projection (the stable variables of an agent) which part of it.
///
/// Digests of different inputs are made in different scopes and each begins with its scope, so
/// two inputs with the same bytes (an empty list of skills, an empty list of files) never share
/// a digest. A fact keeps the digest of the first scope it was asked for; in another scope it is
/// computed without the memo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope(Key);

impl Scope {
    /// The application settings.
    pub(crate) const SETTINGS: Self = Self::named("promptstack/send/settings");
    /// The thread's project.
    pub(crate) const PROJECT: Self = Self::named("promptstack/send/project");
    /// The enabled skills.
    pub(crate) const SKILLS: Self = Self::named("promptstack/send/skills");
    /// The context files.
    pub(crate) const CONTEXT_FILES: Self = Self::named("promptstack/send/context-files");
    /// A stage's tenant instructions.
    pub(crate) const TENANT_INSTRUCTIONS: Self =
        Self::named("promptstack/send/tenant-instructions");
    /// A stage's stored overrides of the injected blocks.
    pub(crate) const AUTO_INJECTIONS: Self = Self::named("promptstack/send/auto-injections");

    /// The scope of a whole input, by its domain.
    const fn named(domain: &str) -> Self {
        Self(xxhash_rust::const_xxh3::xxh3_128(domain.as_bytes()))
    }

    /// The scope of a part of an input: `part` is a key over the input's domain and the part it
    /// names, and every digest in this scope must read exactly that part.
    pub(crate) const fn projection(part: Key) -> Self {
        Self(part)
    }
}

impl<T> Fact<T> {
    /// A fact without a digest.
    pub const fn new(value: T) -> Self {
        Self {
            value,
            memo: OnceLock::new(),
        }
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.value
    }

    /// Drops the kept digest, if any.
    pub(crate) fn forget_digest(&mut self) {
        self.memo.take();
    }

    /// The digest of the value in `scope`, which `add` writes into a key after the scope.
    ///
    /// Kept for the first scope asked (the one digest the fact holds); in another scope it is
    /// computed every time. The same scope must always be given the same `add`.
    pub(crate) fn digest_with(&self, scope: Scope, add: impl FnOnce(&T, &mut KeyBuilder)) -> Key {
        let compute = || {
            let mut key = KeyBuilder::new("promptstack/fact/v1");
            key.add(&scope.0);
            add(&self.value, &mut key);
            key.finish()
        };
        match self.memo.get() {
            Some(memo) if memo.scope == scope => memo.key,
            Some(_) => compute(),
            None => {
                let key = compute();
                // Another thread may have kept a digest meanwhile: it is of the same value (no
                // one can write while this borrow lives), in this scope or another.
                let _ = self.memo.set(Memo { scope, key });
                key
            }
        }
    }

    /// Adds the value to `key`: by its digest in `scope` (see [`Fact::digest_with`]), or, when
    /// `blank` says the value holds nothing, by a mark alone, since a digest of nothing costs
    /// more to make than it saves. Whether a value is blank depends only on the value, so a send
    /// gives the same key with or without digests kept; and a blank value's digest is never
    /// made, so a digest kept in `scope` is read without asking.
    pub(crate) fn add_to(
        &self,
        scope: Scope,
        key: &mut KeyBuilder,
        blank: impl FnOnce(&T) -> bool,
        add: impl FnOnce(&T, &mut KeyBuilder),
    ) {
        match self.memo.get() {
            Some(memo) if memo.scope == scope => {
                key.add(&true).add(&memo.key);
            }
            _ if blank(&self.value) => {
                key.add(&false);
            }
            _ => {
                key.add(&true).add(&self.digest_with(scope, add));
            }
        }
    }

    /// The digest of the whole value in `scope`; see [`Fact::digest_with`].
    #[cfg(test)]
    pub(crate) fn digest(&self, scope: Scope) -> Key
    where
        T: Serialize,
    {
        self.digest_with(scope, |value, key| {
            key.add(value);
        })
    }

    /// Adds the whole value to `key` (see [`Fact::add_to`]).
    pub(crate) fn add_whole_to(&self, scope: Scope, key: &mut KeyBuilder)
    where
        T: Serialize + Blank,
    {
        self.add_to(scope, key, Blank::is_blank, |value, key| {
            key.add(value);
        });
    }
}

/// Whether a fact's value holds nothing: no items, or none.
pub(crate) trait Blank {
    fn is_blank(&self) -> bool;
}

impl<T> Blank for Vec<T> {
    fn is_blank(&self) -> bool {
        self.is_empty()
    }
}

impl<K, V> Blank for std::collections::BTreeMap<K, V> {
    fn is_blank(&self) -> bool {
        self.is_empty()
    }
}

impl<T> Blank for Option<T> {
    fn is_blank(&self) -> bool {
        self.is_none()
    }
}

impl<T> Deref for Fact<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Fact<T> {
    /// The value, to change: the digest is dropped first, since the value may change.
    fn deref_mut(&mut self) -> &mut T {
        self.forget_digest();
        &mut self.value
    }
}

/// `for skill in &ctx.skills`, as over the value.
impl<'a, T> IntoIterator for &'a Fact<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.value.into_iter()
    }
}

/// `for skill in &mut ctx.skills`, as over the value: mutable access, so the digest is dropped.
impl<'a, T> IntoIterator for &'a mut Fact<T>
where
    &'a mut T: IntoIterator,
{
    type Item = <&'a mut T as IntoIterator>::Item;
    type IntoIter = <&'a mut T as IntoIterator>::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.deref_mut().into_iter()
    }
}

/// The value's items, by value.
impl<T: IntoIterator> IntoIterator for Fact<T> {
    type Item = T::Item;
    type IntoIter = T::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.value.into_iter()
    }
}

/// `ctx.skills = skills.into_iter().collect()`, as into the value.
impl<A, T: FromIterator<A>> FromIterator<A> for Fact<T> {
    fn from_iter<I: IntoIterator<Item = A>>(items: I) -> Self {
        Self::new(T::from_iter(items))
    }
}

impl<T> From<T> for Fact<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: Default> Default for Fact<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: PartialEq> PartialEq for Fact<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Fact<T> {}

impl<T: fmt::Debug> fmt::Debug for Fact<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// The value's schema, under the value's name: a send's JSON Schema is the same as if its fields
/// were the plain values.
impl<T: JsonSchema> JsonSchema for Fact<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }

    // The two hidden methods say whether the value is an `Option` (which decides whether a
    // field is required); forwarding them is what schemars' own transparent impls do.
    fn _schemars_private_non_optional_json_schema(
        generator: &mut schemars::SchemaGenerator,
    ) -> schemars::Schema {
        T::_schemars_private_non_optional_json_schema(generator)
    }

    fn _schemars_private_is_option() -> bool {
        T::_schemars_private_is_option()
    }
}

#[cfg(test)]
mod tests {
    //! The stable key of a send whose facts keep their digests is the key computed from scratch,
    //! whatever was changed, cloned or read since; and it tells apart exactly the sends whose
    //! stable inputs differ. Over generated sends (256 cases by default; `PROPTEST_CASES=N` for
    //! more).

    use std::collections::BTreeMap;
    use std::sync::LazyLock;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::context::{
        ContextFile, Integration, ModelDescriptor, Now, Project, SendContext, Skill,
        TenantInstructions, UserProfile,
    };
    use crate::{Agent, SpecFormat};

    /// A stage with two stable variables and a volatile one, so every stable input of a send
    /// enters its key.
    const STAGE: &str = include_str!("../../tests/data/specs/keys-stage.toml");

    /// No stage, and only `tone` stable: the same send is keyed over another projection of its
    /// variables.
    const PLAIN: &str = include_str!("../../tests/data/specs/keys-plain.toml");

    static STAGE_AGENT: LazyLock<Agent> = LazyLock::new(|| compile(STAGE));
    static PLAIN_AGENT: LazyLock<Agent> = LazyLock::new(|| compile(PLAIN));

    fn compile(spec: &str) -> Agent {
        Agent::from_source(spec.as_bytes(), "keys.toml", SpecFormat::Toml).expect("compiles")
    }

    fn key(agent: &Agent, ctx: &SendContext) -> Key {
        agent.inner.stable_key(ctx)
    }

    fn fresh<T>(fact: Fact<T>) -> Fact<T> {
        Fact::new(fact.into_inner())
    }

    /// The same send with no digest kept anywhere. Every field is named, so a fact added to the
    /// send must be placed here.
    fn without_digests(ctx: &SendContext) -> SendContext {
        let SendContext {
            now,
            model,
            settings,
            integrations,
            user,
            project,
            skills,
            user_message,
            variables,
            cwd,
            context_files,
            messages_path,
            harness_state,
            tabs,
            mcp_servers,
            topic,
            tenant_instructions,
            auto_injections,
        } = ctx.clone();
        SendContext {
            now,
            model,
            settings: fresh(settings),
            integrations,
            user,
            project: fresh(project),
            skills: fresh(skills),
            user_message,
            variables: fresh(variables),
            cwd,
            context_files: fresh(context_files),
            messages_path,
            harness_state,
            tabs,
            mcp_servers,
            topic,
            tenant_instructions: fresh(tenant_instructions),
            auto_injections: fresh(auto_injections),
        }
    }

    /// The stable key from scratch: no digest read, none kept.
    fn scratch(agent: &Agent, ctx: &SendContext) -> Key {
        key(agent, &without_digests(ctx))
    }

    /// What the stage's stable key must depend on, and only that: the send with its volatile
    /// facts set to one value and only the stable variables kept.
    fn stable_inputs(ctx: &SendContext) -> SendContext {
        let SendContext {
            now: _,
            model,
            settings,
            integrations,
            user,
            project,
            skills,
            user_message: _,
            variables,
            cwd,
            context_files,
            messages_path,
            harness_state: _,
            tabs: _,
            mcp_servers: _,
            topic,
            tenant_instructions,
            auto_injections,
        } = ctx.clone();
        let mut inputs = SendContext::new(moment(0), model);
        inputs.settings = settings;
        inputs.integrations = integrations;
        inputs.user = user;
        inputs.project = project;
        inputs.skills = skills;
        inputs.variables = variables
            .into_inner()
            .into_iter()
            .filter(|(name, _)| name == "tone" || name == "team")
            .collect();
        inputs.cwd = cwd;
        inputs.context_files = context_files;
        inputs.messages_path = messages_path;
        inputs.topic = topic;
        inputs.tenant_instructions = tenant_instructions;
        inputs.auto_injections = auto_injections;
        inputs
    }

    /// Whether some fact of the send keeps a digest.
    fn any_digested(ctx: &SendContext) -> bool {
        ctx.settings.memo.get().is_some()
            || ctx.project.memo.get().is_some()
            || ctx.skills.memo.get().is_some()
            || ctx.variables.memo.get().is_some()
            || ctx.context_files.memo.get().is_some()
            || ctx.tenant_instructions.memo.get().is_some()
            || ctx.auto_injections.memo.get().is_some()
    }

    /// Whether exactly the facts of the send that hold something keep a digest (the stage keys
    /// all of them; a blank one is keyed by a mark alone).
    fn all_digested(ctx: &SendContext) -> bool {
        fn kept<T: Blank>(fact: &Fact<T>) -> bool {
            fact.memo.get().is_some() != fact.value.is_blank()
        }
        let variables = STAGE_AGENT.inner.stable_variables.any_set(&ctx.variables);
        kept(&ctx.settings)
            && kept(&ctx.project)
            && kept(&ctx.skills)
            && ctx.variables.memo.get().is_some() == variables
            && kept(&ctx.context_files)
            && kept(&ctx.tenant_instructions)
            && kept(&ctx.auto_injections)
    }

    fn moment(minutes: i64) -> Now {
        Now::new(
            jiff::Timestamp::from_second(1_780_000_000 + 60 * minutes).expect("in range"),
            jiff::tz::Offset::UTC,
        )
    }

    /// Short texts over a small alphabet, so two generated values are often equal.
    fn text() -> impl Strategy<Value = String> {
        "[ab ]{0,3}"
    }

    /// JSON without floats (whose `0.0 == -0.0` would make equal values of different bytes).
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-2i64..3).prop_map(Value::from),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(text(), inner, 0..3)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn names(of: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop::sample::select(of).prop_map(str::to_owned)
    }

    fn skill() -> impl Strategy<Value = Skill> {
        (text(), text(), text(), any::<bool>()).prop_map(
            |(name, description, instructions, hidden)| Skill {
                name,
                slug: None,
                description,
                instructions,
                tags: vec![],
                disable_model_invocation: hidden,
                location: None,
                sites: vec![],
            },
        )
    }

    /// A send over the stage's inputs: every stable fact, the volatile variable and an
    /// undeclared one, the clock and the message.
    fn send() -> impl Strategy<Value = SendContext> {
        let stable = (
            prop::sample::select(vec!["gpt-4o", "llama"]),
            prop::collection::btree_map(names(&["web", "beta"]), json(), 0..3),
            prop::collection::btree_map(names(&["google"]), (any::<bool>(), any::<bool>()), 0..2),
            prop::option::of(text()),
            prop::option::of((text(), prop::option::of(text()), any::<bool>())),
            prop::collection::vec(skill(), 0..3),
            prop::collection::btree_map(names(&["tone", "team", "mode", "other"]), json(), 0..4),
            prop::option::of(text()),
            prop::collection::vec((text(), text()), 0..3),
            prop::option::of(text()),
        );
        let stage = (
            prop::option::of(names(&["billing", "support"])),
            prop::option::of((any::<bool>(), text())),
            prop::option::of(prop::collection::btree_map(text(), json(), 0..2)),
            0i64..3,
            prop::option::of(text()),
        );
        (stable, stage).prop_map(
            |(
                (model, settings, integrations, name, project, skills, variables, cwd, files, path),
                (topic, tenant, overrides, minutes, message),
            )| {
                let model = ModelDescriptor::new(model, model, "test");
                let mut ctx = SendContext::new(moment(minutes), model)
                    .with_settings(settings)
                    .with_integrations(
                        integrations
                            .into_iter()
                            .map(|(name, (connected, enabled))| {
                                (name, Integration { connected, enabled })
                            })
                            .collect(),
                    )
                    .with_user(UserProfile {
                        name,
                        ..UserProfile::default()
                    })
                    .with_skills(skills)
                    .with_variables(variables)
                    .with_context_files(
                        files
                            .into_iter()
                            .map(|(path, content)| ContextFile { path, content })
                            .collect(),
                    );
                *ctx.project = project.map(|(name, instructions, has_sibling_threads)| Project {
                    name,
                    instructions,
                    has_sibling_threads,
                });
                ctx.cwd = cwd;
                ctx.messages_path = path;
                ctx.topic = topic;
                *ctx.tenant_instructions = tenant.map(|(enabled, text)| TenantInstructions {
                    enabled,
                    text,
                    unavailable: None,
                });
                *ctx.auto_injections =
                    overrides.map(|map| Value::Object(map.into_iter().collect()));
                ctx.user_message = message;
                ctx
            },
        )
    }

    /// A change to a send, named for the failure message.
    type Change = (&'static str, fn(&mut SendContext, &SendContext));

    /// Each fact written in place through its `DerefMut` (the new value from another send).
    const IN_PLACE: [Change; 7] = [
        ("settings", |ctx, other| {
            ctx.settings.clear();
            ctx.settings
                .extend(other.settings.iter().map(|(k, v)| (k.clone(), v.clone())));
        }),
        ("project", |ctx, other| {
            if let (Some(project), Some(theirs)) = (ctx.project.as_mut(), other.project.as_ref()) {
                project.name.clone_from(&theirs.name);
            } else {
                *ctx.project = (*other.project).clone();
            }
        }),
        ("skills", |ctx, other| {
            for skill in &mut ctx.skills {
                skill.instructions.push('!');
            }
            ctx.skills.push(Skill {
                instructions: "added".into(),
                ..other.skills.first().cloned().unwrap_or_else(|| Skill {
                    name: "n".into(),
                    slug: None,
                    description: String::new(),
                    instructions: String::new(),
                    tags: vec![],
                    disable_model_invocation: false,
                    location: None,
                    sites: vec![],
                })
            });
        }),
        ("stable variables", |ctx, other| {
            for name in ["tone", "team"] {
                match other.variables.get(name) {
                    Some(value) => ctx.variables.insert(name.into(), value.clone()),
                    None => ctx.variables.remove(name),
                };
            }
        }),
        ("context files", |ctx, other| {
            *ctx.context_files = (*other.context_files).clone();
        }),
        ("tenant instructions", |ctx, other| {
            if let Some(instructions) = ctx.tenant_instructions.as_mut() {
                instructions.enabled = !instructions.enabled;
            } else {
                *ctx.tenant_instructions = (*other.tenant_instructions).clone();
            }
        }),
        ("overrides", |ctx, other| {
            *ctx.auto_injections = (*other.auto_injections).clone();
        }),
    ];

    /// Each setter, with the value of another send.
    const SETTERS: [Change; 16] = [
        ("with_settings", |ctx, other| {
            *ctx = ctx.clone().with_settings((*other.settings).clone());
        }),
        ("with_integrations", |ctx, other| {
            *ctx = ctx.clone().with_integrations(other.integrations.clone());
        }),
        ("with_user", |ctx, other| {
            *ctx = ctx.clone().with_user(other.user.clone());
        }),
        ("with_project", |ctx, other| {
            if let Some(project) = &*other.project {
                *ctx = ctx.clone().with_project(project.clone());
            }
        }),
        ("with_skills", |ctx, other| {
            *ctx = ctx.clone().with_skills((*other.skills).clone());
        }),
        ("with_user_message", |ctx, other| {
            *ctx = ctx
                .clone()
                .with_user_message(other.user_message.clone().unwrap_or_default());
        }),
        ("with_variables", |ctx, other| {
            *ctx = ctx.clone().with_variables((*other.variables).clone());
        }),
        ("with_cwd", |ctx, other| {
            *ctx = ctx.clone().with_cwd(other.cwd.clone().unwrap_or_default());
        }),
        ("with_context_files", |ctx, other| {
            *ctx = ctx
                .clone()
                .with_context_files((*other.context_files).clone());
        }),
        ("with_messages_path", |ctx, other| {
            *ctx = ctx
                .clone()
                .with_messages_path(other.messages_path.clone().unwrap_or_default());
        }),
        ("with_harness_state", |ctx, other| {
            *ctx = ctx
                .clone()
                .with_harness_state(json!({"todo": other.user.name}));
        }),
        ("with_tabs", |ctx, _| {
            *ctx = ctx.clone().with_tabs(crate::context::Tabs::default());
        }),
        ("with_mcp_servers", |ctx, _| {
            *ctx = ctx.clone().with_mcp_servers(vec![]);
        }),
        ("with_topic", |ctx, other| {
            *ctx = ctx
                .clone()
                .with_topic(other.topic.clone().unwrap_or_default());
        }),
        ("with_tenant_instructions", |ctx, other| {
            if let Some(instructions) = &*other.tenant_instructions {
                *ctx = ctx.clone().with_tenant_instructions(instructions.clone());
            }
        }),
        ("with_auto_injections", |ctx, other| {
            if let Some(overrides) = &*other.auto_injections {
                *ctx = ctx.clone().with_auto_injections(overrides.clone());
            }
        }),
    ];

    /// Applies each change to a copy of a keyed send (whose facts keep their digests) and checks
    /// that the key is the key from scratch, and changed exactly when a stable input did.
    fn check_changes(
        ctx: &SendContext,
        other: &SendContext,
        changes: &[Change],
    ) -> Result<(), TestCaseError> {
        let agent = &*STAGE_AGENT;
        let before = key(agent, ctx);
        prop_assert!(all_digested(ctx));
        for (name, change) in changes {
            let mut next = ctx.clone();
            change(&mut next, other);
            let after = key(agent, &next);
            prop_assert_eq!(after, scratch(agent, &next), "after {}", name);
            prop_assert_eq!(
                after == before,
                stable_inputs(&next) == stable_inputs(ctx),
                "after {}: the key changed exactly when a stable input did",
                name
            );
            // Keyed again, from the digests just kept.
            prop_assert_eq!(key(agent, &next), after, "after {}, again", name);
        }
        Ok(())
    }

    proptest! {
        /// Keying a send keeps a digest in every fact that holds something; keying it again,
        /// or a clone of it, reads them and gives the key from scratch.
        #[test]
        fn kept_digests_give_the_key_from_scratch(ctx in send()) {
            let agent = &*STAGE_AGENT;
            let first = key(agent, &ctx);
            prop_assert!(all_digested(&ctx));
            prop_assert_eq!(first, scratch(agent, &ctx));
            prop_assert_eq!(key(agent, &ctx), first);
            let mut clone = ctx.clone();
            prop_assert!(all_digested(&clone));
            prop_assert_eq!(key(agent, &clone), first);
            // Forgotten, none is kept, and keying again makes the same key.
            clone.forget_digests();
            prop_assert!(!any_digested(&clone));
            prop_assert_eq!(key(agent, &clone), first);
        }

        /// A fact changed in place through its `DerefMut` drops its digest: the key is the key
        /// from scratch, and changes exactly when the value did.
        #[test]
        fn a_change_in_place_drops_the_digest(ctx in send(), other in send()) {
            key(&STAGE_AGENT, &ctx);
            check_changes(&ctx, &other, &IN_PLACE)?;
        }

        /// So does every setter, of a fact or of another field.
        #[test]
        fn a_setter_keeps_the_key_true(ctx in send(), other in send()) {
            key(&STAGE_AGENT, &ctx);
            check_changes(&ctx, &other, &SETTERS)?;
        }

        /// A volatile variable (declared volatile, or not declared) changes neither the key nor
        /// its correctness; a stable one changes the key exactly when its value changes.
        #[test]
        fn only_stable_variables_change_the_key(
            ctx in send(),
            name in names(&["tone", "team", "mode", "other"]),
            value in prop::option::of(json()),
        ) {
            let volatile = |ctx: &mut SendContext, _: &SendContext| {
                ctx.variables.insert("mode".into(), json!("moved"));
                ctx.variables.remove("other");
            };
            key(&STAGE_AGENT, &ctx);
            check_changes(&ctx, &ctx, &[("volatile variables", volatile)])?;
            let mut next = ctx.clone();
            match value {
                Some(value) => next.variables.insert(name, value),
                None => next.variables.remove(&name),
            };
            let after = key(&STAGE_AGENT, &next);
            prop_assert_eq!(after, scratch(&STAGE_AGENT, &next));
            prop_assert_eq!(
                after == key(&STAGE_AGENT, &ctx),
                stable_inputs(&next) == stable_inputs(&ctx)
            );
        }

        /// Two sends have the same key exactly when their stable inputs are the same.
        #[test]
        fn keys_differ_exactly_when_stable_inputs_do(ctx in send(), other in send()) {
            let agent = &*STAGE_AGENT;
            prop_assert_eq!(
                key(agent, &ctx) == key(agent, &other),
                stable_inputs(&ctx) == stable_inputs(&other)
            );
            // Each stable input of the other send alone.
            for (name, change) in IN_PLACE.iter().chain(&SETTERS) {
                let mut next = ctx.clone();
                change(&mut next, &other);
                prop_assert_eq!(
                    key(agent, &next) == key(agent, &ctx),
                    stable_inputs(&next) == stable_inputs(&ctx),
                    "with {}", name
                );
            }
        }

        /// A send keyed for two agents whose stable variables differ keeps the first one's
        /// digest; each agent's key is its key from scratch, before and after a change.
        #[test]
        fn each_agent_keys_its_own_stable_variables(ctx in send(), value in json()) {
            let (stage, plain) = (&*STAGE_AGENT, &*PLAIN_AGENT);
            for _ in 0..2 {
                prop_assert_eq!(key(stage, &ctx), scratch(stage, &ctx));
                prop_assert_eq!(key(plain, &ctx), scratch(plain, &ctx));
            }
            let mut next = ctx.clone();
            next.variables.insert("team".into(), value);
            prop_assert_eq!(key(plain, &next), key(plain, &ctx));
            prop_assert_eq!(key(stage, &next), scratch(stage, &next));
            prop_assert_eq!(key(plain, &next), scratch(plain, &next));
        }

        /// The digests are invisible in the JSON: a keyed send writes the JSON of the same send
        /// without them, and reads back as an equal send with the same key.
        #[test]
        fn json_round_trips_without_the_digests(ctx in send()) {
            let agent = &*STAGE_AGENT;
            let first = key(agent, &ctx);
            let text = serde_json::to_string(&ctx).expect("serialises");
            prop_assert_eq!(&text, &serde_json::to_string(&without_digests(&ctx)).expect("serialises"));
            let read = SendContext::from_json(text.as_bytes(), "send.json").expect("reads");
            prop_assert_eq!(&read, &ctx);
            prop_assert_eq!(key(agent, &read), first);
            let value: SendContext = serde_json::from_value(serde_json::to_value(&ctx).expect("serialises")).expect("reads");
            prop_assert_eq!(key(agent, &value), first);
        }
    }

    #[test]
    fn mutable_access_drops_the_digest_and_a_clone_keeps_it() {
        let mut fact = Fact::new(vec![1u8, 2]);
        let digest = fact.digest(Scope::SKILLS);
        assert_eq!(fact.memo.get().map(|memo| memo.key), Some(digest));
        assert_eq!(fact.clone().memo.get().map(|memo| memo.key), Some(digest));
        fact.push(3);
        assert!(fact.memo.get().is_none());
        assert_ne!(fact.digest(Scope::SKILLS), digest);
        for item in &mut fact {
            *item *= 2;
        }
        assert!(fact.memo.get().is_none());
        assert_eq!(
            fact.digest(Scope::SKILLS),
            Fact::new(vec![2u8, 4, 6]).digest(Scope::SKILLS)
        );
    }

    #[test]
    fn inputs_of_the_same_bytes_have_different_digests() {
        let scopes = [
            Scope::SETTINGS,
            Scope::PROJECT,
            Scope::SKILLS,
            Scope::CONTEXT_FILES,
            Scope::TENANT_INSTRUCTIONS,
            Scope::AUTO_INJECTIONS,
        ];
        let digests: std::collections::BTreeSet<Key> = scopes
            .iter()
            .map(|scope| Fact::new(Vec::<u8>::new()).digest(*scope))
            .collect();
        assert_eq!(digests.len(), scopes.len());
        // A fact asked in a second scope computes that digest and keeps the first.
        let fact = Fact::new(Vec::<u8>::new());
        let skills = fact.digest(Scope::SKILLS);
        assert_eq!(
            fact.digest(Scope::CONTEXT_FILES),
            Fact::new(Vec::<u8>::new()).digest(Scope::CONTEXT_FILES)
        );
        assert_eq!(
            fact.memo.get().map(|memo| (memo.scope, memo.key)),
            Some((Scope::SKILLS, skills))
        );
    }

    /// A fact reads, writes, prints and describes itself (JSON Schema) as its value.
    #[test]
    fn a_fact_is_its_value_outside() {
        fn same_schema<T: JsonSchema>() {
            assert_eq!(schemars::schema_for!(Fact<T>), schemars::schema_for!(T));
        }
        same_schema::<BTreeMap<String, Value>>();
        same_schema::<Option<Project>>();
        same_schema::<Vec<Skill>>();
        same_schema::<Vec<ContextFile>>();
        same_schema::<Option<TenantInstructions>>();
        let skills = vec![Skill {
            name: "a".into(),
            slug: None,
            description: "b".into(),
            instructions: String::new(),
            tags: vec![],
            disable_model_invocation: false,
            location: None,
            sites: vec![],
        }];
        let fact = Fact::from(skills.clone());
        fact.digest(Scope::SKILLS);
        assert_eq!(
            serde_json::to_value(&fact).unwrap(),
            serde_json::to_value(&skills).unwrap()
        );
        assert_eq!(format!("{fact:?}"), format!("{skills:?}"));
        let read: Fact<Vec<Skill>> =
            serde_json::from_value(serde_json::to_value(&skills).unwrap()).unwrap();
        assert_eq!(read, fact);
        assert!(read.memo.get().is_none());
        assert_eq!(read.into_inner(), skills);
    }
}
