//! Reads a TOML text into a JSON value, remembering where each key and value sits.
//!
//! Target files are validated with the same JSON Schema machinery as the phase schema, so TOML is turned
//! into `serde_json::Value` first; the spans let every problem be reported at its TOML line and column.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Number, Value};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, SourceMap, at_offset, escape_token};

#[derive(Debug, Default)]
pub(crate) struct TomlSourceMap {
    values: HashMap<String, Range<usize>>,
    keys: HashMap<String, Range<usize>>,
}

impl SourceMap for TomlSourceMap {
    fn span_of(&self, pointer: &str, key: bool) -> Option<Range<usize>> {
        if key && let Some(span) = self.keys.get(pointer) {
            return Some(span.clone());
        }
        self.values
            .get(pointer)
            .cloned()
            .or_else(|| self.keys.get(pointer).cloned())
    }
}

/// Parses TOML; on syntax errors returns every error the parser could recover from.
pub(crate) fn parse_toml(file: &str, text: &str) -> Result<(Value, TomlSourceMap), Vec<Diagnostic>> {
    let (table, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        return Err(errors
            .iter()
            .map(|error| {
                let span = error.span().unwrap_or(0..0);
                at_offset(file, text, "toml-syntax", error.message().trim().to_string(), span)
            })
            .collect());
    }
    let mut map = TomlSourceMap::default();
    let mut problems = Vec::new();
    let root_span = table.span();
    map.values.insert(String::new(), root_span);
    let value = convert_table(table.get_ref(), "", &mut map, &mut problems, file, text);
    if problems.is_empty() {
        Ok((value, map))
    } else {
        Err(problems)
    }
}

fn convert_table(
    table: &DeTable<'_>,
    pointer: &str,
    map: &mut TomlSourceMap,
    problems: &mut Vec<Diagnostic>,
    file: &str,
    text: &str,
) -> Value {
    let mut object = Map::new();
    for (key, value) in table.iter() {
        let child = format!("{pointer}/{}", escape_token(key.get_ref()));
        map.keys.insert(child.clone(), key.span());
        map.values.insert(child.clone(), value.span());
        let converted = convert_value(value.get_ref(), value.span(), &child, map, problems, file, text);
        object.insert(key.get_ref().to_string(), converted);
    }
    Value::Object(object)
}

fn convert_value(
    value: &DeValue<'_>,
    span: Range<usize>,
    pointer: &str,
    map: &mut TomlSourceMap,
    problems: &mut Vec<Diagnostic>,
    file: &str,
    text: &str,
) -> Value {
    match value {
        DeValue::String(text) => Value::String(text.to_string()),
        DeValue::Integer(integer) => {
            let digits = integer.as_str().replace('_', "");
            match i64::from_str_radix(&digits, integer.radix()) {
                Ok(number) => Value::Number(number.into()),
                Err(_) => {
                    problems.push(at_offset(
                        file,
                        text,
                        "toml-integer",
                        format!("integer `{}` does not fit in 64 bits", integer.as_str()),
                        span,
                    ));
                    Value::Null
                }
            }
        }
        DeValue::Float(float) => match float
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
        {
            Some(number) => Value::Number(number),
            None => {
                problems.push(at_offset(
                    file,
                    text,
                    "toml-float",
                    format!("float `{}` is not a finite number", float.as_str()),
                    span,
                ));
                Value::Null
            }
        },
        DeValue::Boolean(flag) => Value::Bool(*flag),
        DeValue::Datetime(datetime) => Value::String(datetime.to_string()),
        DeValue::Array(array) => Value::Array(
            array
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    let child = format!("{pointer}/{index}");
                    map.values.insert(child.clone(), item.span());
                    convert_value(item.get_ref(), item.span(), &child, map, problems, file, text)
                })
                .collect(),
        ),
        DeValue::Table(table) => convert_table(table, pointer, map, problems, file, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_spans_of_nested_keys_and_array_items() {
        let text = "[identity]\nname = \"x\"\n\n[[registers]]\nname = \"rax\"\n[[registers]]\nname = \"rbx\"\n";
        let (value, map) = parse_toml("t.toml", text).unwrap();
        assert_eq!(value["registers"][1]["name"], "rbx");
        let span = map.span_of("/registers/1/name", false).unwrap();
        assert_eq!(&text[span], "\"rbx\"");
        let key = map.span_of("/identity/name", true).unwrap();
        assert_eq!(&text[key], "name");
    }

    #[test]
    fn reports_every_recoverable_syntax_error() {
        let text = "a = \nb = [1,\nc = \"ok\"\n";
        let problems = parse_toml("t.toml", text).unwrap_err();
        assert!(!problems.is_empty());
        assert!(problems.iter().all(|d| d.rule == "toml-syntax" && d.line >= 1));
    }
}
