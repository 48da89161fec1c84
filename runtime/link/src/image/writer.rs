//! The bounded image writer (NeverC's `MutableBinaryAPI`): a byte image that may never grow past a
//! reserved bound. The image is [`SparseBytes`]: zero-filled gaps (a resize, a write past the end) are
//! holes that cost no memory, so the bound limits the file, not what staging allocates.
//!
//! The bound is the output budget. It starts at zero, so nothing can be staged before [`reserve`] names a
//! budget, and [`reserve`] may be called again to *grow* it (never to shrink it). Every mutating operation
//! checks the image end it would produce against the bound before touching the buffer, and every failed
//! mutating operation *aborts staging*: the writer keeps the first failure, every later mutating call and
//! [`finish`] fail with [`WriterError::Aborted`], and the partially staged bytes can never be taken out.
//! [`read_at`] does not change the image, so a failed read reports its error without aborting (it only
//! fails by itself once staging is aborted).
//!
//! Offsets and lengths are `u64`; sums that overflow `u64`, or offsets that do not fit `usize`, are
//! reported as [`WriterError::RangeOverflow`]; allocation failures as [`WriterError::Allocation`]. No
//! operation panics.
//!
//! The cursor behaves like a file position: [`write`] writes at it and advances it, [`write_at`],
//! [`append`] and [`resize`] leave it where it is (it may then lie past the end, and the next [`write`]
//! zero-fills the gap), and [`insert`] shifts it by the inserted length when it lies strictly after the
//! insertion point, so that it keeps addressing the same byte.
//!
//! [`reserve`]: BoundedImageWriter::reserve
//! [`finish`]: BoundedImageWriter::finish
//! [`read_at`]: BoundedImageWriter::read_at
//! [`write`]: BoundedImageWriter::write
//! [`write_at`]: BoundedImageWriter::write_at
//! [`append`]: BoundedImageWriter::append
//! [`resize`]: BoundedImageWriter::resize
//! [`insert`]: BoundedImageWriter::insert

use std::borrow::Cow;
use std::fmt;

use super::sparse::{SparseBytes, SparseError};

/// The writer operation that failed, named in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriterOperation {
    Reserve,
    Write,
    WriteAt,
    ReadAt,
    Insert,
    Append,
    Resize,
    Finish,
}

impl fmt::Display for WriterOperation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            WriterOperation::Reserve => "reserve",
            WriterOperation::Write => "write",
            WriterOperation::WriteAt => "write_at",
            WriterOperation::ReadAt => "read_at",
            WriterOperation::Insert => "insert",
            WriterOperation::Append => "append",
            WriterOperation::Resize => "resize",
            WriterOperation::Finish => "finish",
        };
        formatter.write_str(name)
    }
}

/// Why a writer operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriterError {
    /// The operation would make the image extend past the reserved bound.
    #[error(
        "binary image: output budget rejected emitted image: {operation} needs {required} bytes, the bound is {bound}"
    )]
    BudgetExceeded {
        operation: WriterOperation,
        required: u64,
        bound: u64,
    },
    /// An offset plus a length overflows `u64`, or a position does not fit the address space.
    #[error(
        "binary image: output budget rejected emitted image: {operation} at offset {offset} with length {length} overflows the address space"
    )]
    RangeOverflow {
        operation: WriterOperation,
        offset: u64,
        length: u64,
    },
    /// `reserve` asked for a bound below the current one; the budget only grows.
    #[error("binary image: reserve cannot shrink the bound from {bound} to {requested} bytes")]
    ReserveShrinks { bound: u64, requested: u64 },
    /// The buffer could not be allocated.
    #[error("binary image: cannot allocate {requested} bytes for {operation}")]
    Allocation { operation: WriterOperation, requested: u64 },
    /// A read or an insertion point lies past the end of the image.
    #[error("binary image: {operation} at offset {offset} with length {length} lies past the image end {end}")]
    PastEnd {
        operation: WriterOperation,
        offset: u64,
        length: u64,
        end: u64,
    },
    /// Staging was aborted by an earlier failure; the writer accepts nothing more.
    #[error("binary image: {operation} refused, staging was aborted by an earlier failure ({first})")]
    Aborted {
        operation: WriterOperation,
        first: Box<WriterError>,
    },
}

/// A byte image that may never extend past its reserved bound. See the module documentation for the rules.
#[derive(Clone, Debug, Default)]
pub struct BoundedImageWriter {
    image: SparseBytes,
    bound: u64,
    cursor: u64,
    aborted: Option<WriterError>,
}

impl BoundedImageWriter {
    /// An empty writer with a zero bound: call [`BoundedImageWriter::reserve`] before staging anything.
    pub fn new() -> BoundedImageWriter {
        BoundedImageWriter::default()
    }

    /// A writer whose bound is already `bound` (the same as `new` followed by `reserve(bound)`).
    pub fn with_bound(bound: u64) -> Result<BoundedImageWriter, WriterError> {
        let mut writer = BoundedImageWriter::new();
        writer.reserve(bound)?;
        Ok(writer)
    }

    /// Sets the bound to `size` bytes. The bound only grows: asking for less than the current bound fails
    /// (and aborts staging), asking for the same bound changes nothing. Nothing is allocated up front: the
    /// image stores only what is written (see [`SparseBytes`]).
    pub fn reserve(&mut self, size: u64) -> Result<(), WriterError> {
        let operation = WriterOperation::Reserve;
        self.check_live(operation)?;
        if size < self.bound {
            return self.abort(WriterError::ReserveShrinks {
                bound: self.bound,
                requested: size,
            });
        }
        self.bound = size;
        Ok(())
    }

    /// Writes `bytes` at the cursor (overwriting, extending, zero-filling a gap before it) and advances the
    /// cursor past them.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), WriterError> {
        let operation = WriterOperation::Write;
        self.check_live(operation)?;
        let end = self.place(operation, self.cursor, bytes)?;
        self.cursor = end;
        Ok(())
    }

    /// Writes `bytes` at `offset` (overwriting, extending, zero-filling a gap before it); the cursor stays.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), WriterError> {
        let operation = WriterOperation::WriteAt;
        self.check_live(operation)?;
        self.place(operation, offset, bytes).map(|_| ())
    }

    /// Writes every extent of `bytes` at `offset` plus the extent's offset, and zero-extends the image to
    /// `offset + bytes.len()`: the holes of `bytes` stay holes. The cursor stays.
    pub fn write_sparse_at(&mut self, offset: u64, bytes: &SparseBytes) -> Result<(), WriterError> {
        let operation = WriterOperation::WriteAt;
        self.check_live(operation)?;
        let Some(end) = offset.checked_add(bytes.len()) else {
            return self.abort(overflow(operation, offset, bytes.len()));
        };
        self.check_bound(operation, end)?;
        for extent in bytes.extents() {
            self.place(operation, offset + extent.offset(), extent.bytes())?;
        }
        if self.image.len() < end {
            self.image.set_len(end);
        }
        Ok(())
    }

    /// Like [`BoundedImageWriter::write_sparse_at`], but moves the stored bytes of `bytes` into the image
    /// instead of copying them when nothing is staged where they go (see [`SparseBytes::adopt`]).
    pub fn adopt_sparse_at(&mut self, offset: u64, bytes: SparseBytes) -> Result<(), WriterError> {
        let operation = WriterOperation::WriteAt;
        self.check_live(operation)?;
        let Some(end) = offset.checked_add(bytes.len()) else {
            return self.abort(overflow(operation, offset, bytes.len()));
        };
        self.check_bound(operation, end)?;
        match self.image.adopt(offset, bytes) {
            Ok(()) => Ok(()),
            Err(error) => self.abort(sparse_error(operation, error)),
        }
    }

    /// The cursor: where the next [`BoundedImageWriter::write`] lands.
    pub fn tell(&self) -> u64 {
        self.cursor
    }

    /// The `length` staged bytes at `offset` (borrowed when they are stored in one piece). Fails when the
    /// range is not inside the image; that failure does not abort staging because reading changes nothing.
    pub fn read_at(&self, offset: u64, length: u64) -> Result<Cow<'_, [u8]>, WriterError> {
        let operation = WriterOperation::ReadAt;
        self.check_live(operation)?;
        match self.image.read(offset, length) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(WriterError::PastEnd {
                operation,
                offset,
                length,
                end: self.len(),
            }),
            Err(error) => Err(sparse_error(operation, error)),
        }
    }

    /// Inserts `bytes` at `offset` (at most the image end), shifting the tail towards the end.
    pub fn insert(&mut self, offset: u64, bytes: &[u8]) -> Result<(), WriterError> {
        let operation = WriterOperation::Insert;
        self.check_live(operation)?;
        let length = bytes.len() as u64;
        if offset > self.len() {
            return self.abort(WriterError::PastEnd {
                operation,
                offset,
                length,
                end: self.len(),
            });
        }
        let Some(required) = self.len().checked_add(length) else {
            return self.abort(overflow(operation, offset, length));
        };
        self.check_bound(operation, required)?;
        if let Err(error) = self.image.insert(offset, bytes) {
            return self.abort(sparse_error(operation, error));
        }
        if self.cursor > offset {
            self.cursor = self.cursor.saturating_add(length);
        }
        Ok(())
    }

    /// Appends `bytes` at the image end; the cursor stays.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), WriterError> {
        let operation = WriterOperation::Append;
        self.check_live(operation)?;
        self.place(operation, self.len(), bytes).map(|_| ())
    }

    /// Truncates the image to `size` bytes or zero-extends it to them (a hole); the cursor stays.
    pub fn resize(&mut self, size: u64) -> Result<(), WriterError> {
        let operation = WriterOperation::Resize;
        self.check_live(operation)?;
        self.check_bound(operation, size)?;
        self.image.set_len(size);
        Ok(())
    }

    /// The current image length in bytes.
    pub fn len(&self) -> u64 {
        self.image.len()
    }

    /// Whether nothing has been staged.
    pub fn is_empty(&self) -> bool {
        self.image.is_empty()
    }

    /// The reserved bound.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// The failure that aborted staging, if one did.
    pub fn abort_cause(&self) -> Option<&WriterError> {
        self.aborted.as_ref()
    }

    /// The staged image, unless staging was aborted.
    pub fn finish(self) -> Result<SparseBytes, WriterError> {
        match self.aborted {
            Some(first) => Err(WriterError::Aborted {
                operation: WriterOperation::Finish,
                first: Box::new(first),
            }),
            None => Ok(self.image),
        }
    }

    /// Fails with [`WriterError::Aborted`] once staging is aborted.
    fn check_live(&self, operation: WriterOperation) -> Result<(), WriterError> {
        match &self.aborted {
            Some(first) => Err(WriterError::Aborted {
                operation,
                first: Box::new(first.clone()),
            }),
            None => Ok(()),
        }
    }

    /// Aborts staging with `error` when `required` bytes exceed the bound.
    fn check_bound(&mut self, operation: WriterOperation, required: u64) -> Result<(), WriterError> {
        if required > self.bound {
            return self.abort(WriterError::BudgetExceeded {
                operation,
                required,
                bound: self.bound,
            });
        }
        Ok(())
    }

    /// Overwrites or extends the image with `bytes` at `offset`, returning the end of the written range.
    fn place(&mut self, operation: WriterOperation, offset: u64, bytes: &[u8]) -> Result<u64, WriterError> {
        let length = bytes.len() as u64;
        let Some(end) = offset.checked_add(length) else {
            return self.abort(overflow(operation, offset, length));
        };
        self.check_bound(operation, end)?;
        match self.image.write_at(offset, bytes) {
            Ok(()) => Ok(end),
            Err(error) => self.abort(sparse_error(operation, error)),
        }
    }

    /// Records `error` as the reason staging is aborted (keeping the first one) and returns it.
    fn abort<T>(&mut self, error: WriterError) -> Result<T, WriterError> {
        if self.aborted.is_none() {
            self.aborted = Some(error.clone());
        }
        Err(error)
    }
}

/// The writer error for a failed sparse operation.
fn sparse_error(operation: WriterOperation, error: SparseError) -> WriterError {
    match error {
        SparseError::Overflow { offset, length } => overflow(operation, offset, length),
        SparseError::Allocation { requested } => WriterError::Allocation { operation, requested },
    }
}

/// The overflow error for `operation` at `offset` with `length`.
fn overflow(operation: WriterOperation, offset: u64, length: u64) -> WriterError {
    WriterError::RangeOverflow {
        operation,
        offset,
        length,
    }
}
