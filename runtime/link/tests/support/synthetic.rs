//! Relocatable x86-64 ELF objects and GNU archives built in memory, so that links of any size can be made
//! without a compiler: the scale benchmarks (`benches/scale.rs`) and the tests that pin what they measure
//! (`tests/scale.rs`) share these builders.
#![allow(dead_code)]

use std::collections::HashMap;

const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;
const SHF_INFO_LINK: u64 = 0x40;
const STB_GLOBAL: u8 = 1;
const STT_NOTYPE: u8 = 0;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;

/// `R_X86_64_PLT32`: a call to a function.
pub const R_X86_64_PLT32: u32 = 4;
/// `R_X86_64_GOTPCREL`: a GOT load that is never relaxed, so every target gets a GOT slot.
pub const R_X86_64_GOTPCREL: u32 = 9;

/// Section indices of the objects built here.
const TEXT: u16 = 1;
const DATA: u16 = 2;

struct SymbolEntry {
    name: String,
    section: u16,
    value: u64,
    size: u64,
    kind: u8,
}

struct Relocation {
    offset: u64,
    symbol: usize,
    kind: u32,
    addend: i64,
}

/// One section of an object being written: its header fields and contents.
struct SectionSpec<'a> {
    kind: u32,
    flags: u64,
    contents: &'a [u8],
    link: u32,
    info: u32,
    alignment: u64,
    entry_size: u64,
}

/// A relocatable object: `.text`, `.data`, a non-allocated `.comment` (bytes the link reads but does not
/// place), global symbols and `.text` relocations.
#[derive(Default)]
pub struct ObjectFile {
    text: Vec<u8>,
    data: Vec<u8>,
    comment: Vec<u8>,
    symbols: Vec<SymbolEntry>,
    by_name: HashMap<String, usize>,
    relocations: Vec<Relocation>,
}

impl ObjectFile {
    pub fn new() -> ObjectFile {
        ObjectFile::default()
    }

    fn symbol(&mut self, name: &str) -> usize {
        if let Some(index) = self.by_name.get(name) {
            return *index;
        }
        self.symbols.push(SymbolEntry {
            name: name.to_string(),
            section: 0,
            value: 0,
            size: 0,
            kind: STT_NOTYPE,
        });
        self.by_name.insert(name.to_string(), self.symbols.len() - 1);
        self.symbols.len() - 1
    }

    /// Starts global function `name` at the current end of `.text`.
    pub fn function(&mut self, name: &str) {
        let value = self.text.len() as u64;
        let index = self.symbol(name);
        let entry = &mut self.symbols[index];
        entry.section = TEXT;
        entry.value = value;
        entry.kind = STT_FUNC;
    }

    /// Ends the function defined last: its size is what `.text` grew since it started.
    pub fn end_function(&mut self) {
        let end = self.text.len() as u64;
        if let Some(entry) = self.symbols.iter_mut().rev().find(|entry| entry.section == TEXT) {
            entry.size = end - entry.value;
        }
    }

    /// Defines global data object `name` of `size` zero bytes in `.data`.
    pub fn data(&mut self, name: &str, size: u64) {
        let value = self.data.len() as u64;
        self.data.resize(self.data.len() + size as usize, 0);
        let index = self.symbol(name);
        let entry = &mut self.symbols[index];
        entry.section = DATA;
        entry.value = value;
        entry.size = size;
        entry.kind = STT_OBJECT;
    }

    /// `mov name@GOTPCREL(%rip), %rax`.
    pub fn load_through_got(&mut self, name: &str) {
        self.text.extend_from_slice(&[0x48, 0x8b, 0x05]);
        self.patch(name, R_X86_64_GOTPCREL);
    }

    /// `call name`.
    pub fn call(&mut self, name: &str) {
        self.text.push(0xe8);
        self.patch(name, R_X86_64_PLT32);
    }

    /// `ret`.
    pub fn ret(&mut self) {
        self.text.push(0xc3);
    }

    /// A 32-bit PC-relative field at the end of `.text`, patched with `kind` against `name`.
    fn patch(&mut self, name: &str, kind: u32) {
        let symbol = self.symbol(name);
        self.relocations.push(Relocation {
            offset: self.text.len() as u64,
            symbol,
            kind,
            addend: -4,
        });
        self.text.extend_from_slice(&[0; 4]);
    }

    /// `size` bytes of a non-allocated `.comment` section.
    pub fn comment(&mut self, size: usize) {
        self.comment = (0..size).map(|index| (index % 251) as u8).collect();
    }

    /// The object file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut symtab = vec![0u8; 24];
        for entry in &self.symbols {
            let name = strtab.len() as u32;
            strtab.extend_from_slice(entry.name.as_bytes());
            strtab.push(0);
            symtab.extend_from_slice(&name.to_le_bytes());
            symtab.push(STB_GLOBAL << 4 | entry.kind);
            symtab.push(0);
            symtab.extend_from_slice(&entry.section.to_le_bytes());
            symtab.extend_from_slice(&entry.value.to_le_bytes());
            symtab.extend_from_slice(&entry.size.to_le_bytes());
        }
        let mut rela = Vec::with_capacity(self.relocations.len() * 24);
        for relocation in &self.relocations {
            let info = ((relocation.symbol as u64 + 1) << 32) | u64::from(relocation.kind);
            rela.extend_from_slice(&relocation.offset.to_le_bytes());
            rela.extend_from_slice(&info.to_le_bytes());
            rela.extend_from_slice(&relocation.addend.to_le_bytes());
        }
        let names = [
            "",
            ".text",
            ".data",
            ".comment",
            ".rela.text",
            ".symtab",
            ".strtab",
            ".shstrtab",
        ];
        let mut shstrtab = Vec::new();
        let mut name_offsets = Vec::new();
        for name in names {
            name_offsets.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(name.as_bytes());
            shstrtab.push(0);
        }
        let section = |kind, flags, contents, link, info, alignment, entry_size| SectionSpec {
            kind,
            flags,
            contents,
            link,
            info,
            alignment,
            entry_size,
        };
        // By section index, from 1.
        let sections = [
            section(SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, &self.text, 0, 0, 16, 0),
            section(SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, &self.data, 0, 0, 8, 0),
            section(SHT_PROGBITS, 0, &self.comment, 0, 0, 1, 0),
            section(SHT_RELA, SHF_INFO_LINK, &rela, 5, u32::from(TEXT), 8, 24),
            section(SHT_SYMTAB, 0, &symtab, 6, 1, 8, 24),
            section(SHT_STRTAB, 0, &strtab, 0, 0, 1, 0),
            section(SHT_STRTAB, 0, &shstrtab, 0, 0, 1, 0),
        ];
        let mut file = vec![0u8; 64];
        let mut headers = vec![0u8; 64];
        for (index, section) in sections.iter().enumerate() {
            while file.len() % section.alignment as usize != 0 {
                file.push(0);
            }
            let offset = file.len() as u64;
            file.extend_from_slice(section.contents);
            headers.extend_from_slice(&name_offsets[index + 1].to_le_bytes());
            headers.extend_from_slice(&section.kind.to_le_bytes());
            headers.extend_from_slice(&section.flags.to_le_bytes());
            headers.extend_from_slice(&0u64.to_le_bytes());
            headers.extend_from_slice(&offset.to_le_bytes());
            headers.extend_from_slice(&(section.contents.len() as u64).to_le_bytes());
            headers.extend_from_slice(&section.link.to_le_bytes());
            headers.extend_from_slice(&section.info.to_le_bytes());
            headers.extend_from_slice(&section.alignment.to_le_bytes());
            headers.extend_from_slice(&section.entry_size.to_le_bytes());
        }
        while file.len() % 8 != 0 {
            file.push(0);
        }
        let section_headers = file.len() as u64;
        file.extend_from_slice(&headers);
        let header = &mut file[..64];
        header[..16].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        header[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
        header[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        header[20..24].copy_from_slice(&1u32.to_le_bytes());
        header[40..48].copy_from_slice(&section_headers.to_le_bytes());
        header[52..54].copy_from_slice(&64u16.to_le_bytes());
        header[58..60].copy_from_slice(&64u16.to_le_bytes());
        header[60..62].copy_from_slice(&(sections.len() as u16 + 1).to_le_bytes());
        header[62..64].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        file
    }
}

/// A GNU archive of `members` (names of at most 15 bytes), without a symbol index (the reader lists each
/// member's definitions from its own symbol table).
pub fn archive(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut bytes = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("{name}/"),
            0,
            0,
            0,
            644,
            data.len()
        );
        assert_eq!(header.len(), 60, "member name `{name}` is too long");
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        if bytes.len() % 2 != 0 {
            bytes.push(b'\n');
        }
    }
    bytes
}

/// A link of `symbols` data symbols, each loaded through the GOT `uses` times from `_start` and the
/// functions of `symbols / 250` further objects, in an order that is not the definition order. Returns the
/// inputs and the symbol names in the order of their first use (the order of their GOT slots).
pub fn got_link(symbols: usize, uses: usize) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let objects = (symbols / 250).max(1);
    let references = symbols * uses;
    let per_object = references.div_ceil(objects);
    let mut inputs = Vec::new();
    let mut first_use = Vec::new();
    let mut used = vec![false; symbols];
    let mut reference = 0;
    for object in 0..objects {
        let mut file = ObjectFile::new();
        file.function(&if object == 0 {
            "_start".to_string()
        } else {
            format!("user_{object}")
        });
        for _ in 0..per_object.min(references - reference) {
            // 7,919 is prime, so consecutive references visit every symbol in a scattered order.
            let symbol = reference * 7_919 % symbols;
            reference += 1;
            let name = format!("datum_{symbol}");
            file.load_through_got(&name);
            if !used[symbol] {
                used[symbol] = true;
                first_use.push(name);
            }
        }
        file.ret();
        file.end_function();
        inputs.push((format!("user{object}.o"), file.to_bytes()));
    }
    let mut definitions = ObjectFile::new();
    for symbol in 0..symbols {
        definitions.data(&format!("datum_{symbol}"), 8);
    }
    inputs.push(("data.o".to_string(), definitions.to_bytes()));
    (inputs, first_use)
}

/// `main.o`, whose `_start` calls `link_0`, and `libchain.a`, whose member `mI.o` defines `link_I` and
/// calls `link_I+1` (the last calls nothing): every round of archive extraction finds one more member.
/// The members are stored in reverse, so archive order and extraction order differ.
pub fn archive_chain(members: usize) -> Vec<(String, Vec<u8>)> {
    let mut main = ObjectFile::new();
    main.function("_start");
    main.call("link_0");
    main.ret();
    main.end_function();
    let mut library = Vec::new();
    for member in (0..members).rev() {
        let mut file = ObjectFile::new();
        file.function(&format!("link_{member}"));
        if member + 1 < members {
            file.call(&format!("link_{}", member + 1));
        }
        file.ret();
        file.end_function();
        library.push((format!("m{member}.o"), file.to_bytes()));
    }
    vec![
        ("main.o".to_string(), main.to_bytes()),
        ("libchain.a".to_string(), archive(&library)),
    ]
}

/// `_start` and `objects - 1` more functions, each object carrying `bytes / objects` bytes of `.comment`:
/// a link whose inputs are large while its output is small.
pub fn bulky_link(objects: usize, bytes: usize) -> Vec<(String, Vec<u8>)> {
    (0..objects)
        .map(|object| {
            let mut file = ObjectFile::new();
            file.function(&if object == 0 {
                "_start".to_string()
            } else {
                format!("bulk_{object}")
            });
            file.ret();
            file.end_function();
            file.comment(bytes / objects);
            (format!("bulk{object}.o"), file.to_bytes())
        })
        .collect()
}
