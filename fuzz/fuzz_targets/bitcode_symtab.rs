//! LLVM bitcode symbol tables: arbitrary bytes read as a bitcode file (raw, and inside a bitcode wrapper
//! header). Properties: no panic; an error has a message; a table that reads is consistent (the modules cover
//! the symbols in order and lie inside the file, COMDAT indices are in range, every string lies inside the
//! string table); the same stream inside a wrapper reads to the same table, its positions moved by the header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::read::bitcode::{BitcodeSymbolTable, ProducerCheck, read_symbol_table_with};

/// The size of the wrapper header the target puts in front of the stream (magic, version, offset, size,
/// CPU type).
const WRAPPER_HEADER: usize = 20;

fn check_consistent(data: &[u8], table: &BitcodeSymbolTable<'_>) {
    let mut next = 0;
    let mut previous_end = 0;
    for module in &table.modules {
        assert_eq!(module.symbols.start, next);
        assert!(module.symbols.start <= module.symbols.end);
        assert!(previous_end <= module.range.start && module.range.start <= module.range.end);
        assert!(module.range.end <= data.len());
        next = module.symbols.end;
        previous_end = module.range.end;
    }
    assert_eq!(next, table.symbols.len());
    assert!(!table.modules.is_empty());
    let (Some(_), Some(strtab)) = (
        data.get(table.symtab_range.clone()),
        data.get(table.strtab_range.clone()),
    ) else {
        panic!("blobs outside the input");
    };
    let strtab = strtab.as_ptr_range();
    let inside = |string: &[u8]| {
        string.is_empty() || (string.as_ptr() >= strtab.start && string.as_ptr_range().end <= strtab.end)
    };
    for symbol in &table.symbols {
        assert!(inside(symbol.name) && inside(symbol.ir_name));
        assert!(
            symbol
                .comdat
                .is_none_or(|comdat| (comdat as usize) < table.comdats.len())
        );
        if let Some(uncommon) = symbol.uncommon {
            assert!(inside(uncommon.section_name) && inside(uncommon.coff_weak_external_fallback));
        }
    }
    assert!(table.comdats.iter().all(|comdat| inside(comdat.name)));
    assert!(table.dependent_libraries.iter().all(|library| inside(library)));
    for string in [
        table.producer,
        table.target_triple,
        table.source_file_name,
        table.coff_linker_opts,
    ] {
        assert!(inside(string));
    }
}

/// `data` behind a bitcode wrapper header that places the stream right after it.
fn wrapped(data: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(WRAPPER_HEADER + data.len());
    for word in [0x0b17_c0de, 0, WRAPPER_HEADER as u32, data.len() as u32, 7] {
        file.extend_from_slice(&u32::to_le_bytes(word));
    }
    file.extend_from_slice(data);
    file
}

fuzz_target!(|data: &[u8]| {
    let raw = read_symbol_table_with(data, ProducerCheck::Any);
    match &raw {
        Ok(table) => check_consistent(data, table),
        Err(error) => assert!(!error.to_string().is_empty()),
    }
    // A raw stream (the wrapper requires the whole file to be a multiple of 4 bytes, so the stream is too).
    if data.starts_with(b"BC\xc0\xde") && data.len() % 4 == 0 {
        let file = wrapped(data);
        let inner = read_symbol_table_with(&file, ProducerCheck::Any);
        match (&raw, &inner) {
            (Ok(raw), Ok(inner)) => {
                check_consistent(&file, inner);
                assert_eq!(raw.symbols, inner.symbols);
                assert_eq!(raw.comdats, inner.comdats);
                assert_eq!(raw.target_triple, inner.target_triple);
                assert_eq!(raw.symtab_range.start + WRAPPER_HEADER, inner.symtab_range.start);
                assert_eq!(raw.modules.len(), inner.modules.len());
                for (raw, inner) in raw.modules.iter().zip(&inner.modules) {
                    assert_eq!(raw.range.start + WRAPPER_HEADER, inner.range.start);
                    assert_eq!((raw.module_bit, &raw.symbols), (inner.module_bit, &inner.symbols));
                }
            }
            (Err(_), Err(_)) => {}
            _ => panic!("the wrapped stream reads differently: {raw:?} vs {inner:?}"),
        }
    }
});
