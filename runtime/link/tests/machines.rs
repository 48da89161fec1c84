#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The reader refuses what the link's target cannot link, naming the input: an object of another machine,
//! class or format (and the input that chose the target), and a relocation number the target does not
//! declare (with the section and offset). Read one after another, on several threads, from an archive, and
//! in a real link, which then writes nothing.

mod support;

use std::path::{Path, PathBuf};

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::run_link;
use neverc_link::graph::LinkTarget;
use neverc_link::plugin::Registry;
use neverc_link::read::{
    ReadError, extract_all_members, graph_from_inputs, graph_from_inputs_for, graph_from_inputs_in_parallel,
};
use neverc_tables::target_by_name;
use neverc_test_support::{run_in, scratch, text};
use object::read::elf::{FileHeader, SectionHeader};
use support::*;

fn named(path: &Path) -> (String, Vec<u8>) {
    (input_name(path), read_bytes(path))
}

fn x86_object() -> PathBuf {
    programs().join("basics/main.o")
}

fn aarch64_object() -> PathBuf {
    foreign().join("aarch64-linux.o")
}

/// Reads `inputs` one after another and on four threads; both must fail the same way.
fn refused(inputs: Vec<(String, Vec<u8>)>) -> ReadError {
    let sequential = graph_from_inputs(inputs.clone()).unwrap_err();
    let parallel = graph_from_inputs_in_parallel(inputs, 4).unwrap_err();
    assert_eq!(sequential, parallel);
    sequential
}

/// Like [`refused`], checking that the error names `input` and that its message starts with `start`.
fn refused_as(inputs: Vec<(String, Vec<u8>)>, input: &str, start: &str) -> ReadError {
    let error = refused(inputs);
    assert_eq!(error.input, input, "{error}");
    assert!(error.message.starts_with(start), "{error}");
    error
}

/// `as FLAGS` on a one-function source, into `dir/name`.
fn assembled(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.s"));
    std::fs::write(&source, ".text\n.globl f\nf:\n ret\n").unwrap();
    let output = dir.join(name);
    let mut args = flags.to_vec();
    args.extend([source.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let result = run_in("as", dir, &args);
    assert!(result.status.success(), "as: {}", text(&result.stderr));
    output
}

#[test]
fn objects_of_another_machine_class_or_format_are_refused_naming_them() {
    let dir = scratch!("machines-refused");
    let (x86, aarch64) = (named(&x86_object()), named(&aarch64_object()));

    let error = refused(vec![x86.clone(), aarch64.clone()]);
    assert_eq!(error.input, aarch64.0);
    assert_eq!(
        error.message,
        format!(
            "an object for aarch64 (ELF machine 183, 64-bit, little-endian) cannot be linked: the link's target is \
             x86_64 (ELF machine 62, 64-bit, little-endian), set by `{}`",
            x86.0
        )
    );
    let error = refused_as(
        vec![aarch64.clone(), x86.clone()],
        &x86.0,
        "an object for x86_64 (ELF machine 62, 64-bit",
    );
    assert!(
        error.message.contains("the link's target is aarch64 (ELF machine 183"),
        "{error}"
    );

    // x32: the x86-64 machine in a 32-bit class; i386: another machine and class.
    let x32 = named(&assembled(&dir, "x32.o", &["--x32"]));
    refused_as(
        vec![x86.clone(), x32.clone()],
        &x32.0,
        "an object (ELF machine 62, 32-bit, little-endian) cannot be linked: the link's target is x86_64 (ELF \
         machine 62, 64-bit",
    );
    let i386 = named(&assembled(&dir, "i386.o", &["--32"]));
    refused_as(
        vec![x86.clone(), i386.clone()],
        &i386.0,
        "an object (ELF machine 3, 32-bit",
    );

    // A copy of the x86-64 object whose e_machine says EM_ARM, as the first object: no target to link for.
    let mut arm = x86.1.clone();
    arm[18..20].copy_from_slice(&40u16.to_le_bytes());
    let error = refused(vec![("arm.o".to_string(), arm), x86.clone()]);
    assert_eq!(error.input, "arm.o");
    assert_eq!(
        error.message,
        "an object (ELF machine 40, 64-bit, little-endian) cannot be linked: no target declares its machine"
    );

    // Another format, after an ELF object and first.
    let coff = named(&foreign().join("x86_64-windows.obj"));
    refused_as(
        vec![x86.clone(), coff.clone()],
        &coff.0,
        "a COFF object cannot be linked: the link's target is x86_64",
    );
    let error = refused_as(vec![coff.clone(), x86.clone()], &coff.0, "a COFF object");
    assert_eq!(
        error.message,
        "a COFF object cannot be linked: the linker links ELF objects"
    );

    // A target chosen by the caller: nothing sets it, and the message says so.
    let aarch64_target = target_by_name("aarch64").unwrap();
    let fixed = LinkTarget::Fixed {
        target: aarch64_target,
        set_by: None,
    };
    let error = graph_from_inputs_for(fixed.clone(), vec![x86.clone()]).unwrap_err();
    assert!(
        error
            .message
            .ends_with("the link's target is aarch64 (ELF machine 183, 64-bit, little-endian)"),
        "{error}"
    );
    assert!(graph_from_inputs_for(fixed, vec![aarch64.clone()]).is_ok());

    // Objects of one machine read together, and the target they chose.
    let graph = graph_from_inputs(vec![x86.clone(), named(&programs().join("basics/ops.o"))]).unwrap();
    assert!(
        matches!(&graph.target, LinkTarget::Fixed { target, set_by: Some(by) } if target.name == "x86_64" && *by == x86.0),
        "{:?}",
        graph.target
    );
}

#[test]
fn an_archive_member_of_another_machine_is_refused_naming_the_member() {
    let dir = scratch!("machines-archive");
    let archive = dir.join("libforeign.a");
    let result = run_in(
        "ar",
        &dir,
        &["rcs", archive.to_str().unwrap(), aarch64_object().to_str().unwrap()],
    );
    assert!(result.status.success(), "ar: {}", text(&result.stderr));
    let archive = named(&archive);
    let mut graph = graph_from_inputs(vec![named(&x86_object()), archive.clone()]).unwrap();
    let error = extract_all_members(&mut graph).unwrap_err();
    assert_eq!(error.input, format!("{}(aarch64-linux.o)", archive.0));
    assert!(error.message.starts_with("an object for aarch64"), "{error}");
}

/// `bytes` (an ELF64 relocatable) with the type of the first entry of its first non-empty `.rela` section set
/// to `r_type`; also the name of the section that entry patches and its offset there.
fn with_relocation_type(bytes: &[u8], r_type: u32) -> (Vec<u8>, String, u64) {
    let header = object::elf::FileHeader64::<object::Endianness>::parse(bytes).unwrap();
    let endian = header.endian().unwrap();
    let sections = header.sections(endian, bytes).unwrap();
    let rela = sections
        .iter()
        .find(|section| section.sh_type(endian) == object::elf::SHT_RELA && section.sh_size(endian) > 0)
        .expect("a .rela section");
    let patched = sections
        .section(object::SectionIndex(rela.sh_info(endian) as usize))
        .unwrap();
    let name = String::from_utf8(sections.section_name(endian, patched).unwrap().to_vec()).unwrap();
    let entry = rela.sh_offset(endian) as usize;
    let offset = u64::from_le_bytes(bytes[entry..entry + 8].try_into().unwrap());
    let mut copy = bytes.to_vec();
    copy[entry + 8..entry + 12].copy_from_slice(&r_type.to_le_bytes());
    (copy, name, offset)
}

/// The message of an unknown relocation `r_type` at `offset` of `section`, on `target`.
fn unknown(section: &str, r_type: u32, offset: u64, target: &str) -> String {
    format!(
        "section `{section}`: unknown relocation type {r_type} at offset {offset:#x} (target {target} declares no \
         ELF relocation {r_type})"
    )
}

#[test]
fn an_unknown_relocation_number_is_refused_naming_the_input_section_and_offset() {
    let (name, bytes) = named(&x86_object());
    // 43 is R_X86_64_NUM, one past the last x86-64 relocation.
    let (patched, section, offset) = with_relocation_type(&bytes, 43);
    let error = refused(vec![(name.clone(), patched.clone())]);
    assert_eq!(error.input, name);
    assert_eq!(error.message, unknown(&section, 43, offset, "x86_64"));
    // After another object, too; and R_X86_64_RELATIVE64 exists but never in a static link's inputs.
    let (patched, ..) = with_relocation_type(&bytes, 38);
    let error = refused(vec![named(&programs().join("basics/ops.o")), (name.clone(), patched)]);
    assert!(
        error.message.contains("unknown relocation type 38 at offset"),
        "{error}"
    );

    // An AArch64 object is checked against aarch64.toml, even when read for inspection with other machines:
    // R_AARCH64_P32_ABS32 (1) is ILP32's, not declared for the LP64 target.
    let (name, bytes) = named(&aarch64_object());
    assert!(graph_from_inputs_for(LinkTarget::AnyMachine, vec![(name.clone(), bytes.clone())]).is_ok());
    let (patched, section, offset) = with_relocation_type(&bytes, 1);
    let error = graph_from_inputs_for(LinkTarget::AnyMachine, vec![(name.clone(), patched)]).unwrap_err();
    assert_eq!(error.input, name);
    assert_eq!(error.message, unknown(&section, 1, offset, "aarch64"));
}

/// The options of a link of the `basics` program into `output`, with `change` applied to its inputs.
fn basics(output: &Path, change: impl FnOnce(&mut Vec<PathBuf>)) -> LinkOptions {
    let mut inputs = program_inputs("basics");
    change(&mut inputs);
    LinkOptions::new(inputs, output.to_path_buf())
}

#[test]
fn a_link_with_a_foreign_object_or_an_unknown_relocation_fails_naming_it_and_writes_nothing() {
    let dir = scratch!("machines-link");
    let tables = &neverc_tables::BUNDLED_PHASES;
    let output = dir.join("basics");
    let mut context = LinkContext::new(basics(&output, |_| {}));
    run_link(&mut context, tables, &mut Registry::default()).unwrap();
    assert!(output.exists(), "the program itself links");
    std::fs::remove_file(&output).unwrap();

    let foreign = aarch64_object();
    let mut context = LinkContext::new(basics(&output, |inputs| inputs.push(foreign.clone())));
    let error = run_link(&mut context, tables, &mut Registry::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!("{}: an object for aarch64", foreign.display())),
        "{error}"
    );
    assert!(!output.exists());

    let main = program_inputs("basics")
        .into_iter()
        .find(|path| path.ends_with("main.o"))
        .unwrap();
    let (patched, section, offset) = with_relocation_type(&read_bytes(&main), 43);
    let copy = dir.join("main.o");
    std::fs::write(&copy, patched).unwrap();
    let mut context = LinkContext::new(basics(&output, |inputs| {
        for input in inputs.iter_mut().filter(|input| **input == main) {
            *input = copy.clone();
        }
    }));
    let error = run_link(&mut context, tables, &mut Registry::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!(
            "{}: section `{section}`: unknown relocation type 43 at offset {offset:#x}",
            copy.display()
        )),
        "{error}"
    );
    assert!(!output.exists());
}

#[test]
fn every_relocation_of_the_gcc_built_fixtures_is_declared_under_readelfs_name() {
    let mut files: Vec<(PathBuf, &str)> = x86_objects().into_iter().map(|path| (path, "x86_64")).collect();
    files.push((aarch64_object(), "aarch64"));
    let mut kinds = std::collections::BTreeSet::new();
    for (path, target) in files {
        let target = target_by_name(target).unwrap();
        for relocation in readelf_relocations(&path, &readelf_sections(&path))
            .into_values()
            .flatten()
        {
            let declared = target
                .relocation(neverc_tables::RelocationFormat::Elf, relocation.r_type)
                .unwrap_or_else(|| panic!("{}: type {} is not declared", path.display(), relocation.r_type));
            assert_eq!(declared.name, relocation.type_name, "{}", path.display());
            kinds.insert(declared.name);
        }
        assert!(graph_from_inputs(vec![named(&path)]).is_ok(), "{}", path.display());
    }
    // The fixtures use GOT loads, TLS, PLT calls and data references, not just one or two kinds.
    assert!(kinds.len() >= 12, "{kinds:?}");
}
