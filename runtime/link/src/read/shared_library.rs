//! Reading a shared library (an ELF `ET_DYN` file) as a link input: what it is called at run time
//! (`DT_SONAME`, or its file name), which libraries it needs (`DT_NEEDED`), the symbols it defines for
//! others (its `.dynsym`, with their versions from `.gnu.version` and `.gnu.version_d`) and the names it
//! leaves undefined. Nothing of its code or data enters the output: its definitions become `SHARED`
//! symbols, which the executable refers to through the dynamic loader.

use object::read::elf::{Dyn as _, FileHeader as _, Sym as _};
use object::{LittleEndian, elf};

use super::ReadError;
use super::object_file::check_target;
use crate::graph::{
    Binding, Definition, InputId, LinkGraph, ObjectFormat, Origin, SharedLibrary, Symbol, SymbolType, Visibility,
};

/// What a shared library's dynamic section and dynamic symbol table say, parsed once for an input library
/// and for a library only an input needs.
pub(crate) struct DynamicFacts {
    /// `DT_SONAME`, when it has one.
    pub soname: Option<String>,
    /// Its `DT_NEEDED` entries.
    pub needed: Vec<String>,
    /// The global names it leaves undefined (not the weak ones).
    pub references: Vec<String>,
    /// Its global and weak definitions (hidden versions included).
    pub definitions: Vec<DynamicDefinition>,
    /// Its `e_machine`.
    pub machine: u16,
}

/// One global or weak definition of a shared library's `.dynsym`.
pub(crate) struct DynamicDefinition {
    pub name: String,
    /// The version it has, when the library versions its symbols.
    pub version: Option<String>,
    /// Whether the version is hidden (`memcpy@GLIBC_2.2.5` beside the default `memcpy@@GLIBC_2.14`): an
    /// unversioned reference never binds to it.
    pub hidden: bool,
    pub binding: Binding,
    pub visibility: Visibility,
    pub symbol_type: SymbolType,
    pub value: u64,
    pub size: u64,
    /// Its index in `.dynsym`.
    pub index: usize,
}

/// Parses the dynamic section and dynamic symbols of the shared library `bytes` (named `name` in errors).
pub(crate) fn dynamic_facts(name: &str, bytes: &[u8]) -> Result<DynamicFacts, ReadError> {
    let malformed = |what: &str, error: object::read::Error| ReadError::new(name, format!("{what}: {error}"));
    if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
        return Err(ReadError::new(
            name,
            "a shared library that is not 64-bit little-endian ELF (no bundled target reads it)",
        ));
    }
    let header =
        elf::FileHeader64::<LittleEndian>::parse(bytes).map_err(|error| malformed("not a shared library", error))?;
    let endian = header
        .endian()
        .map_err(|error| malformed("not a shared library", error))?;
    let sections = header
        .sections(endian, bytes)
        .map_err(|error| malformed("its section headers", error))?;
    let symbols = sections
        .symbols(endian, bytes, elf::SHT_DYNSYM)
        .map_err(|error| malformed("its dynamic symbol table", error))?;
    let versions = sections
        .versions(endian, bytes)
        .map_err(|error| malformed("its symbol versions", error))?;

    let mut soname = None;
    let mut needed = Vec::new();
    // A file of type ET_DYN without a dynamic section is no library the loader could map.
    let Some((entries, strings_index)) = sections
        .dynamic(endian, bytes)
        .map_err(|error| malformed("its dynamic section", error))?
    else {
        return Err(ReadError::new(
            name,
            "a shared object (ELF type ET_DYN) without a dynamic section is not a shared library",
        ));
    };
    {
        let strings = sections
            .strings(endian, bytes, strings_index)
            .map_err(|error| malformed("its dynamic string table", error))?;
        for entry in entries {
            let tag = entry.d_tag(endian);
            if tag != elf::DT_SONAME && tag != elf::DT_NEEDED {
                continue;
            }
            let text = entry
                .string(endian, strings)
                .map_err(|error| malformed("a name its dynamic section gives", error))?;
            let text = String::from_utf8_lossy(text).into_owned();
            if tag == elf::DT_SONAME {
                soname = Some(text);
            } else {
                needed.push(text);
            }
        }
    }
    let mut references = Vec::new();
    let mut definitions = Vec::new();
    for (index, symbol) in symbols.enumerate() {
        let binding = match symbol.st_bind() {
            elf::STB_GLOBAL | elf::STB_GNU_UNIQUE => Binding::Global,
            elf::STB_WEAK => Binding::Weak,
            _ => continue,
        };
        let symbol_name = symbols
            .symbol_name(endian, symbol)
            .map_err(|error| malformed("a dynamic symbol's name", error))?;
        let symbol_name = crate::symbol_name::from_bytes(symbol_name).into_owned();
        if symbol.st_shndx(endian) == elf::SHN_UNDEF {
            if binding == Binding::Global {
                references.push(symbol_name);
            }
            continue;
        }
        let (version, hidden) = match &versions {
            Some(versions) => {
                let version_index = versions.version_index(endian, index);
                if version_index.is_local() {
                    continue;
                }
                let version = versions
                    .version(version_index)
                    .map_err(|error| malformed(&format!("the version of `{symbol_name}`"), error))?
                    .map(|version| String::from_utf8_lossy(version.name()).into_owned());
                (version, version_index.is_hidden())
            }
            None => (None, false),
        };
        definitions.push(DynamicDefinition {
            name: symbol_name,
            version,
            hidden,
            binding,
            visibility: match symbol.st_visibility() {
                elf::STV_PROTECTED => Visibility::Protected,
                _ => Visibility::Default,
            },
            symbol_type: match symbol.st_type() {
                elf::STT_FUNC => SymbolType::Function,
                elf::STT_GNU_IFUNC => SymbolType::Ifunc,
                elf::STT_OBJECT | elf::STT_COMMON => SymbolType::Object,
                elf::STT_TLS => SymbolType::Tls,
                _ => SymbolType::None,
            },
            value: symbol.st_value(endian),
            size: symbol.st_size(endian),
            index: index.0,
        });
    }
    Ok(DynamicFacts {
        soname,
        needed,
        references,
        definitions,
        machine: header.e_machine(endian),
    })
}

/// Reads the shared library held by input `input` into `graph`: one [`SharedLibrary`] entity and one
/// `SHARED` symbol per global or weak definition. A definition of a hidden version (`memcpy@GLIBC_2.2.5`
/// beside `memcpy@@GLIBC_2.14`) is named with its version, `memcpy@GLIBC_2.2.5`: an unversioned reference
/// never binds to it, and a reference of that versioned name (an object's `.symver`) does.
pub(crate) fn read_shared_library(graph: &mut LinkGraph, input: InputId, phase: u16) -> Result<(), ReadError> {
    let entry = &graph.inputs[input.index()];
    let name = entry.logical_name.clone();
    let data = entry.data.clone();
    let bytes = data
        .get(entry.object_range.clone())
        .ok_or_else(|| ReadError::new(&name, "object range outside the file"))?;
    if bytes.get(4) == Some(&2) && bytes.get(5) == Some(&1) {
        check_target(graph, &name, bytes)?;
    }
    let facts = dynamic_facts(&name, bytes)?;
    // Without DT_SONAME, the loader finds the library by the name the link gave it, as ld.bfd records it.
    let install_name = facts.soname.unwrap_or_else(|| {
        std::path::Path::new(&name)
            .file_name()
            .map_or_else(|| name.clone(), |file| file.to_string_lossy().into_owned())
    });
    {
        let entry = &mut graph.inputs[input.index()];
        entry.format = Some(ObjectFormat::Elf);
        entry.machine = Some(crate::graph::Machine(facts.machine));
    }
    let origin = |index: usize| Origin::made(Some(input), None, index as u32, Some(phase));
    let mut hidden_definitions = Vec::new();
    for definition in facts.definitions {
        let name = match (&definition.version, definition.hidden) {
            (Some(version), true) => {
                hidden_definitions.push(definition.name.clone());
                format!("{}@{version}", definition.name)
            }
            _ => definition.name,
        };
        graph.symbols.push(Symbol {
            name,
            version: definition.version,
            binding: definition.binding,
            visibility: definition.visibility,
            definition: Definition::Shared,
            symbol_type: definition.symbol_type,
            atom: None,
            value: definition.value,
            size: definition.size,
            prevailing: false,
            exported: false,
            imported: false,
            root: false,
            resolution: None,
            origin: origin(definition.index),
        });
    }
    graph.shared_libraries.push(SharedLibrary {
        input,
        install_name,
        needed: facts.needed,
        references: facts.references,
        hidden_definitions,
        origin: origin(0),
    });
    Ok(())
}
