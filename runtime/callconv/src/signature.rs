//! Function signatures at LLVM IR level, parsed with `signature.pest` into our own AST.

use std::fmt;
use std::ops::Range;

use pest::Parser;
use pest::iterators::Pair;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "signature.pest"]
pub(crate) struct SignatureGrammar;

/// An IR type as far as calling conventions care.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IrType {
    Void,
    Integer(u32),
    /// A pointer, opaque (`ptr`) or typed (`i32*`): the pointee does not matter for passing it.
    Pointer {
        address_space: u32,
    },
    Half,
    BFloat,
    Float,
    Double,
    Fp128,
    X86Fp80,
    PpcFp128,
    Vector {
        length: u32,
        element: Box<IrType>,
    },
    Array {
        length: u32,
        element: Box<IrType>,
    },
    Struct {
        packed: bool,
        fields: Vec<IrType>,
    },
    /// `%struct.Q`, resolved against the module's type definitions.
    Named(String),
}

impl IrType {
    pub fn is_floating_point(&self) -> bool {
        matches!(
            self,
            IrType::Half
                | IrType::BFloat
                | IrType::Float
                | IrType::Double
                | IrType::Fp128
                | IrType::X86Fp80
                | IrType::PpcFp128
        )
    }

    /// NeverC's FP class: floating-point scalars and vectors.
    pub fn is_fp_class(&self) -> bool {
        self.is_floating_point() || matches!(self, IrType::Vector { .. })
    }
}

impl fmt::Display for IrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IrType::Void => f.write_str("void"),
            IrType::Integer(bits) => write!(f, "i{bits}"),
            IrType::Pointer { address_space: 0 } => f.write_str("ptr"),
            IrType::Pointer { address_space } => write!(f, "ptr addrspace({address_space})"),
            IrType::Half => f.write_str("half"),
            IrType::BFloat => f.write_str("bfloat"),
            IrType::Float => f.write_str("float"),
            IrType::Double => f.write_str("double"),
            IrType::Fp128 => f.write_str("fp128"),
            IrType::X86Fp80 => f.write_str("x86_fp80"),
            IrType::PpcFp128 => f.write_str("ppc_fp128"),
            IrType::Vector { length, element } => write!(f, "<{length} x {element}>"),
            IrType::Array { length, element } => write!(f, "[{length} x {element}]"),
            IrType::Struct { packed, fields } => {
                f.write_str(if *packed { "<{" } else { "{" })?;
                for (index, field) in fields.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{field}")?;
                }
                f.write_str(if *packed { "}>" } else { "}" })
            }
            IrType::Named(name) => f.write_str(name),
        }
    }
}

/// Attributes of a parameter or return value that matter for passing it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueAttributes {
    pub sret: Option<IrType>,
    pub byval: Option<IrType>,
    pub align: Option<u32>,
    pub zeroext: bool,
    pub signext: bool,
    pub inreg: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    pub ty: IrType,
    pub attributes: ValueAttributes,
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub return_type: IrType,
    pub return_attributes: ValueAttributes,
    pub parameters: Vec<Parameter>,
    pub variadic: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SignatureError {
    pub message: String,
    /// Byte range of the offending text.
    pub span: Range<usize>,
}

/// The deepest nesting of types (and of brackets in general: `{`, `<{`, `[`, `<`, `(`) accepted anywhere a
/// type is read: in signatures, type definitions and layouts through named types. Every recursive step over
/// types checks it before it recurses, so hostile input is a diagnostic rather than a stack overflow.
pub const MAX_TYPE_NESTING: usize = 256;

/// Refuses text whose brackets nest deeper than [`MAX_TYPE_NESTING`], before the grammar (which recurses once
/// per level) sees it. Quoted names and strings are skipped.
pub fn check_nesting(text: &str) -> Result<(), SignatureError> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    for (at, byte) in bytes.iter().enumerate() {
        match byte {
            b'"' => in_string = !in_string,
            _ if in_string => {}
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > MAX_TYPE_NESTING {
                    return Err(SignatureError {
                        message: format!(
                            "type nesting deeper than the limit of {MAX_TYPE_NESTING} levels at byte {at}"
                        ),
                        span: at..at + 1,
                    });
                }
            }
            b')' | b']' | b'}' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

impl Signature {
    /// Parses a `--sig` string such as `i32 (i32, i64, ptr byval(%struct.Q) align 8)`.
    pub fn parse(text: &str) -> Result<Signature, SignatureError> {
        let mut inner = signature_pair(text)?.into_inner();
        let (return_type, return_attributes) = match inner.next() {
            Some(part) => return_part(part)?,
            None => {
                return Err(SignatureError {
                    message: "missing return type".into(),
                    span: 0..0,
                });
            }
        };
        let (parameters, variadic) = match inner.next() {
            Some(list) => parameter_list(list)?,
            None => (Vec::new(), false),
        };
        Ok(Signature {
            return_type,
            return_attributes,
            parameters,
            variadic,
        })
    }
}

/// The parse tree of a whole signature, its nesting checked first.
fn signature_pair(text: &str) -> Result<Pair<'_, Rule>, SignatureError> {
    check_nesting(text)?;
    let mut pairs = SignatureGrammar::parse(Rule::signature, text).map_err(|error| pest_error(text, &error))?;
    pairs.next().ok_or_else(|| SignatureError {
        message: "empty signature".into(),
        span: 0..0,
    })
}

/// The function type a signature's text spells, without attributes and names: `i32 (i32, %struct.Q*, ...)`
/// for `noundef i32 (i32 noundef %0, %struct.Q* byval(%struct.Q) align 8 %q, ...)`, types written as the text
/// writes them (typed pointers stay typed).
pub fn function_type_spelling(text: &str) -> Result<String, SignatureError> {
    let signature = signature_pair(text)?;
    let mut return_type = "void";
    let mut parameters = Vec::new();
    for part in signature.into_inner() {
        match part.as_rule() {
            Rule::return_part => {
                for inner in part.into_inner() {
                    if inner.as_rule() == Rule::return_type {
                        return_type = inner.as_str().trim();
                    }
                }
            }
            Rule::parameter_list => {
                for inner in part.into_inner() {
                    match inner.as_rule() {
                        Rule::variadic => parameters.push("..."),
                        Rule::parameter => {
                            if let Some(ty) = inner.into_inner().find(|p| p.as_rule() == Rule::ir_type) {
                                parameters.push(ty.as_str().trim());
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(format!("{return_type} ({})", parameters.join(", ")))
}

/// Parses `%struct.Q = type { i64, i64, i64 }` into the type's name and definition (`None` for `opaque`).
pub fn parse_type_definition(text: &str) -> Result<(String, Option<IrType>), SignatureError> {
    check_nesting(text)?;
    let mut pairs = SignatureGrammar::parse(Rule::type_definition, text).map_err(|error| pest_error(text, &error))?;
    let mut inner = pairs.next().map(|pair| pair.into_inner()).into_iter().flatten();
    let name = inner.next().map(|name| name.as_str().to_string()).unwrap_or_default();
    let ty = match inner.next() {
        Some(pair) if pair.as_rule() == Rule::ir_type => Some(ir_type(pair)?),
        _ => None,
    };
    Ok((name, ty))
}

pub(crate) fn pest_error(text: &str, error: &pest::error::Error<Rule>) -> SignatureError {
    let at = match error.location {
        pest::error::InputLocation::Pos(position) => position,
        pest::error::InputLocation::Span((start, _)) => start,
    };
    let end = text[at.min(text.len())..]
        .chars()
        .next()
        .map_or(at, |c| at + c.len_utf8());
    let message = match &error.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } if !positives.is_empty() => {
            let expected: Vec<String> = positives.iter().map(|rule| describe_rule(*rule)).collect();
            format!("expected {}", expected.join(" or "))
        }
        _ => "unexpected text".to_string(),
    };
    SignatureError {
        message,
        span: at.min(text.len())..end.min(text.len()),
    }
}

fn describe_rule(rule: Rule) -> String {
    match rule {
        Rule::ir_type | Rule::integer_type | Rule::opaque_pointer | Rule::float_type | Rule::named_type => {
            "a type".into()
        }
        Rule::parameter_list => "`(`".into(),
        Rule::EOI => "end of input".into(),
        other => format!("{other:?}").replace('_', " "),
    }
}

fn span(pair: &Pair<'_, Rule>) -> Range<usize> {
    pair.as_span().start()..pair.as_span().end()
}

fn decimal(pair: Pair<'_, Rule>) -> Result<u32, SignatureError> {
    let at = span(&pair);
    pair.as_str().parse().map_err(|_| SignatureError {
        message: "number too large".into(),
        span: at,
    })
}

fn return_part(pair: Pair<'_, Rule>) -> Result<(IrType, ValueAttributes), SignatureError> {
    let mut attributes = ValueAttributes::default();
    let mut ty = IrType::Void;
    for part in pair.into_inner() {
        if part.as_rule() == Rule::return_type {
            ty = ir_type(part)?;
        } else {
            attribute(part, &mut attributes)?;
        }
    }
    Ok((ty, attributes))
}

pub(crate) fn parameter_list(pair: Pair<'_, Rule>) -> Result<(Vec<Parameter>, bool), SignatureError> {
    let mut parameters = Vec::new();
    let mut variadic = false;
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::variadic => variadic = true,
            Rule::parameter => parameters.push(parameter(part)?),
            _ => {}
        }
    }
    Ok((parameters, variadic))
}

fn parameter(pair: Pair<'_, Rule>) -> Result<Parameter, SignatureError> {
    let mut ty = IrType::Void;
    let mut attributes = ValueAttributes::default();
    let mut name = None;
    for part in pair.into_inner() {
        match part.as_rule() {
            Rule::ir_type => ty = ir_type(part)?,
            Rule::local_name => name = Some(part.as_str().to_string()),
            _ => attribute(part, &mut attributes)?,
        }
    }
    Ok(Parameter { ty, attributes, name })
}

fn attribute(pair: Pair<'_, Rule>, attributes: &mut ValueAttributes) -> Result<(), SignatureError> {
    match pair.as_rule() {
        Rule::type_attribute => {
            let mut inner = pair.into_inner();
            let name = inner.next().map(|name| name.as_str().to_string()).unwrap_or_default();
            let ty = match inner.next() {
                Some(ty) => ir_type(ty)?,
                None => IrType::Void,
            };
            match name.as_str() {
                "sret" => attributes.sret = Some(ty),
                "byval" => attributes.byval = Some(ty),
                _ => {}
            }
        }
        Rule::align_attribute => {
            if let Some(value) = pair.into_inner().next() {
                let at = span(&value);
                let align = decimal(value)?;
                // LLVM requires alignments to be powers of two (and refuses `align 0`).
                if !align.is_power_of_two() {
                    return Err(SignatureError {
                        message: format!("alignment {align} is not a power of two"),
                        span: at,
                    });
                }
                attributes.align = Some(align);
            }
        }
        Rule::word_attribute => match pair.into_inner().next().map(|word| word.as_str()) {
            Some("zeroext") => attributes.zeroext = true,
            Some("signext") => attributes.signext = true,
            Some("inreg") => attributes.inreg = true,
            _ => {}
        },
        _ => {}
    }
    Ok(())
}

pub(crate) fn ir_type(pair: Pair<'_, Rule>) -> Result<IrType, SignatureError> {
    let mut inner = pair.into_inner();
    let Some(base) = inner.next() else {
        return Err(SignatureError {
            message: "missing type".into(),
            span: 0..0,
        });
    };
    let mut ty = base_type(base)?;
    for suffix in inner {
        match suffix.as_rule() {
            Rule::pointer_star => {
                let address_space = match suffix.into_inner().next().and_then(|space| space.into_inner().next()) {
                    Some(number) => decimal(number)?,
                    None => 0,
                };
                ty = IrType::Pointer { address_space };
            }
            // A function type is only passed behind a pointer, which the next `*` makes.
            _ => ty = IrType::Void,
        }
    }
    Ok(ty)
}

fn base_type(pair: Pair<'_, Rule>) -> Result<IrType, SignatureError> {
    let at = span(&pair);
    Ok(match pair.as_rule() {
        Rule::integer_type => {
            let bits: u32 = pair.as_str()[1..].parse().map_err(|_| SignatureError {
                message: "integer width too large".into(),
                span: at.clone(),
            })?;
            if bits == 0 || bits > 1 << 23 {
                return Err(SignatureError {
                    message: "integer width must be between 1 and 2^23".into(),
                    span: at,
                });
            }
            IrType::Integer(bits)
        }
        Rule::opaque_pointer => {
            let address_space = match pair.into_inner().next().and_then(|space| space.into_inner().next()) {
                Some(number) => decimal(number)?,
                None => 0,
            };
            IrType::Pointer { address_space }
        }
        Rule::float_type => match pair.as_str() {
            "half" => IrType::Half,
            "bfloat" => IrType::BFloat,
            "float" => IrType::Float,
            "double" => IrType::Double,
            "fp128" => IrType::Fp128,
            "x86_fp80" => IrType::X86Fp80,
            _ => IrType::PpcFp128,
        },
        Rule::void_type => IrType::Void,
        Rule::vector_type | Rule::array_type => {
            let vector = pair.as_rule() == Rule::vector_type;
            let mut inner = pair.into_inner();
            let length = match inner.next() {
                Some(length) => decimal(length)?,
                None => 0,
            };
            let element = match inner.next() {
                Some(element) => Box::new(ir_type(element)?),
                None => Box::new(IrType::Void),
            };
            if vector {
                IrType::Vector { length, element }
            } else {
                IrType::Array { length, element }
            }
        }
        Rule::struct_type | Rule::packed_struct_type => {
            let packed = pair.as_rule() == Rule::packed_struct_type;
            let fields = pair.into_inner().map(ir_type).collect::<Result<_, _>>()?;
            IrType::Struct { packed, fields }
        }
        Rule::named_type => IrType::Named(pair.as_str().to_string()),
        _ => {
            return Err(SignatureError {
                message: "unsupported type".into(),
                span: at,
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_signature_reads_clang_lowered_types_and_attributes() {
        let sig =
            Signature::parse("i32 (i32 signext, i64, ptr byval(%struct.Q) align 8, <4 x float>, [4 x double], ...)")
                .unwrap();
        assert_eq!(sig.return_type, IrType::Integer(32));
        assert!(sig.variadic);
        assert!(sig.parameters[0].attributes.signext);
        assert_eq!(
            sig.parameters[2].attributes.byval,
            Some(IrType::Named("%struct.Q".into()))
        );
        assert_eq!(sig.parameters[2].attributes.align, Some(8));
        assert_eq!(sig.parameters[3].ty.to_string(), "<4 x float>");
        assert_eq!(sig.parameters[4].ty.to_string(), "[4 x double]");
    }

    #[test]
    fn rule_typed_pointers_and_named_parameters_are_pointers() {
        let sig = Signature::parse("void (%struct.P* noalias sret(%struct.P) align 8 %agg.result, i8** %argv, void (i32)* %fp, i32 noundef %0)").unwrap();
        assert_eq!(sig.return_type, IrType::Void);
        assert!(
            sig.parameters[..3]
                .iter()
                .all(|p| p.ty == IrType::Pointer { address_space: 0 })
        );
        assert_eq!(
            sig.parameters[0].attributes.sret,
            Some(IrType::Named("%struct.P".into()))
        );
        assert_eq!(sig.parameters[3].name.as_deref(), Some("%0"));
    }

    #[test]
    fn rule_return_attributes_come_before_the_type() {
        let sig = Signature::parse("noundef zeroext i1 (half, fp128, x86_fp80, { i64, i64 }, <{ i8, i32 }>)").unwrap();
        assert!(sig.return_attributes.zeroext);
        assert_eq!(sig.return_type, IrType::Integer(1));
        assert_eq!(sig.parameters[3].ty.to_string(), "{i64, i64}");
        assert_eq!(sig.parameters[4].ty.to_string(), "<{i8, i32}>");
    }

    #[test]
    fn rule_type_definition_names_a_struct() {
        let (name, ty) = parse_type_definition("%struct.Q = type { i64, [2 x i32], %struct.R* }").unwrap();
        assert_eq!(name, "%struct.Q");
        assert_eq!(ty.unwrap().to_string(), "{i64, [2 x i32], ptr}");
        assert_eq!(parse_type_definition("%struct.O = type opaque").unwrap().1, None);
        assert!(parse_type_definition("%struct.Q = { i64 }").is_err());
    }

    #[test]
    fn rule_errors_point_at_the_offending_token() {
        let error = Signature::parse("i32 (i32, flaot)").unwrap_err();
        assert_eq!(error.span.start, 10);
        assert!(Signature::parse("i32 (i32").is_err());
        assert!(Signature::parse("i0 ()").is_err());
        assert!(Signature::parse("").is_err());
    }

    #[test]
    fn rule_nesting_is_limited_before_the_grammar_recurses() {
        let ok = format!(
            "i32 ({}i32{})",
            "{".repeat(MAX_TYPE_NESTING - 1),
            "}".repeat(MAX_TYPE_NESTING - 1)
        );
        assert!(Signature::parse(&ok).is_ok());
        let deep = format!("i32 ({}i32{})", "[2 x ".repeat(20_000), "]".repeat(20_000));
        let error = Signature::parse(&deep).unwrap_err();
        assert!(error.message.contains("256"), "{}", error.message);
        assert_eq!(error.span.start, 5 + MAX_TYPE_NESTING * 5 - 5);
        // Brackets inside quoted names do not count.
        let quoted = format!("void (%\"{}\")", "{".repeat(1_000));
        assert!(check_nesting(&quoted).is_ok());
    }

    #[test]
    fn rule_alignments_are_powers_of_two() {
        assert!(Signature::parse("void (ptr align 8)").is_ok());
        for align in ["align 3", "align 0", "align(6)"] {
            let error = Signature::parse(&format!("void (ptr {align})")).unwrap_err();
            assert!(error.message.contains("power of two"), "{}", error.message);
        }
    }
}
