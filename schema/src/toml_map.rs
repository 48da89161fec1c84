//! Reads a TOML text into a JSON value, remembering where each key and value sits.
//!
//! Target files are validated with the same JSON Schema machinery as the phase schema, so TOML is turned
//! into `serde_json::Value` first; the spans let every problem be reported at its TOML line and column.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Number, Value};
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, SourceMap, at_offset, escape_token};
use crate::rule::Rule;

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
                at_offset(file, text, Rule::TomlSyntax, error.message().trim().to_string(), span)
            })
            .collect());
    }
    let mut converter = Converter {
        file,
        text,
        map: TomlSourceMap::default(),
        problems: Vec::new(),
    };
    converter.map.values.insert(String::new(), table.span());
    let value = converter.table(table.get_ref(), "");
    if converter.problems.is_empty() {
        Ok((value, converter.map))
    } else {
        Err(converter.problems)
    }
}

/// Converts TOML to JSON values, recording where each pointer's key and value are and every problem.
struct Converter<'t> {
    file: &'t str,
    text: &'t str,
    map: TomlSourceMap,
    problems: Vec<Diagnostic>,
}

impl Converter<'_> {
    fn problem(&mut self, rule: Rule, message: String, span: Range<usize>) {
        self.problems.push(at_offset(self.file, self.text, rule, message, span));
    }

    fn table(&mut self, table: &DeTable<'_>, pointer: &str) -> Value {
        let mut object = Map::new();
        for (key, value) in table.iter() {
            let child = format!("{pointer}/{}", escape_token(key.get_ref()));
            self.map.keys.insert(child.clone(), key.span());
            self.map.values.insert(child.clone(), value.span());
            let converted = self.value(value.get_ref(), value.span(), &child);
            object.insert(key.get_ref().to_string(), converted);
        }
        Value::Object(object)
    }

    fn value(&mut self, value: &DeValue<'_>, span: Range<usize>, pointer: &str) -> Value {
        match value {
            DeValue::String(text) => Value::String(text.to_string()),
            DeValue::Integer(integer) => {
                let digits = integer.as_str().replace('_', "");
                match i64::from_str_radix(&digits, integer.radix()) {
                    Ok(number) => Value::Number(number.into()),
                    Err(_) => {
                        let message = format!("integer `{}` does not fit in 64 bits", integer.as_str());
                        self.problem(Rule::TomlInteger, message, span);
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
                    let message = format!("float `{}` is not a finite number", float.as_str());
                    self.problem(Rule::TomlFloat, message, span);
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
                        self.map.values.insert(child.clone(), item.span());
                        self.value(item.get_ref(), item.span(), &child)
                    })
                    .collect(),
            ),
            DeValue::Table(table) => self.table(table, pointer),
        }
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
        assert!(problems.iter().all(|d| d.rule == Rule::TomlSyntax && d.line >= 1));
    }
}
