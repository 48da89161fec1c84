//! Sparse bytes: a byte string of a known length of which only some ranges (extents) are stored; every
//! byte outside them is zero.
//!
//! A section whose atoms are aligned far apart (an input section aligned to 2^31 after a small one) has
//! gigabytes of zeros between them. They are never allocated: a write that lands at least [`HOLE`] bytes
//! away from every stored extent starts an extent of its own, and the output file is written extent by
//! extent with the holes left to the file system (a device or a FIFO gets the zeros streamed in chunks).
//! Writes closer than [`HOLE`] to an extent join it, so sequential writes grow one extent. Bytes built
//! elsewhere (a section's relocated contents) are moved in whole by [`SparseBytes::adopt`], never copied:
//! their extents keep their own allocations and may touch their neighbours.
//!
//! Invariants: the extents are sorted by offset, non-empty, never overlapping, and all of them end at or
//! before the length. Extents that [`SparseBytes::write_at`] made are at least [`HOLE`] bytes apart from
//! the extents it did not join; adopted ones may be adjacent to others.

use std::borrow::Cow;
use std::collections::TryReserveError;

/// The smallest gap between two extents: shorter runs of zeros are stored, so that sequential writes with
/// ordinary alignment padding stay in one extent.
pub const HOLE: u64 = 64 * 1024;

/// One stored range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    offset: u64,
    bytes: Vec<u8>,
}

impl Extent {
    /// Where the extent starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The stored bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where the extent ends (exclusive).
    pub fn end(&self) -> u64 {
        self.offset + self.bytes.len() as u64
    }
}

/// Why a sparse write failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SparseError {
    /// An offset plus a length overflows `u64`, or a length does not fit the address space.
    #[error("the range at {offset:#x} of {length:#x} bytes overflows the address space")]
    Overflow { offset: u64, length: u64 },
    /// The bytes to store could not be allocated.
    #[error("cannot allocate {requested:#x} bytes")]
    Allocation { requested: u64 },
}

/// A byte string of `len` bytes whose unstored bytes are zero. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseBytes {
    len: u64,
    extents: Vec<Extent>,
}

impl From<Vec<u8>> for SparseBytes {
    fn from(bytes: Vec<u8>) -> SparseBytes {
        let len = bytes.len() as u64;
        let extents = if bytes.is_empty() {
            Vec::new()
        } else {
            vec![Extent { offset: 0, bytes }]
        };
        SparseBytes { len, extents }
    }
}

impl SparseBytes {
    /// No bytes.
    pub fn new() -> SparseBytes {
        SparseBytes::default()
    }

    /// `len` zero bytes, none of them stored.
    pub fn zeroed(len: u64) -> SparseBytes {
        SparseBytes {
            len,
            extents: Vec::new(),
        }
    }

    /// `len` zero bytes, all of them stored in one extent (allocated fallibly): for contents about to be
    /// written densely, so that writing them never grows (and copies) an extent.
    pub fn stored_zeroed(len: u64) -> Result<SparseBytes, SparseError> {
        if len == 0 {
            return Ok(SparseBytes::new());
        }
        let size = usize::try_from(len).map_err(|_| SparseError::Overflow { offset: 0, length: len })?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(size)
            .map_err(|_| SparseError::Allocation { requested: len })?;
        bytes.resize(size, 0);
        Ok(SparseBytes {
            len,
            extents: vec![Extent { offset: 0, bytes }],
        })
    }

    /// The length, holes included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The stored extents, in offset order.
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// Whether all the bytes are stored, in one extent (no hole anywhere).
    pub fn is_dense(&self) -> bool {
        matches!(self.extents.as_slice(), [only] if only.offset == 0 && only.bytes.len() as u64 == self.len)
    }

    /// All the bytes, mutably, when they are stored in one extent (no hole anywhere).
    pub fn dense_mut(&mut self) -> Option<&mut [u8]> {
        match self.extents.as_mut_slice() {
            [only] if only.offset == 0 && only.bytes.len() as u64 == self.len => Some(&mut only.bytes),
            _ => None,
        }
    }

    /// How many bytes are stored (what the bytes cost in memory and on disk).
    pub fn stored_len(&self) -> u64 {
        self.extents.iter().map(|extent| extent.bytes.len() as u64).sum()
    }

    /// Sets the length: shortening drops what lies past it, lengthening adds zeros (stores nothing).
    pub fn set_len(&mut self, len: u64) {
        if len < self.len {
            let keep = self.extents.partition_point(|extent| extent.offset < len);
            self.extents.truncate(keep);
            if let Some(last) = self.extents.last_mut()
                && last.end() > len
            {
                last.bytes.truncate((len - last.offset) as usize);
            }
        }
        self.len = len;
    }

    /// The `length` bytes at `offset`, when they lie inside the length: borrowed when one extent holds them
    /// (or `length` is zero), assembled with zeros otherwise.
    pub fn read(&self, offset: u64, length: u64) -> Result<Option<Cow<'_, [u8]>>, SparseError> {
        let overflow = SparseError::Overflow { offset, length };
        let end = offset.checked_add(length).ok_or(overflow.clone())?;
        if end > self.len {
            return Ok(None);
        }
        if let Some(bytes) = self.stored(offset, length) {
            return Ok(Some(Cow::Borrowed(bytes)));
        }
        let size = usize::try_from(length).map_err(|_| overflow)?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(size)
            .map_err(|_| SparseError::Allocation { requested: length })?;
        bytes.resize(size, 0);
        let first = self.extents.partition_point(|extent| extent.end() <= offset);
        for extent in self.extents[first..].iter().take_while(|extent| extent.offset < end) {
            let from = offset.max(extent.offset);
            let to = end.min(extent.end());
            let source = (from - extent.offset) as usize..(to - extent.offset) as usize;
            let target = (from - offset) as usize..(to - offset) as usize;
            bytes[target].copy_from_slice(&extent.bytes[source]);
        }
        Ok(Some(Cow::Owned(bytes)))
    }

    /// The `length` bytes at `offset` when one extent holds all of them (an empty slice for `length` 0).
    pub fn stored(&self, offset: u64, length: u64) -> Option<&[u8]> {
        if length == 0 {
            return (offset <= self.len).then_some(&[][..]);
        }
        let extent = self.extent_at(offset)?;
        let start = usize::try_from(offset - extent.offset).ok()?;
        let stop = start.checked_add(usize::try_from(length).ok()?)?;
        extent.bytes.get(start..stop)
    }

    /// The extent holding `range` mutably, with the range's start inside it; `None` when no one extent holds
    /// the whole range.
    pub fn stored_mut(&mut self, offset: u64, length: u64) -> Option<(&mut [u8], usize)> {
        let index = self.extents.partition_point(|extent| extent.end() <= offset);
        let extent = self.extents.get_mut(index)?;
        let start = usize::try_from(offset.checked_sub(extent.offset)?).ok()?;
        let stop = start.checked_add(usize::try_from(length).ok()?)?;
        (stop <= extent.bytes.len()).then_some((extent.bytes.as_mut_slice(), start))
    }

    /// Writes `bytes` at `offset`, lengthening the string when they reach past its end. Extents closer than
    /// [`HOLE`] to the written range are joined with it.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), SparseError> {
        let length = bytes.len() as u64;
        let end = offset
            .checked_add(length)
            .ok_or(SparseError::Overflow { offset, length })?;
        if bytes.is_empty() {
            return Ok(());
        }
        // Inside one stored extent: overwritten in place.
        if let Some((stored, at)) = self.stored_mut(offset, length) {
            stored[at..at + bytes.len()].copy_from_slice(bytes);
            return Ok(());
        }
        let near_start = offset.saturating_sub(HOLE);
        let near_end = end.saturating_add(HOLE);
        let first = self.extents.partition_point(|extent| extent.end() < near_start);
        let last = self.extents.partition_point(|extent| extent.offset <= near_end);
        if first >= last {
            let mut stored = Vec::new();
            stored
                .try_reserve_exact(bytes.len())
                .map_err(|_| SparseError::Allocation { requested: length })?;
            stored.extend_from_slice(bytes);
            self.extents.insert(first, Extent { offset, bytes: stored });
        } else {
            let start = offset.min(self.extents[first].offset);
            let stop = end.max(self.extents[last - 1].end());
            let size = usize::try_from(stop - start).map_err(|_| SparseError::Overflow { offset, length })?;
            let allocation = |_: TryReserveError| SparseError::Allocation {
                requested: stop - start,
            };
            // The first joined extent is grown in place when it starts the range (sequential writes).
            let mut merged = if self.extents[first].offset == start {
                let mut reused = std::mem::take(&mut self.extents[first].bytes);
                reused
                    .try_reserve(size.saturating_sub(reused.len()))
                    .map_err(allocation)?;
                reused.resize(size, 0);
                reused
            } else {
                let mut fresh = Vec::new();
                fresh.try_reserve_exact(size).map_err(allocation)?;
                fresh.resize(size, 0);
                let extent = &self.extents[first];
                let at = (extent.offset - start) as usize;
                fresh[at..at + extent.bytes.len()].copy_from_slice(&extent.bytes);
                fresh
            };
            for extent in &self.extents[first + 1..last] {
                let at = (extent.offset - start) as usize;
                merged[at..at + extent.bytes.len()].copy_from_slice(&extent.bytes);
            }
            let at = (offset - start) as usize;
            merged[at..at + bytes.len()].copy_from_slice(bytes);
            self.extents.drain(first + 1..last);
            self.extents[first] = Extent {
                offset: start,
                bytes: merged,
            };
        }
        self.len = self.len.max(end);
        Ok(())
    }

    /// Places the stored bytes of `bytes` at `offset`, lengthening the string to the end of `bytes` when it
    /// is shorter; the holes of `bytes` leave what is there. When nothing is stored in the range `bytes`
    /// covers, its extents are moved in as they are (no byte is copied, and they are not joined with their
    /// neighbours); otherwise they are written like [`SparseBytes::write_at`].
    pub fn adopt(&mut self, offset: u64, bytes: SparseBytes) -> Result<(), SparseError> {
        let length = bytes.len;
        let end = offset
            .checked_add(length)
            .ok_or(SparseError::Overflow { offset, length })?;
        let first = self.extents.partition_point(|extent| extent.end() <= offset);
        let free = self.extents.get(first).is_none_or(|extent| extent.offset >= end);
        if free {
            // Every extent of `bytes` ends at or before its length, so these offsets stay below `end`.
            let moved = bytes.extents.into_iter().map(|extent| Extent {
                offset: offset + extent.offset,
                bytes: extent.bytes,
            });
            self.extents.splice(first..first, moved);
        } else {
            for extent in &bytes.extents {
                self.write_at(offset + extent.offset, &extent.bytes)?;
            }
        }
        self.len = self.len.max(end);
        Ok(())
    }

    /// Inserts `bytes` at `offset` (at most the length), moving everything from there on towards the end.
    pub fn insert(&mut self, offset: u64, bytes: &[u8]) -> Result<(), SparseError> {
        let length = bytes.len() as u64;
        let overflow = SparseError::Overflow { offset, length };
        let new_len = self.len.checked_add(length).ok_or(overflow.clone())?;
        if offset > self.len {
            return Err(overflow);
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let index = self.extents.partition_point(|extent| extent.end() < offset);
        let inside = self
            .extents
            .get(index)
            .is_some_and(|extent| extent.offset < offset && offset <= extent.end());
        let moved_from = if inside { index + 1 } else { index };
        for extent in &mut self.extents[moved_from..] {
            extent.offset += length;
        }
        self.len = new_len;
        if inside {
            let extent = &mut self.extents[index];
            extent
                .bytes
                .try_reserve(bytes.len())
                .map_err(|_| SparseError::Allocation { requested: length })?;
            let at = (offset - extent.offset) as usize;
            // The extents after it moved by as much as it grew: the gaps stay as they were.
            extent.bytes.splice(at..at, bytes.iter().copied());
            Ok(())
        } else {
            self.write_at(offset, bytes)
        }
    }

    /// All the bytes, holes as zeros (for tests and small images).
    pub fn to_vec(&self) -> Result<Vec<u8>, SparseError> {
        self.read(0, self.len)
            .map(|bytes| bytes.map(Cow::into_owned).unwrap_or_default())
    }

    /// The extent holding the byte at `offset`.
    fn extent_at(&self, offset: u64) -> Option<&Extent> {
        let index = self.extents.partition_point(|extent| extent.end() <= offset);
        self.extents.get(index).filter(|extent| extent.offset <= offset)
    }
}

/// The image verifier parses headers straight out of the stored extents (headers are never in a hole); a
/// read that a hole interrupts fails like a read past the end of a file.
impl<'a> object::ReadRef<'a> for &'a SparseBytes {
    fn len(self) -> Result<u64, ()> {
        Ok(self.len)
    }

    fn read_bytes_at(self, offset: u64, size: u64) -> Result<&'a [u8], ()> {
        self.stored(offset, size).ok_or(())
    }

    fn read_bytes_at_until(self, range: std::ops::Range<u64>, delimiter: u8) -> Result<&'a [u8], ()> {
        let extent = self.extent_at(range.start).ok_or(())?;
        let start = usize::try_from(range.start - extent.offset).map_err(|_| ())?;
        let stop = usize::try_from(range.end.min(extent.end()) - extent.offset).map_err(|_| ())?;
        let bytes = extent.bytes.get(start..stop).ok_or(())?;
        let found = bytes.iter().position(|byte| *byte == delimiter).ok_or(())?;
        Ok(&bytes[..found])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense model: what a plain vector would hold after the same operations.
    fn dense(sparse: &SparseBytes) -> Vec<u8> {
        sparse.to_vec().unwrap()
    }

    fn check_invariants(sparse: &SparseBytes) {
        for pair in sparse.extents.windows(2) {
            assert!(pair[1].offset >= pair[0].end(), "{:?}", sparse.extents);
        }
        assert!(sparse.extents.iter().all(|extent| !extent.bytes.is_empty()));
        assert!(sparse.extents.last().is_none_or(|last| last.end() <= sparse.len));
    }

    #[test]
    fn random_operations_agree_with_a_dense_vector() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..300 {
            let mut sparse = SparseBytes::new();
            let mut model: Vec<u8> = Vec::new();
            for step in 0..40u8 {
                let span = 4 * HOLE;
                match next(5) {
                    0 | 1 => {
                        let offset = next(span);
                        let bytes = vec![step | 1; next(3 * HOLE / 2) as usize + 1];
                        sparse.write_at(offset, &bytes).unwrap();
                        let end = offset as usize + bytes.len();
                        if model.len() < end {
                            model.resize(end, 0);
                        }
                        model[offset as usize..end].copy_from_slice(&bytes);
                    }
                    2 => {
                        let offset = next(model.len() as u64 + 1);
                        let bytes = vec![step | 0x80; next(HOLE) as usize + 1];
                        sparse.insert(offset, &bytes).unwrap();
                        model.splice(offset as usize..offset as usize, bytes);
                    }
                    3 => {
                        let offset = next(span);
                        let mut piece = SparseBytes::zeroed(next(2 * HOLE) + 1);
                        for _ in 0..next(3) {
                            let at = next(piece.len());
                            let bytes = vec![step | 0x40; next(piece.len() - at) as usize + 1];
                            piece.write_at(at, &bytes).unwrap();
                        }
                        let end = (offset + piece.len()) as usize;
                        if model.len() < end {
                            model.resize(end, 0);
                        }
                        for extent in piece.extents() {
                            let at = (offset + extent.offset()) as usize;
                            model[at..at + extent.bytes().len()].copy_from_slice(extent.bytes());
                        }
                        sparse.adopt(offset, piece).unwrap();
                    }
                    _ => {
                        let len = next(span + HOLE);
                        sparse.set_len(len);
                        model.resize(len as usize, 0);
                    }
                }
                check_invariants(&sparse);
                assert_eq!(sparse.len(), model.len() as u64);
                assert_eq!(dense(&sparse), model);
                let offset = next(model.len() as u64 + 1);
                let length = next(model.len() as u64 - offset + 1);
                let read = sparse.read(offset, length).unwrap().unwrap();
                assert_eq!(&*read, &model[offset as usize..(offset + length) as usize]);
            }
        }
    }

    #[test]
    fn far_apart_writes_store_only_their_bytes() {
        let mut sparse = SparseBytes::new();
        sparse.write_at(0, &[1; 100]).unwrap();
        sparse.write_at(1 << 40, &[2; 100]).unwrap();
        assert_eq!(sparse.len(), (1 << 40) + 100);
        assert_eq!(sparse.stored_len(), 200);
        assert_eq!(sparse.extents().len(), 2);
        assert_eq!(&*sparse.read(1 << 39, 4).unwrap().unwrap(), &[0; 4]);
        assert!(sparse.read(1 << 40, 101).unwrap().is_none());
    }

    #[test]
    fn sequential_writes_with_padding_grow_one_extent() {
        let mut sparse = SparseBytes::new();
        for index in 0..1000u64 {
            sparse.write_at(index * 64, &[index as u8; 48]).unwrap();
        }
        assert_eq!(sparse.extents().len(), 1);
    }

    #[test]
    fn adopted_bytes_keep_their_allocation() {
        let mut sparse = SparseBytes::new();
        sparse.write_at(0, &[1; 64]).unwrap();
        let mut section = SparseBytes::stored_zeroed(4096).unwrap();
        section.write_at(8, &[2; 8]).unwrap();
        let address = section.extents()[0].bytes().as_ptr();
        sparse.adopt(64, section).unwrap();
        assert_eq!(sparse.extents().len(), 2);
        assert_eq!(sparse.extents()[1].bytes().as_ptr(), address);
        assert_eq!(sparse.len(), 64 + 4096);
        // A write inside an adopted extent stays in it; one across two extents joins them.
        sparse.write_at(64 + 100, &[3; 4]).unwrap();
        assert_eq!(sparse.extents().len(), 2);
        sparse.write_at(60, &[4; 8]).unwrap();
        assert_eq!(sparse.extents().len(), 1);
        let dense = sparse.to_vec().unwrap();
        assert_eq!(
            &dense[56..80],
            &[1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2]
        );
        assert_eq!(&dense[164..168], &[3; 4]);
    }

    #[test]
    fn overflowing_ranges_are_errors() {
        let mut sparse = SparseBytes::new();
        assert!(matches!(
            sparse.write_at(u64::MAX, &[1]),
            Err(SparseError::Overflow { .. })
        ));
        assert!(matches!(sparse.read(u64::MAX, 2), Err(SparseError::Overflow { .. })));
        assert!(matches!(sparse.insert(1, &[1]), Err(SparseError::Overflow { .. })));
    }
}
