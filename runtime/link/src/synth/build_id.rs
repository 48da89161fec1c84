//! `--build-id`: a `.note.gnu.build-id` whose description is the SHA-1 of the whole image (ld.bfd's
//! default `sha1` style), computed with the description still zero and then written into it. The same
//! inputs give the same ID, and any change in the output gives another.

use sha1::{Digest, Sha1};

use crate::context::LinkContext;
use crate::graph::Origin;
use crate::image::SparseBytes;
use crate::sections::OutputSectionId;
/// `NT_GNU_BUILD_ID`.
const NT_GNU_BUILD_ID: u32 = 3;
/// The size of a SHA-1 digest.
const DIGEST_SIZE: usize = 20;
/// Where the description starts in the note: after namesz, descsz, type and "GNU\0".
const DESCRIPTION: u64 = 16;

/// Makes the `.note.gnu.build-id` atom with a zero description, once per link; emission fills it in.
pub(super) fn make_note(context: &mut LinkContext, origin: Origin) {
    if context.synthesized.build_id_made {
        return;
    }
    context.synthesized.build_id_made = true;
    super::new_atom(
        &mut context.graph,
        None,
        OutputSectionId::NoteGnuBuildId.name(),
        4,
        empty_note(),
        origin,
    );
}

/// The note with a zero description, as layout places it.
fn empty_note() -> Vec<u8> {
    let mut note = Vec::with_capacity(DESCRIPTION as usize + DIGEST_SIZE);
    note.extend_from_slice(&4u32.to_le_bytes());
    note.extend_from_slice(&(DIGEST_SIZE as u32).to_le_bytes());
    note.extend_from_slice(&NT_GNU_BUILD_ID.to_le_bytes());
    note.extend_from_slice(b"GNU\0");
    note.resize(DESCRIPTION as usize + DIGEST_SIZE, 0);
    note
}

/// Hashes `image` (holes as the zeros they read as) and writes the digest into the note at `note_offset`.
pub(crate) fn fill(image: &mut SparseBytes, note_offset: u64) -> Result<(), String> {
    let mut hasher = Sha1::new();
    let zeros = [0u8; 64 * 1024];
    let mut position = 0u64;
    for extent in image.extents() {
        feed_zeros(&mut hasher, &zeros, extent.offset() - position);
        hasher.update(extent.bytes());
        position = extent.end();
    }
    feed_zeros(&mut hasher, &zeros, image.len() - position);
    let digest = hasher.finalize();
    image
        .write_at(note_offset + DESCRIPTION, &digest)
        .map_err(|error| format!("{}: {error}", OutputSectionId::NoteGnuBuildId.name()))
}

fn feed_zeros(hasher: &mut Sha1, zeros: &[u8], mut count: u64) {
    while count > 0 {
        let chunk = count.min(zeros.len() as u64) as usize;
        hasher.update(&zeros[..chunk]);
        count -= chunk as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_sha1_of_the_image_with_a_zero_description() {
        let mut image = SparseBytes::from(empty_note());
        image.write_at(1 << 20, b"tail").unwrap();
        let mut dense = image.to_vec().unwrap();
        fill(&mut image, 0).unwrap();
        let expected = Sha1::digest(&dense);
        assert_eq!(image.stored(16, 20).unwrap(), expected.as_slice());
        dense[16..36].copy_from_slice(&expected);
        assert_eq!(image.to_vec().unwrap(), dense);
    }
}
