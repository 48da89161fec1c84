//! A JSON Schema validator for exactly the part of draft 2020-12 that the committed schemas use.
//!
//! The schemas that `schemars` generates for the declaration types use a small, fixed set of keywords:
//! `type`, `const`, `enum`, `minimum`, `maximum`, `minItems`, `maxItems`, `required`, `pattern`,
//! `properties`, `additionalProperties`, `items`, `prefixItems`, `oneOf` and `$ref` into the same document,
//! besides annotations such as `description` and `format` (which draft 2020-12 does not assert by default).
//! A schema that uses anything else is refused when it is compiled, so a change of the generated schemas can
//! never be ignored silently.
//!
//! The errors and their order follow the `jsonschema` crate (version 0.61), which validated the declarations
//! before: within one schema the keywords are checked cheapest first (the crate's priorities), the members of
//! an object in document order, and each message has the crate's wording. The differential test
//! `tests/structural_oracle.rs` holds the two to the same answers.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

use regex_lite::Regex;
use serde_json::{Map, Number, Value};

use crate::diagnostic::escape_token;

/// The only dialect the validator knows.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Keywords that annotate an instance and never make it invalid.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// ECMA-262 `\s`: tab to carriage return, space, every Unicode space separator, the line and paragraph
/// separators and the byte order mark. `regex-lite` knows only the ASCII ones, so the members are spelled
/// out (bare inside a class, since `regex-lite` does not nest classes).
const ECMA_SPACE: &str = r"\t-\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}";

/// A JSON type as the `type` keyword names it, with the bit the `jsonschema` crate gives it.
///
/// The crate lists the types of a failed `type` array in the order of these bits, not in the schema's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JsonType {
    Null = 1,
    Boolean = 2,
    Integer = 4,
    Number = 8,
    String = 16,
    Array = 32,
    Object = 64,
}

const ALL_TYPES: [JsonType; 7] = [
    JsonType::Null,
    JsonType::Boolean,
    JsonType::Integer,
    JsonType::Number,
    JsonType::String,
    JsonType::Array,
    JsonType::Object,
];

impl JsonType {
    fn name(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }

    fn parse(name: &str) -> Option<JsonType> {
        ALL_TYPES.into_iter().find(|json_type| json_type.name() == name)
    }
}

/// The types a `type` keyword allows, and whether the schema named one type or gave a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeSet {
    bits: u8,
    listed: bool,
}

impl TypeSet {
    fn contains(self, json_type: JsonType) -> bool {
        self.bits & json_type as u8 != 0
    }

    fn accepts(self, instance: &Value) -> bool {
        match instance {
            Value::Null => self.contains(JsonType::Null),
            Value::Bool(_) => self.contains(JsonType::Boolean),
            Value::Number(number) => {
                self.contains(JsonType::Number) || (self.contains(JsonType::Integer) && is_integer(number))
            }
            Value::String(_) => self.contains(JsonType::String),
            Value::Array(_) => self.contains(JsonType::Array),
            Value::Object(_) => self.contains(JsonType::Object),
        }
    }

    fn names(self) -> impl Iterator<Item = &'static str> {
        ALL_TYPES
            .into_iter()
            .filter(move |json_type| self.contains(*json_type))
            .map(JsonType::name)
    }
}

/// Integers are numbers without a fraction, including floats such as `1.0` (drafts 6 and later).
fn is_integer(number: &Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|float| float.fract() == 0.0)
}

/// One failed check: where in the instance, what failed, and the value that failed it.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaError<'a> {
    /// JSON pointer to the failing value.
    pub instance_path: String,
    pub instance: &'a Value,
    pub kind: ErrorKind,
}

/// What failed, with what the message needs.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// Members of a closed object that its schema does not declare, in document order.
    AdditionalProperties {
        unexpected: Vec<String>,
    },
    Const {
        expected: Value,
    },
    Enum {
        options: Value,
    },
    /// A value where the schema is `false` (here: an array item past the `prefixItems` with `items: false`).
    FalseSchema,
    MaxItems {
        limit: u64,
    },
    Maximum {
        limit: Value,
    },
    MinItems {
        limit: u64,
    },
    Minimum {
        limit: Value,
    },
    OneOfMultipleValid,
    OneOfNotValid,
    Pattern {
        pattern: String,
    },
    Required {
        property: String,
    },
    Type {
        types: TypeSet,
    },
}

impl ErrorKind {
    /// The keyword that failed, as the `jsonschema` crate names it.
    pub fn keyword(&self) -> &'static str {
        match self {
            ErrorKind::AdditionalProperties { .. } => "additionalProperties",
            ErrorKind::Const { .. } => "const",
            ErrorKind::Enum { .. } => "enum",
            ErrorKind::FalseSchema => "falseSchema",
            ErrorKind::MaxItems { .. } => "maxItems",
            ErrorKind::Maximum { .. } => "maximum",
            ErrorKind::MinItems { .. } => "minItems",
            ErrorKind::Minimum { .. } => "minimum",
            ErrorKind::OneOfMultipleValid | ErrorKind::OneOfNotValid => "oneOf",
            ErrorKind::Pattern { .. } => "pattern",
            ErrorKind::Required { .. } => "required",
            ErrorKind::Type { .. } => "type",
        }
    }
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The messages are worded as the `jsonschema` crate words them.
impl fmt::Display for SchemaError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let instance = self.instance;
        match &self.kind {
            ErrorKind::AdditionalProperties { unexpected } => {
                let names: Vec<String> = unexpected.iter().map(|name| format!("'{name}'")).collect();
                let verb = if unexpected.len() == 1 { "was" } else { "were" };
                write!(
                    f,
                    "Additional properties are not allowed ({} {verb} unexpected)",
                    names.join(", ")
                )
            }
            ErrorKind::Const { expected } => write!(f, "{expected} was expected"),
            ErrorKind::Enum { options } => write_enum_message(f, instance, options),
            ErrorKind::FalseSchema => write!(f, "False schema does not allow {instance}"),
            ErrorKind::MaxItems { limit } => {
                write!(f, "{instance} has more than {limit} item{}", plural(*limit))
            }
            ErrorKind::Maximum { limit } => write!(f, "{instance} is greater than the maximum of {limit}"),
            ErrorKind::MinItems { limit } => {
                write!(f, "{instance} has less than {limit} item{}", plural(*limit))
            }
            ErrorKind::Minimum { limit } => write!(f, "{instance} is less than the minimum of {limit}"),
            ErrorKind::OneOfMultipleValid => write!(
                f,
                "{instance} is valid under more than one of the schemas listed in the 'oneOf' keyword"
            ),
            ErrorKind::OneOfNotValid => write!(
                f,
                "{instance} is not valid under any of the schemas listed in the 'oneOf' keyword"
            ),
            ErrorKind::Pattern { pattern } => write!(f, "{instance} does not match \"{pattern}\""),
            ErrorKind::Required { property } => write!(f, "{} is a required property", Value::from(property.as_str())),
            ErrorKind::Type { types } => {
                let names: Vec<String> = types.names().map(|name| format!("\"{name}\"")).collect();
                if types.listed {
                    write!(f, "{instance} is not of types {}", names.join(", "))
                } else {
                    write!(f, "{instance} is not of type {}", names.join(", "))
                }
            }
        }
    }
}

/// At most three options are listed; past that, two and a count of the others.
fn write_enum_message(f: &mut fmt::Formatter<'_>, instance: &Value, options: &Value) -> fmt::Result {
    let options = options.as_array().map_or(&[][..], Vec::as_slice);
    write!(f, "{instance} is not one of ")?;
    if options.len() <= 3 {
        for (index, option) in options.iter().enumerate() {
            if index == 0 {
                write!(f, "{option}")?;
            } else if index + 1 == options.len() {
                write!(f, " or {option}")?;
            } else {
                write!(f, ", {option}")?;
            }
        }
        Ok(())
    } else {
        for (index, option) in options.iter().take(2).enumerate() {
            if index == 0 {
                write!(f, "{option}")?;
            } else {
                write!(f, ", {option}")?;
            }
        }
        write!(f, " or {} other candidates", options.len() - 2)
    }
}

/// What an object schema does with members that `properties` does not declare.
#[derive(Debug)]
enum Additional {
    Allowed,
    Refused,
    Schema(usize),
}

/// One compiled keyword (`properties` and `additionalProperties` together, as the crate fuses them).
#[derive(Debug)]
enum Check {
    Type(TypeSet),
    Const(Value),
    Enum(Value),
    Minimum(Value),
    Maximum(Value),
    MinItems(u64),
    MaxItems(u64),
    Required(Vec<String>),
    Pattern {
        source: String,
        regex: Regex,
    },
    Object {
        properties: Vec<(String, usize)>,
        additional: Additional,
    },
    Items {
        skip: usize,
        node: usize,
    },
    PrefixItems(Vec<usize>),
    OneOf(Vec<usize>),
    Ref(usize),
}

impl Check {
    /// The order in which the `jsonschema` crate runs the keywords of one schema, cheapest first.
    fn priority(&self) -> u8 {
        match self {
            Check::Type(_) => 1,
            Check::Const(_) => 5,
            Check::Enum(_) => 6,
            Check::Minimum(_) => 10,
            Check::Maximum(_) => 11,
            Check::MinItems(_) => 22,
            Check::MaxItems(_) => 23,
            Check::Required(_) => 26,
            Check::Pattern { .. } => 30,
            Check::Object { .. } => 42,
            Check::Items { .. } => 44,
            Check::PrefixItems(_) => 45,
            Check::OneOf(_) => 52,
            Check::Ref(_) => 70,
        }
    }
}

/// A compiled schema: `true`, `false`, or keywords in the order they run.
#[derive(Debug)]
enum Node {
    Anything,
    Nothing,
    Checks(Vec<Check>),
}

/// A compiled JSON Schema document.
#[derive(Debug)]
pub struct Validator {
    nodes: Vec<Node>,
    root: usize,
}

impl Validator {
    /// Compiles a schema document, or says which part of it is outside the supported subset.
    pub fn compile(schema: &Value) -> Result<Validator, String> {
        let mut compiler = Compiler {
            document: schema,
            nodes: Vec::new(),
            ids: HashMap::new(),
        };
        let root = compiler.node_at("")?;
        let nodes = compiler
            .nodes
            .into_iter()
            .collect::<Option<Vec<Node>>>()
            .ok_or_else(|| "a subschema was left uncompiled".to_string())?;
        let validator = Validator { nodes, root };
        validator.refuse_recursion()?;
        Ok(validator)
    }

    /// Every error of `instance`, in the order the `jsonschema` crate reports them.
    pub fn errors<'a>(&self, instance: &'a Value) -> Vec<SchemaError<'a>> {
        let mut errors = Errors {
            found: Vec::new(),
            any: false,
            only_whether: false,
        };
        self.collect(self.root, instance, &Location::Root, &mut errors);
        errors.found
    }

    fn is_valid(&self, node: usize, instance: &Value) -> bool {
        let mut errors = Errors {
            found: Vec::new(),
            any: false,
            only_whether: true,
        };
        self.collect(node, instance, &Location::Root, &mut errors);
        !errors.any
    }

    /// A schema that reaches itself could recurse without end; none of the committed schemas does.
    fn refuse_recursion(&self) -> Result<(), String> {
        // Each node is unvisited (0), on the current path (1) or done (2).
        let mut state = vec![0u8; self.nodes.len()];
        let mut stack = vec![(self.root, false)];
        while let Some((node, leaving)) = stack.pop() {
            if leaving {
                state[node] = 2;
                continue;
            }
            match state[node] {
                1 => return Err("recursive schemas are not supported".to_string()),
                2 => continue,
                _ => {}
            }
            state[node] = 1;
            stack.push((node, true));
            for child in self.children(node) {
                match state[child] {
                    1 => return Err("recursive schemas are not supported".to_string()),
                    0 => stack.push((child, false)),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn children(&self, node: usize) -> Vec<usize> {
        let Node::Checks(checks) = &self.nodes[node] else {
            return Vec::new();
        };
        let mut children = Vec::new();
        for check in checks {
            match check {
                Check::Object { properties, additional } => {
                    children.extend(properties.iter().map(|(_, child)| *child));
                    if let Additional::Schema(child) = additional {
                        children.push(*child);
                    }
                }
                Check::Items { node, .. } | Check::Ref(node) => children.push(*node),
                Check::PrefixItems(nodes) | Check::OneOf(nodes) => children.extend(nodes.iter().copied()),
                _ => {}
            }
        }
        children
    }

    fn collect<'a>(&self, node: usize, instance: &'a Value, path: &Location<'_>, errors: &mut Errors<'a>) {
        let checks = match &self.nodes[node] {
            Node::Anything => return,
            Node::Nothing => {
                errors.report(path, instance, || ErrorKind::FalseSchema);
                return;
            }
            Node::Checks(checks) => checks,
        };
        for check in checks {
            if errors.settled() {
                return;
            }
            self.check(check, instance, path, errors);
        }
    }

    fn check<'a>(&self, check: &Check, instance: &'a Value, path: &Location<'_>, errors: &mut Errors<'a>) {
        match check {
            Check::Type(types) => {
                if !types.accepts(instance) {
                    errors.report(path, instance, || ErrorKind::Type { types: *types });
                }
            }
            Check::Const(expected) => {
                if !json_equal(instance, expected) {
                    errors.report(path, instance, || ErrorKind::Const {
                        expected: expected.clone(),
                    });
                }
            }
            Check::Enum(options) => {
                let listed = options
                    .as_array()
                    .is_some_and(|options| options.iter().any(|option| json_equal(instance, option)));
                if !listed {
                    errors.report(path, instance, || ErrorKind::Enum {
                        options: options.clone(),
                    });
                }
            }
            Check::Minimum(limit) => {
                if compare_numbers(instance, limit) == Some(Ordering::Less) {
                    errors.report(path, instance, || ErrorKind::Minimum { limit: limit.clone() });
                }
            }
            Check::Maximum(limit) => {
                if compare_numbers(instance, limit) == Some(Ordering::Greater) {
                    errors.report(path, instance, || ErrorKind::Maximum { limit: limit.clone() });
                }
            }
            Check::MinItems(limit) => {
                if let Value::Array(items) = instance
                    && (items.len() as u64) < *limit
                {
                    errors.report(path, instance, || ErrorKind::MinItems { limit: *limit });
                }
            }
            Check::MaxItems(limit) => {
                if let Value::Array(items) = instance
                    && (items.len() as u64) > *limit
                {
                    errors.report(path, instance, || ErrorKind::MaxItems { limit: *limit });
                }
            }
            Check::Required(names) => {
                if let Value::Object(members) = instance {
                    for name in names.iter().filter(|name| !members.contains_key(name.as_str())) {
                        errors.report(path, instance, || ErrorKind::Required { property: name.clone() });
                    }
                }
            }
            Check::Pattern { source, regex } => {
                if let Value::String(text) = instance
                    && !regex.is_match(text)
                {
                    errors.report(path, instance, || ErrorKind::Pattern {
                        pattern: source.clone(),
                    });
                }
            }
            Check::Object { properties, additional } => {
                if let Value::Object(members) = instance {
                    self.check_members(members, properties, additional, instance, path, errors);
                }
            }
            Check::Items { skip, node } => {
                if let Value::Array(items) = instance {
                    for (index, item) in items.iter().enumerate().skip(*skip) {
                        self.collect(*node, item, &Location::Index(path, index), errors);
                    }
                }
            }
            Check::PrefixItems(nodes) => {
                if let Value::Array(items) = instance {
                    for (index, (item, node)) in items.iter().zip(nodes).enumerate() {
                        self.collect(*node, item, &Location::Index(path, index), errors);
                    }
                }
            }
            Check::OneOf(nodes) => {
                let valid = nodes.iter().filter(|node| self.is_valid(**node, instance)).count();
                match valid {
                    1 => {}
                    0 => errors.report(path, instance, || ErrorKind::OneOfNotValid),
                    _ => errors.report(path, instance, || ErrorKind::OneOfMultipleValid),
                }
            }
            Check::Ref(node) => self.collect(*node, instance, path, errors),
        }
    }

    /// Declared members are checked in document order; undeclared ones are reported together after them.
    fn check_members<'a>(
        &self,
        members: &'a Map<String, Value>,
        properties: &[(String, usize)],
        additional: &Additional,
        instance: &'a Value,
        path: &Location<'_>,
        errors: &mut Errors<'a>,
    ) {
        let mut unexpected = Vec::new();
        for (name, value) in members {
            let declared = properties
                .iter()
                .find(|(declared, _)| declared == name)
                .map(|(_, node)| *node);
            match (declared, additional) {
                (Some(node), _) | (None, &Additional::Schema(node)) => {
                    self.collect(node, value, &Location::Key(path, name), errors);
                }
                (None, Additional::Allowed) => {}
                (None, Additional::Refused) => unexpected.push(name.clone()),
            }
        }
        if !unexpected.is_empty() {
            errors.report(path, instance, || ErrorKind::AdditionalProperties { unexpected });
        }
    }
}

/// Where the validator is in the instance; turned into a JSON pointer only when an error is reported there.
#[derive(Clone, Copy)]
enum Location<'p> {
    Root,
    Key(&'p Location<'p>, &'p str),
    Index(&'p Location<'p>, usize),
}

impl Location<'_> {
    fn pointer(&self) -> String {
        let mut tokens = Vec::new();
        let mut here = self;
        loop {
            match here {
                Location::Root => break,
                Location::Key(parent, key) => {
                    tokens.push(escape_token(key));
                    here = parent;
                }
                Location::Index(parent, index) => {
                    tokens.push(index.to_string());
                    here = parent;
                }
            }
        }
        tokens.iter().rev().fold(String::new(), |mut pointer, token| {
            pointer.push('/');
            pointer.push_str(token);
            pointer
        })
    }
}

/// Where the errors go: kept, or only noted when all that matters is whether there is one (`oneOf`).
struct Errors<'a> {
    found: Vec<SchemaError<'a>>,
    any: bool,
    only_whether: bool,
}

impl<'a> Errors<'a> {
    fn report(&mut self, path: &Location<'_>, instance: &'a Value, kind: impl FnOnce() -> ErrorKind) {
        self.any = true;
        if !self.only_whether {
            self.found.push(SchemaError {
                instance_path: path.pointer(),
                instance,
                kind: kind(),
            });
        }
    }

    /// Whether nothing further can change the answer.
    fn settled(&self) -> bool {
        self.only_whether && self.any
    }
}

/// JSON Schema equality: numbers by value (`1` equals `1.0`), objects whatever the order of their members.
fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(_), Value::Number(_)) => compare_numbers(left, right) == Some(Ordering::Equal),
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(left, right)| json_equal(left, right))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, value)| right.get(key).is_some_and(|other| json_equal(value, other)))
        }
        _ => left == right,
    }
}

/// Exact comparison of two JSON numbers of any representation; `None` unless both are numbers.
fn compare_numbers(left: &Value, right: &Value) -> Option<Ordering> {
    let (Value::Number(left), Value::Number(right)) = (left, right) else {
        return None;
    };
    match (exact_integer(left), exact_integer(right)) {
        (Some(left), Some(right)) => Some(left.cmp(&right)),
        (Some(left), None) => compare_float_integer(right.as_f64()?, left).map(Ordering::reverse),
        (None, Some(right)) => compare_float_integer(left.as_f64()?, right),
        (None, None) => left.as_f64()?.partial_cmp(&right.as_f64()?),
    }
}

fn exact_integer(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// Compares a float with an integer without the rounding of converting the integer to a float.
fn compare_float_integer(float: f64, integer: i128) -> Option<Ordering> {
    // Rounding the integer can only make the two look equal when they are not; an equal float is a whole
    // number well inside the range of `i128`, so the exact comparison settles that case.
    #[allow(clippy::cast_precision_loss)]
    let rounded = integer as f64;
    match float.partial_cmp(&rounded)? {
        Ordering::Equal => {
            #[allow(clippy::cast_possible_truncation)]
            let whole = float as i128;
            Some(whole.cmp(&integer))
        }
        unequal => Some(unequal),
    }
}

/// Turns the schema document into nodes, one per subschema, each found by its JSON pointer.
struct Compiler<'s> {
    document: &'s Value,
    nodes: Vec<Option<Node>>,
    ids: HashMap<String, usize>,
}

impl Compiler<'_> {
    fn node_at(&mut self, pointer: &str) -> Result<usize, String> {
        if let Some(id) = self.ids.get(pointer) {
            return Ok(*id);
        }
        let schema = self
            .document
            .pointer(pointer)
            .ok_or_else(|| format!("`#{pointer}` does not exist"))?;
        let id = self.nodes.len();
        self.nodes.push(None);
        self.ids.insert(pointer.to_string(), id);
        let node = self.compile(schema, pointer)?;
        self.nodes[id] = Some(node);
        Ok(id)
    }

    fn compile(&mut self, schema: &Value, pointer: &str) -> Result<Node, String> {
        let keywords = match schema {
            Value::Bool(true) => return Ok(Node::Anything),
            Value::Bool(false) => return Ok(Node::Nothing),
            Value::Object(keywords) => keywords,
            _ => return Err(format!("`#{pointer}` is not a schema")),
        };
        let mut checks = Vec::new();
        let mut properties = None;
        let mut additional = None;
        for (keyword, value) in keywords {
            let at = || format!("`{keyword}` at `#{pointer}`");
            let unusable = || format!("{} has a value this validator does not support", at());
            match keyword.as_str() {
                "$schema" if value.as_str() == Some(DRAFT_2020_12) => {}
                "$schema" => return Err(format!("only draft 2020-12 is supported, not {value}")),
                "format" if value.is_string() => {
                    // Draft 2020-12 makes `format` an annotation unless a vocabulary says otherwise, and the
                    // `jsonschema` crate does not assert it by default there: `uint32` limits nothing.
                }
                name if ANNOTATIONS.contains(&name) => {}
                "$defs" => {
                    let definitions = value.as_object().ok_or_else(unusable)?;
                    for name in definitions.keys() {
                        self.node_at(&format!("{pointer}/$defs/{}", escape_token(name)))?;
                    }
                }
                "type" => checks.push(Check::Type(type_set(value).ok_or_else(unusable)?)),
                "const" => checks.push(Check::Const(value.clone())),
                "enum" if value.is_array() => checks.push(Check::Enum(value.clone())),
                "minimum" if value.is_number() => checks.push(Check::Minimum(value.clone())),
                "maximum" if value.is_number() => checks.push(Check::Maximum(value.clone())),
                "minItems" => checks.push(Check::MinItems(value.as_u64().ok_or_else(unusable)?)),
                "maxItems" => checks.push(Check::MaxItems(value.as_u64().ok_or_else(unusable)?)),
                "required" => checks.push(Check::Required(strings(value).ok_or_else(unusable)?)),
                "pattern" => {
                    let source = value.as_str().ok_or_else(unusable)?;
                    let translated = translate_pattern(source).map_err(|reason| format!("{}: {reason}", at()))?;
                    let regex = Regex::new(&translated).map_err(|reason| format!("{}: {reason}", at()))?;
                    checks.push(Check::Pattern {
                        source: source.to_string(),
                        regex,
                    });
                }
                "properties" => {
                    let declared = value.as_object().ok_or_else(unusable)?;
                    let mut compiled = Vec::with_capacity(declared.len());
                    for name in declared.keys() {
                        let node = self.node_at(&format!("{pointer}/properties/{}", escape_token(name)))?;
                        compiled.push((name.clone(), node));
                    }
                    properties = Some(compiled);
                }
                "additionalProperties" => {
                    additional = Some(match value {
                        Value::Bool(true) => Additional::Allowed,
                        Value::Bool(false) => Additional::Refused,
                        Value::Object(_) => {
                            Additional::Schema(self.node_at(&format!("{pointer}/additionalProperties"))?)
                        }
                        _ => return Err(unusable()),
                    });
                }
                "items" if value.is_object() || value.is_boolean() => {
                    let skip = keywords
                        .get("prefixItems")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    let node = self.node_at(&format!("{pointer}/items"))?;
                    checks.push(Check::Items { skip, node });
                }
                "prefixItems" => {
                    let nodes = self.node_list(value, pointer, keyword).ok_or_else(unusable)??;
                    checks.push(Check::PrefixItems(nodes));
                }
                "oneOf" => {
                    let nodes = self.node_list(value, pointer, keyword).ok_or_else(unusable)??;
                    checks.push(Check::OneOf(nodes));
                }
                "$ref" => {
                    let target = value
                        .as_str()
                        .and_then(|reference| reference.strip_prefix('#'))
                        .filter(|target| (target.is_empty() || target.starts_with('/')) && !target.contains('%'))
                        .ok_or_else(|| format!("{} must point into the same document, not {value}", at()))?;
                    checks.push(Check::Ref(self.node_at(target)?));
                }
                _ => return Err(format!("{} is not supported", at())),
            }
        }
        if properties.is_some() || additional.is_some() {
            checks.push(Check::Object {
                properties: properties.unwrap_or_default(),
                additional: additional.unwrap_or(Additional::Allowed),
            });
        }
        checks.sort_by_key(Check::priority);
        Ok(Node::Checks(checks))
    }

    /// The nodes of a non-empty array of schemas; `None` when `value` is not one.
    fn node_list(&mut self, value: &Value, pointer: &str, keyword: &str) -> Option<Result<Vec<usize>, String>> {
        let schemas = value.as_array().filter(|schemas| !schemas.is_empty())?;
        Some(
            (0..schemas.len())
                .map(|index| self.node_at(&format!("{pointer}/{keyword}/{index}")))
                .collect(),
        )
    }
}

fn type_set(value: &Value) -> Option<TypeSet> {
    match value {
        Value::String(name) => Some(TypeSet {
            bits: JsonType::parse(name)? as u8,
            listed: false,
        }),
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0;
            for name in names {
                bits |= JsonType::parse(name.as_str()?)? as u8;
            }
            // A list of one type reads as that type alone.
            Some(TypeSet {
                bits,
                listed: names.len() > 1,
            })
        }
        _ => None,
    }
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_string))
        .collect()
}

/// Rewrites an ECMA-262 pattern into `regex-lite` syntax, refusing what the two could read differently.
///
/// Supported: literals, `.`, classes with ranges and negation, groups (plain and `(?:`), alternation,
/// quantifiers, `^`, `$`, the escapes `\d \D \w \W \s \S \t \n \r \f \v` and escaped punctuation.
fn translate_pattern(pattern: &str) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = chars.next().ok_or("the pattern ends in a backslash")?;
                match escaped {
                    's' if in_class => out.push_str(ECMA_SPACE),
                    's' => {
                        out.push('[');
                        out.push_str(ECMA_SPACE);
                        out.push(']');
                    }
                    'S' if in_class => return Err("`\\S` in a class is not supported".to_string()),
                    'S' => {
                        out.push_str("[^");
                        out.push_str(ECMA_SPACE);
                        out.push(']');
                    }
                    'd' | 'D' | 'w' | 'W' | 't' | 'n' | 'r' | 'f' | 'v' => {
                        out.push('\\');
                        out.push(escaped);
                    }
                    _ if escaped.is_ascii_punctuation() && escaped != '<' && escaped != '>' => {
                        out.push('\\');
                        out.push(escaped);
                    }
                    _ => return Err(format!("the escape `\\{escaped}` is not supported")),
                }
            }
            '[' if in_class => out.push_str(r"\["),
            '[' => {
                in_class = true;
                out.push('[');
                if chars.next_if_eq(&'^').is_some() {
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    return Err("empty classes are not supported".to_string());
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.peek() == Some(&'-') => {
                return Err("`--` in a class is not supported".to_string());
            }
            '.' if !in_class => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            '(' if !in_class && chars.peek() == Some(&'?') => {
                chars.next();
                if chars.next() != Some(':') {
                    return Err("only `(?:` groups are supported".to_string());
                }
                out.push_str("(?:");
            }
            _ => out.push(c),
        }
    }
    if in_class {
        return Err("a class is not closed".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: &Value, instance: &Value) -> Vec<(String, String)> {
        let validator = Validator::compile(schema).unwrap();
        validator
            .errors(instance)
            .iter()
            .map(|error| (error.instance_path.clone(), error.to_string()))
            .collect()
    }

    #[test]
    fn integers_include_whole_floats() {
        let schema = json!({"type": "integer", "minimum": 0});
        assert!(messages(&schema, &json!(3.0)).is_empty());
        assert_eq!(
            messages(&schema, &json!(-1.5)),
            vec![
                (String::new(), r#"-1.5 is not of type "integer""#.to_string()),
                (String::new(), "-1.5 is less than the minimum of 0".to_string()),
            ]
        );
    }

    #[test]
    fn type_lists_are_named_in_the_crate_order() {
        let schema = json!({"type": ["object", "null"]});
        assert_eq!(
            messages(&schema, &json!(1)),
            vec![(String::new(), r#"1 is not of types "null", "object""#.to_string())]
        );
    }

    #[test]
    fn patterns_search_and_know_ecma_spaces() {
        let schema = json!({"type": "string", "pattern": "^[^;\\s]+$"});
        assert!(messages(&schema, &json!("abc")).is_empty());
        assert_eq!(messages(&schema, &json!("a\u{a0}b")).len(), 1);
        let unanchored = json!({"pattern": "b+"});
        assert!(messages(&unanchored, &json!("abbc")).is_empty());
    }

    #[test]
    fn closed_objects_report_members_in_order_then_unknown_keys() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "additionalProperties": false,
            "required": ["a", "b"]
        });
        let found = messages(&schema, &json!({"x": 1, "a": 2, "y~/": 3}));
        assert_eq!(
            found,
            vec![
                (String::new(), r#""b" is a required property"#.to_string()),
                ("/a".to_string(), r#"2 is not of type "string""#.to_string()),
                (
                    String::new(),
                    "Additional properties are not allowed ('x', 'y~/' were unexpected)".to_string()
                ),
            ]
        );
    }

    #[test]
    fn unsupported_keywords_refuse_the_schema() {
        assert!(Validator::compile(&json!({"anyOf": [true]})).is_err());
        assert!(Validator::compile(&json!({"$ref": "other.json"})).is_err());
        assert!(Validator::compile(&json!({"pattern": "(?=a)"})).is_err());
        assert!(Validator::compile(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})).is_err());
    }

    #[test]
    fn numbers_compare_exactly() {
        let big = json!(u64::MAX);
        assert_eq!(
            compare_numbers(&big, &json!(1.8446744073709552e19)),
            Some(Ordering::Less)
        );
        assert_eq!(compare_numbers(&json!(-0.5), &json!(0)), Some(Ordering::Less));
        assert_eq!(compare_numbers(&json!(1.0), &json!(1)), Some(Ordering::Equal));
    }
}
