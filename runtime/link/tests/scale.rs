#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the scale benchmarks (`benches/scale.rs`) measure, pinned on the same synthetic links: GOT slots
//! in first-use order and every GOT load patched to its symbol's slot, archive members extracted in the
//! order symbol resolution has always used, and proofs that stay equal for equal links and change with the
//! inputs or the options.

#[path = "support/synthetic.rs"]
mod synthetic;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::run_link;
use neverc_link::frame::Proof;
use neverc_link::graph::MaterializationReason;
use neverc_link::plugin::{LinkPlugin, ObserverPoint, Registrar, Registry};
use neverc_link::read::graph_from_inputs;
use neverc_link::status::Status;
use neverc_tables::PhaseTables;

fn tables() -> &'static PhaseTables {
    &neverc_tables::BUNDLED_PHASES
}

fn output(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("link-scale-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A context whose graph already holds `inputs` (the link's probe and read phases find them read).
fn context_for(inputs: &[(String, Vec<u8>)], name: &str) -> LinkContext {
    let mut context = LinkContext::new(LinkOptions::new(Vec::new(), output(name)));
    context.graph = graph_from_inputs(inputs.to_vec()).unwrap();
    context
}

fn link(context: &mut LinkContext, registry: &mut Registry) {
    if let Err(error) = run_link(context, tables(), registry) {
        panic!("the synthetic link failed: {error}");
    }
}

#[test]
fn got_slots_of_20000_symbols_follow_first_use_and_every_load_reads_its_own_slot() {
    let (inputs, first_use) = synthetic::got_link(20_000, 4);
    let mut context = context_for(&inputs, "got");
    link(&mut context, &mut Registry::default());
    let names: Vec<&str> = context
        .got()
        .iter()
        .map(|symbol| context.graph.symbols[symbol.index()].name.as_str())
        .collect();
    assert_eq!(names.len(), 20_000);
    assert!(names.iter().zip(&first_use).all(|(slot, expected)| slot == expected));
    for (slot, symbol) in context.got().iter().enumerate() {
        assert_eq!(context.got_slot_of(*symbol), Some(slot));
    }

    // Every `GOTPCREL` field of the image holds the distance from its end to the slot of its symbol.
    let slot_of: HashMap<&str, u64> = first_use
        .iter()
        .enumerate()
        .map(|(slot, name)| (name.as_str(), slot as u64))
        .collect();
    let layout = context.layout().unwrap();
    let text = layout
        .sections
        .iter()
        .position(|section| section.name == ".text")
        .unwrap();
    let (text_address, text_offset) = (layout.sections[text].address, layout.sections[text].file_offset);
    let image = context.image().unwrap().to_vec().unwrap();
    let got_address = context.graph.atoms[context.got_atom().unwrap().index()].address;
    let mut checked = 0;
    for edge in &context.graph.edges {
        if edge.relocation.raw != synthetic::R_X86_64_GOTPCREL {
            continue;
        }
        let place = context.graph.atoms[edge.source.index()].address + edge.offset;
        let at = (text_offset + place - text_address) as usize;
        let field = &image[at..at + 4];
        let displacement = i32::from_le_bytes(field.try_into().unwrap());
        let target = (place as i64 + 4 + i64::from(displacement)) as u64;
        let name = context.graph.symbols[edge.target_symbol.get().unwrap().index()]
            .name
            .as_str();
        assert_eq!(target, got_address + 8 * slot_of[name], "the GOT load of `{name}`");
        checked += 1;
    }
    assert_eq!(checked, 80_000);
}

#[test]
fn a_chain_of_archive_members_is_extracted_one_round_at_a_time_in_chain_order() {
    let members = 300;
    let mut context = context_for(&synthetic::archive_chain(members), "chain");
    link(&mut context, &mut Registry::default());
    // The inputs: main.o, the archive, then the members in the order they were extracted.
    let extracted: Vec<&str> = context.graph.inputs[2..]
        .iter()
        .map(|input| input.logical_name.as_str())
        .collect();
    let expected: Vec<String> = (0..members).map(|member| format!("libchain.a(m{member}.o)")).collect();
    assert_eq!(extracted, expected);
    for member in &context.graph.archive_members {
        let index: usize = member.name[1..member.name.len() - 2].parse().unwrap();
        match &member.materialized {
            Some((input, MaterializationReason::Defines(name))) => {
                assert_eq!(input.index(), index + 2);
                assert_eq!(name, &format!("link_{index}"));
            }
            other => panic!("member {} was not extracted for its symbol: {other:?}", member.name),
        }
    }
}

#[test]
fn members_wanted_in_one_round_are_extracted_in_the_order_of_the_references() {
    // `_start` refers to `second` before `first`; the archive holds `first`'s member first. Both are wanted
    // in the first round and extracted in reference order; `first`'s member then needs `third`.
    let mut main = synthetic::ObjectFile::new();
    main.function("_start");
    main.call("second");
    main.call("first");
    main.ret();
    main.end_function();
    let member = |name: &str, calls: Option<&str>| {
        let mut file = synthetic::ObjectFile::new();
        file.function(name);
        if let Some(callee) = calls {
            file.call(callee);
        }
        file.ret();
        file.end_function();
        file.to_bytes()
    };
    let library = synthetic::archive(&[
        ("third.o".to_string(), member("third", None)),
        ("first.o".to_string(), member("first", Some("third"))),
        ("second.o".to_string(), member("second", None)),
    ]);
    let inputs = vec![("main.o".to_string(), main.to_bytes()), ("lib.a".to_string(), library)];
    let mut context = context_for(&inputs, "rounds");
    link(&mut context, &mut Registry::default());
    let extracted: Vec<&str> = context.graph.inputs[2..]
        .iter()
        .map(|input| input.logical_name.as_str())
        .collect();
    assert_eq!(extracted, ["lib.a(second.o)", "lib.a(first.o)", "lib.a(third.o)"]);
}

/// A plugin that records the proofs `relocate`'s skip request and its BEFORE observer are given.
struct ProofRecorder(Rc<RefCell<Vec<Option<Proof>>>>);

impl LinkPlugin for ProofRecorder {
    fn name(&self) -> &str {
        "proof-recorder"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let observed = Rc::clone(&self.0);
        registrar.observe(
            "neverc.link.relocate",
            ObserverPoint::Before,
            Box::new(move |frame| {
                observed.borrow_mut().push(frame.proof());
                Ok(())
            }),
        )?;
        let offered = Rc::clone(&self.0);
        registrar.skip_with_proof(
            "neverc.link.relocate",
            Box::new(move |_, current| {
                offered.borrow_mut().push(current);
                None
            }),
        )
    }
}

/// The proof `relocate` is offered in a link of `inputs` (checked against the one its observer sees).
fn relocate_proof(inputs: &[(String, Vec<u8>)], gc_sections: bool) -> Proof {
    let proofs = Rc::new(RefCell::new(Vec::new()));
    let mut registry = Registry::default();
    registry
        .register(tables(), &mut ProofRecorder(Rc::clone(&proofs)))
        .unwrap();
    let mut context = context_for(inputs, "proof");
    context.options.gc_sections = gc_sections;
    link(&mut context, &mut registry);
    let proofs = proofs.borrow();
    assert_eq!(proofs.len(), 2);
    assert_eq!(proofs[0], proofs[1], "the observer and the skip request see one proof");
    proofs[0].unwrap()
}

#[test]
fn proofs_are_equal_for_equal_links_and_change_with_input_bytes_and_options() {
    let inputs = synthetic::bulky_link(4, 1 << 16);
    let proof = relocate_proof(&inputs, false);
    assert_eq!(relocate_proof(&inputs, false), proof);
    // One byte of a section the link does not even place (`.comment` starts within the first 128 bytes).
    let mut changed = inputs.clone();
    changed[3].1[5_000] ^= 1;
    let other = relocate_proof(&changed, false);
    assert_ne!(other.semantic_digest, proof.semantic_digest);
    assert_eq!((other.generation, other.state), (proof.generation, proof.state));
    let collected = relocate_proof(&inputs, true);
    assert_ne!(collected.semantic_digest, proof.semantic_digest);
}
