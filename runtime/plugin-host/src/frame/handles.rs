//! The handles the Link API hands to C, and their checks. A handle's `Owner` holds a tag (what it is, in
//! the top 24 bits), the session (bits 8 to 39: the link's session and the plugin instance it was handed
//! to) and, for entities, the kind (the low byte). Its `Value` holds the stamp of the frame that handed it
//! out (the top 32 bits: the lent frame's serial and the graph's generation) and the index below.
//!
//! The checks run in one order: a tag or kind that is not the one asked for is WRONG_TYPE (a forged
//! handle, or one of another kind), another session is WRONG_SESSION (another link, or another loaded
//! plugin instance), another stamp is STALE_HANDLE (an earlier callback, or a graph changed since), and an
//! index past the end is STALE_HANDLE as the runtime's `PhaseFrame::resolve` says it.

use neverc_link::frame::PhaseFrame;
use neverc_link::graph::EntityKind;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

/// The tag of entity handles ("NCE").
pub(crate) const ENTITY_TAG: u64 = 0x4e_4345;
/// The tag of graph handles ("NCG").
pub(crate) const GRAPH_TAG: u64 = 0x4e_4347;
/// The tag of mutation handles ("NCM").
pub(crate) const MUTATION_TAG: u64 = 0x4e_434d;
/// The tag of proof handles ("NCP").
pub(crate) const PROOF_TAG: u64 = 0x4e_4350;

/// Who a handle belongs to and when it was handed out: fixed for one lent frame until its graph changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    /// The link's session (low 16 bits) and the plugin instance (low 16 bits), one above the other.
    pub(crate) session: u32,
    /// The lent frame's serial (20 bits) and the graph's generation (12 bits).
    pub(crate) stamp: u32,
}

impl Scope {
    /// The scope of the frame lent under `token` to plugin `instance`.
    pub(crate) fn new(frame: &PhaseFrame<'_>, instance: u32, token: u64) -> Scope {
        let session = ((frame.session() as u32 & 0xffff) << 16) | (instance & 0xffff);
        let serial = (token >> 4) as u32 & 0xf_ffff;
        Scope {
            session,
            stamp: (serial << 12) | (frame.generation() as u32 & 0xfff),
        }
    }

    fn owner(self, tag: u64, low: u8) -> u64 {
        (tag << 40) | (u64::from(self.session) << 8) | u64::from(low)
    }

    fn value(self, index: u32) -> u64 {
        (u64::from(self.stamp) << 32) | u64::from(index)
    }

    /// The handle of entity `index` of `kind`.
    pub(crate) fn entity(self, kind: EntityKind, index: usize) -> ffi::Handle {
        ffi::Handle {
            owner: self.owner(ENTITY_TAG, kind_code(kind)),
            value: self.value(index as u32),
        }
    }

    /// The handle of entity `index` of `kind`, or the null handle.
    pub(crate) fn optional(self, kind: EntityKind, index: Option<usize>) -> ffi::Handle {
        index.map(|index| self.entity(kind, index)).unwrap_or_default()
    }

    /// The graph's handle.
    pub(crate) fn graph(self) -> ffi::Handle {
        ffi::Handle {
            owner: self.owner(GRAPH_TAG, 0),
            value: self.value(0),
        }
    }

    /// The handle of the current proof.
    pub(crate) fn proof(self) -> ffi::Handle {
        ffi::Handle {
            owner: self.owner(PROOF_TAG, 0),
            value: self.value(0),
        }
    }

    /// The handle of the `number`th mutation (from 1) this callback began.
    pub(crate) fn mutation(self, number: u32) -> ffi::Handle {
        ffi::Handle {
            owner: self.owner(MUTATION_TAG, 0),
            value: self.value(number),
        }
    }

    /// Checks a handle's tag (and low byte), session and stamp; answers its index.
    fn check(self, handle: ffi::Handle, tag: u64, low: u8, what: &str) -> Result<u32, Status> {
        if handle.owner >> 40 != tag || handle.owner & 0xff != u64::from(low) {
            return Err(Status::new(StatusCode::WrongType, format!("not a {what} handle")));
        }
        if (handle.owner >> 8) as u32 != self.session {
            return Err(Status::new(
                StatusCode::WrongSession,
                format!("a {what} handle of another link or plugin"),
            ));
        }
        if (handle.value >> 32) as u32 != self.stamp {
            return Err(Status::new(
                StatusCode::StaleHandle,
                format!("a {what} handle of an earlier callback or generation"),
            ));
        }
        Ok(handle.value as u32)
    }

    /// The index of the entity a handle names, checked against the frame's graph.
    pub(crate) fn entity_index(
        self,
        frame: &PhaseFrame<'_>,
        handle: ffi::Handle,
        kind: EntityKind,
    ) -> Result<usize, Status> {
        let index = self.check(handle, ENTITY_TAG, kind_code(kind), kind.name())? as usize;
        if index >= frame.graph().count(kind) {
            return Err(Status::new(
                StatusCode::StaleHandle,
                format!("no {} {index} exists (a forged handle)", kind.name()),
            ));
        }
        Ok(index)
    }

    /// The runtime's handle of the entity a handle names (what the frame's mutation API takes).
    pub(crate) fn runtime(
        self,
        frame: &PhaseFrame<'_>,
        handle: ffi::Handle,
        kind: EntityKind,
    ) -> Result<neverc_link::frame::Handle, Status> {
        let index = self.entity_index(frame, handle, kind)?;
        frame.handle(kind, index)
    }

    /// Checks a graph handle.
    pub(crate) fn check_graph(self, handle: ffi::Handle) -> Result<(), Status> {
        self.check(handle, GRAPH_TAG, 0, "graph").map(|_| ())
    }

    /// Checks a proof handle.
    pub(crate) fn check_proof(self, handle: ffi::Handle) -> Result<(), Status> {
        self.check(handle, PROOF_TAG, 0, "proof").map(|_| ())
    }

    /// The number (from 1) of the mutation a handle names.
    pub(crate) fn mutation_number(self, handle: ffi::Handle) -> Result<u32, Status> {
        self.check(handle, MUTATION_TAG, 0, "mutation")
    }
}

/// The low byte of an entity handle's owner: the kind's position in the Link API (from 1).
pub(crate) fn kind_code(kind: EntityKind) -> u8 {
    kind as u8 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope {
            session: 0x0001_0002,
            stamp: 0x0000_5003,
        }
    }

    #[test]
    fn handles_answer_their_own_checks() {
        let scope = scope();
        let graph = scope.graph();
        assert_eq!(scope.check_graph(graph).map_err(|status| status.code), Ok(()));
        let mutation = scope.mutation(3);
        assert_eq!(scope.mutation_number(mutation).map_err(|status| status.code), Ok(3));
        // A graph handle is not a mutation handle, nor one of another plugin, nor of another frame.
        assert_eq!(
            scope.mutation_number(graph).map_err(|status| status.code),
            Err(StatusCode::WrongType)
        );
        let other = Scope { session: 7, ..scope };
        assert_eq!(
            other.check_graph(graph).map_err(|status| status.code),
            Err(StatusCode::WrongSession)
        );
        let later = Scope { stamp: 9, ..scope };
        assert_eq!(
            later.check_graph(graph).map_err(|status| status.code),
            Err(StatusCode::StaleHandle)
        );
        // Entities of two kinds differ in the owner's low byte.
        let symbol = scope.entity(EntityKind::Symbol, 4);
        let atom = scope.entity(EntityKind::Atom, 4);
        assert_ne!(symbol.owner, atom.owner);
        assert_eq!(
            scope
                .check(symbol, ENTITY_TAG, kind_code(EntityKind::Atom), "atom")
                .map_err(|status| status.code),
            Err(StatusCode::WrongType)
        );
    }
}
