//! Compressed debugging sections (`--compress-debug-sections=zlib|zstd`), as the ELF gABI defines them: the
//! section is `SHF_COMPRESSED` and holds an `Elf64_Chdr` (the compression type, the uncompressed size and
//! alignment) followed by the zlib stream or the Zstandard frame of its bytes.

use std::io::Write;

/// `ELFCOMPRESS_ZLIB`.
const ELFCOMPRESS_ZLIB: u32 = 1;
/// `ELFCOMPRESS_ZSTD`.
const ELFCOMPRESS_ZSTD: u32 = 2;

/// How debugging sections are compressed (`--compress-debug-sections=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DebugCompression {
    /// Not at all (`none`, the default).
    #[default]
    None,
    /// A zlib stream (`zlib`, `zlib-gabi`).
    Zlib,
    /// A Zstandard frame (`zstd`), which binutils 2.40, gdb 13 and LLVM read.
    Zstd,
}

/// The compressed form of a section of `bytes` aligned to `alignment` in the format `how` says, header
/// first (little-endian), or `None` when it is not smaller (GNU ld then leaves the section as it is) or
/// `how` is [`DebugCompression::None`].
pub fn compress_section(bytes: &[u8], alignment: u64, how: DebugCompression) -> Option<Vec<u8>> {
    match how {
        DebugCompression::None => None,
        DebugCompression::Zlib => compress_zlib(bytes, alignment),
        DebugCompression::Zstd => {
            // libzstd's default level, as GNU ld compresses (so that the same sections get smaller).
            let frame = zstd::bulk::compress(bytes, zstd::DEFAULT_COMPRESSION_LEVEL).ok()?;
            let mut compressed = chdr(ELFCOMPRESS_ZSTD, bytes.len(), alignment);
            compressed.extend_from_slice(&frame);
            (compressed.len() < bytes.len()).then_some(compressed)
        }
    }
}

/// An `Elf64_Chdr` of the compression type `kind` for `size` bytes aligned to `alignment`, with room after it.
fn chdr(kind: u32, size: usize, alignment: u64) -> Vec<u8> {
    let mut header = Vec::with_capacity(24 + size / 2);
    header.extend_from_slice(&kind.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&(size as u64).to_le_bytes());
    header.extend_from_slice(&alignment.to_le_bytes());
    header
}

/// The alignment of a compressed section: its `Elf64_Chdr`'s.
pub const COMPRESSED_ALIGNMENT: u64 = 8;

/// The compressed form of a section of `bytes` aligned to `alignment`, header first (little-endian), or
/// `None` when it is not smaller: GNU ld then leaves the section as it is.
pub fn compress_zlib(bytes: &[u8], alignment: u64) -> Option<Vec<u8>> {
    let header = chdr(ELFCOMPRESS_ZLIB, bytes.len(), alignment);
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

    #[test]
    fn the_header_then_a_zstandard_frame_of_the_bytes() {
        let bytes: Vec<u8> = (0..40_000u32).map(|index| (index % 13) as u8).collect();
        let compressed = compress_section(&bytes, 8, DebugCompression::Zstd).unwrap();
        assert_eq!(&compressed[..4], &[2, 0, 0, 0]);
        assert_eq!(&compressed[8..16], &40_000u64.to_le_bytes());
        assert_eq!(&compressed[16..24], &8u64.to_le_bytes());
        let decoded = zstd::bulk::decompress(&compressed[24..], bytes.len()).unwrap();
        assert_eq!(decoded, bytes);
        assert_eq!(compress_section(&bytes, 8, DebugCompression::None), None);
    }
}
