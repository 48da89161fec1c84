//! `ar` archives, GNU and thin: each member is listed with the global symbols it defines. They are read from
//! the archive's symbol index, as ld.bfd and lld read them, when the archive has one and every entry of it
//! names a member; otherwise (no index, a thin archive, an index entry that points nowhere) from each
//! member's own symbol table, which is what a correct index lists.

use std::path::Path;

use object::{Object, ObjectSymbol};
use rustc_hash::FxHashMap;

use neverc_userfile::{LINK_INPUT_LIMIT, SharedBytes, read_user_file};

use crate::graph::{Archive, ArchiveId, ArchiveMember, InputId, InputKind, LinkGraph, MemberId, Origin};
use crate::read::{ReadError, probe};

pub(crate) fn read_archive(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<ArchiveId, ReadError> {
    let entry = &graph.inputs[input.index()];
    let name = entry.logical_name.clone();
    let data = entry.data.clone();
    let archive = object::read::archive::ArchiveFile::parse(&*data)
        .map_err(|error| ReadError::new(&name, format!("malformed archive: {error}")))?;
    let directory = Path::new(&name).parent().map(Path::to_path_buf).unwrap_or_default();
    let archive_id = ArchiveId(graph.archives.len() as u32);
    let first = graph.archive_members.len() as u32;
    let members = archive
        .members()
        .map(|member| member.map_err(|error| ReadError::new(&name, format!("malformed archive member: {error}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut indexed = if archive.is_thin() {
        None
    } else {
        indexed_definitions(&archive, &data, &members)
    };
    for (ordinal, member) in members.into_iter().enumerate() {
        let member_name = String::from_utf8_lossy(member.name()).into_owned();
        let (member_data, range): (SharedBytes, std::ops::Range<usize>) = if member.is_thin() {
            // The member is a file of its own: read like a top-level input (only a regular file, since a
            // device or a pipe named by a crafted archive would never end, and up to the input limit).
            let path = directory.join(&member_name);
            let member_input = format!("{name}({member_name})");
            let bytes: SharedBytes = read_user_file(&path, LINK_INPUT_LIMIT)
                .map_err(|error| ReadError::unreadable(&member_input, &error))?
                .into();
            // ld.bfd refuses a member it cannot recognize; a thin archive is read member by member here,
            // so the member is refused when the archive is read.
            if probe(&bytes) != InputKind::Object || object::File::parse(&*bytes).is_err() {
                return Err(ReadError::new(
                    &member_input,
                    format!("member `{member_name}` of the thin archive is not an object: file format not recognized"),
                ));
            }
            let length = bytes.len();
            (bytes, 0..length)
        } else {
            let (offset, size) = member.file_range();
            let start = offset as usize;
            let end = start + size as usize;
            if end > data.len() {
                return Err(ReadError::new(
                    &name,
                    format!("member `{member_name}` extends past the end"),
                ));
            }
            (data.clone(), start..end)
        };
        let defines = match indexed.as_mut() {
            Some(indexed) => std::mem::take(&mut indexed[ordinal]),
            None => member_definitions(&member_data[range.clone()]),
        };
        let member_id = MemberId(graph.archive_members.len() as u32);
        graph.archive_members.push(ArchiveMember {
            archive: archive_id,
            name: member_name,
            ordinal: ordinal as u32,
            data: member_data,
            range,
            defines,
            materialized: None,
            origin: Origin::made(Some(input), Some(member_id), ordinal as u32, Some(phase)),
        });
    }
    graph.archives.push(Archive {
        input,
        thin: archive.is_thin(),
        members: first..graph.archive_members.len() as u32,
        origin: Origin::made(Some(input), None, 0, Some(phase)),
    });
    graph.inputs[input.index()].archive = Some(archive_id);
    Ok(archive_id)
}

/// The names the archive's symbol index lists, member by member (in `members` order); `None` when there is
/// no index or an entry of it names no member (the members are read instead).
fn indexed_definitions(
    archive: &object::read::archive::ArchiveFile<'_>,
    data: &[u8],
    members: &[object::read::archive::ArchiveMember<'_>],
) -> Option<Vec<Vec<String>>> {
    let symbols = archive.symbols().ok()??;
    // An index entry names a member by the file offset of its header, which is where the header the
    // reader returns lies in `data`.
    let start = data.as_ptr() as usize;
    let by_header: FxHashMap<u64, usize> = members
        .iter()
        .enumerate()
        .filter_map(|(ordinal, member)| {
            let header = member.header()? as *const object::archive::Header as usize;
            Some((header.checked_sub(start)? as u64, ordinal))
        })
        .collect();
    let mut defines = vec![Vec::new(); members.len()];
    for symbol in symbols {
        let symbol = symbol.ok()?;
        let ordinal = *by_header.get(&symbol.offset().0)?;
        defines[ordinal].push(crate::symbol_name::from_bytes(symbol.name()).into_owned());
    }
    Some(defines)
}

/// The global (and weak) symbols a member defines — functions, data, TLS, IFUNC, absolute and common ones,
/// as `ar`'s index lists them; a member that is not an object defines none.
fn member_definitions(bytes: &[u8]) -> Vec<String> {
    if probe(bytes) == InputKind::Bitcode {
        return crate::read::bitcode_input::bitcode_definitions(bytes);
    }
    let Ok(file) = object::File::parse(bytes) else {
        return Vec::new();
    };
    file.symbols()
        .filter(|symbol| symbol.is_global() && !symbol.is_undefined())
        .filter_map(|symbol| {
            symbol
                .name_bytes()
                .ok()
                .map(|name| crate::symbol_name::from_bytes(name).into_owned())
        })
        .collect()
}
