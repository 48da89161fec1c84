//! The output image: staging bytes under a budget, writing a static ELF64 executable from a computed layout,
//! the checks of the sealed `image_verify` gate, and the `-Map` side output with its
//! `side_outputs_verify` check.
//!
//! The module does not know the link graph. The link phases describe the image with plain data — an
//! [`ImageLayout`] of segments, sections (with their bytes) and symbols, and a [`MapFile`] of output
//! sections and their input pieces — and this module turns the description into bytes and judges bytes
//! against it:
//!
//! - `emit_image`: [`elf_file_size`] gives the exact size of the file for a layout, and [`write_elf`] writes
//!   it through a [`BoundedImageWriter`] whose bound is the output budget; exceeding the budget aborts
//!   staging (`binary image: output budget rejected emitted image`).
//! - `image_verify`: [`verify_image`] re-parses the bytes and returns every [`ImageFinding`].
//! - `side_outputs_verify`: [`write_map_file`] renders the map and [`verify_map_file`] returns every
//!   [`MapFinding`] of a map against the layout.
//!
//! The caller lays out; the constraints the writer assumes are listed in the `elf` module documentation
//! (see [`write_elf`]).

mod compress;
pub mod dynamic_tags;
mod elf;
mod map_file;
mod sparse;
mod verify;
mod writer;

pub use compress::{COMPRESSED_ALIGNMENT, DebugCompression, compress_section, compress_zlib};
pub(crate) use elf::FILE_HEADER_SIZE;
pub use elf::{
    ElfError, ImageLayout, ProgramHeaderKind, ProgramHeaderLayout, RelocationLayout, RelocationSectionLayout,
    SectionFlags, SectionKind, SectionLayout, SegmentFlags, SegmentLayout, SymbolBinding, SymbolKind, SymbolLayout,
    elf_file_size, elf_headers_size, write_elf, write_elf_into, write_elf_moving,
};
pub use map_file::{
    MapFile, MapFinding, MapInputPiece, MapOutputSection, MapParseError, MapSymbol, parse_map_file, verify_map_file,
    write_map_file,
};
pub use sparse::{Extent, HOLE, SparseBytes, SparseError};
pub use verify::{ImageFinding, verify_image};
pub use writer::{BoundedImageWriter, WriterError, WriterOperation};
