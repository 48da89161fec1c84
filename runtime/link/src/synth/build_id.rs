//! `--build-id`: a `.note.gnu.build-id` whose description is a SHA-1 of the image, computed with the
//! description still zero and then written into it: of the whole image when it is at most [`CHUNK`] bytes
//! (ld.bfd's default `sha1` style); of a larger one, the SHA-1 of the SHA-1s of its [`CHUNK`]-byte pieces in
//! order, which the link's threads hash side by side (as lld computes its `sha1` ID). The same inputs give the
//! same ID whatever the number of threads, and any change in the output gives another.

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

/// The size of the pieces a large image is hashed in.
pub(crate) const CHUNK: u64 = 1 << 20;

/// Hashes `image` (holes as the zeros they read as) on up to `threads` threads and writes the digest into the
/// note at `note_offset`.
pub(crate) fn fill(image: &mut SparseBytes, note_offset: u64, threads: usize) -> Result<(), String> {
    let digest: [u8; DIGEST_SIZE] = if image.len() <= CHUNK {
        hash_range(image, 0, image.len())
    } else {
        let count = image.len().div_ceil(CHUNK) as usize;
        let shared: &SparseBytes = image;
        let digests = crate::scan::in_order(count, threads, 1, |index| {
            let start = index as u64 * CHUNK;
            Some(hash_range(shared, start, (start + CHUNK).min(shared.len())))
        });
        Sha1::digest(digests.concat()).into()
    };
    image
        .write_at(note_offset + DESCRIPTION, &digest)
        .map_err(|error| format!("{}: {error}", OutputSectionId::NoteGnuBuildId.name()))
}

/// The SHA-1 of bytes `start..end` of `image`, holes as zeros.
fn hash_range(image: &SparseBytes, start: u64, end: u64) -> [u8; DIGEST_SIZE] {
    let mut hasher = Sha1::new();
    let zeros = [0u8; 64 * 1024];
    let mut position = start;
    let extents = image.extents();
    let first = extents.partition_point(|extent| extent.end() <= start);
    for extent in extents[first..].iter().take_while(|extent| extent.offset() < end) {
        let from = extent.offset().max(start);
        let to = extent.end().min(end);
        feed_zeros(&mut hasher, &zeros, from - position);
        hasher.update(&extent.bytes()[(from - extent.offset()) as usize..(to - extent.offset()) as usize]);
        position = to;
    }
    feed_zeros(&mut hasher, &zeros, end - position);
    hasher.finalize().into()
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
    fn a_small_image_has_the_sha1_of_the_image_with_a_zero_description() {
        let mut image = SparseBytes::from(empty_note());
        image.write_at(1000, b"tail").unwrap();
        let mut dense = image.to_vec().unwrap();
        fill(&mut image, 0, 4).unwrap();
        let expected = Sha1::digest(&dense);
        assert_eq!(image.stored(16, 20).unwrap(), expected.as_slice());
        dense[16..36].copy_from_slice(&expected);
        assert_eq!(image.to_vec().unwrap(), dense);
    }

    #[test]
    fn a_large_image_has_the_sha1_of_its_chunks_sha1s_whatever_the_threads() {
        let mut ids = Vec::new();
        for threads in [1, 2, 3, 8] {
            let mut image = SparseBytes::from(empty_note());
            // Bytes across the first chunk boundary, a hole of two chunks, and a short last chunk.
            image.write_at(CHUNK - 3, b"across").unwrap();
            image.write_at(3 * CHUNK + 5, b"tail").unwrap();
            let dense = image.to_vec().unwrap();
            fill(&mut image, 0, threads).unwrap();
            let digests: Vec<u8> = dense.chunks(CHUNK as usize).flat_map(Sha1::digest).collect();
            assert_eq!(digests.len(), 4 * DIGEST_SIZE);
            assert_eq!(image.stored(16, 20).unwrap(), Sha1::digest(&digests).as_slice());
            ids.push(image.stored(16, 20).unwrap().to_vec());
        }
        assert!(ids.windows(2).all(|pair| pair[0] == pair[1]));
    }
}
