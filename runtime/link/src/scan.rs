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
    in_order(edges.len(), threads, MIN_EDGES_PER_THREAD, |index| {
        answer(index, &edges[index])
    })
}

/// `answer` for every index below `count`, on up to `threads` threads (each with at least `min_per_thread`
/// indices, but one), each taking a contiguous run of the indices, the calling thread the first; the `Some`
/// answers in index order, whatever the number of threads.
pub(crate) fn in_order<T, F>(count: usize, threads: usize, min_per_thread: usize, answer: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> Option<T> + Sync,
{
    let threads = threads.clamp(1, (count / min_per_thread.max(1)).max(1));
    let run = count.div_ceil(threads).max(1);
    let answers = |start: usize| -> Vec<T> { (start..(start + run).min(count)).filter_map(&answer).collect() };
    std::thread::scope(|scope| {
        let answers = &answers;
        let others: Vec<_> = (run..count)
            .step_by(run)
            .map(|start| scope.spawn(move || answers(start)))
            .collect();
        let mut all = answers(0);
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
            target_symbol: None.into(),
            target_atom: None.into(),
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
