//! Plan strings: `neverc-cc-plan-v1;schema=…;target=H:L;cc=H:L;stack=N;returns=…;arguments=…;callee-saved=…`.
//!
//! [`Plan::parse`] turns the pest parse tree of `plan.pest` into a [`Plan`], applying every record check of
//! the format; [`Plan::serialize`] writes NeverC's canonical order. Checks against a target live in
//! `plan_validation.rs`.

use std::fmt;
use std::ops::Range;

use pest::Parser;
use pest::iterators::Pair;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "plan.pest"]
struct PlanGrammar;

/// The attribute name and the first segment of every plan.
pub const PLAN_TAG: &str = "neverc-cc-plan-v1";
/// The value lives elsewhere; the location holds its address.
pub const LOCATION_INDIRECT: u64 = 1;
/// The indirect value is a by-value copy (requires [`LOCATION_INDIRECT`]).
pub const LOCATION_BYVAL: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocationKind {
    Register,
    Stack,
}

/// Where one piece of one value goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub kind: LocationKind,
    /// Index of the argument (IR order), or 0 for the return value.
    pub value_index: u32,
    /// Byte offset of this piece within the value.
    pub piece_offset: u32,
    pub size: u32,
    pub alignment: u32,
    /// Plan register number; 0 for stack locations.
    pub register: u32,
    /// Offset in the argument area; 0 for register locations.
    pub stack_offset: u32,
    pub flags: u64,
}

/// A 128-bit id as two decimal halves in plans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PlanId {
    pub high: u64,
    pub low: u64,
}

impl From<neverc_tables::Id128> for PlanId {
    fn from(id: neverc_tables::Id128) -> PlanId {
        PlanId {
            high: id.high,
            low: id.low,
        }
    }
}

/// A parsed, record-checked plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub schema: String,
    pub target: PlanId,
    pub convention: PlanId,
    /// Stack alignment in bytes.
    pub stack_alignment: u64,
    pub returns: Vec<Location>,
    pub arguments: Vec<Location>,
    pub callee_saved: Vec<u32>,
}

/// Why a plan string is malformed, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed NeverC calling convention plan: {detail}")]
pub struct MalformedPlan {
    pub detail: String,
    /// Byte range of the offending text.
    pub span: Range<usize>,
}

fn malformed(detail: impl Into<String>, span: Range<usize>) -> MalformedPlan {
    MalformedPlan {
        detail: detail.into(),
        span,
    }
}

fn span_of(pair: &Pair<'_, Rule>) -> Range<usize> {
    pair.as_span().start()..pair.as_span().end()
}

fn number(pair: Pair<'_, Rule>) -> Result<u64, MalformedPlan> {
    let span = span_of(&pair);
    pair.as_str()
        .trim()
        .parse::<u64>()
        .map_err(|_| malformed("number does not fit in 64 bits", span))
}

fn number_u32(pair: Pair<'_, Rule>, what: &str) -> Result<u32, MalformedPlan> {
    let span = span_of(&pair);
    let value = number(pair)?;
    u32::try_from(value).map_err(|_| malformed(format!("{what} does not fit in 32 bits"), span))
}

fn id_pair(pair: Pair<'_, Rule>) -> Result<PlanId, MalformedPlan> {
    let mut numbers = pair.into_inner();
    match (numbers.next(), numbers.next()) {
        (Some(high), Some(low)) => Ok(PlanId {
            high: number(high)?,
            low: number(low)?,
        }),
        _ => Err(malformed("an id needs HIGH:LOW", 0..0)),
    }
}

fn locations(pair: Option<Pair<'_, Rule>>) -> Result<Vec<Location>, MalformedPlan> {
    let Some(pair) = pair else { return Ok(Vec::new()) };
    pair.into_inner().map(location).collect()
}

fn location(pair: Pair<'_, Rule>) -> Result<Location, MalformedPlan> {
    let span = span_of(&pair);
    let mut fields = pair.into_inner();
    let kind = match fields.next().map(|kind| kind.as_str().trim().to_string()).as_deref() {
        Some("r") => LocationKind::Register,
        Some("s") => LocationKind::Stack,
        _ => return Err(malformed("a location starts with `r` or `s`", span)),
    };
    let mut next = |what: &str| -> Result<Pair<'_, Rule>, MalformedPlan> {
        fields
            .next()
            .ok_or_else(|| malformed(format!("location lacks its {what}"), span.clone()))
    };
    let value_index = number_u32(next("value index")?, "value index")?;
    let piece_offset = number_u32(next("piece offset")?, "piece offset")?;
    let size = number_u32(next("size")?, "size")?;
    let alignment = number_u32(next("alignment")?, "alignment")?;
    let register = number_u32(next("register")?, "register number")?;
    let stack_offset = number_u32(next("stack offset")?, "stack offset")?;
    let flags = number(next("flags")?)?;
    let location = Location {
        kind,
        value_index,
        piece_offset,
        size,
        alignment,
        register,
        stack_offset,
        flags,
    };
    check_location(&location).map_err(|detail| malformed(detail, span))?;
    Ok(location)
}

/// `stack=` must be a nonzero power of two that fits in 32 bits.
fn valid_stack_alignment(value: u64) -> bool {
    value.is_power_of_two() && value <= u64::from(u32::MAX)
}

/// The record checks every location must pass, whatever the target.
pub fn check_location(location: &Location) -> Result<(), &'static str> {
    if location.size == 0 {
        return Err("location size is 0");
    }
    if !location.alignment.is_power_of_two() {
        return Err("location alignment is not a power of two");
    }
    if location.flags & !(LOCATION_INDIRECT | LOCATION_BYVAL) != 0 {
        return Err("location has unknown flags");
    }
    if location.flags & LOCATION_BYVAL != 0 && location.flags & LOCATION_INDIRECT == 0 {
        return Err("by-value location is not indirect");
    }
    match location.kind {
        LocationKind::Register if location.register == 0 => Err("register location has register number 0"),
        LocationKind::Register if location.stack_offset != 0 => Err("register location has a stack offset"),
        LocationKind::Stack if location.register != 0 => Err("stack location has a register number"),
        _ => Ok(()),
    }
}

impl Plan {
    /// Parses a plan string; every key must appear exactly once.
    ///
    /// Valid plans take a hand-written fast path; anything it refuses goes through the pest grammar, which
    /// is the definition of the format and says what is wrong and where. Tests and a fuzz target check that
    /// both accept exactly the same strings with the same result.
    pub fn parse(text: &str) -> Result<Plan, MalformedPlan> {
        match fast::parse(text) {
            Some(plan) => Ok(plan),
            None => Plan::parse_with_grammar(text),
        }
    }

    /// Parses with the pest grammar only (the reference implementation of [`Plan::parse`]).
    pub fn parse_with_grammar(text: &str) -> Result<Plan, MalformedPlan> {
        let mut pairs = PlanGrammar::parse(Rule::plan, text).map_err(|error| {
            let at = match error.location {
                pest::error::InputLocation::Pos(position) => position,
                pest::error::InputLocation::Span((start, _)) => start,
            };
            let detail = if at == 0 {
                format!("a plan starts with `{PLAN_TAG}`")
            } else {
                "unexpected text".to_string()
            };
            malformed(detail, at..text.len().min(at + 1).max(at))
        })?;
        let plan = pairs.next().ok_or_else(|| malformed("empty plan", 0..0))?;
        let mut schema = None;
        let mut target = None;
        let mut convention = None;
        let mut stack = None;
        let mut returns = None;
        let mut arguments = None;
        let mut callee_saved = None;
        for segment in plan.into_inner() {
            let span = span_of(&segment);
            let rule = segment.as_rule();
            let duplicate = || malformed("a key appears twice", span.clone());
            match rule {
                Rule::tag | Rule::EOI => {}
                Rule::schema => {
                    let digest = segment
                        .into_inner()
                        .next()
                        .map(|digest| digest.as_str().to_string())
                        .unwrap_or_default();
                    if schema.replace(digest).is_some() {
                        return Err(duplicate());
                    }
                }
                Rule::target | Rule::cc => {
                    let inner = segment
                        .into_inner()
                        .next()
                        .ok_or_else(|| malformed("an id needs HIGH:LOW", span.clone()))?;
                    let id = id_pair(inner)?;
                    let slot = if rule == Rule::target {
                        &mut target
                    } else {
                        &mut convention
                    };
                    if slot.replace(id).is_some() {
                        return Err(duplicate());
                    }
                }
                Rule::stack => {
                    let inner = segment
                        .into_inner()
                        .next()
                        .ok_or_else(|| malformed("stack needs a number", span.clone()))?;
                    let value = number(inner)?;
                    if !valid_stack_alignment(value) {
                        return Err(malformed(
                            "stack alignment must be a nonzero power of two that fits in 32 bits",
                            span,
                        ));
                    }
                    if stack.replace(value).is_some() {
                        return Err(duplicate());
                    }
                }
                Rule::returns | Rule::arguments => {
                    let list = locations(segment.into_inner().next())?;
                    let slot = if rule == Rule::returns {
                        &mut returns
                    } else {
                        &mut arguments
                    };
                    if slot.replace(list).is_some() {
                        return Err(duplicate());
                    }
                }
                Rule::callee_saved => {
                    let mut registers = Vec::new();
                    for pair in segment.into_inner() {
                        let pair_span = span_of(&pair);
                        let register = number_u32(pair, "callee-saved register")?;
                        if register == 0 {
                            return Err(malformed("callee-saved register number 0", pair_span));
                        }
                        registers.push(register);
                    }
                    if callee_saved.replace(registers).is_some() {
                        return Err(duplicate());
                    }
                }
                _ => {
                    let key = segment
                        .into_inner()
                        .next()
                        .map(|key| key.as_str().to_string())
                        .unwrap_or_default();
                    const KEYS: [&str; 7] = [
                        "schema",
                        "target",
                        "cc",
                        "stack",
                        "returns",
                        "arguments",
                        "callee-saved",
                    ];
                    let detail = if KEYS.contains(&key.as_str()) {
                        format!("the value of `{key}` is malformed")
                    } else {
                        format!("unknown key `{key}`")
                    };
                    return Err(malformed(detail, span));
                }
            }
        }
        let missing = |key: &str| malformed(format!("key `{key}` is missing"), text.len()..text.len());
        Ok(Plan {
            schema: schema.ok_or_else(|| missing("schema"))?,
            target: target.ok_or_else(|| missing("target"))?,
            convention: convention.ok_or_else(|| missing("cc"))?,
            stack_alignment: stack.ok_or_else(|| missing("stack"))?,
            returns: returns.ok_or_else(|| missing("returns"))?,
            arguments: arguments.ok_or_else(|| missing("arguments"))?,
            callee_saved: callee_saved.ok_or_else(|| missing("callee-saved"))?,
        })
    }

    /// NeverC's canonical spelling.
    pub fn serialize(&self) -> String {
        self.to_string()
    }

    /// The first argument location of value `index`.
    pub fn find_argument(&self, index: u32) -> Option<&Location> {
        self.arguments.iter().find(|location| location.value_index == index)
    }

    /// The first return location of value `index`.
    pub fn find_return(&self, index: u32) -> Option<&Location> {
        self.returns.iter().find(|location| location.value_index == index)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            LocationKind::Register => 'r',
            LocationKind::Stack => 's',
        };
        write!(
            f,
            "{kind},{},{},{},{},{},{},{}",
            self.value_index,
            self.piece_offset,
            self.size,
            self.alignment,
            self.register,
            self.stack_offset,
            self.flags
        )
    }
}

fn write_locations(f: &mut fmt::Formatter<'_>, locations: &[Location]) -> fmt::Result {
    for (index, location) in locations.iter().enumerate() {
        if index > 0 {
            f.write_str("|")?;
        }
        write!(f, "{location}")?;
    }
    Ok(())
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PLAN_TAG};schema={};target={}:{};cc={}:{};stack={};returns=",
            self.schema,
            self.target.high,
            self.target.low,
            self.convention.high,
            self.convention.low,
            self.stack_alignment
        )?;
        write_locations(f, &self.returns)?;
        f.write_str(";arguments=")?;
        write_locations(f, &self.arguments)?;
        f.write_str(";callee-saved=")?;
        for (index, register) in self.callee_saved.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{register}")?;
        }
        Ok(())
    }
}

/// The fast path of [`Plan::parse`]: a byte scanner for exactly the language of `plan.pest`.
pub mod fast {
    use super::{Location, LocationKind, PLAN_TAG, Plan, PlanId, check_location};

    fn trim_blanks(text: &str) -> &str {
        text.trim_matches([' ', '\t'])
    }

    fn number(text: &str) -> Option<u64> {
        let digits = trim_blanks(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    fn number_u32(text: &str) -> Option<u32> {
        number(text).and_then(|value| u32::try_from(value).ok())
    }

    fn id_pair(text: &str) -> Option<PlanId> {
        let (high, low) = text.split_once(':')?;
        Some(PlanId {
            high: number(high)?,
            low: number(low)?,
        })
    }

    fn location(text: &str) -> Option<Location> {
        let mut fields = text.split(',');
        let kind = match trim_blanks(fields.next()?) {
            "r" => LocationKind::Register,
            "s" => LocationKind::Stack,
            _ => return None,
        };
        let mut next = || fields.next().and_then(number_u32);
        let location = Location {
            kind,
            value_index: next()?,
            piece_offset: next()?,
            size: next()?,
            alignment: next()?,
            register: next()?,
            stack_offset: next()?,
            flags: 0,
        };
        let flags = number(fields.next()?)?;
        if fields.next().is_some() {
            return None;
        }
        let location = Location { flags, ..location };
        check_location(&location).ok()?;
        Some(location)
    }

    fn locations(text: &str) -> Option<Vec<Location>> {
        if text.is_empty() {
            return Some(Vec::new());
        }
        text.split('|').map(location).collect()
    }

    /// `Some` exactly when the grammar accepts `text`, with the same plan.
    pub fn parse(text: &str) -> Option<Plan> {
        let rest = text.strip_prefix(PLAN_TAG)?;
        let mut schema = None;
        let mut target = None;
        let mut convention = None;
        let mut stack = None;
        let mut returns = None;
        let mut arguments = None;
        let mut callee_saved = None;
        if !rest.is_empty() {
            for segment in rest.strip_prefix(';')?.split(';') {
                let (key, value) = segment.split_once('=')?;
                let fresh = match key {
                    "schema" if !value.is_empty() => schema.replace(value.to_string()).is_none(),
                    "target" => target.replace(id_pair(value)?).is_none(),
                    "cc" => convention.replace(id_pair(value)?).is_none(),
                    "stack" => {
                        let alignment = number(value)?;
                        if !super::valid_stack_alignment(alignment) {
                            return None;
                        }
                        stack.replace(alignment).is_none()
                    }
                    "returns" => returns.replace(locations(value)?).is_none(),
                    "arguments" => arguments.replace(locations(value)?).is_none(),
                    "callee-saved" => {
                        let registers = if value.is_empty() {
                            Vec::new()
                        } else {
                            value
                                .split(',')
                                .map(|item| number_u32(item).filter(|register| *register != 0))
                                .collect::<Option<Vec<_>>>()?
                        };
                        callee_saved.replace(registers).is_none()
                    }
                    _ => return None,
                };
                if !fresh {
                    return None;
                }
            }
        }
        Some(Plan {
            schema: schema?,
            target: target?,
            convention: convention?,
            stack_alignment: stack?,
            returns: returns?,
            arguments: arguments?,
            callee_saved: callee_saved?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DERIVED_EXAMPLE: &str = "neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved=";

    #[test]
    fn rule_plan_round_trips_neverc_canonical_text() {
        let plan = Plan::parse(DERIVED_EXAMPLE).unwrap();
        assert_eq!(plan.arguments.len(), 3);
        assert_eq!(plan.find_argument(2).map(|l| l.register), Some(119));
        assert_eq!(plan.serialize(), DERIVED_EXAMPLE);
    }

    #[test]
    fn rule_segments_parse_in_any_order_with_blanks_around_numbers() {
        let text = "neverc-cc-plan-v1;callee-saved= 12 ;arguments=r,0,0,4,4,11,0,0|s, 1,0,8,8,0,0,0;returns=r,0,0,4,4,10,0,0;stack=16;cc=768:1024;target=256:512;schema=0123";
        let plan = Plan::parse(text).unwrap();
        assert_eq!(
            plan.serialize(),
            "neverc-cc-plan-v1;schema=0123;target=256:512;cc=768:1024;stack=16;returns=r,0,0,4,4,10,0,0;arguments=r,0,0,4,4,11,0,0|s,1,0,8,8,0,0,0;callee-saved=12"
        );
    }

    #[test]
    fn property_parse_of_serialize_is_the_identity() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound.max(1)
        };
        for _ in 0..5_000 {
            let location = |next: &mut dyn FnMut(u64) -> u64| {
                let register = next(2) == 0;
                let flags = [0, LOCATION_INDIRECT, LOCATION_INDIRECT | LOCATION_BYVAL][next(3) as usize];
                Location {
                    kind: if register {
                        LocationKind::Register
                    } else {
                        LocationKind::Stack
                    },
                    value_index: next(u64::from(u32::MAX) + 1) as u32,
                    piece_offset: next(64) as u32,
                    size: next(u64::from(u32::MAX)) as u32 + 1,
                    alignment: 1 << next(32),
                    register: if register {
                        next(u64::from(u32::MAX)) as u32 + 1
                    } else {
                        0
                    },
                    stack_offset: if register {
                        0
                    } else {
                        next(u64::from(u32::MAX) + 1) as u32
                    },
                    flags,
                }
            };
            let returns = (0..next(3)).map(|_| location(&mut next)).collect();
            let arguments = (0..next(9)).map(|_| location(&mut next)).collect();
            let plan = Plan {
                schema: ["llvm-x86_64-unknown-linux-gnu", "a=b:c|d,e", "x"][next(3) as usize].to_string(),
                target: PlanId {
                    high: next(u64::MAX),
                    low: next(u64::MAX),
                },
                convention: PlanId {
                    high: next(u64::MAX),
                    low: next(4),
                },
                stack_alignment: 1 << next(32),
                returns,
                arguments,
                callee_saved: (0..next(5)).map(|_| next(u64::from(u32::MAX)) as u32 + 1).collect(),
            };
            let text = plan.serialize();
            assert_eq!(Plan::parse(&text).as_ref(), Ok(&plan), "{text}");
            assert_eq!(Plan::parse_with_grammar(&text).as_ref(), Ok(&plan), "{text}");
        }
    }

    #[test]
    fn fast_path_and_grammar_accept_the_same_strings() {
        let seeds = [
            DERIVED_EXAMPLE,
            "neverc-cc-plan-v1;callee-saved= 12 ,13;arguments=r,0,0,4,4,11,0,0|s, 1,0,8,8,0,0,0;returns=;stack=16;cc=768:1024;target= 256 :512;schema=a=b",
        ];
        let alphabet: &[u8] = b"0123456789,;|:=rs \tabc-";
        let mut rng = neverc_test_support::Rng::new(neverc_test_support::seed_of("plan fast path"));
        let mut next = || rng.next_u64();
        let mut agreed_valid = 0;
        for round in 0..20_000 {
            let mut bytes = seeds[round % seeds.len()].as_bytes().to_vec();
            for _ in 0..(next() % 3 + 1) {
                let at = (next() as usize) % (bytes.len() + 1);
                match next() % 3 {
                    0 if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    1 => bytes.insert(at, alphabet[(next() as usize) % alphabet.len()]),
                    _ if at < bytes.len() => bytes[at] = alphabet[(next() as usize) % alphabet.len()],
                    _ => {}
                }
            }
            let text = String::from_utf8_lossy(&bytes);
            let fast = fast::parse(&text);
            let grammar = Plan::parse_with_grammar(&text).ok();
            assert_eq!(fast, grammar, "disagreement on {text:?}");
            agreed_valid += usize::from(fast.is_some());
        }
        assert!(agreed_valid > 1_000, "only {agreed_valid} mutants were valid");
    }

    #[test]
    fn rule_malformed_plans_are_rejected_with_a_place() {
        for (text, needle) in [
            ("not-a-plan", "starts with"),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=",
                "`callee-saved` is missing",
            ),
            (
                "neverc-cc-plan-v1;schema=x;schema=y;target=0:0;cc=0:0;stack=16;returns=;arguments=;callee-saved=",
                "twice",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=12;returns=;arguments=;callee-saved=",
                "power of two",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,0,0,0;callee-saved=",
                "register number 0",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=s,0,0,4,4,0,0,2;callee-saved=",
                "not indirect",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=s,0,0,4,3,0,0,0;callee-saved=",
                "power of two",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,1,0,4;callee-saved=",
                "unknown flags",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,1,0,0||r,1,0,4,4,2,0,0;callee-saved=",
                "unexpected",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,1,0;callee-saved=",
                "unexpected",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0x1:0;cc=0:0;stack=16;returns=;arguments=;callee-saved=",
                "value of `target` is malformed",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=;callee-saved=;bogus=1",
                "unknown key `bogus`",
            ),
            (
                "neverc-cc-plan-v1;schema=;target=0:0;cc=0:0;stack=16;returns=;arguments=;callee-saved=",
                "value of `schema` is malformed",
            ),
            (
                "neverc-cc-plan-v1;schema=x;target=0:0;cc=0:0;stack=16;returns=;arguments=r,0,0,4,4,4294967296,0,0;callee-saved=",
                "32 bits",
            ),
        ] {
            let error = Plan::parse(text).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("malformed NeverC calling convention plan"),
                "{text}"
            );
            assert!(error.detail.contains(needle), "{text}: {}", error.detail);
            assert!(error.span.end <= text.len(), "{text}");
        }
    }
}
