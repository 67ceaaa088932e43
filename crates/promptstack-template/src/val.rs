//! The values the engine-free evaluators compute with, and the context they read.
//!
//! A planned template or a simple gate reads the send where it lies: a skill's name, a context
//! file's content or a variable's JSON are borrowed, not copied into template values first. A
//! [`Val`] is such a borrowed value, or a template [`Value`] for everything else (literals, the
//! roots built as values, what an operation made). Every operation the evaluators use has a path
//! for the borrowed kinds that gives what minijinja gives for the value [`Val::to_value`] makes of
//! it; anything else is done on that value, by minijinja's own operations. The tests of `gate` and
//! `plan` compare both evaluators, over borrowed and built roots, with minijinja.
//!
//! A [`Context`] holds one render's roots as [`Val`]s, and makes the one template value minijinja
//! renders against only when a template or gate needs the engine.

use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

use minijinja::value::{Value, ValueKind};

use crate::context::{ContextFile, Now, Skill};
use crate::spec::{Shape, Stability, VariableSpec};

/// The `tools` root, read where it lies: the offered tools by name, each tool's value made once
/// by the implementation. The core's `Toolset` is the one implementation; it wraps the core's
/// tool records, so the layer names it through this trait rather than depend on the core.
pub trait ToolsRoot: std::fmt::Debug {
    /// The whole root as a template value: a map from each tool's name to its value.
    fn value(&self) -> Value;
    /// One tool's value, as [`ToolsRoot::value`] holds it; `None` for a name the root does not
    /// hold.
    fn tool(&self, name: &str) -> Option<Value>;
    /// How many tools the root holds.
    fn count(&self) -> usize;
    /// Whether the root holds a tool of this name.
    fn contains(&self, name: &str) -> bool;
}

/// A value an evaluator reads or makes: borrowed from the send where it can be.
#[derive(Debug, Clone)]
pub enum Val<'a> {
    /// A template value: a literal, a root built as a value, or what an operation made.
    Value(Value),
    /// A string of the send.
    Str(&'a str),
    /// A JSON list or map of the send (its strings are [`Val::Str`], its scalars [`Val::Value`]).
    Json(&'a serde_json::Value),
    /// A list of the send's strings (a skill's tags or sites).
    Strs(&'a [String]),
    /// The `variables` root.
    Variables(Variables<'a>),
    /// The `skills` root: the send's skills, of which only the visible ones are items.
    Skills(&'a [Skill]),
    /// One visible skill, as the `skills` root shows it.
    Skill(&'a Skill),
    /// The `tools` root: the offered tools by name (of a toolset of the agent's own tools).
    Tools(&'a dyn ToolsRoot),
    /// The `context_files` root.
    Files(&'a [ContextFile]),
    /// One context file.
    File(&'a ContextFile),
    /// The `now` root: the user's wall clock, its fields formatted when read.
    Now(&'a Now),
    /// A list an expression made (a list literal, `+` of lists, a filter's result).
    List(Rc<[Val<'a>]>),
}

/// The variables an agent declares, in the spec's order (by name), as the evaluators resolve
/// `variables.NAME` when they are compiled: each name to its place in every [`VariableFacts`]
/// of a send to that agent, with its stability.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    /// Tells the places of one agent's declarations from another's: a [`VariableFacts`] is read
    /// by place only when it was made from the same declarations. Zero is no agent's.
    table: u32,
    /// The declarations, in order.
    names: Vec<Declaration>,
    /// The names of the roots an indexed context holds, by index (see [`Context::of_roots`]).
    roots: &'static [&'static str],
}

/// One declared variable as a send's facts are made from it.
#[derive(Debug, Clone)]
struct Declaration {
    name: Box<str>,
    stable: bool,
    default: Option<serde_json::Value>,
    shape: Option<Shape>,
}

/// The place of a declared variable, found when an expression is compiled (see [`Declared`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VariableSlot {
    table: u32,
    index: u32,
    stable: bool,
}

impl Declared {
    /// The declarations of a spec's variables, with a table of their own.
    pub(crate) fn of(declared: &BTreeMap<String, VariableSpec>) -> Self {
        static TABLES: AtomicU32 = AtomicU32::new(1);
        Self {
            // Never zero: a wrapped counter skips it (some four billion agents later).
            table: TABLES.fetch_add(1, Ordering::Relaxed).max(1),
            roots: &[],
            names: declared
                .iter()
                .map(|(name, spec)| Declaration {
                    name: name.as_str().into(),
                    stable: spec.stability == Stability::Stable,
                    default: spec.default.clone(),
                    shape: spec.shape,
                })
                .collect(),
        }
    }

    /// Declares the roots' names, by the index an indexed context keeps each root's place under.
    pub(crate) fn with_roots(mut self, roots: &'static [&'static str]) -> Self {
        self.roots = roots;
        self
    }

    /// The index of a root's name (see [`Declared::with_roots`]).
    pub(crate) fn root_index(&self, name: &str) -> Option<u8> {
        let index = self.roots.iter().position(|root| *root == name)?;
        u8::try_from(index)
            .ok()
            .filter(|i| usize::from(*i) < ROOT_INDICES)
    }

    /// The place of a declared variable; `None` for a name the spec does not declare (read by
    /// name, absent) and for declarations of no agent.
    fn slot(&self, name: &str) -> Option<VariableSlot> {
        if self.table == 0 {
            return None;
        }
        let index = self.names.iter().position(|known| &*known.name == name)?;
        Some(VariableSlot {
            table: self.table,
            index: u32::try_from(index).ok()?,
            stable: self.names.get(index)?.stable,
        })
    }
}

/// The most declared variables whose values a send keeps without an allocation.
const INLINE_VARIABLES: usize = 16;

/// What a send holds for each variable its agent declares, made once per assembly in one pass
/// over the declarations and the send's variables (both in name order): the send's value, else
/// the default, else nothing. The evaluators read a variable by the place its name was compiled
/// to (see [`Declared`]); the same pass notes whether the send sets a variable the spec does not
/// declare, and the first sent value that does not have its declared shape.
#[derive(Debug)]
pub struct VariableFacts<'a> {
    table: u32,
    declared: &'a BTreeMap<String, VariableSpec>,
    sent: &'a BTreeMap<String, serde_json::Value>,
    values: Places<'a>,
    undeclared: bool,
    misfit: Option<(&'a str, &'a serde_json::Value)>,
}

/// The values of [`VariableFacts`], by place.
#[derive(Debug)]
enum Places<'a> {
    Inline([Option<&'a serde_json::Value>; INLINE_VARIABLES]),
    Heap(Vec<Option<&'a serde_json::Value>>),
}

impl<'a> VariableFacts<'a> {
    /// The facts of a send's variables: made from the compiled declarations, read by their
    /// places; `spec` (the same declarations, as the spec holds them) serves reads by name.
    /// Declarations of no agent (`Declared::default()`) give facts read by name only.
    #[inline]
    pub fn new(
        declared: &'a Declared,
        spec: &'a BTreeMap<String, VariableSpec>,
        sent: &'a BTreeMap<String, serde_json::Value>,
    ) -> Self {
        let mut values = if declared.names.len() <= INLINE_VARIABLES {
            Places::Inline([None; INLINE_VARIABLES])
        } else {
            Places::Heap(vec![None; declared.names.len()])
        };
        let places = match &mut values {
            Places::Inline(places) => &mut places[..],
            Places::Heap(places) => &mut places[..],
        };
        // One merge of two lists in name order: each name of the send is compared with the
        // declarations until its own is found or passed (then it is undeclared). Names are
        // told apart by their first bytes where they can be, as most are.
        let mut sent_entries = sent.iter();
        let mut next = sent_entries.next();
        let mut undeclared = false;
        let mut misfit = None;
        for (declaration, place) in declared.names.iter().zip(places.iter_mut()) {
            let name = declaration.name.as_bytes();
            let mut value = declaration.default.as_ref();
            while let Some((key, sent_value)) = next {
                let key = key.as_bytes();
                let order = match (key.first(), name.first()) {
                    (Some(a), Some(b)) if a != b => a.cmp(b),
                    _ => key.cmp(name),
                };
                match order {
                    std::cmp::Ordering::Less => undeclared = true,
                    std::cmp::Ordering::Equal => {
                        value = Some(sent_value);
                        if misfit.is_none()
                            && declaration
                                .shape
                                .is_some_and(|s| s.mismatch(sent_value).is_some())
                        {
                            misfit = Some((&*declaration.name, sent_value));
                        }
                    }
                    std::cmp::Ordering::Greater => break,
                }
                next = sent_entries.next();
                if order == std::cmp::Ordering::Equal {
                    break;
                }
            }
            *place = value;
        }
        if declared.table == 0 {
            // Facts read by name only still say what the pass found.
            undeclared = sent.keys().any(|name| named_entry(spec, name).is_none());
            misfit = spec.iter().find_map(|(name, variable)| {
                let value = named_entry(sent, name)?;
                let shape = variable.shape?;
                shape.mismatch(value).map(|_| (name.as_str(), value))
            });
            next = None;
        }
        Self {
            table: declared.table,
            declared: spec,
            sent,
            values,
            undeclared: undeclared || next.is_some(),
            misfit,
        }
    }

    /// The first variable, in name order, whose sent value does not have the shape the spec
    /// declares, with that value.
    #[inline]
    pub fn misfit(&self) -> Option<(&'a str, &'a serde_json::Value)> {
        self.misfit
    }

    /// Whether the send sets a variable the spec does not declare.
    #[inline]
    pub fn any_undeclared(&self) -> bool {
        self.undeclared
    }

    /// The value at a place compiled for this table; `None` (read by name) for another's.
    #[inline]
    fn at(&self, slot: VariableSlot) -> Option<Option<&'a serde_json::Value>> {
        if slot.table != self.table {
            return None;
        }
        let index = slot.index as usize;
        match &self.values {
            Places::Inline(places) => places.get(index).copied(),
            Places::Heap(places) => places.get(index).copied(),
        }
    }
}

/// The `variables` root as the send holds it: every variable the spec declares (of the stable
/// ones only, in a stable render) with the send's value or else its default; a variable with
/// neither is absent.
#[derive(Debug, Clone, Copy)]
pub struct Variables<'a> {
    /// What the send holds for each declared variable.
    pub facts: &'a VariableFacts<'a>,
    /// Whether only the stable variables are present (in a stable render).
    pub only_stable: bool,
}

impl<'a> Variables<'a> {
    /// The value of one variable, if it is present.
    pub(crate) fn get(&self, name: &str) -> Option<&'a serde_json::Value> {
        let spec = named_entry(self.facts.declared, name)?;
        if self.only_stable && spec.stability != Stability::Stable {
            return None;
        }
        named_entry(self.facts.sent, name).or(spec.default.as_ref())
    }

    /// The value of the variable an attribute names: by the place it was compiled to when it
    /// has one of these facts' table, else by name.
    #[inline]
    pub(crate) fn read(&self, attribute: &Attribute) -> Option<&'a serde_json::Value> {
        if let Some(slot) = attribute.variable
            && let Some(value) = self.facts.at(slot)
        {
            debug_assert_eq!(value, self.facts_by_name(&attribute.name));
            return if self.only_stable && !slot.stable {
                None
            } else {
                value
            };
        }
        self.get(&attribute.name)
    }

    /// The send's value or the default of a variable, whatever its stability (for the check
    /// of [`Variables::read`]).
    fn facts_by_name(&self, name: &str) -> Option<&'a serde_json::Value> {
        let spec = named_entry(self.facts.declared, name)?;
        named_entry(self.facts.sent, name).or(spec.default.as_ref())
    }

    /// Every present variable, in the spec's order.
    fn present(&self) -> impl Iterator<Item = (&'a str, &'a serde_json::Value)> + '_ {
        self.facts
            .declared
            .iter()
            .filter_map(|(name, spec)| Some((name.as_str(), self.value_of(name, spec)?)))
    }

    /// The value of a declared variable: the send's, else the default; none for a volatile one
    /// in a stable render.
    fn value_of(&self, name: &str, spec: &'a VariableSpec) -> Option<&'a serde_json::Value> {
        if self.only_stable && spec.stability != Stability::Stable {
            return None;
        }
        named_entry(self.facts.sent, name).or(spec.default.as_ref())
    }

    /// The root as a template value.
    pub(crate) fn to_value(self) -> Value {
        // Names up to 22 bytes are kept inline by the template value, without an allocation.
        Value::from_pairs(
            self.present()
                .map(|(name, value)| (name, super::json_value(value))),
        )
    }
}

/// The entry of a JSON map: a short map is searched in order (comparing lengths and first bytes
/// first, most keys are told apart without comparing the rest), a long one through its tree.
#[inline]
fn entry<'a>(
    map: &'a serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Option<&'a serde_json::Value> {
    by_name(map.len(), map.iter(), || map.get(name), name)
}

/// A field of a skill as the `skills` root shows it.
#[inline]
fn skill_field(skill: &Skill, field: Field) -> Val<'_> {
    match field {
        Field::Name => Val::Str(&skill.name),
        Field::Slug => Val::Str(skill.slug()),
        Field::Description => Val::Str(&skill.description),
        Field::Instructions => Val::Str(&skill.instructions),
        Field::Tags => Val::Strs(&skill.tags),
        Field::Location => Val::text(skill.location.as_deref()),
        Field::Sites => Val::Strs(&skill.sites),
        Field::Path | Field::Content | Field::Other => Val::undefined(),
    }
}

/// A field of a context file.
#[inline]
fn file_field(file: &ContextFile, field: Field) -> Val<'_> {
    match field {
        Field::Path => Val::Str(&file.path),
        Field::Content => Val::Str(&file.content),
        _ => Val::undefined(),
    }
}

/// The fields of a skill as the `skills` root shows it.
const SKILL_FIELDS: usize = 7;

/// The fields of a context file.
const FILE_FIELDS: usize = 2;

/// An attribute name as a template writes it (`skill.name`), with the field of a borrowed record
/// it names, found once when the expression is compiled rather than by comparing names on every
/// read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attribute {
    name: Box<str>,
    field: Field,
    /// The place of the declared variable of this name, read when the attribute is read from
    /// the `variables` root.
    variable: Option<VariableSlot>,
}

/// The fields of the borrowed records (a skill, a context file), and every other name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Slug,
    Description,
    Instructions,
    Tags,
    Location,
    Sites,
    Path,
    Content,
    Other,
}

impl Field {
    /// The field a name names.
    fn of(name: &str) -> Self {
        match name {
            "name" => Field::Name,
            "slug" => Field::Slug,
            "description" => Field::Description,
            "instructions" => Field::Instructions,
            "tags" => Field::Tags,
            "location" => Field::Location,
            "sites" => Field::Sites,
            "path" => Field::Path,
            "content" => Field::Content,
            _ => Field::Other,
        }
    }
}

impl Attribute {
    /// An attribute, resolved against the declared variables in case it is read from the
    /// `variables` root.
    pub(crate) fn new(name: &str, declared: &Declared) -> Self {
        Self {
            name: name.into(),
            field: Field::of(name),
            variable: declared.slot(name),
        }
    }
}

impl<'a> Val<'a> {
    /// A JSON value of the send: strings borrowed, lists and maps borrowed whole, scalars made.
    #[inline]
    pub(crate) fn json(value: &'a serde_json::Value) -> Self {
        match value {
            serde_json::Value::String(text) => Val::Str(text),
            serde_json::Value::Array(_) | serde_json::Value::Object(_) => Val::Json(value),
            scalar => Val::Value(super::json_value(scalar)),
        }
    }

    /// An optional string of the send: the string, or `none`.
    #[inline]
    pub fn text(text: Option<&'a str>) -> Self {
        text.map_or_else(|| Val::Value(Value::from(())), Val::Str)
    }

    /// The undefined value.
    #[inline]
    pub(crate) fn undefined() -> Self {
        Val::Value(Value::UNDEFINED)
    }

    /// The template value minijinja would see for this value.
    pub fn to_value(&self) -> Value {
        match self {
            Val::Value(value) => value.clone(),
            Val::Str(text) => Value::from(*text),
            Val::Json(json) => super::json_value(json),
            Val::Strs(texts) => Value::from_object(
                texts
                    .iter()
                    .map(|text| Value::from(text.as_str()))
                    .collect::<Vec<_>>(),
            ),
            Val::Variables(variables) => variables.to_value(),
            Val::Skills(skills) => super::skills_value(skills),
            Val::Skill(skill) => super::skill_value(skill),
            Val::Tools(toolset) => toolset.value(),
            Val::Files(files) => super::to_value(files),
            Val::File(file) => super::to_value(file),
            Val::Now(now) => super::now_value(now),
            Val::List(items) => {
                Value::from_object(items.iter().map(Val::to_value).collect::<Vec<_>>())
            }
        }
    }

    /// The kind minijinja gives the value.
    #[inline]
    pub(crate) fn kind(&self) -> ValueKind {
        match self {
            Val::Value(value) => value.kind(),
            Val::Str(_) => ValueKind::String,
            Val::Json(serde_json::Value::Object(_))
            | Val::Variables(_)
            | Val::Skill(_)
            | Val::Tools(_)
            | Val::File(_)
            | Val::Now(_) => ValueKind::Map,
            Val::Json(_) | Val::Strs(_) | Val::Skills(_) | Val::Files(_) | Val::List(_) => {
                ValueKind::Seq
            }
        }
    }

    #[inline]
    pub(crate) fn is_undefined(&self) -> bool {
        matches!(self, Val::Value(value) if value.is_undefined())
    }

    #[inline]
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Val::Value(value) if value.is_none())
    }

    /// Whether minijinja would take the value for a tuple (which adds by its own rule).
    pub(crate) fn is_tuple(&self) -> bool {
        matches!(self, Val::Value(value) if value.is_tuple())
    }

    /// Whether the value is a string marked safe (only template values can be).
    pub(crate) fn is_safe(&self) -> bool {
        matches!(self, Val::Value(value) if value.is_safe())
    }

    /// The text of a string; `None` for any other kind.
    #[inline]
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(text) => Some(text),
            Val::Value(value) if value.kind() == ValueKind::String => value.as_str(),
            _ => None,
        }
    }

    /// Truthiness, as `Value::is_true` decides it (undefined is false; callers check it first).
    #[inline]
    pub(crate) fn is_true(&self) -> bool {
        match self {
            Val::Value(value) => value.is_true(),
            Val::Str(text) => !text.is_empty(),
            // A map or a list is true when it is not empty.
            _ => self.len().is_none_or(|len| len != 0),
        }
    }

    /// The length minijinja gives a container; `None` for other kinds (and for strings, whose
    /// length the evaluators never ask for).
    pub(crate) fn len(&self) -> Option<usize> {
        match self {
            Val::Value(value) => value.as_object().and_then(|_| value.len()),
            Val::Str(_) => None,
            Val::Json(serde_json::Value::Array(items)) => Some(items.len()),
            Val::Json(serde_json::Value::Object(map)) => Some(map.len()),
            Val::Json(_) => None,
            Val::Strs(texts) => Some(texts.len()),
            Val::Variables(variables) => Some(variables.present().count()),
            Val::Skills(skills) => Some(visible(skills).count()),
            Val::Skill(_) => Some(SKILL_FIELDS),
            Val::Tools(toolset) => Some(toolset.count()),
            Val::Files(files) => Some(files.len()),
            Val::File(_) => Some(FILE_FIELDS),
            Val::Now(_) => Some(super::NOW_FIELDS),
            Val::List(items) => Some(items.len()),
        }
    }

    /// `value.name`: `None` where minijinja fails (the evaluator then gives up); an absent
    /// attribute is the undefined value.
    pub(crate) fn attr(&self, name: &str) -> Option<Val<'a>> {
        self.named(name, None)
    }

    /// `value.name` of an attribute compiled with its field (see [`Val::attr`]).
    #[inline]
    pub(crate) fn field(&self, attribute: &Attribute) -> Option<Val<'a>> {
        if let Val::Variables(variables) = self {
            return Some(
                variables
                    .read(attribute)
                    .map_or_else(Val::undefined, Val::json),
            );
        }
        self.named(&attribute.name, Some(attribute.field))
    }

    /// `value.attribute` when it is a string of the send, read where it is: `Some` exactly where
    /// [`Val::field`] gives a [`Val::Str`], without making the value.
    #[inline]
    pub(crate) fn field_text(&self, attribute: &Attribute) -> Option<&'a str> {
        match *self {
            Val::Skill(skill) => skill_field(skill, attribute.field).as_text(),
            Val::File(file) => file_field(file, attribute.field).as_text(),
            Val::Json(serde_json::Value::Object(map)) => entry(map, &attribute.name)?.as_str(),
            Val::Variables(variables) => variables.read(attribute)?.as_str(),
            _ => None,
        }
    }

    /// The string of a [`Val::Str`].
    #[inline]
    pub(crate) fn as_text(&self) -> Option<&'a str> {
        match *self {
            Val::Str(text) => Some(text),
            _ => None,
        }
    }

    /// `value.name`, with the field `name` names when it is known.
    #[inline]
    fn named(&self, name: &str, field: Option<Field>) -> Option<Val<'a>> {
        let field = || field.unwrap_or_else(|| Field::of(name));
        Some(match self {
            Val::Value(value) => Val::Value(value.get_attr(name).ok()?),
            Val::Json(serde_json::Value::Object(map)) => {
                entry(map, name).map_or_else(Val::undefined, Val::json)
            }
            Val::Variables(variables) => variables.get(name).map_or_else(Val::undefined, Val::json),
            Val::Skill(skill) => skill_field(skill, field()),
            Val::File(file) => file_field(file, field()),
            Val::Tools(toolset) => toolset.tool(name).map_or_else(Val::undefined, Val::Value),
            Val::Now(now) => {
                super::now_field(now, false, name).map_or_else(Val::undefined, Val::Value)
            }
            other => Val::Value(other.to_value().get_attr(name).ok()?),
        })
    }

    /// `value[key]` of a map or a sequence: `None` where minijinja fails.
    pub(crate) fn item(&self, key: &Val<'a>) -> Option<Val<'a>> {
        if let Some(name) = key.as_str()
            && matches!(
                self,
                Val::Json(serde_json::Value::Object(_))
                    | Val::Variables(_)
                    | Val::Skill(_)
                    | Val::Tools(_)
                    | Val::File(_)
                    | Val::Now(_)
            )
        {
            return self.attr(name);
        }
        Some(Val::Value(self.to_value().get_item(&key.to_value()).ok()?))
    }

    /// The items of a sequence, in order, without collecting them; `None` for any other kind.
    pub(crate) fn items(&self) -> Option<Items<'_, 'a>> {
        Some(match self {
            Val::Value(value) if value.kind() == ValueKind::Seq => {
                Items::Value(value.try_iter().ok()?)
            }
            Val::Json(serde_json::Value::Array(items)) => Items::Json(items.iter()),
            Val::Strs(texts) => Items::Strs(texts.iter()),
            Val::Skills(skills) => Items::Skills(skills.iter()),
            Val::Files(files) => Items::Files(files.iter()),
            Val::List(items) => Items::List(items.iter()),
            _ => return None,
        })
    }

    /// Whether a map holds `key` (a map of the context never holds an undefined value); `None`
    /// when the value is not a map or minijinja fails.
    pub(crate) fn has_key(&self, key: &Val<'a>) -> Option<bool> {
        if let Some(name) = key.as_str() {
            match self {
                Val::Json(serde_json::Value::Object(map)) => {
                    return Some(entry(map, name).is_some());
                }
                Val::Variables(variables) => return Some(variables.get(name).is_some()),
                Val::Tools(toolset) => return Some(toolset.contains(name)),
                Val::Skill(_) | Val::File(_) | Val::Now(_) => {
                    return Some(!self.attr(name)?.is_undefined());
                }
                _ => {}
            }
        }
        let value = self.to_value();
        (value.kind() == ValueKind::Map)
            .then(|| value.get_item(&key.to_value()).ok())
            .flatten()
            .map(|item| !item.is_undefined())
    }
}

/// The items of a sequence (see [`Val::items`]).
pub(crate) enum Items<'v, 'a> {
    Value(minijinja::value::ValueIter),
    Json(std::slice::Iter<'a, serde_json::Value>),
    Strs(std::slice::Iter<'a, String>),
    /// Every skill, of which the visible ones are items.
    Skills(std::slice::Iter<'a, Skill>),
    Files(std::slice::Iter<'a, ContextFile>),
    List(std::slice::Iter<'v, Val<'a>>),
}

impl<'a> Iterator for Items<'_, 'a> {
    type Item = Val<'a>;

    #[inline]
    fn next(&mut self) -> Option<Val<'a>> {
        match self {
            Items::Value(items) => items.next().map(Val::Value),
            Items::Json(items) => items.next().map(Val::json),
            Items::Strs(texts) => texts.next().map(|text| Val::Str(text)),
            Items::Skills(skills) => skills.find(|skill| is_visible(skill)).map(Val::Skill),
            Items::Files(files) => files.next().map(Val::File),
            Items::List(items) => items.next().cloned(),
        }
    }
}

impl<'a> Items<'_, 'a> {
    /// Puts the next item in `slot` (where a loop keeps its variable), made in place rather than
    /// made and then moved there; `false`, the slot left as it was, when there is none.
    #[inline]
    pub(crate) fn next_into(&mut self, slot: &mut Option<Val<'a>>) -> bool {
        let made = match self {
            Items::Skills(skills) => skills
                .find(|skill| is_visible(skill))
                .map(|skill| *slot = Some(Val::Skill(skill))),
            Items::Files(files) => files.next().map(|file| *slot = Some(Val::File(file))),
            Items::Strs(texts) => texts.next().map(|text| *slot = Some(Val::Str(text))),
            Items::Json(items) => items.next().map(|item| *slot = Some(Val::json(item))),
            Items::Value(_) | Items::List(_) => self.next().map(|item| *slot = Some(item)),
        };
        made.is_some()
    }
}

impl PartialEq for Val<'_> {
    /// `==` as minijinja decides it: two strings by their text, anything else on the template
    /// values.
    fn eq(&self, other: &Self) -> bool {
        match (self.as_str(), other.as_str()) {
            (Some(left), Some(right)) => left == right,
            _ => self.to_value() == other.to_value(),
        }
    }
}

/// The skills a template may see: hidden skills never reach one, so no spec can leak them.
pub(crate) fn visible(skills: &[Skill]) -> impl Iterator<Item = &Skill> {
    skills.iter().filter(|skill| is_visible(skill))
}

/// Whether a template may see a skill (see [`visible`]).
fn is_visible(skill: &Skill) -> bool {
    !skill.disable_model_invocation
}

/// The name of the `variables` root (`root::VARIABLES` is this name: the roots' table is built
/// on the templates, not the other way round).
pub const VARIABLES: &str = "variables";

/// How many places a context keeps (see [`Context::slot`]).
const SLOTS: usize = 32;

/// The slot a name's place is kept in by every context (see [`Context::slot`]): from its length
/// and first byte, which tell every two roots' names apart. Other names may share a slot; a
/// kept place is checked against the name, so sharing costs a search, never a wrong value.
pub(crate) fn root_slot(name: &str) -> Option<u8> {
    let first = *name.as_bytes().first()?;
    let slot = (name.len().wrapping_mul(5) ^ usize::from(first)) % SLOTS;
    u8::try_from(slot).ok()
}

/// Whether two names are the same: the same text at the same address (the context's names are
/// the roots' own), else the same text, compared only when the lengths and first bytes agree
/// (which tells every two roots' names apart).
#[inline]
pub fn same_name(left: &str, right: &str) -> bool {
    std::ptr::eq(left, right)
        || (left.len() == right.len()
            && left.as_bytes().first() == right.as_bytes().first()
            && left == right)
}

/// A map's entry by name: a short map is searched in order with [`same_name`], which compares
/// few bytes, a long one through its tree.
#[inline]
pub fn named_entry<'m, V>(map: &'m BTreeMap<String, V>, name: &str) -> Option<&'m V> {
    by_name(map.len(), map.iter(), || map.get(name), name)
}

/// The entry of a map of `len` entries by name: searched in order (`entries`) with
/// [`same_name`] when the map is short, looked up in its tree (`tree`) when it is long.
#[inline]
fn by_name<'m, V: 'm>(
    len: usize,
    mut entries: impl Iterator<Item = (&'m String, &'m V)>,
    tree: impl FnOnce() -> Option<&'m V>,
    name: &str,
) -> Option<&'m V> {
    if len <= 16 {
        entries
            .find(|(key, _)| same_name(key, name))
            .map(|(_, value)| value)
    } else {
        tree()
    }
}

/// A slot that keeps no place.
const NOWHERE: u32 = u32::MAX;

/// How many roots an indexed context can keep by index (see [`Context::of_roots`]).
pub const ROOT_INDICES: usize = 24;

/// An index that keeps no place.
const NO_ROOT: u8 = u8::MAX;

/// The roots of one render, borrowed where they can be, and the template value minijinja renders
/// against, made on first need. What the engine made of the roots is kept: by the context when a
/// root joins it ([`Context::insert`]), and by the stable part ([`Context::values`]).
///
/// The evaluators read a root by its name's slot (see `root_slot`): its place among the roots
/// is found on the first read and kept, so later reads compare one name at most.
pub struct Context<'a> {
    roots: Vec<(&'static str, Val<'a>)>,
    /// The `variables` root when it is the send's (a [`Val::Variables`]), held apart as well:
    /// `variables.NAME` is the read gates and templates make most.
    variables: Option<Variables<'a>>,
    /// For a context made by [`Context::of_roots`], each root's place by its index; a name
    /// compiled to a root's index is then read without comparing names.
    indexed: Option<[u8; ROOT_INDICES]>,
    /// The place in `roots` of the root last read through each slot, or [`NOWHERE`].
    places: [Cell<u32>; SLOTS],
    value: OnceCell<Value>,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.roots.iter().map(|(name, _)| name))
            .finish()
    }
}

impl<'a> Context<'a> {
    /// A context of the given roots, each found by its name (see [`Context::of_roots`] for
    /// roots found by index).
    pub fn new(roots: impl IntoIterator<Item = (&'static str, Val<'a>)>) -> Self {
        // Room for as many roots as the iterator may give (the roots are a filtered list of
        // them, whose lower bound is zero) and one inserted later, so the vector never grows.
        let roots = roots.into_iter();
        let (least, most) = roots.size_hint();
        let mut all = Vec::with_capacity(most.unwrap_or(least) + 1);
        all.extend(roots);
        let variables = all.iter().find_map(|(name, root)| match root {
            Val::Variables(variables) if same_name(name, VARIABLES) => Some(*variables),
            _ => None,
        });
        Self {
            roots: all,
            indexed: None,
            variables,
            places: std::array::from_fn(|_| Cell::new(NOWHERE)),
            value: OnceCell::new(),
        }
    }

    /// A context of roots each given with its index among the names the expressions were
    /// compiled against (see `Declared::with_roots`): a read by index finds its root without
    /// comparing names, and a root the context lacks without a search.
    pub fn of_roots(roots: impl IntoIterator<Item = (u8, &'static str, Val<'a>)>) -> Self {
        let mut indexed = [NO_ROOT; ROOT_INDICES];
        let mut at = 0u8;
        let mut context = Self::new(roots.into_iter().map(|(index, name, root)| {
            if let Some(place) = indexed.get_mut(usize::from(index)) {
                *place = at;
            }
            at = at.saturating_add(1);
            (name, root)
        }));
        // More roots than an index can place (never: there are fewer than 256) are read by name.
        if context.roots.len() < usize::from(NO_ROOT) {
            context.indexed = Some(indexed);
        }
        context
    }

    /// Adds a root at a place (the `tools` root, once the tool gates, which do not see it, have
    /// been decided). If the engine already needed the context, the roots it made into template
    /// values are read as those from now on, so they are not made again.
    #[inline]
    pub fn insert(&mut self, at: usize, index: u8, name: &'static str, root: Val<'a>) {
        if let Some(value) = self.value.take() {
            for (name, root) in &mut self.roots {
                if !matches!(root, Val::Value(_))
                    && let Ok(built) = value.get_attr(name)
                {
                    *root = Val::Value(built);
                }
            }
            // Read as the value the engine made, like every other root.
            if !self
                .roots
                .iter()
                .any(|(_, root)| matches!(root, Val::Variables(_)))
            {
                self.variables = None;
            }
        }
        let at = at.min(self.roots.len());
        self.roots.insert(at, (name, root));
        if let Some(indexed) = &mut self.indexed {
            let place = u8::try_from(at)
                .ok()
                .filter(|_| self.roots.len() < usize::from(NO_ROOT));
            match place {
                Some(place) => {
                    for kept in indexed.iter_mut() {
                        if *kept != NO_ROOT && *kept >= place {
                            *kept += 1;
                        }
                    }
                    if let Some(slot) = indexed.get_mut(usize::from(index)) {
                        *slot = place;
                    }
                }
                None => self.indexed = None,
            }
        }
        // The roots after it moved.
        for place in &self.places {
            place.set(NOWHERE);
        }
    }

    /// The root of the name compiled to `index`, in an indexed context: `Some(None)` for a root
    /// it lacks; `None` for a context that is not indexed (read by name then).
    #[inline]
    pub(crate) fn at_root(&self, index: u8) -> Option<Option<&Val<'a>>> {
        let indexed = self.indexed.as_ref()?;
        let place = *indexed.get(usize::from(index))?;
        Some(self.roots.get(usize::from(place)).map(|(_, value)| value))
    }

    /// The `variables` root, when it is the send's variables.
    #[inline]
    pub(crate) fn variables(&self) -> Option<&Variables<'a>> {
        self.variables.as_ref()
    }

    /// The root of a name whose slot is `slot` (see [`root_slot`]); `None` for a root the
    /// context lacks.
    #[inline]
    pub(crate) fn slot(&self, slot: u8, name: &str) -> Option<&Val<'a>> {
        let place = self.places.get(usize::from(slot))?;
        if let Some((root, value)) = self.roots.get(place.get() as usize)
            && same_name(root, name)
        {
            return Some(value);
        }
        let found = self
            .roots
            .iter()
            .position(|(root, _)| same_name(root, name))?;
        // A place too far to keep (never in practice) is found again on the next read.
        if let Ok(at) = u32::try_from(found) {
            place.set(at);
        }
        self.roots.get(found).map(|(_, value)| value)
    }

    /// A root by name; `None` for a name that is not a root (it may be a global of the engine).
    pub(crate) fn root(&self, name: &str) -> Option<&Val<'a>> {
        self.roots
            .iter()
            .find(|(root, _)| *root == name)
            .map(|(_, value)| value)
    }

    /// The roots held as template values: those not borrowed from the send, and, if the engine
    /// needed the context, what it made of the others, for a stable part to keep (a later send's
    /// volatile renders reuse them).
    #[inline]
    pub fn values(&self) -> Vec<(&'static str, Value)> {
        let built = self.value.get();
        self.roots
            .iter()
            .filter_map(|(name, root)| match root {
                Val::Value(value) => Some((*name, value.clone())),
                _ => built
                    .and_then(|value| value.get_attr(name).ok())
                    .map(|value| (*name, value)),
            })
            .collect()
    }

    /// Whether the engine needed the context (its template value was made).
    #[inline]
    pub fn is_built(&self) -> bool {
        self.value.get().is_some()
    }

    /// The context as one template value, for minijinja.
    #[inline]
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            super::context_value(
                self.roots
                    .iter()
                    .map(|(name, value)| (*name, value.to_value())),
            )
        })
    }
}
