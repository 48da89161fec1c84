#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The conformance check of LTO providers: a CACHEABLE provider's cache key must change with every part of
//! the request that can change its objects (`neverc_link::lto::provider::key_blind_spots`). The bundled
//! default provider (`llvm-lto2-14`) passes; a provider whose key covers only the resolutions is caught,
//! naming what its key ignores.

use neverc_link::graph::BitcodeModuleId;
use neverc_link::lto::llvm::LlvmLto2;
use neverc_link::lto::provider::{
    KeySize, LtoCandidate, LtoProvider, ProviderError, check_descriptor, key_blind_spots,
};
use neverc_link::lto::request::{LtoOptions, LtoRequest, RequestFile, RequestModule, sha256};
use neverc_link::lto::{LtoResolution, ProviderFlags, ResolutionFlags};

fn request() -> LtoRequest {
    let bytes = b"BC\xc0\xde module".to_vec();
    LtoRequest::new(
        "x86_64-unknown-linux-gnu".into(),
        LtoOptions::default(),
        vec![RequestFile {
            logical_name: "a.o".into(),
            path: None,
            content_digest: sha256(&bytes),
            bytes,
        }],
        vec![RequestModule {
            file: 0,
            ordinal: 0,
            identifier: "a.c".into(),
            symbols: vec!["main".into()],
        }],
        vec![LtoResolution {
            module: BitcodeModuleId(0),
            symbol: 0,
            flags: ResolutionFlags::PREVAILING | ResolutionFlags::VISIBLE_TO_REGULAR_OBJECT,
            link_symbol: None,
        }],
    )
}

/// Keys its cache on the resolution digest alone: a provider that would hand out stale objects.
struct ResolutionsOnly;

impl LtoProvider for ResolutionsOnly {
    fn id(&self) -> &str {
        "test.resolutions-only"
    }
    fn target(&self) -> &str {
        "x86_64-unknown-linux-gnu"
    }
    fn flags(&self) -> u64 {
        (ProviderFlags::FULL | ProviderFlags::CACHEABLE).bits()
    }
    fn builds_cache_keys(&self) -> bool {
        true
    }
    fn build_cache_key(&self, request: &LtoRequest, buffer: &mut [u8]) -> Result<KeySize, ProviderError> {
        let count = buffer.len().min(32);
        buffer[..count].copy_from_slice(&request.resolution_digest[..count]);
        Ok(KeySize(32))
    }
    fn codegen(&self, _request: &LtoRequest) -> Result<LtoCandidate, ProviderError> {
        Ok(LtoCandidate::default())
    }
}

#[test]
fn the_default_provider_registers_and_its_key_covers_the_request() {
    let provider = LlvmLto2::new("x86_64-unknown-linux-gnu");
    let flags = check_descriptor(&provider, &[]).unwrap();
    assert!(flags.contains(ProviderFlags::CACHEABLE) && flags.contains(ProviderFlags::THIN));
    assert_eq!(key_blind_spots(&provider, &request()).unwrap(), Vec::<&str>::new());
}

#[test]
fn a_key_that_ignores_part_of_the_request_is_caught() {
    assert!(
        check_descriptor(&ResolutionsOnly, &[]).is_ok(),
        "registration cannot see it"
    );
    assert_eq!(
        key_blind_spots(&ResolutionsOnly, &request()).unwrap(),
        [
            "the target",
            "the optimization level",
            "the CPU",
            "a file's contents",
            "a module's identifier"
        ]
    );
}
