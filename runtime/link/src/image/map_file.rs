//! The `-Map` side output: a text map of the output sections, the input pieces placed in each, and the
//! symbols those pieces define, in the layout of lld's `-Map` output:
//!
//! ```text
//!              VMA              LMA     Size Align Out     In      Symbol
//!           401000           401000        c    16 .text
//!           401000           401000        c     1         start.o:(.text)
//!           401000           401000        0     1                 _start
//! ```
//!
//! Every line starts with the address (`VMA`), the load address (`LMA`, which is the address: NeverC
//! images have no separate load addresses), the size — all three in hexadecimal without a prefix — and the
//! decimal alignment (always 1 for a symbol), then a space and the name, indented by 0 (output section),
//! 8 (input piece, written `file:(section)`) or 16 (symbol) spaces. The text depends only on the
//! description: sections and pieces keep their order, symbols are written by ascending address and then
//! name. Line breaks in names are written as `?` so that every entry stays on one line.
//!
//! [`verify_map_file`] is the `side_outputs_verify` check: the map must list every layout section with the
//! layout's address and size.

use std::fmt::{self, Write as _};

use super::elf::{ImageLayout, SYNTHESIZED_SECTIONS};

/// The column header line.
const HEADER: &str = "             VMA              LMA     Size Align Out     In      Symbol";
/// Indentation of input pieces.
const PIECE_INDENT: usize = 8;
/// Indentation of symbols.
const SYMBOL_INDENT: usize = 16;

/// A map of the output image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapFile {
    pub output_sections: Vec<MapOutputSection>,
}

/// One output section and what was placed in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapOutputSection {
    pub name: String,
    pub address: u64,
    pub size: u64,
    pub alignment: u64,
    pub inputs: Vec<MapInputPiece>,
}

/// One input section placed in an output section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapInputPiece {
    /// The input's logical name, e.g. `start.o` or `libc.a(exit.o)`.
    pub file: String,
    /// The input section, e.g. `.text.main`.
    pub section: String,
    pub address: u64,
    pub size: u64,
    pub alignment: u64,
    pub symbols: Vec<MapSymbol>,
}

/// A symbol defined by an input piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapSymbol {
    pub name: String,
    pub address: u64,
    pub size: u64,
}

/// Why a map file cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("map file line {line}: {reason}")]
pub struct MapParseError {
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

/// One way a map file disagrees with the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapFinding {
    /// The text is not a map file.
    Unparsable(MapParseError),
    /// A layout section the map does not list.
    MissingSection { section: String },
    /// A map section the layout does not have (or a second listing of one it has).
    UnknownSection { section: String },
    /// The map lists a section at another address.
    AddressMismatch { section: String, expected: u64, found: u64 },
    /// The map lists a section with another size.
    SizeMismatch { section: String, expected: u64, found: u64 },
    /// An input piece reaches outside its output section.
    PieceOutsideSection {
        section: String,
        file: String,
        input_section: String,
    },
}

impl MapFinding {
    /// The rule's fixed text, without the details.
    pub fn rule(&self) -> &'static str {
        match self {
            MapFinding::Unparsable(_) => "map file cannot be read",
            MapFinding::MissingSection { .. } => "map file omits an output section",
            MapFinding::UnknownSection { .. } => "map file lists an undeclared output section",
            MapFinding::AddressMismatch { .. } => "map file disagrees with the section address",
            MapFinding::SizeMismatch { .. } => "map file disagrees with the section size",
            MapFinding::PieceOutsideSection { .. } => "map file places an input piece outside its output section",
        }
    }
}

impl fmt::Display for MapFinding {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.rule();
        match self {
            MapFinding::Unparsable(error) => write!(formatter, "{rule}: {error}"),
            MapFinding::MissingSection { section } | MapFinding::UnknownSection { section } => {
                write!(formatter, "{rule}: {section}")
            }
            MapFinding::AddressMismatch {
                section,
                expected,
                found,
            }
            | MapFinding::SizeMismatch {
                section,
                expected,
                found,
            } => write!(
                formatter,
                "{rule}: {section} is listed with {found:#x}, the layout says {expected:#x}"
            ),
            MapFinding::PieceOutsideSection {
                section,
                file,
                input_section,
            } => write!(formatter, "{rule}: {file}:({input_section}) in {section}"),
        }
    }
}

/// The map file text for `map`.
pub fn write_map_file(map: &MapFile) -> String {
    let mut text = String::new();
    text.push_str(HEADER);
    text.push('\n');
    for section in &map.output_sections {
        write_line(
            &mut text,
            section.address,
            section.size,
            section.alignment,
            0,
            &section.name,
        );
        for piece in &section.inputs {
            let name = format!("{}:({})", piece.file, piece.section);
            write_line(
                &mut text,
                piece.address,
                piece.size,
                piece.alignment,
                PIECE_INDENT,
                &name,
            );
            let mut symbols: Vec<&MapSymbol> = piece.symbols.iter().collect();
            symbols.sort_by(|a, b| (a.address, &a.name).cmp(&(b.address, &b.name)));
            for symbol in symbols {
                write_line(&mut text, symbol.address, symbol.size, 1, SYMBOL_INDENT, &symbol.name);
            }
        }
    }
    text
}

/// Appends one map line.
fn write_line(text: &mut String, address: u64, size: u64, alignment: u64, indent: usize, name: &str) {
    let name: String = name
        .chars()
        .map(|character| {
            if matches!(character, '\n' | '\r') {
                '?'
            } else {
                character
            }
        })
        .collect();
    // Writing to a `String` cannot fail.
    let _ = writeln!(
        text,
        "{address:>16x} {address:>16x} {size:>8x} {alignment:>5} {:indent$}{name}",
        ""
    );
}

/// Reads a map file written by [`write_map_file`] (or by lld, as far as the columns go).
pub fn parse_map_file(text: &str) -> Result<MapFile, MapParseError> {
    let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
    match lines.next() {
        Some((_, line)) if line.trim_end() == HEADER => {}
        Some((index, _)) => return Err(parse_error(index, "the column header is missing")),
        None => return Err(parse_error(0, "the map file is empty")),
    }
    let mut map = MapFile::default();
    for (index, line) in lines {
        let entry = parse_line(line).map_err(|reason| parse_error(index, reason))?;
        add_entry(&mut map, entry).map_err(|reason| parse_error(index, reason))?;
    }
    Ok(map)
}

/// One parsed map line.
struct Entry<'a> {
    address: u64,
    size: u64,
    alignment: u64,
    indent: usize,
    name: &'a str,
}

/// Splits a line into its four numeric columns, indentation and name.
fn parse_line(line: &str) -> Result<Entry<'_>, &'static str> {
    let mut rest = line;
    let mut columns = [0u64; 4];
    for (index, column) in columns.iter_mut().enumerate() {
        let trimmed = rest.trim_start_matches(' ');
        let end = trimmed
            .find(' ')
            .ok_or("a line needs four numeric columns and a name")?;
        let (digits, tail) = trimmed.split_at(end);
        let radix = if index == 3 { 10 } else { 16 };
        *column = u64::from_str_radix(digits, radix).map_err(|_| "a numeric column is not a number")?;
        rest = tail;
    }
    // One space separates the columns from the indented name.
    let named = rest
        .strip_prefix(' ')
        .ok_or("a line needs four numeric columns and a name")?;
    let name = named.trim_start_matches(' ');
    let indent = named.len() - name.len();
    if name.is_empty() {
        return Err("a line has no name");
    }
    let [address, _load_address, size, alignment] = columns;
    Ok(Entry {
        address,
        size,
        alignment,
        indent,
        name,
    })
}

/// Adds a parsed line to the map under construction.
fn add_entry(map: &mut MapFile, entry: Entry<'_>) -> Result<(), &'static str> {
    match entry.indent {
        0 => {
            map.output_sections.push(MapOutputSection {
                name: entry.name.to_string(),
                address: entry.address,
                size: entry.size,
                alignment: entry.alignment,
                inputs: Vec::new(),
            });
            Ok(())
        }
        PIECE_INDENT => {
            let section = map
                .output_sections
                .last_mut()
                .ok_or("an input piece comes before any output section")?;
            let (file, input_section) = split_piece_name(entry.name).ok_or("an input piece is not file:(section)")?;
            section.inputs.push(MapInputPiece {
                file: file.to_string(),
                section: input_section.to_string(),
                address: entry.address,
                size: entry.size,
                alignment: entry.alignment,
                symbols: Vec::new(),
            });
            Ok(())
        }
        SYMBOL_INDENT => {
            let piece = map
                .output_sections
                .last_mut()
                .and_then(|section| section.inputs.last_mut())
                .ok_or("a symbol comes before any input piece")?;
            piece.symbols.push(MapSymbol {
                name: entry.name.to_string(),
                address: entry.address,
                size: entry.size,
            });
            Ok(())
        }
        _ => Err("a name is indented by neither 0, 8 nor 16 spaces"),
    }
}

/// `file` and `section` of `file:(section)`.
fn split_piece_name(name: &str) -> Option<(&str, &str)> {
    let inner = name.strip_suffix(')')?;
    let split = inner.rfind(":(")?;
    Some((inner.get(..split)?, inner.get(split + 2..)?))
}

/// A parse error on the 0-based line `index`.
fn parse_error(index: usize, reason: &str) -> MapParseError {
    MapParseError {
        line: index + 1,
        reason: reason.to_string(),
    }
}

/// Checks the map file `text` against `layout`: every layout section is listed once with its address and
/// size, no other section is listed (the writer's synthesised tables may be), and every input piece lies
/// inside its output section. Returns every disagreement.
pub fn verify_map_file(text: &str, layout: &ImageLayout) -> Vec<MapFinding> {
    let map = match parse_map_file(text) {
        Ok(map) => map,
        Err(error) => return vec![MapFinding::Unparsable(error)],
    };
    let mut findings = Vec::new();
    let mut matched = vec![false; map.output_sections.len()];
    for declared in &layout.sections {
        let found = map
            .output_sections
            .iter()
            .zip(matched.iter_mut())
            .find(|(listed, matched)| listed.name == declared.name && !**matched);
        let Some((listed, matched)) = found else {
            findings.push(MapFinding::MissingSection {
                section: declared.name.clone(),
            });
            continue;
        };
        *matched = true;
        if listed.address != declared.address {
            findings.push(MapFinding::AddressMismatch {
                section: declared.name.clone(),
                expected: declared.address,
                found: listed.address,
            });
        }
        if listed.size != declared.size {
            findings.push(MapFinding::SizeMismatch {
                section: declared.name.clone(),
                expected: declared.size,
                found: listed.size,
            });
        }
    }
    for (listed, _) in map
        .output_sections
        .iter()
        .zip(&matched)
        .filter(|(_, matched)| !**matched)
    {
        if !SYNTHESIZED_SECTIONS.contains(&listed.name.as_str()) {
            findings.push(MapFinding::UnknownSection {
                section: listed.name.clone(),
            });
        }
    }
    for section in &map.output_sections {
        check_pieces(section, &mut findings);
    }
    findings
}

/// Every input piece of `section` must lie inside it.
fn check_pieces(section: &MapOutputSection, findings: &mut Vec<MapFinding>) {
    let section_end = section.address.checked_add(section.size);
    for piece in &section.inputs {
        let inside = match (piece.address.checked_add(piece.size), section_end) {
            (Some(piece_end), Some(section_end)) => piece.address >= section.address && piece_end <= section_end,
            _ => false,
        };
        if !inside {
            findings.push(MapFinding::PieceOutsideSection {
                section: section.name.clone(),
                file: piece.file.clone(),
                input_section: piece.section.clone(),
            });
        }
    }
}
