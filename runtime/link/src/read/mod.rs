//! Reading inputs into the link graph: probing what a file is, objects (ELF, COFF, Mach-O) and archives
//! (GNU and thin). Every failure names the input; no input, however truncated or corrupted, makes a reader
//! panic.

pub(crate) mod archive;
pub mod bitcode;
pub(crate) mod bitcode_input;
pub(crate) mod object_file;
pub(crate) mod parallel;
pub(crate) mod shared_library;

use std::path::Path;

use neverc_userfile::{LINK_INPUT_LIMIT, SharedBytes, UserFileError, read_user_file_shared};

use crate::graph::{ArchiveId, Input, InputId, InputKind, LinkGraph, LinkTarget, MemberId, Origin};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input}: {message}")]
pub struct ReadError {
    pub input: String,
    pub message: String,
    /// Whether the file could not be read at all (missing, not a regular file, too large), rather than read
    /// and found malformed.
    pub io: bool,
}

impl ReadError {
    pub(crate) fn new(input: &str, message: impl Into<String>) -> ReadError {
        ReadError {
            input: input.to_string(),
            message: message.into(),
            io: false,
        }
    }

    /// The error for a file of input `input` that could not be read.
    pub(crate) fn unreadable(input: &str, error: &UserFileError) -> ReadError {
        ReadError {
            input: input.to_string(),
            message: error.to_string(),
            io: true,
        }
    }

    /// Whether the error names input `name`, or one of its archive members as `name(member)`.
    pub fn names_input(&self, name: &str) -> bool {
        self.input == name
            || self
                .input
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('(') && rest.ends_with(')'))
    }
}

/// What a file is, from its first bytes.
pub fn probe(data: &[u8]) -> InputKind {
    if data.starts_with(b"!<arch>\n") || data.starts_with(b"!<thin>\n") {
        InputKind::Archive
    } else if data.starts_with(b"BC\xc0\xde") || data.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
        InputKind::Bitcode
    } else if data.starts_with(b"\x7fELF") {
        match data.get(16..18) {
            Some([3, 0]) | Some([0, 3]) => InputKind::SharedLibrary,
            _ => InputKind::Object,
        }
    } else if data.starts_with(&[0xcf, 0xfa, 0xed, 0xfe]) || data.starts_with(&[0xce, 0xfa, 0xed, 0xfe]) {
        InputKind::Object
    } else if data.len() >= 20
        && matches!(
            data.get(0..2),
            Some([0x64, 0x86]) | Some([0x64, 0xaa]) | Some([0x4c, 0x01])
        )
    {
        // COFF machine AMD64, ARM64 or i386.
        InputKind::Object
    } else if data.starts_with(b"/*") || data.starts_with(b"INPUT") || data.starts_with(b"GROUP") {
        InputKind::Script
    } else {
        InputKind::Unknown
    }
}

/// Reads the file at `path` (a regular file of at most [`LINK_INPUT_LIMIT`] bytes) and adds it to the graph
/// as input `ordinal` (probed, not yet parsed).
pub fn add_input_file(graph: &mut LinkGraph, path: &Path, phase: u16) -> Result<InputId, ReadError> {
    let name = path.display().to_string();
    let data: SharedBytes =
        read_user_file_shared(path, LINK_INPUT_LIMIT).map_err(|error| ReadError::unreadable(&name, &error))?;
    Ok(add_input(graph, name, data, phase))
}

/// Adds bytes as an input (probed, not yet parsed).
pub(crate) fn add_input(graph: &mut LinkGraph, name: String, data: SharedBytes, phase: u16) -> InputId {
    let id = InputId(graph.inputs.len() as u32);
    let kind = probe(&data);
    graph.inputs.push(Input {
        logical_name: name,
        kind,
        ordinal: id.0,
        object_range: 0..data.len(),
        data,
        format: None,
        machine: None,
        archive: None,
        member: None,
        origin: Origin::made(Some(id), None, 0, Some(phase)),
    });
    id
}

/// Parses a probed input: an object into sections, symbols and edges; an archive into its members (which
/// stay unread until symbol resolution extracts them).
pub(crate) fn read_input(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<(), ReadError> {
    let entry = &graph.inputs[input.index()];
    match entry.kind {
        InputKind::Object => object_file::read_object(graph, input, phase),
        InputKind::Archive => archive::read_archive(graph, input, phase).map(|_| ()),
        InputKind::SharedLibrary => shared_library::read_shared_library(graph, input, phase),
        InputKind::Bitcode => bitcode_input::read_bitcode(graph, input, phase),
        InputKind::Script => Err(ReadError::new(&entry.logical_name, "linker scripts are not supported")),
        InputKind::Unknown | InputKind::Blob => Err(ReadError::new(
            &entry.logical_name,
            "unknown file type (not an object, archive or bitcode file)",
        )),
    }
}

/// Turns archive member `member` into an input and reads it; returns the new input.
pub(crate) fn extract_member(
    graph: &mut LinkGraph,
    member: MemberId,
    reason: crate::graph::MaterializationReason,
    phase: u16,
) -> Result<InputId, ReadError> {
    let entry = &graph.archive_members[member.index()];
    let archive: ArchiveId = entry.archive;
    let archive_input = graph.archives[archive.index()].input;
    let name = format!("{}({})", graph.inputs[archive_input.index()].logical_name, entry.name);
    let data = entry.data.clone();
    let range = entry.range.clone();
    let kind = match data.get(range.clone()).map(probe) {
        Some(InputKind::Bitcode) => InputKind::Bitcode,
        _ => InputKind::Object,
    };
    let id = InputId(graph.inputs.len() as u32);
    graph.inputs.push(Input {
        logical_name: name,
        kind,
        ordinal: id.0,
        object_range: range,
        data,
        format: None,
        machine: None,
        archive: Some(archive),
        member: Some(member),
        origin: Origin::made(Some(archive_input), Some(member), 0, Some(phase)),
    });
    graph.archive_members[member.index()].materialized = Some((id, reason));
    match kind {
        InputKind::Bitcode => bitcode_input::read_bitcode(graph, id, phase)?,
        _ => object_file::read_object(graph, id, phase)?,
    }
    Ok(id)
}

/// Extracts every member of the archive input `input` not extracted yet, in the archive's order
/// (`--whole-archive`); nothing for an input that is not an archive.
pub(crate) fn extract_whole_archive(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<(), ReadError> {
    let Some(archive) = graph.inputs[input.index()].archive else {
        return Ok(());
    };
    for member in graph.archives[archive.index()].members.clone() {
        if graph.archive_members[member as usize].materialized.is_none() {
            extract_member(
                graph,
                MemberId(member),
                crate::graph::MaterializationReason::WholeArchive,
                phase,
            )?;
        }
    }
    Ok(())
}

/// Reads named inputs (objects and archives, as bytes) into a new graph, extracting no archive members:
/// what the `read_inputs` phase does, for tests, fuzzing and benchmarks. The first object sets the target.
pub fn graph_from_inputs(inputs: Vec<(String, Vec<u8>)>) -> Result<LinkGraph, ReadError> {
    graph_from_inputs_for(LinkTarget::FromFirstObject, inputs)
}

/// Like [`graph_from_inputs`], for `target` ([`LinkTarget::AnyMachine`] reads objects of every format and
/// machine side by side).
pub fn graph_from_inputs_for(target: LinkTarget, inputs: Vec<(String, Vec<u8>)>) -> Result<LinkGraph, ReadError> {
    let mut graph = LinkGraph {
        target,
        ..LinkGraph::default()
    };
    for (name, data) in inputs {
        let id = add_input(&mut graph, name, data.into(), 0);
        read_input(&mut graph, id, 0)?;
    }
    graph.index_edges();
    Ok(graph)
}

/// Like [`graph_from_inputs`], with the inputs read by `workers` threads (what `read_inputs` does).
pub fn graph_from_inputs_in_parallel(inputs: Vec<(String, Vec<u8>)>, workers: usize) -> Result<LinkGraph, ReadError> {
    let mut graph = LinkGraph::default();
    for (name, data) in inputs {
        add_input(&mut graph, name, data.into(), 0);
    }
    parallel::read_all_inputs(&mut graph, 0, workers)?;
    Ok(graph)
}

/// Reads every member of every archive of `graph` as if all were extracted (for tests and fuzzing of the
/// member readers).
pub fn extract_all_members(graph: &mut LinkGraph) -> Result<(), ReadError> {
    for member in 0..graph.archive_members.len() {
        if graph.archive_members[member].materialized.is_none() {
            extract_member(
                graph,
                MemberId(member as u32),
                crate::graph::MaterializationReason::WholeArchive,
                0,
            )?;
        }
    }
    graph.index_edges();
    Ok(())
}

/// `e_flags` of the 64-bit little-endian ELF object in `range` of `data`, if it is one.
pub(crate) fn elf_flags(data: &[u8], range: std::ops::Range<usize>) -> Option<u32> {
    let header = data.get(range)?;
    if header.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    header.get(48..52)?.try_into().ok().map(u32::from_le_bytes)
}
