//! Looking at every edge on the link's threads: the makers of synthetic atoms each start by asking which edges
//! need something of them, a question about each edge alone. The answers come back in edge order, whatever
//! the number of threads, so what is made from them is the same.

use crate::graph::{Edge, LinkGraph};

/// Below this many edges a thread, one thread looks at them all: starting another costs more than it saves.
const MIN_EDGES_PER_THREAD: usize = 32 * 1024;

/// `answer` for every edge of `graph` (with its index in `graph.edges`), on up to `threads` threads, each
/// taking a contiguous run of the edges; the `Some` answers in edge order.
pub(crate) fn edges_where<T, F>(graph: &LinkGraph, threads: usize, answer: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize, &Edge) -> Option<T> + Sync,
{
    let edges = &graph.edges;
    let threads = threads.clamp(1, (edges.len() / MIN_EDGES_PER_THREAD).max(1));
    let run = edges.len().div_ceil(threads).max(1);
    let answers = |first: usize, run: &[Edge]| -> Vec<T> {
        run.iter()
            .enumerate()
            .filter_map(|(index, edge)| answer(first + index, edge))
            .collect()
    };
    let mut runs = edges.chunks(run).enumerate();
    let Some((_, first_run)) = runs.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let answers = &answers;
        let others: Vec<_> = runs
            .map(|(index, edges)| scope.spawn(move || answers(index * run, edges)))
            .collect();
        // The calling thread takes the first run.
        let mut all = answers(0, first_run);
        for other in others {
            match other.join() {
                Ok(part) => all.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{AtomId, EdgeKind, Origin, RelocationType};

    fn graph_of(count: usize) -> LinkGraph {
        let edge = |offset: u64| Edge {
            kind: EdgeKind::Relocation,
            source: AtomId(0),
            offset,
            relocation: RelocationType {
                format: crate::graph::ObjectFormat::Elf,
                raw: 1,
            },
            width: 64,
            addend: 0,
            pc_relative: false,
            signed: false,
            target_symbol: None,
            target_atom: None,
            origin: Origin::default(),
        };
        LinkGraph {
            edges: (0..count as u64).map(edge).collect(),
            ..LinkGraph::default()
        }
    }

    #[test]
    fn the_answers_are_in_edge_order_whatever_the_threads() {
        for count in [0, 1, 1000, 3 * MIN_EDGES_PER_THREAD + 7] {
            let graph = graph_of(count);
            let one = edges_where(&graph, 1, |index, edge| {
                (edge.offset % 3 == 0).then_some((index, edge.offset))
            });
            assert_eq!(one.len(), count.div_ceil(3));
            assert!(one.iter().all(|(index, offset)| *index as u64 == *offset));
            for threads in [2, 3, 8] {
                let many = edges_where(&graph, threads, |index, edge| {
                    (edge.offset % 3 == 0).then_some((index, edge.offset))
                });
                assert_eq!(many, one, "{count} edges, {threads} threads");
            }
        }
    }
}
