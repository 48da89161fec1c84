//! The plugin ABI tables generated from `abi/*.toml` carry NeverC's values (PluginLTO.h 1.0, as the LTO issue
//! and the fact sheet list them), and the generated types refuse what the ABI does not declare.

use neverc_tables::plugin_abi::{PARTS, lto};
use neverc_tables::{Id128, Stability};

#[test]
fn lto_values_are_neverc_values() {
    use lto::{LtoCacheScope, LtoProviderFlags, LtoSymbolResolutionFlags, LtoType};
    assert_eq!(LtoType::ALL.map(LtoType::raw), [0, 1, 2], "NONE 0, FULL 1, THIN 2");
    assert_eq!(
        LtoCacheScope::ALL.map(|scope| (scope.name(), scope.raw())),
        [("DISABLED", 0), ("TASK", 1), ("LOCAL_SHARED", 2), ("REMOTE_SHARED", 3)]
    );
    let resolution: Vec<(&str, u64)> = LtoSymbolResolutionFlags::NAMED
        .iter()
        .map(|(flag, name)| (*name, flag.bits()))
        .collect();
    assert_eq!(
        resolution,
        [
            ("PREVAILING", 1 << 0),
            ("VISIBLE_TO_REGULAR_OBJECT", 1 << 1),
            ("EXPORTED", 1 << 2),
            ("FINAL_DEFINITION", 1 << 3),
            ("CAN_INLINE", 1 << 4),
            ("CAN_INTERNALIZE", 1 << 5),
            ("LINKER_REDEFINED", 1 << 6),
            ("REFERENCED_BY_REGULAR_OBJECT", 1 << 7),
        ]
    );
    let provider: Vec<(&str, u64)> = LtoProviderFlags::NAMED
        .iter()
        .map(|(flag, name)| (*name, flag.bits()))
        .collect();
    assert_eq!(
        provider,
        [
            ("FULL", 1),
            ("THIN", 2),
            ("DETERMINISTIC", 4),
            ("CACHEABLE", 8),
            ("REPLAY_REQUIRED", 16)
        ]
    );
    let interface = lto::PART
        .interface_by_name("LTO")
        .map(|interface| (interface.id, interface.major, interface.minor));
    assert_eq!(
        interface,
        Some((
            Id128 {
                high: 0x4e43_504c_544f_0001,
                low: 1
            },
            1,
            0
        ))
    );
    let registrar = lto::PART.interface_by_name("LTO_REGISTRAR");
    assert_eq!(
        registrar.map(|interface| interface.id.high),
        Some(0x4e43_504c_544f_5201)
    );
    assert!(
        lto::INTERFACES
            .iter()
            .all(|interface| interface.stability == Stability::Stable)
    );
}

#[test]
fn generated_types_refuse_undeclared_values() {
    use lto::{LtoProviderFlags, LtoSymbolResolutionFlags, LtoType};
    assert_eq!(LtoType::from_raw(2), Some(LtoType::Thin));
    assert_eq!(LtoType::from_raw(3), None);
    assert_eq!(LtoSymbolResolutionFlags::ALL.bits(), 0xff);
    assert_eq!(LtoSymbolResolutionFlags::from_bits(1 << 8), None);
    let flags = LtoProviderFlags::THIN | LtoProviderFlags::CACHEABLE;
    assert_eq!(LtoProviderFlags::from_bits(0b1010), Some(flags));
    assert_eq!(flags.names().collect::<Vec<_>>(), ["THIN", "CACHEABLE"]);
    assert!(flags.contains(LtoProviderFlags::THIN) && !flags.contains(LtoProviderFlags::FULL));
    assert_eq!(flags.difference(LtoProviderFlags::THIN), LtoProviderFlags::CACHEABLE);
    // The records say the same as the types.
    let record = LtoSymbolResolutionFlags::RECORD;
    assert_eq!(record.known_bits(), LtoSymbolResolutionFlags::ALL.bits());
    assert_eq!(record.bit_by_name("EXPORTED").map(|bit| bit.bit), Some(2));
    assert_eq!(LtoType::RECORD.value_by_name("FULL").map(|value| value.value), Some(1));
    assert_eq!(
        lto::PART.enum_by_name("LTOMode").map(|record| record.name),
        Some("LTOType"),
        "an alias finds its type"
    );
    assert_eq!(
        PARTS.map(|part| part.name),
        ["core", "host", "link", "lto", "object", "target"]
    );
}

#[test]
fn status_codes_are_the_declared_ones() {
    use neverc_tables::status::StatusCode;
    assert_eq!(StatusCode::ALL.len(), 24);
    assert_eq!(StatusCode::InvalidDescriptor.raw(), 5);
    assert_eq!(StatusCode::InvalidDescriptor.name(), "INVALID_DESCRIPTOR");
    assert_eq!(StatusCode::ReentrancyDenied as i32, 23);
    assert_eq!(StatusCode::from_raw(12), Some(StatusCode::StaleHandle));
    assert_eq!(StatusCode::from_raw(24), None);
    assert_eq!(StatusCode::Ok.name(), "OK");
}
