//! What an image verifier reads of the image lent for its call: the summary (`GetBinaryImageInfo`), the
//! segments and the sections. Its image handle is the lending's token under [`IMAGE_OWNER`]; a verifier has
//! no graph, and a phase frame no image handle, so the image slots answer INVALID_STATE in a phase frame.

use std::any::Any;
use std::ffi::c_void;

use neverc_link::image::{ImageLayout, SectionFlags, SegmentFlags};
use neverc_tables::plugin_abi::ffi;
use neverc_tables::plugin_abi::link::{BinaryImageState, BinarySegmentFlags, LinkOutputKind};
use neverc_tables::plugin_abi::object::ObjectSectionFlags;
use neverc_tables::status::StatusCode;

use super::infos::Place;
use super::{Asked, FrameRequest, NO_EXTENSIONS, answer_of, deliver_page, flag, header, view};
use crate::status::guarded;

/// The owner of image handles handed to verifiers.
pub(crate) const IMAGE_OWNER: u64 = 0x4e43_494d_4147_0001;
/// The owner of segment and section handles of an image: the value is the index, from 1.
const IMAGE_PART_OWNER: u64 = 0x4e43_494d_4750_0001;

/// The summary a verifier is handed, for the image of `size` bytes lent under `token`.
pub(crate) fn image_info(layout: &ImageLayout, size: u64, token: u64) -> ffi::BinaryImageInfo {
    ffi::BinaryImageInfo {
        header: header::<ffi::BinaryImageInfo>(),
        image: ffi::BinaryImageHandle(ffi::Handle {
            owner: IMAGE_OWNER,
            value: token,
        }),
        state: BinaryImageState::Candidate.raw(),
        output_kind: LinkOutputKind::Executable.raw(),
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
        binary: std::ptr::null(),
        builder: ffi::BinaryBuilderHandle::default(),
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
    let Some(Asked { token, request }) = request.downcast_mut::<Asked>() else {
        return;
    };
    match request {
        FrameRequest::ImagePage {
            sections,
            image,
            cursor,
            page,
            answer,
        } => {
            *answer = Some(check_image(*image, *token).and_then(|()| fill(layout, *sections, *cursor, *page)));
        }
        FrameRequest::ImageInfo { image, out, answer } => {
            *answer = Some(
                check_image(*image, *token).and_then(|()| Place::Out(out.cast()).put(image_info(layout, size, *token))),
            );
        }
        // A verifier has no graph: other requests stay unanswered, which their slots report as INVALID_STATE.
        _ => {}
    }
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
