//! Compressed debugging sections (`--compress-debug-sections=zlib`), as the ELF gABI defines them: the
//! section is `SHF_COMPRESSED` and holds an `Elf64_Chdr` (the compression type, the uncompressed size and
//! alignment) followed by the zlib stream of its bytes.

use std::io::Write;

/// `ELFCOMPRESS_ZLIB`.
const ELFCOMPRESS_ZLIB: u32 = 1;

/// The alignment of a compressed section: its `Elf64_Chdr`'s.
pub const COMPRESSED_ALIGNMENT: u64 = 8;

/// The compressed form of a section of `bytes` aligned to `alignment`, header first (little-endian), or
/// `None` when it is not smaller: GNU ld then leaves the section as it is.
pub fn compress_zlib(bytes: &[u8], alignment: u64) -> Option<Vec<u8>> {
    let mut header = Vec::with_capacity(24 + bytes.len() / 2);
    header.extend_from_slice(&ELFCOMPRESS_ZLIB.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    header.extend_from_slice(&alignment.to_le_bytes());
    let mut encoder = flate2::write::ZlibEncoder::new(header, flate2::Compression::default());
    encoder.write_all(bytes).ok()?;
    let compressed = encoder.finish().ok()?;
    (compressed.len() < bytes.len()).then_some(compressed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_header_then_a_zlib_stream_of_the_bytes() {
        let bytes: Vec<u8> = (0..4000u32).map(|index| (index % 7) as u8).collect();
        let compressed = compress_zlib(&bytes, 1).unwrap();
        assert_eq!(&compressed[..4], &[1, 0, 0, 0]);
        assert_eq!(&compressed[8..16], &4000u64.to_le_bytes());
        assert_eq!(&compressed[16..24], &1u64.to_le_bytes());
        let mut decoded = Vec::new();
        flate2::read::ZlibDecoder::new(&compressed[24..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, bytes);
        // Random-looking bytes do not get smaller: the section stays as it is.
        let noise: Vec<u8> = (0..64u32)
            .map(|index| (index.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(compress_zlib(&noise, 1), None);
    }
}
