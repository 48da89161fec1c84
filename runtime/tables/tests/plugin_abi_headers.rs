#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The C side of the plugin ABI: the committed headers `include/neverc/Plugin/*.h` are what codegen makes of
//! `abi/*.toml` now (`NEVERC_BLESS=1` rewrites them), they compile as strict C11 and C++17, and gcc lays out
//! every structure and API table exactly as the Rust mirror `plugin_abi::ffi` and the declaration's own
//! layout rules say.

use std::collections::BTreeMap;
use std::path::PathBuf;

use neverc_schema::abi_types::AbiTypeTable;
use neverc_schema::{LoadedAbiPart, PluginAbiDeclaration, load_phase_schema, load_plugin_abi_with, target_files};
use neverc_tables::plugin_abi::ffi::LAYOUTS;
use neverc_test_support::{check_committed_files, compile_strict, repo, run_in, scratch, succeeded, text};

fn parts() -> Vec<LoadedAbiPart> {
    let schema = load_phase_schema(&repo().join("PhaseSchema.json")).unwrap();
    load_plugin_abi_with(&target_files(&repo().join("abi")).unwrap(), &schema).unwrap()
}

fn include_dir() -> PathBuf {
    repo().join("include")
}

#[test]
fn committed_headers_are_what_codegen_produces_now() {
    let parts = parts();
    let headers = neverc_codegen::plugin_headers(&parts).unwrap();
    assert_eq!(
        headers,
        neverc_codegen::plugin_headers(&parts).unwrap(),
        "not deterministic"
    );
    check_committed_files(
        &repo().join(neverc_codegen::HEADER_DIR),
        headers
            .iter()
            .map(|header| (header.name.as_str(), header.contents.as_str())),
    );
}

/// A translation unit that includes every header.
fn all_headers_source(parts: &[LoadedAbiPart]) -> String {
    let mut source: String = parts
        .iter()
        .map(|part| format!("#include \"neverc/Plugin/{}\"\n", part.declaration.header))
        .collect();
    source.push_str("int neverc_headers_compile(void);\nint neverc_headers_compile(void) { return NEVERC_TRUE; }\n");
    source
}

#[test]
fn headers_compile_as_strict_c11_and_cxx17() {
    let dir = scratch!("tables-abi-headers/compile");
    let source = all_headers_source(&parts());
    std::fs::write(dir.join("all.c"), &source).unwrap();
    std::fs::write(dir.join("all.cpp"), &source).unwrap();
    compile_strict("gcc", &dir, &["-c", "all.c", "-o", "all_c.o"]);
    compile_strict("g++", &dir, &["-c", "all.cpp", "-o", "all_cpp.o"]);
}

/// `struct NAME SIZE ALIGN` and `field NAME.FIELD OFFSET SIZE` lines, as a map from name to numbers.
fn parse_layout(printed: &str) -> BTreeMap<String, Vec<usize>> {
    printed
        .lines()
        .map(|line| {
            let mut words = line.split_whitespace().skip(1);
            let name = words.next().unwrap().to_string();
            (name, words.map(|number| number.parse().unwrap()).collect())
        })
        .collect()
}

#[test]
fn gcc_lays_out_every_structure_as_the_rust_mirror_does() {
    let parts = parts();
    let dir = scratch!("tables-abi-headers/layout");
    std::fs::write(
        dir.join("layout.c"),
        neverc_codegen::plugin_abi_layout_program(&parts).unwrap(),
    )
    .unwrap();
    let include = format!("-I{}", include_dir().display());
    let built = run_in(
        "gcc",
        &dir,
        &[
            "-std=c11", "-Wall", "-Wextra", "-Werror", &include, "layout.c", "-o", "layout",
        ],
    );
    succeeded(&built, "gcc layout.c");
    let ran = run_in(dir.join("layout"), &dir, &[]);
    succeeded(&ran, "the layout program");
    let c = parse_layout(&text(&ran.stdout));
    let mut rust = BTreeMap::new();
    for layout in LAYOUTS {
        rust.insert(layout.name.to_string(), vec![layout.size, layout.align]);
        for field in layout.fields {
            rust.insert(
                format!("{}.{}", layout.name, field.name),
                vec![field.offset, field.size],
            );
        }
    }
    assert!(c.len() > 100, "the program printed too little: {}", c.len());
    for (name, numbers) in &c {
        assert_eq!(rust.get(name), Some(numbers), "{name}: C says {numbers:?}");
    }
    assert_eq!(c.len(), rust.len(), "the Rust mirror has entries C does not");
}

#[test]
fn the_declared_layout_has_no_padding_and_matches_the_mirror() {
    let parts = parts();
    let declarations: Vec<&PluginAbiDeclaration> = parts.iter().map(|part| &part.declaration).collect();
    let table = AbiTypeTable::new(&declarations);
    let mut checked = 0;
    for item in declarations.iter().flat_map(|declaration| &declaration.structs) {
        let layout = table.struct_layout(item).unwrap();
        // The Rust name differs from the declared one in case only (`LTOOptions` is `LtoOptions`).
        let mirror = LAYOUTS
            .iter()
            .find(|mirror| mirror.name.eq_ignore_ascii_case(&item.name))
            .unwrap_or_else(|| panic!("{} has no mirror", item.name));
        assert_eq!(mirror.size as u64, layout.size, "{}", item.name);
        assert_eq!(mirror.align as u64, layout.align, "{}", item.name);
        let offsets: Vec<u64> = mirror.fields.iter().map(|field| field.offset as u64).collect();
        let declared: Vec<u64> = layout.fields.iter().map(|field| field.offset).collect();
        assert_eq!(offsets, declared, "{}", item.name);
        assert!(layout.fields.iter().all(|field| field.padding_before == 0));
        assert_eq!(layout.tail_padding, 0, "{}", item.name);
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn the_abi_tables_have_their_slots_in_order() {
    use neverc_tables::plugin_abi::ffi::{LinkApi, LtoApi};
    let link = LAYOUTS.iter().find(|layout| layout.name == "LinkApi").unwrap();
    assert_eq!(link.fields.len(), 2 + 52, "Header, Context and 52 slots");
    let names: Vec<&str> = link.fields.iter().map(|field| field.name).collect();
    assert_eq!(&names[..4], ["header", "context", "get_request", "get_graph_info"]);
    assert_eq!(names[2 + 2], "get_input_page");
    assert_eq!(names[2 + 17], "get_input_info");
    assert_eq!(names[2 + 36], "begin_mutation");
    assert_eq!(names[2 + 51], "set_symbol_resolution");
    assert_eq!(std::mem::size_of::<LinkApi>(), 16 + 8 + 52 * 8);
    assert_eq!(std::mem::size_of::<LtoApi>(), 16 + 8 + 5 * 8);
}
