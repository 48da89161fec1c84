//! Images through the Link API: what an image verifier reads of the image lent for its call (the summary,
//! `GetBinaryImageInfo`; the segments and the sections), and in a phase frame once the phase has an image
//! (`NevercLinkPhaseAPI.GetImage`, from `emit` on) the same, with the bounded writer of NeverC's
//! MutableBinaryAPI over a staging copy of the image (the runtime's `BoundedImageWriter`). An image handle
//! is the lending's token under [`IMAGE_OWNER`], a builder handle the same under [`BUILDER_OWNER`]; a
//! verifier's image has no writer (`Binary` is null: verifiers are read-only).
//!
//! The staging image starts as the phase's image with its size as the bound: writes past it need `Reserve`
//! first (up to the link's output limit), and a write out of range is INVALID_ARGUMENT and aborts staging,
//! as the runtime's writer does. When the callback returns, a staging image that was not aborted becomes the
//! phase's image (`PhaseFrame::publish_image`, the same as for Rust plugins); an observer's first write is
//! POLICY_VIOLATION, as publishing is for observers.

use std::any::Any;
use std::ffi::c_void;

use neverc_link::frame::PhaseFrame;
use neverc_link::image::{BoundedImageWriter, ImageLayout, SectionFlags, SegmentFlags, WriterError};
use neverc_sys::plugin::copy_view;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::plugin_abi::link::{BinaryImageState, BinarySegmentFlags};
use neverc_tables::plugin_abi::object::ObjectSectionFlags;
use neverc_tables::status::StatusCode;

use super::infos::Place;
use super::{Asked, FrameRequest, FrameState, NO_EXTENSIONS, answer_of, ask, deliver_page, flag, header, view};
use crate::memory::{read_struct, write_plain, write_struct};
use crate::status::{OK, c_answer, c_status, guarded};

/// The owner of image handles handed to verifiers.
pub(crate) const IMAGE_OWNER: u64 = 0x4e43_494d_4147_0001;
/// The owner of builder handles (the staging image of a phase frame): the value is the lending's token.
pub(crate) const BUILDER_OWNER: u64 = 0x4e43_4255_494c_0001;
/// The longest view `ReadAt` hands out, and the most bytes one write takes.
const VIEW_LIMIT: u64 = 64 << 20;
/// The most bytes the views `ReadAt` hands out in one callback hold together (they live until it returns).
const VIEWS_LIMIT: u64 = 256 << 20;
/// The owner of segment and section handles of an image: the value is the index, from 1.
const IMAGE_PART_OWNER: u64 = 0x4e43_494d_4750_0001;

/// The summary a verifier is handed, for the image of `size` bytes lent under `token`.
pub(crate) fn image_info(layout: &ImageLayout, size: u64, token: u64) -> ffi::BinaryImageInfo {
    summary(layout, size, token, None)
}

/// The summary of an image lent under `token`; with `writable`, the MutableBinaryAPI and the builder.
fn summary(layout: &ImageLayout, size: u64, token: u64, writable: Option<()>) -> ffi::BinaryImageInfo {
    ffi::BinaryImageInfo {
        header: header::<ffi::BinaryImageInfo>(),
        image: ffi::BinaryImageHandle(ffi::Handle {
            owner: IMAGE_OWNER,
            value: token,
        }),
        state: BinaryImageState::Candidate.raw(),
        output_kind: layout.output_kind.abi_kind().raw(),
        target_id: ffi::TargetId::default(),
        format_id: ffi::ObjectFormatId::default(),
        entry_address: layout.entry,
        image_base: layout.segments.first().map_or(0, |segment| segment.virtual_address),
        size,
        segment_count: layout.segments.len() as u64,
        section_count: layout.sections.len() as u64,
        import_count: 0,
        export_count: 0,
        dynamic_relocation_count: 0,
        content_digest: [0; 32],
        binary: match writable {
            Some(()) => crate::load::mutable_binary_api_address() as *const ffi::MutableBinaryApi,
            None => std::ptr::null(),
        },
        builder: ffi::BinaryBuilderHandle(match writable {
            Some(()) => ffi::Handle {
                owner: BUILDER_OWNER,
                value: token,
            },
            None => ffi::Handle::default(),
        }),
        extensions: NO_EXTENSIONS,
    }
}

/// Checks an image handle against the image lent under `token`.
fn check_image(image: ffi::Handle, token: u64) -> Result<(), StatusCode> {
    if image.owner != IMAGE_OWNER {
        Err(StatusCode::WrongType)
    } else if image.value != token {
        Err(StatusCode::StaleHandle)
    } else {
        Ok(())
    }
}

/// Answers a verifier's request about the image of `size` bytes lent for its call.
pub(crate) fn serve_image(layout: &ImageLayout, size: u64, request: &mut dyn Any) {
    // A verifier has no graph: other requests stay unanswered, which their slots report as INVALID_STATE.
    if let Some(Asked { token, request }) = request.downcast_mut::<Asked>() {
        serve_reads(layout, size, *token, None, request);
    }
}

/// Answers the requests that read an image (its pages and summary; with `writable`, the summary names the
/// MutableBinaryAPI); `false` for other requests.
fn serve_reads(layout: &ImageLayout, size: u64, token: u64, writable: Option<()>, request: &mut FrameRequest) -> bool {
    match request {
        FrameRequest::ImagePage {
            sections,
            image,
            cursor,
            page,
            answer,
        } => {
            *answer = Some(check_image(*image, token).and_then(|()| fill(layout, *sections, *cursor, *page)));
        }
        FrameRequest::ImageInfo { image, out, answer } => {
            let info = summary(layout, size, token, writable);
            *answer = Some(check_image(*image, token).and_then(|()| Place::Out(out.cast()).put(info)));
        }
        _ => return false,
    }
    true
}

/// Fills a page of segments or sections from `cursor` (past the end: INVALID_ARGUMENT).
fn fill(
    layout: &ImageLayout,
    sections: bool,
    cursor: u64,
    mut page: ffi::LinkEntityPage,
) -> Result<ffi::LinkEntityPage, StatusCode> {
    let (total, element) = if sections {
        (
            layout.sections.len() as u64,
            std::mem::size_of::<ffi::BinarySectionInfo>(),
        )
    } else {
        (
            layout.segments.len() as u64,
            std::mem::size_of::<ffi::BinarySegmentInfo>(),
        )
    };
    if page.element_stride < element as u64 || (page.data.is_null() && page.element_capacity > 0) || cursor > total {
        return Err(StatusCode::InvalidArgument);
    }
    let fit = page.element_capacity.min(total - cursor);
    for (slot, index) in (cursor..cursor + fit).enumerate() {
        let place = Place::Element {
            data: page.data,
            stride: page.element_stride,
            slot: slot as u64,
        };
        let part = |index: u64| ffi::Handle {
            owner: IMAGE_PART_OWNER,
            value: index + 1,
        };
        if sections {
            let section = &layout.sections[index as usize];
            let mut flags = 0u64;
            for (ours, theirs) in [
                (SectionFlags::ALLOC, ObjectSectionFlags::ALLOCATED),
                (SectionFlags::WRITE, ObjectSectionFlags::WRITABLE),
                (SectionFlags::EXECUTE, ObjectSectionFlags::EXECUTABLE),
                (SectionFlags::TLS, ObjectSectionFlags::TLS),
            ] {
                if section.flags.contains(ours) {
                    flags |= theirs.bits();
                }
            }
            let file_size = if section.contents.is_empty() { 0 } else { section.size };
            place.put(ffi::BinarySectionInfo {
                header: header::<ffi::BinarySectionInfo>(),
                section: ffi::BinarySectionHandle(part(index)),
                segment: ffi::BinarySegmentHandle(
                    section.segment.map(|segment| part(segment as u64)).unwrap_or_default(),
                ),
                name: view(&section.name),
                kind: 0,
                reserved: 0,
                flags,
                address: section.address,
                memory_size: section.size,
                file_offset: section.file_offset,
                file_size,
                alignment: section.alignment,
            })?;
        } else {
            let segment = &layout.segments[index as usize];
            let mut flags = 0u64;
            for (ours, theirs) in [
                (SegmentFlags::READ, BinarySegmentFlags::READ),
                (SegmentFlags::WRITE, BinarySegmentFlags::WRITE),
                (SegmentFlags::EXECUTE, BinarySegmentFlags::EXECUTE),
            ] {
                if segment.flags.contains(ours) {
                    flags |= theirs.bits();
                }
            }
            place.put(ffi::BinarySegmentInfo {
                header: header::<ffi::BinarySegmentInfo>(),
                segment: ffi::BinarySegmentHandle(part(index)),
                name: view(&segment.name),
                flags,
                address: segment.virtual_address,
                memory_size: segment.memory_size,
                file_offset: segment.file_offset,
                file_size: segment.file_size,
                alignment: segment.alignment,
            })?;
        }
    }
    page.out_count = fit;
    page.next_cursor = cursor + fit;
    page.has_more = flag(cursor + fit < total);
    Ok(page)
}

/// A page of the image's segments or sections through a task handle.
fn image_page(
    sections: bool,
    task: ffi::TaskHandle,
    image: ffi::BinaryImageHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    guarded(|| {
        deliver_page(task.0, page, |given| FrameRequest::ImagePage {
            sections,
            image: image.0,
            cursor,
            page: given,
            answer: None,
        })
    })
}

/// `NevercLinkAPI.GetBinarySegmentPage`: the segments of the image lent to a verifier.
pub(crate) extern "C" fn get_binary_segment_page(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    image: ffi::BinaryImageHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    image_page(false, task, image, cursor, page)
}

/// `NevercLinkAPI.GetBinarySectionPage`: the sections of the image lent to a verifier.
pub(crate) extern "C" fn get_binary_section_page(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    image: ffi::BinaryImageHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    image_page(true, task, image, cursor, page)
}

/// `NevercLinkAPI.GetBinaryImageInfo`: the summary of the image lent to a verifier (the one its callback was
/// handed).
pub(crate) extern "C" fn get_binary_image_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    image: ffi::BinaryImageHandle,
    out: *mut ffi::BinaryImageInfo,
) -> ffi::Status {
    guarded(|| {
        answer_of(
            task.0,
            FrameRequest::ImageInfo {
                image: image.0,
                out,
                answer: None,
            },
        )
    })
}

/// One operation of the MutableBinaryAPI.
#[derive(Clone, Debug)]
pub(crate) enum BinaryOperation {
    Reserve(u64),
    Write(Vec<u8>),
    WriteAt(u64, Vec<u8>),
    Tell,
    ReadAt(u64, u64),
    Insert(u64, Vec<u8>),
    Append(Vec<u8>),
    Resize(u64),
}

/// What an operation of the MutableBinaryAPI answers besides its status.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BinaryAnswer {
    Done,
    Position(u64),
    /// A view of bytes the lending keeps until the callback returns.
    View(*const u8, u64),
}

/// Answers the image requests of a phase frame: INVALID_STATE before the phase has an image.
pub(crate) fn serve_frame_image(
    frame: &mut PhaseFrame<'_>,
    token: u64,
    request: &mut FrameRequest,
    state: &mut FrameState,
) {
    let context = frame.context();
    let (layout, size) = match (context.image_layout(), context.image()) {
        (Some(layout), Some(image)) => (layout, image.len()),
        _ => {
            match request {
                FrameRequest::ImagePage { answer, .. } => *answer = Some(Err(StatusCode::InvalidState)),
                FrameRequest::ImageInfo { answer, .. } => *answer = Some(Err(StatusCode::InvalidState)),
                FrameRequest::Binary { answer, .. } => *answer = Some(Err(StatusCode::InvalidState)),
                FrameRequest::PhaseImage(answer) => *answer = Some(Err(StatusCode::InvalidState)),
                _ => {}
            }
            return;
        }
    };
    if serve_reads(layout, size, token, Some(()), request) {
        return;
    }
    match request {
        FrameRequest::PhaseImage(answer) => {
            *answer = Some(Ok(ffi::LinkPhaseImageInfo {
                header: header::<ffi::LinkPhaseImageInfo>(),
                link: crate::load::link_api_address() as *const ffi::LinkApi,
                image: ffi::BinaryImageHandle(ffi::Handle {
                    owner: IMAGE_OWNER,
                    value: token,
                }),
                outputs: ffi::OutputBundleHandle::default(),
                state: BinaryImageState::Candidate.raw(),
                reserved: 0,
                generation: frame.generation(),
            }));
        }
        FrameRequest::Binary {
            builder,
            operation,
            answer,
        } => {
            *answer = Some(binary(frame, token, *builder, operation.clone(), state));
        }
        _ => {}
    }
}

/// Runs one operation of the MutableBinaryAPI on the lending's staging image (made from the phase's image
/// at the first operation).
fn binary(
    frame: &mut PhaseFrame<'_>,
    token: u64,
    builder: ffi::Handle,
    operation: BinaryOperation,
    state: &mut FrameState,
) -> Result<BinaryAnswer, StatusCode> {
    if builder.owner != BUILDER_OWNER {
        return Err(StatusCode::WrongType);
    }
    if builder.value != token {
        return Err(StatusCode::StaleHandle);
    }
    let limit = frame.context().options.max_output_size;
    if state.staging.is_none() {
        let (Some(image), Some(layout)) = (
            frame.context().image().cloned(),
            frame.context().image_layout().cloned(),
        ) else {
            return Err(StatusCode::InvalidState);
        };
        let mut writer = BoundedImageWriter::with_bound(image.len()).map_err(|error| writer_status(&error))?;
        writer
            .write_sparse_at(0, &image)
            .map_err(|error| writer_status(&error))?;
        state.staging = Some(writer);
        state.image = Some((image, layout));
    }
    let changes = !matches!(operation, BinaryOperation::Tell | BinaryOperation::ReadAt(..));
    if changes && let Some((image, layout)) = state.image.take() {
        // Publishing the image as it is asks the frame whether this callback may publish at all: an
        // observer may not (POLICY_VIOLATION), and its staging image is dropped.
        if let Err(status) = frame.publish_image(image, layout) {
            state.staging = None;
            return Err(status.code);
        }
    }
    let Some(writer) = state.staging.as_mut() else {
        return Err(StatusCode::InvalidState);
    };
    let done = |result: Result<(), WriterError>| {
        result
            .map(|()| BinaryAnswer::Done)
            .map_err(|error| writer_status(&error))
    };
    match operation {
        BinaryOperation::Reserve(size) if size > limit => Err(StatusCode::ResourceExhausted),
        BinaryOperation::Reserve(size) => done(writer.reserve(size)),
        BinaryOperation::Write(bytes) => done(writer.write(&bytes)),
        BinaryOperation::WriteAt(offset, bytes) => done(writer.write_at(offset, &bytes)),
        BinaryOperation::Tell => Ok(BinaryAnswer::Position(writer.tell())),
        BinaryOperation::ReadAt(_, length) if length > VIEW_LIMIT => Err(StatusCode::InvalidArgument),
        BinaryOperation::ReadAt(_, length)
            if state.views.iter().map(|view| view.len() as u64).sum::<u64>() + length > VIEWS_LIMIT =>
        {
            Err(StatusCode::ResourceExhausted)
        }
        BinaryOperation::ReadAt(offset, length) => {
            let bytes: Box<[u8]> = writer
                .read_at(offset, length)
                .map_err(|error| writer_status(&error))?
                .into_owned()
                .into_boxed_slice();
            let view = BinaryAnswer::View(
                if bytes.is_empty() {
                    std::ptr::null()
                } else {
                    bytes.as_ptr()
                },
                bytes.len() as u64,
            );
            state.views.push(bytes);
            Ok(view)
        }
        BinaryOperation::Insert(offset, bytes) => done(writer.insert(offset, &bytes)),
        BinaryOperation::Append(bytes) => done(writer.append(&bytes)),
        BinaryOperation::Resize(size) => done(writer.resize(size)),
    }
}

/// The status of a writer's failure: out of range or past the bound is INVALID_ARGUMENT, staging already
/// aborted INVALID_STATE, an allocation RESOURCE_EXHAUSTED.
fn writer_status(error: &WriterError) -> StatusCode {
    match error {
        WriterError::Aborted { .. } => StatusCode::InvalidState,
        WriterError::Allocation { .. } => StatusCode::ResourceExhausted,
        _ => StatusCode::InvalidArgument,
    }
}

/// Publishes a lending's staging image as the phase's image, unless staging was aborted.
pub(crate) fn publish(frame: &mut PhaseFrame<'_>, staging: Option<BoundedImageWriter>) {
    let Some(writer) = staging else {
        return;
    };
    let (Ok(bytes), Some(layout)) = (writer.finish(), frame.context().image_layout().cloned()) else {
        return;
    };
    // An observer never gets a staging image, so this does not fail.
    let _ = frame.publish_image(bytes, layout);
}

/// `NevercLinkPhaseAPI.GetImage`: the image of the frame's phase (from `emit` on), as a handle valid for the
/// callback.
pub(crate) extern "C" fn get_image(
    _context: *mut c_void,
    frame: *const ffi::PhaseFrame,
    _artifact: ffi::ArtifactHandle,
    out: *mut ffi::LinkPhaseImageInfo,
) -> ffi::Status {
    guarded(|| {
        let frame = match read_struct(frame) {
            Ok(frame) => frame,
            Err(code) => return c_status(code),
        };
        let mut request = FrameRequest::PhaseImage(None);
        if let Err(code) = ask(frame.task.0, &mut request) {
            return c_status(code);
        }
        match request {
            FrameRequest::PhaseImage(Some(Ok(info))) => c_answer(write_struct(out, info)),
            FrameRequest::PhaseImage(Some(Err(code))) => c_status(code),
            _ => c_status(StatusCode::InvalidState),
        }
    })
}

/// Sends one operation of the MutableBinaryAPI and answers its status and answer.
fn operate(
    task: ffi::TaskHandle,
    builder: ffi::BinaryBuilderHandle,
    operation: BinaryOperation,
) -> Result<BinaryAnswer, StatusCode> {
    let mut request = FrameRequest::Binary {
        builder: builder.0,
        operation,
        answer: None,
    };
    ask(task.0, &mut request)?;
    match request {
        FrameRequest::Binary {
            answer: Some(answer), ..
        } => answer,
        _ => Err(StatusCode::InvalidState),
    }
}

/// The bytes of a view a plugin passes to a write: INVALID_ARGUMENT for a null `Data` with a length or more
/// than 64 MiB.
fn bytes_of(view: ffi::ByteView) -> Result<Vec<u8>, StatusCode> {
    let limit = usize::try_from(VIEW_LIMIT).unwrap_or(usize::MAX);
    copy_view(view.data, view.length, limit).ok_or(StatusCode::InvalidArgument)
}

fn status_of(result: Result<BinaryAnswer, StatusCode>) -> ffi::Status {
    match result {
        Ok(_) => OK,
        Err(code) => c_status(code),
    }
}

/// `NevercMutableBinaryAPI.Reserve`: grows the bound (up to the link's output limit, else
/// RESOURCE_EXHAUSTED); a smaller bound is INVALID_ARGUMENT.
pub(crate) extern "C" fn binary_reserve(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    builder: ffi::BinaryBuilderHandle,
    size: u64,
) -> ffi::Status {
    guarded(|| status_of(operate(task, builder, BinaryOperation::Reserve(size))))
}

/// A MutableBinaryAPI slot that writes a view's bytes: `$operation(bytes)`, or `$operation(offset, bytes)`.
macro_rules! bytes_slot {
    ($name:ident, $slot:literal, $operation:ident) => {
        #[doc = concat!("`NevercMutableBinaryAPI.", $slot, "`.")]
        pub(crate) extern "C" fn $name(
            _context: *mut c_void,
            task: ffi::TaskHandle,
            builder: ffi::BinaryBuilderHandle,
            bytes: ffi::ByteView,
        ) -> ffi::Status {
            guarded(|| {
                status_of(bytes_of(bytes).and_then(|bytes| operate(task, builder, BinaryOperation::$operation(bytes))))
            })
        }
    };
    ($name:ident, $slot:literal, $operation:ident, offset) => {
        #[doc = concat!("`NevercMutableBinaryAPI.", $slot, "`.")]
        pub(crate) extern "C" fn $name(
            _context: *mut c_void,
            task: ffi::TaskHandle,
            builder: ffi::BinaryBuilderHandle,
            offset: u64,
            bytes: ffi::ByteView,
        ) -> ffi::Status {
            guarded(|| {
                let operation = |bytes| BinaryOperation::$operation(offset, bytes);
                status_of(bytes_of(bytes).and_then(|bytes| operate(task, builder, operation(bytes))))
            })
        }
    };
}

bytes_slot!(binary_write, "Write", Write);
bytes_slot!(binary_append, "Append", Append);
bytes_slot!(binary_write_at, "WriteAt", WriteAt, offset);
bytes_slot!(binary_insert, "Insert", Insert, offset);

/// `NevercMutableBinaryAPI.Tell`.
pub(crate) extern "C" fn binary_tell(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    builder: ffi::BinaryBuilderHandle,
    out: *mut u64,
) -> ffi::Status {
    guarded(|| match operate(task, builder, BinaryOperation::Tell) {
        Ok(BinaryAnswer::Position(position)) => c_answer(write_plain(out, position)),
        Ok(_) => c_status(StatusCode::InvalidState),
        Err(code) => c_status(code),
    })
}

/// `NevercMutableBinaryAPI.ReadAt`: the view stays valid until the callback returns. A view above 64 MiB
/// is INVALID_ARGUMENT; views above 256 MiB in all in one callback RESOURCE_EXHAUSTED.
pub(crate) extern "C" fn binary_read_at(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    builder: ffi::BinaryBuilderHandle,
    offset: u64,
    length: u64,
    out: *mut ffi::ByteView,
) -> ffi::Status {
    guarded(
        || match operate(task, builder, BinaryOperation::ReadAt(offset, length)) {
            Ok(BinaryAnswer::View(data, length)) => c_answer(write_plain(out, ffi::ByteView { data, length })),
            Ok(_) => c_status(StatusCode::InvalidState),
            Err(code) => c_status(code),
        },
    )
}

/// `NevercMutableBinaryAPI.Resize`.
pub(crate) extern "C" fn binary_resize(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    builder: ffi::BinaryBuilderHandle,
    size: u64,
) -> ffi::Status {
    guarded(|| status_of(operate(task, builder, BinaryOperation::Resize(size))))
}
