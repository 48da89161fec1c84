//! Code the linker writes itself (an architecture's [`CodeTemplate`]: the PLT entry of an indirect function, a
//! range-extension thunk) turned into edges: each field of a copy of the template becomes a relocation the
//! target declares for what the field does, so relocation patches linker-made code like any other.

use neverc_tables::RelocationBase;

use crate::arch::{CodeField, CodeTemplate};
use crate::graph::{AtomId, Edge, EdgeKind, LinkGraph, ObjectFormat, Origin, RelocationType, SymbolId};

/// The fields of a template, each with the number of the declared relocation that writes it.
pub(crate) struct DeclaredFields(Vec<(&'static CodeField, u32)>);

impl DeclaredFields {
    /// The declared relocation of every field of `template`, or why the target cannot have this code (`what`
    /// names it: "its PLT entries", "its thunks").
    pub(crate) fn of(graph: &LinkGraph, template: &'static CodeTemplate, what: &str) -> Result<DeclaredFields, String> {
        template
            .fields
            .iter()
            .map(|field| {
                graph
                    .declared_field(field.kind, field.base, &field.field)
                    .map(|raw| (field, raw))
                    .ok_or_else(|| {
                        format!(
                            "the target declares no {:?} relocation relative to {:?} writing {:?}, which {what} need",
                            field.kind, field.base, field.field
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(DeclaredFields)
    }

    /// The edges of the copy of the template at `offset` in `source`, reaching `destination` (a symbol or an
    /// atom) plus `addend`.
    pub(crate) fn edges(
        &self,
        source: AtomId,
        offset: u64,
        destination: (Option<SymbolId>, Option<AtomId>),
        addend: i64,
        origin: Origin,
    ) -> impl Iterator<Item = Edge> + '_ {
        self.0.iter().map(move |(field, raw)| Edge {
            kind: EdgeKind::Relocation,
            source,
            offset: offset + field.offset,
            relocation: RelocationType {
                format: ObjectFormat::Elf,
                raw: *raw,
            },
            width: field.field.size as u8,
            addend: addend.saturating_add(field.bias),
            pc_relative: field.base != RelocationBase::Nothing,
            signed: field.base != RelocationBase::Nothing,
            target_symbol: destination.0.into(),
            target_atom: destination.1.into(),
            origin,
        })
    }
}
