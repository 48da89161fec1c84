#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The cost of committing a one-symbol mutation on graphs of 1,000 and 1,000,000 symbols: a commit applies
//! its delta in place (NeverC copies the whole graph), so the two must cost about the same.
//! Run with `cargo bench -p neverc-link --bench commit`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::with_frame;
use neverc_link::frame::ExecutionState;
use neverc_link::graph::{
    Atom, AtomId, Binding, Content, Definition, EntityKind, Origin, Symbol, SymbolType, Visibility, atom_flags,
};

/// A graph of `symbols` defined symbols over `symbols / 16` atoms, at state LAYOUT_COMPLETE.
fn context_with(symbols: usize) -> (LinkContext, ExecutionState) {
    let mut context = LinkContext::new(LinkOptions::new(Vec::new(), "unused".into()));
    let atoms = (symbols / 16).max(1);
    for index in 0..atoms {
        context.graph.atoms.push(Atom {
            section: None,
            name: format!(".text.{index}"),
            flags: atom_flags::LIVE,
            alignment: 16,
            address: 0,
            file_offset: 0,
            content: Content::ZeroFill,
            zero_fill: 64,
            comdat: None,
            fold_leader: None,
            origin: Origin::default(),
        });
    }
    for index in 0..symbols {
        context.graph.symbols.push(Symbol {
            name: format!("symbol_{index}"),
            version: None,
            binding: Binding::Global,
            visibility: Visibility::Default,
            definition: Definition::Defined,
            symbol_type: SymbolType::Function,
            atom: Some(AtomId((index % atoms) as u32)),
            value: 0,
            size: 4,
            prevailing: true,
            exported: false,
            imported: false,
            root: false,
            resolution: None,
            origin: Origin::default(),
        });
    }
    let mut execution = ExecutionState::new(1);
    execution.state = 11;
    (context, execution)
}

fn commit(c: &mut Criterion) {
    let tables = &neverc_tables::BUNDLED_PHASES;
    let mut group = c.benchmark_group("commit one symbol");
    for symbols in [1_000usize, 1_000_000] {
        let (mut context, mut execution) = context_with(symbols);
        group.bench_with_input(BenchmarkId::new("RebindSymbol", symbols), &symbols, |b, symbols| {
            let mut index = 0usize;
            b.iter(|| {
                index = (index + 7919) % symbols;
                with_frame(&mut context, &mut execution, tables, "neverc.link.relocate", |frame| {
                    let symbol = frame.handle(EntityKind::Symbol, index).unwrap();
                    let atom = frame.handle(EntityKind::Atom, 0).unwrap();
                    let mutation = frame.begin_mutation().unwrap();
                    frame.rebind_symbol(mutation, symbol, atom).unwrap();
                    frame.commit_mutation(mutation).unwrap();
                    black_box(frame.generation())
                })
            })
        });
        group.bench_with_input(BenchmarkId::new("SetSymbolRoot", symbols), &symbols, |b, symbols| {
            let mut index = 0usize;
            b.iter(|| {
                index = (index + 7919) % symbols;
                with_frame(&mut context, &mut execution, tables, "neverc.link.relocate", |frame| {
                    let symbol = frame.handle(EntityKind::Symbol, index).unwrap();
                    let mutation = frame.begin_mutation().unwrap();
                    frame.set_symbol_root(mutation, symbol, true).unwrap();
                    frame.commit_mutation(mutation).unwrap();
                    black_box(frame.generation())
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, commit);
criterion_main!(benches);
