#![allow(clippy::unwrap_used, clippy::expect_used)]
//! LTO providers: the registration rules NeverC's host applies to `NevercLTOProviderDescriptor`, the
//! caller-buffer protocol of `BuildCacheKey`, and the request's canonical encoding and digests.

use std::cell::RefCell;

use neverc_link::graph::BitcodeModuleId;
use neverc_link::lto::provider::{KeySize, LtoCandidate, LtoProvider, ProviderError, cache_key, check_descriptor};
use neverc_link::lto::request::{LtoOptions, LtoRequest, RequestFile, RequestModule, sha256};
use neverc_link::lto::{LtoMode, LtoResolution, ProviderFlags, ResolutionFlags};
use neverc_link::status::StatusCode;

/// A provider whose descriptor fields the test chooses, and whose cache key is the request digest in hex
/// (64 bytes), recording the buffer sizes it was asked with.
struct Provider {
    id: &'static str,
    flags: u64,
    keys: bool,
    generates: bool,
    asked: RefCell<Vec<usize>>,
}

impl Provider {
    fn new(id: &'static str, flags: u64) -> Provider {
        Provider {
            id,
            flags,
            keys: true,
            generates: true,
            asked: RefCell::new(Vec::new()),
        }
    }
}

impl LtoProvider for Provider {
    fn id(&self) -> &str {
        self.id
    }
    fn target(&self) -> &str {
        "x86_64-unknown-linux-gnu"
    }
    fn flags(&self) -> u64 {
        self.flags
    }
    fn builds_cache_keys(&self) -> bool {
        self.keys
    }
    fn generates(&self) -> bool {
        self.generates
    }
    fn build_cache_key(&self, request: &LtoRequest, buffer: &mut [u8]) -> Result<KeySize, ProviderError> {
        self.asked.borrow_mut().push(buffer.len());
        let key: String = request
            .request_digest
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        let count = key.len().min(buffer.len());
        buffer[..count].copy_from_slice(&key.as_bytes()[..count]);
        Ok(KeySize(key.len()))
    }
    fn codegen(&self, _request: &LtoRequest) -> Result<LtoCandidate, ProviderError> {
        Ok(LtoCandidate::default())
    }
}

fn code(result: Result<ProviderFlags, neverc_link::status::Status>) -> (StatusCode, String) {
    match result {
        Ok(_) => (StatusCode::Ok, String::new()),
        Err(status) => (status.code, status.message),
    }
}

#[test]
fn registration_refuses_what_neverc_refuses_naming_the_rule() {
    let full = ProviderFlags::FULL.bits();
    let thin = ProviderFlags::THIN.bits();
    let cacheable = ProviderFlags::CACHEABLE.bits();
    assert_eq!(
        code(check_descriptor(&Provider::new("a", full | thin | cacheable), &[])).0,
        StatusCode::Ok
    );
    let (status, message) = code(check_descriptor(&Provider::new("a", full | (1 << 9)), &[]));
    assert_eq!(status, StatusCode::InvalidDescriptor);
    assert!(message.contains("unknown flag bits 0x200"), "{message}");
    let (status, message) = code(check_descriptor(
        &Provider::new("a", ProviderFlags::DETERMINISTIC.bits()),
        &[],
    ));
    assert_eq!(status, StatusCode::InvalidDescriptor);
    assert!(message.contains("neither FULL nor THIN"), "{message}");
    let mut no_codegen = Provider::new("a", full);
    no_codegen.generates = false;
    let (status, message) = code(check_descriptor(&no_codegen, &[]));
    assert_eq!(status, StatusCode::InvalidDescriptor);
    assert!(message.contains("no Codegen"), "{message}");
    let mut no_keys = Provider::new("a", thin | cacheable);
    no_keys.keys = false;
    let (status, message) = code(check_descriptor(&no_keys, &[]));
    assert_eq!(status, StatusCode::InvalidDescriptor);
    assert!(message.contains("CACHEABLE without a BuildCacheKey"), "{message}");
    let (status, message) = code(check_descriptor(
        &Provider::new("com.example.lto", full),
        &["other", "com.example.lto"],
    ));
    assert_eq!(status, StatusCode::DuplicateId);
    assert!(message.contains("com.example.lto"), "{message}");
}

fn request(flags: ResolutionFlags, optimization_level: u32, bytes: &[u8]) -> LtoRequest {
    let options = LtoOptions {
        mode: LtoMode::Thin,
        optimization_level,
        ..LtoOptions::default()
    };
    let files = vec![RequestFile {
        logical_name: "a.o".into(),
        path: None,
        bytes: bytes.to_vec(),
        content_digest: sha256(bytes),
    }];
    let modules = vec![RequestModule {
        file: 0,
        ordinal: 0,
        identifier: "a.c".into(),
        symbols: vec!["main".into(), "helper".into()],
    }];
    let resolutions = vec![
        LtoResolution {
            module: BitcodeModuleId(0),
            symbol: 0,
            flags,
            link_symbol: None,
        },
        LtoResolution {
            module: BitcodeModuleId(0),
            symbol: 1,
            flags: ResolutionFlags::EMPTY,
            link_symbol: None,
        },
    ];
    LtoRequest::new("x86_64-unknown-linux-gnu".into(), options, files, modules, resolutions)
}

#[test]
fn the_cache_key_is_asked_again_with_the_size_the_provider_reports() {
    let provider = Provider::new("keys", ProviderFlags::FULL.bits() | ProviderFlags::CACHEABLE.bits());
    let request = request(ResolutionFlags::PREVAILING, 2, b"BC\xc0\xde one");
    let key = cache_key(&provider, &request, 1).unwrap();
    assert_eq!(
        *provider.asked.borrow(),
        [1, 64],
        "a 1-byte buffer first, then the size asked for"
    );
    let hex: String = request
        .request_digest
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(key, hex.as_bytes());
    // A buffer large enough from the start is asked once.
    provider.asked.borrow_mut().clear();
    assert_eq!(cache_key(&provider, &request, 128).unwrap(), hex.as_bytes());
    assert_eq!(*provider.asked.borrow(), [128]);
}

#[test]
fn digests_cover_every_part_of_the_request_and_nothing_else() {
    let base = request(ResolutionFlags::PREVAILING, 2, b"BC\xc0\xde one");
    assert_eq!(
        base,
        request(ResolutionFlags::PREVAILING, 2, b"BC\xc0\xde one"),
        "deterministic"
    );
    let flags = request(
        ResolutionFlags::PREVAILING | ResolutionFlags::VISIBLE_TO_REGULAR_OBJECT,
        2,
        b"BC\xc0\xde one",
    );
    assert_ne!(flags.resolution_digest, base.resolution_digest);
    assert_ne!(flags.request_digest, base.request_digest);
    let level = request(ResolutionFlags::PREVAILING, 3, b"BC\xc0\xde one");
    assert_eq!(
        level.resolution_digest, base.resolution_digest,
        "options are not resolutions"
    );
    assert_ne!(level.request_digest, base.request_digest);
    let bytes = request(ResolutionFlags::PREVAILING, 2, b"BC\xc0\xde two");
    assert_eq!(bytes.resolution_digest, base.resolution_digest);
    assert_ne!(bytes.request_digest, base.request_digest);
    // A cacheable provider's key, built from the request digest, changes with each of them.
    let provider = Provider::new("keys", ProviderFlags::THIN.bits() | ProviderFlags::CACHEABLE.bits());
    let keys: Vec<Vec<u8>> = [&base, &flags, &level, &bytes]
        .iter()
        .map(|request| cache_key(&provider, request, 1).unwrap())
        .collect();
    for (index, key) in keys.iter().enumerate() {
        assert!(!keys[index + 1..].contains(key), "key {index} repeats");
    }
    // The encoding is length-prefixed: moving bytes between two names changes it.
    let mut moved = base.clone();
    moved.modules[0].symbols = vec!["mai".into(), "nhelper".into()];
    assert_ne!(moved.encode_resolutions(), base.encode_resolutions());
}
