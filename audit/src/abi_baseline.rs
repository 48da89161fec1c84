//! The ABI baseline diff: every change between an old and a new set of plugin ABI declarations (`abi/*.toml`),
//! classified with the same classes as the phase schema's baseline diff.
//!
//! Interfaces are matched by name, types by their C name without `Neverc` (a handle by its `…Handle` name),
//! fields and slots by name within their structure or table, values, bits and constants by name within their
//! type. A rename is a removal and an addition.
//!
//! What the old declarations promised decides how much a change matters. An API table tied to an interface
//! (`interface = "LINK"`) makes the promise of that interface. Any other type makes the promise of its file: a
//! file that declares interfaces, all of them stable, makes every type it declares stable. A type that a stable
//! type uses (as a field, parameter, return value or typedef target, through pointers and arrays too) is stable
//! as well, whatever its file, since changing it changes the stable type. Everything else is experimental:
//! its changes are "allowed" instead of breaking or warnings.
//!
//! For stable types, removing a type, field, slot, value, bit or constant, reordering fields or slots, adding
//! one anywhere but at the end, and changing a field's, parameter's or return value's type, an array's length,
//! a value's number or a bit's position are breaking. Appending a field to a structure, or a slot to an API
//! table, is compatible: both start with a `Header` whose `StructSize` tells the reader how many bytes the
//! writer knew (NeverC's rule: a reader checks `StructSize` before it reads what a later minor version added).
//! A structure without a `Header` (a core primitive) has no such size, and a structure held by value in another
//! structure or passed by value moves what follows it, so appending to those is breaking. Adding a type, an
//! interface, a value, a bit or a constant is compatible. For interfaces, a changed id, a major version change, a
//! lower minor version and a downgrade to experimental are breaking; a higher minor version and a promotion to
//! stable are compatible. Documentation is not compared.

use std::collections::{HashMap, HashSet};

use neverc_schema::abi_types::{AbiParam, AbiType, AbiTypeKind, AbiTypeTable, handle_type_name};
use neverc_schema::{
    AbiApi, AbiEnum, AbiFlags, AbiFunction, AbiInterface, AbiStruct, AbiTypedef, LoadedAbiPart, PluginAbiDeclaration,
    Stability,
};

use crate::baseline::{BaselineDiff, ChangeClass, Changes};

/// One declared type of any kind.
#[derive(Clone, Copy)]
enum Item<'a> {
    Enum(&'a AbiEnum),
    Flags(&'a AbiFlags),
    Typedef(&'a AbiTypedef),
    Handle,
    Struct(&'a AbiStruct),
    Callback(&'a AbiFunction),
    Api(&'a AbiApi),
}

impl Item<'_> {
    fn kind(self) -> &'static str {
        match self {
            Item::Enum(_) => "enumeration",
            Item::Flags(_) => "flag set",
            Item::Typedef(_) => "typedef",
            Item::Handle => "handle",
            Item::Struct(_) => "structure",
            Item::Callback(_) => "callback",
            Item::Api(_) => "API table",
        }
    }

    /// The declared type names the item refers to: field, parameter, return and typedef target types.
    fn referenced(self) -> Vec<String> {
        match self {
            Item::Enum(_) | Item::Flags(_) => Vec::new(),
            Item::Handle => vec![neverc_schema::abi_types::HANDLE_STRUCT.to_string()],
            Item::Typedef(item) => named(&item.ty).into_iter().collect(),
            Item::Struct(item) => item.fields.iter().filter_map(|field| named(&field.ty)).collect(),
            Item::Callback(item) => signature_names(item),
            Item::Api(item) => item.slots.iter().flat_map(signature_names).collect(),
        }
    }
}

fn named(text: &str) -> Option<String> {
    AbiType::parse(text).ok()?.named().map(str::to_string)
}

fn signature_names(function: &AbiFunction) -> Vec<String> {
    let params = function
        .params
        .iter()
        .filter_map(|param| Some(AbiParam::parse(param).ok()?.ty.named()?.to_string()));
    function
        .returns
        .as_deref()
        .and_then(named)
        .into_iter()
        .chain(params)
        .collect()
}

/// A type with the file that declares it.
struct Declared<'a> {
    name: String,
    /// The file name without `.toml`.
    file: &'a str,
    header: &'a str,
    item: Item<'a>,
}

/// Every type and interface of one version of the ABI, in declaration order.
struct Abi<'a> {
    types: Vec<Declared<'a>>,
    by_name: HashMap<String, usize>,
    /// An enumeration's other names, each with the enumeration's name.
    aliases: HashMap<&'a str, &'a str>,
    interfaces: Vec<(&'a AbiInterface, &'a str)>,
    /// The file name without `.toml` and the header of each file.
    parts: Vec<(&'a str, &'a str)>,
}

impl<'a> Abi<'a> {
    fn new(parts: &'a [LoadedAbiPart]) -> Abi<'a> {
        let mut abi = Abi {
            types: Vec::new(),
            by_name: HashMap::new(),
            aliases: HashMap::new(),
            interfaces: Vec::new(),
            parts: Vec::new(),
        };
        for part in parts {
            let file = part.stem.as_str();
            let declaration = &part.declaration;
            let header = declaration.header.as_str();
            abi.parts.push((file, header));
            abi.interfaces
                .extend(declaration.interfaces.iter().map(|interface| (interface, file)));
            let mut add = |name: String, item: Item<'a>| {
                if !abi.by_name.contains_key(&name) {
                    abi.by_name.insert(name.clone(), abi.types.len());
                    abi.types.push(Declared {
                        name,
                        file,
                        header,
                        item,
                    });
                }
            };
            for item in &declaration.enums {
                add(item.name.clone(), Item::Enum(item));
            }
            for item in &declaration.flags {
                add(item.name.clone(), Item::Flags(item));
            }
            for item in &declaration.typedefs {
                add(item.name.clone(), Item::Typedef(item));
            }
            for item in &declaration.handles {
                add(handle_type_name(&item.name), Item::Handle);
            }
            for item in &declaration.structs {
                add(item.name.clone(), Item::Struct(item));
            }
            for item in &declaration.callbacks {
                add(item.name.clone(), Item::Callback(item));
            }
            for item in &declaration.apis {
                add(item.name.clone(), Item::Api(item));
            }
            for item in &declaration.enums {
                for alias in &item.aliases {
                    abi.aliases.insert(alias.as_str(), item.name.as_str());
                }
            }
        }
        abi
    }

    fn get(&self, name: &str) -> Option<&Declared<'a>> {
        let name = self.aliases.get(name).copied().unwrap_or(name);
        self.by_name.get(name).and_then(|&index| self.types.get(index))
    }

    fn interface(&self, name: &str) -> Option<&'a AbiInterface> {
        self.interfaces
            .iter()
            .find(|(interface, _)| interface.name == name)
            .map(|(interface, _)| *interface)
    }
}

/// What the old declarations promised: the stable types and the files whose interfaces are all stable.
struct Promises<'a> {
    types: HashSet<String>,
    files: HashMap<&'a str, bool>,
}

impl Promises<'_> {
    fn of_type(&self, name: &str) -> bool {
        self.types.contains(name)
    }
}

fn promises<'a>(abi: &Abi<'a>) -> Promises<'a> {
    let mut files: HashMap<&str, bool> = abi.parts.iter().map(|(file, _)| (*file, false)).collect();
    let mut seen: HashSet<&str> = HashSet::new();
    for (interface, file) in &abi.interfaces {
        let stable = interface.stability == Stability::Stable;
        let all_so_far = !seen.contains(file) || files.get(file).copied().unwrap_or(false);
        files.insert(file, stable && all_so_far);
        seen.insert(file);
    }
    // An API table tied to a declared interface makes that interface's promise, and no other.
    let tied = |declared: &Declared| -> Option<bool> {
        let Item::Api(api) = declared.item else {
            return None;
        };
        let interface = abi.interface(api.interface.as_deref()?)?;
        Some(interface.stability == Stability::Stable)
    };
    let mut types = HashSet::new();
    let mut open = Vec::new();
    for declared in &abi.types {
        let stable = tied(declared).unwrap_or_else(|| files.get(declared.file).copied().unwrap_or(false));
        if stable {
            types.insert(declared.name.clone());
            open.push(declared);
        }
    }
    while let Some(declared) = open.pop() {
        for name in declared.item.referenced() {
            let Some(used) = abi.get(&name) else {
                continue;
            };
            if tied(used).is_none() && types.insert(used.name.clone()) {
                open.push(used);
            }
        }
    }
    Promises { types, files }
}

/// Where each structure of `declarations` is held by value: in a field, as a parameter or as a return value.
/// Typedefs are followed (`TargetID` is an `InterfaceID`), and a handle is its core `Handle`.
fn held_by_value(declarations: &[&PluginAbiDeclaration]) -> HashMap<String, Vec<String>> {
    let table = AbiTypeTable::new(declarations);
    let mut held: HashMap<String, Vec<String>> = HashMap::new();
    let mut note = |ty: Option<AbiType>, place: String| {
        if let Some(name) = ty.and_then(|ty| struct_by_value(&table, &ty, 0)) {
            held.entry(name).or_default().push(place);
        }
    };
    let signature = |note: &mut dyn FnMut(Option<AbiType>, String), owner: &str, function: &AbiFunction| {
        if let Some(returns) = &function.returns {
            note(AbiType::parse(returns).ok(), format!("the return value of `{owner}`"));
        }
        for param in &function.params {
            if let Ok(param) = AbiParam::parse(param) {
                note(Some(param.ty), format!("parameter `{}` of `{owner}`", param.name));
            }
        }
    };
    for declaration in declarations {
        for item in &declaration.structs {
            for field in &item.fields {
                note(
                    AbiType::parse(&field.ty).ok(),
                    format!("field `{}.{}`", item.name, field.name),
                );
            }
        }
        for item in &declaration.callbacks {
            signature(&mut note, &item.name, item);
        }
        for api in &declaration.apis {
            for slot in &api.slots {
                signature(&mut note, &format!("{}.{}", api.name, slot.name), slot);
            }
        }
    }
    held
}

/// How deep typedefs of typedefs are followed; a loop is refused by validation, this only bounds the walk.
const TYPEDEF_DEPTH: usize = 16;

fn struct_by_value(table: &AbiTypeTable, ty: &AbiType, depth: usize) -> Option<String> {
    match ty {
        AbiType::Named(name) => match &table.kinds.get(name)?.0 {
            AbiTypeKind::Struct => Some(name.clone()),
            AbiTypeKind::Handle => Some(neverc_schema::abi_types::HANDLE_STRUCT.to_string()),
            AbiTypeKind::Typedef(target) if depth < TYPEDEF_DEPTH => struct_by_value(table, target, depth + 1),
            _ => None,
        },
        AbiType::Array { element, .. } => struct_by_value(table, element, depth),
        AbiType::Void | AbiType::Primitive(_) | AbiType::Pointer { .. } => None,
    }
}

/// The diff under way: the changes so far, and what the old declarations promised.
struct Diff<'a> {
    changes: Changes,
    promises: Promises<'a>,
    held: HashMap<String, Vec<String>>,
}

impl Diff<'_> {
    /// Records a change to something the old declarations promised (`promised`) or not: a change that would
    /// break or warn about a promise is only "allowed" where none was made.
    fn push(&mut self, promised: bool, class: ChangeClass, rule: &'static str, subject: &str, message: String) {
        let class = if promised || class == ChangeClass::Compatible {
            class
        } else {
            ChangeClass::Allowed
        };
        self.changes.push(class, rule, subject, message);
    }
}

/// Classifies every change from the ABI declarations `old` (named `old_name`, a directory) to `new`.
pub fn diff_abi(old_name: &str, old: &[LoadedAbiPart], new_name: &str, new: &[LoadedAbiPart]) -> BaselineDiff {
    let old_abi = Abi::new(old);
    let new_abi = Abi::new(new);
    let declarations: Vec<&PluginAbiDeclaration> = new.iter().map(|part| &part.declaration).collect();
    let mut diff = Diff {
        changes: Changes(Vec::new()),
        promises: promises(&old_abi),
        held: held_by_value(&declarations),
    };
    for (file, header) in &old_abi.parts {
        let promised = diff.promises.files.get(file).copied().unwrap_or(false);
        if let Some((_, other)) = new_abi.parts.iter().find(|(other, _)| other == file)
            && other != header
        {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "header-renamed",
                file,
                format!("`{file}.toml` now generates `{other}` instead of `{header}`: its #include changes"),
            );
        }
    }
    diff_interfaces(&old_abi, &new_abi, &mut diff);
    for old_type in &old_abi.types {
        let name = old_type.name.as_str();
        let promised = diff.promises.of_type(name);
        let Some(new_type) = new_abi.by_name.get(name).and_then(|&index| new_abi.types.get(index)) else {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "type-removed",
                name,
                format!("{} `{name}` was removed from {}", old_type.item.kind(), old_type.header),
            );
            continue;
        };
        if new_type.header != old_type.header {
            diff.push(
                promised,
                ChangeClass::Warning,
                "type-moved",
                name,
                format!(
                    "{} `{name}` moved from {} to {}: sources that include only {} no longer see it",
                    old_type.item.kind(),
                    old_type.header,
                    new_type.header,
                    old_type.header
                ),
            );
        }
        match (old_type.item, new_type.item) {
            (Item::Enum(before), Item::Enum(after)) => diff_enum(promised, before, after, &mut diff),
            (Item::Flags(before), Item::Flags(after)) => diff_flags(promised, before, after, &mut diff),
            (Item::Typedef(before), Item::Typedef(after)) => diff_typedef(promised, before, after, &mut diff),
            (Item::Handle, Item::Handle) => {}
            (Item::Struct(before), Item::Struct(after)) => diff_struct(promised, before, after, &mut diff),
            (Item::Callback(before), Item::Callback(after)) => {
                diff_signature(promised, &before.name, before, after, &mut diff);
            }
            (Item::Api(before), Item::Api(after)) => {
                diff_api(promised, (&old_abi, before), (&new_abi, after), &mut diff)
            }
            (before, after) => diff.push(
                promised,
                ChangeClass::Breaking,
                "type-kind",
                name,
                format!("`{name}` changed from a {} to a {}", before.kind(), after.kind()),
            ),
        }
    }
    for new_type in new_abi
        .types
        .iter()
        .filter(|declared| !old_abi.by_name.contains_key(&declared.name))
    {
        diff.push(
            true,
            ChangeClass::Compatible,
            "type-added",
            &new_type.name,
            format!(
                "{} `{}` was added to {}",
                new_type.item.kind(),
                new_type.name,
                new_type.header
            ),
        );
    }
    BaselineDiff {
        old: old_name.to_string(),
        new: new_name.to_string(),
        changes: diff.changes.0,
    }
}

fn diff_interfaces(old: &Abi, new: &Abi, diff: &mut Diff) {
    for (before, _) in &old.interfaces {
        let name = before.name.as_str();
        let promised = before.stability == Stability::Stable;
        let Some(after) = new.interface(name) else {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "interface-removed",
                name,
                format!(
                    "{} interface `{name}` was removed: plugins asking for it no longer find it",
                    before.stability.schema_name()
                ),
            );
            continue;
        };
        if before.id != after.id {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "interface-id",
                name,
                format!(
                    "interface `{name}` changed id {} → {}: plugins ask for it by id",
                    before.id, after.id
                ),
            );
        }
        let versions = format!("{}.{} → {}.{}", before.major, before.minor, after.major, after.minor);
        if before.major != after.major {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "interface-major",
                name,
                format!("interface `{name}` changed major version {versions}: old plugins get VERSION_MISMATCH"),
            );
        } else if after.minor > before.minor {
            diff.push(
                promised,
                ChangeClass::Compatible,
                "interface-minor",
                name,
                format!("interface `{name}` grew {versions}"),
            );
        } else if after.minor < before.minor {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "interface-minor",
                name,
                format!(
                    "interface `{name}` went back {versions}: plugins that ask for {}.{} are refused",
                    before.major, before.minor
                ),
            );
        }
        match (before.stability, after.stability) {
            (Stability::Stable, Stability::Experimental) => diff.push(
                true,
                ChangeClass::Breaking,
                "stability-downgrade",
                name,
                format!("stable interface `{name}` was downgraded to experimental"),
            ),
            (Stability::Experimental, Stability::Stable) => diff.push(
                true,
                ChangeClass::Compatible,
                "stability-promotion",
                name,
                format!("experimental interface `{name}` became stable"),
            ),
            _ => {}
        }
    }
    for (after, _) in new
        .interfaces
        .iter()
        .filter(|(after, _)| old.interface(&after.name).is_none())
    {
        diff.push(
            true,
            ChangeClass::Compatible,
            "interface-added",
            &after.name,
            format!(
                "{} interface `{}` {}.{} was added",
                after.stability.schema_name(),
                after.name,
                after.major,
                after.minor
            ),
        );
    }
}

/// The C integer type of an enumeration or flag set, as the vocabulary spells it.
fn integer_name(width: u32, signed: bool) -> String {
    format!("{}{width}", if signed { 'i' } else { 'u' })
}

/// The rules of named numbers: enumeration values, flag bits, typedef constants.
struct NumberRules {
    what: &'static str,
    removed: &'static str,
    changed: &'static str,
    added: &'static str,
}

const VALUE_RULES: NumberRules = NumberRules {
    what: "value",
    removed: "value-removed",
    changed: "value-renumbered",
    added: "value-added",
};
const BIT_RULES: NumberRules = NumberRules {
    what: "bit",
    removed: "bit-removed",
    changed: "bit-moved",
    added: "bit-added",
};
const CONSTANT_RULES: NumberRules = NumberRules {
    what: "constant",
    removed: "constant-removed",
    changed: "constant-value",
    added: "constant-added",
};

/// A named number: a value, a bit's position or a constant.
type Numbered<'s> = (&'s str, u64);

/// Compares named numbers of the type `owner` by name.
fn diff_numbers(
    promised: bool,
    owner: &str,
    (old, new): (&[Numbered], &[Numbered]),
    rules: &NumberRules,
    diff: &mut Diff,
) {
    let what = rules.what;
    for (name, number) in old {
        let subject = format!("{owner}.{name}");
        match new.iter().find(|(other, _)| other == name) {
            None => diff.push(
                promised,
                ChangeClass::Breaking,
                rules.removed,
                &subject,
                format!("{what} `{subject}` ({number}) was removed"),
            ),
            Some((_, other)) if other != number => diff.push(
                promised,
                ChangeClass::Breaking,
                rules.changed,
                &subject,
                format!("{what} `{subject}` changed {number} → {other}: old plugins mean another {what}"),
            ),
            Some(_) => {}
        }
    }
    for (name, number) in new
        .iter()
        .filter(|(name, _)| !old.iter().any(|(other, _)| other == name))
    {
        let subject = format!("{owner}.{name}");
        diff.push(
            promised,
            ChangeClass::Compatible,
            rules.added,
            &subject,
            format!("{what} `{subject}` ({number}) was added"),
        );
    }
}

/// Compares what makes the C constants of an enumeration or flag set: the integer type and the prefix.
fn diff_integer(promised: bool, name: &str, old: (u32, bool, &str), new: (u32, bool, &str), diff: &mut Diff) {
    let (old_width, old_signed, old_prefix) = old;
    let (new_width, new_signed, new_prefix) = new;
    if (old_width, old_signed) != (new_width, new_signed) {
        diff.push(
            promised,
            ChangeClass::Breaking,
            "integer-width",
            name,
            format!(
                "`{name}` changed from {} to {}",
                integer_name(old_width, old_signed),
                integer_name(new_width, new_signed)
            ),
        );
    }
    if old_prefix != new_prefix {
        diff.push(
            promised,
            ChangeClass::Breaking,
            "c-prefix",
            name,
            format!("the C constants of `{name}` changed prefix `{old_prefix}` → `{new_prefix}`"),
        );
    }
}

fn diff_enum(promised: bool, old: &AbiEnum, new: &AbiEnum, diff: &mut Diff) {
    let name = old.name.as_str();
    diff_integer(
        promised,
        name,
        (old.width, old.signed, &old.c_prefix),
        (new.width, new.signed, &new.c_prefix),
        diff,
    );
    for alias in old.aliases.iter().filter(|alias| !new.aliases.contains(alias)) {
        diff.push(
            promised,
            ChangeClass::Breaking,
            "alias-removed",
            name,
            format!("`{name}` is no longer also called `{alias}`"),
        );
    }
    for alias in new.aliases.iter().filter(|alias| !old.aliases.contains(alias)) {
        diff.push(
            promised,
            ChangeClass::Compatible,
            "alias-added",
            name,
            format!("`{name}` is also called `{alias}`"),
        );
    }
    fn numbers(item: &AbiEnum) -> Vec<(&str, u64)> {
        item.values
            .iter()
            .map(|value| (value.name.as_str(), value.value))
            .collect()
    }
    diff_numbers(promised, name, (&numbers(old), &numbers(new)), &VALUE_RULES, diff);
}

fn diff_flags(promised: bool, old: &AbiFlags, new: &AbiFlags, diff: &mut Diff) {
    let name = old.name.as_str();
    diff_integer(
        promised,
        name,
        (old.width, false, &old.c_prefix),
        (new.width, false, &new.c_prefix),
        diff,
    );
    match (&old.none, &new.none) {
        (Some(before), after) if after.as_ref() != Some(before) => diff.push(
            promised,
            ChangeClass::Breaking,
            "none-constant",
            name,
            format!(
                "the empty set's constant `{}{before}` of `{name}` was {}",
                old.c_prefix,
                after.as_ref().map_or("removed".to_string(), |after| format!(
                    "renamed `{}{after}`",
                    new.c_prefix
                ))
            ),
        ),
        (None, Some(after)) => diff.push(
            promised,
            ChangeClass::Compatible,
            "none-constant",
            name,
            format!("`{name}` gained the empty set's constant `{}{after}`", new.c_prefix),
        ),
        _ => {}
    }
    fn bits(item: &AbiFlags) -> Vec<(&str, u64)> {
        item.bits
            .iter()
            .map(|bit| (bit.name.as_str(), u64::from(bit.bit)))
            .collect()
    }
    diff_numbers(promised, name, (&bits(old), &bits(new)), &BIT_RULES, diff);
    if old.descriptor != new.descriptor {
        diff.push(
            promised,
            ChangeClass::Warning,
            "descriptor-rules",
            name,
            format!(
                "the registration rules of the descriptor `{}` changed: the host may refuse descriptors it accepted",
                old.descriptor
                    .as_ref()
                    .or(new.descriptor.as_ref())
                    .map_or(name, |rules| rules.name.as_str())
            ),
        );
    }
}

fn diff_typedef(promised: bool, old: &AbiTypedef, new: &AbiTypedef, diff: &mut Diff) {
    let name = old.name.as_str();
    if !same_type(&old.ty, &new.ty) {
        diff.push(
            promised,
            ChangeClass::Breaking,
            "typedef-type",
            name,
            format!("typedef `{name}` changed `{}` → `{}`", old.ty, new.ty),
        );
    }
    fn constants(item: &AbiTypedef) -> Vec<(&str, u64)> {
        item.constants
            .iter()
            .map(|constant| (constant.name.as_str(), constant.value))
            .collect()
    }
    diff_numbers(
        promised,
        name,
        (&constants(old), &constants(new)),
        &CONSTANT_RULES,
        diff,
    );
}

/// Whether two type strings name the same type (spacing aside).
fn same_type(old: &str, new: &str) -> bool {
    match (AbiType::parse(old), AbiType::parse(new)) {
        (Ok(old), Ok(new)) => old == new,
        _ => old.trim() == new.trim(),
    }
}

/// How the members of a structure (fields) or API table (slots) changed, by name.
struct Members<'s> {
    /// Old members no longer there, with their old position.
    removed: Vec<(usize, &'s str)>,
    /// Old members that moved relative to the others, with their old and new positions.
    moved: Vec<(&'s str, usize, usize)>,
    /// New members after every old one, the old ones unmoved, with their position.
    appended: Vec<(usize, &'s str)>,
    /// Other new members, with their position.
    inserted: Vec<(usize, &'s str)>,
}

/// The largest member lists whose moves are found as a longest common subsequence; longer ones are compared
/// by position (every member whose rank among the kept members changed counts as moved).
const SUBSEQUENCE_CELLS: usize = 1 << 22;

fn members<'s>(old: &[&'s str], new: &[&'s str]) -> Members<'s> {
    let position = |list: &[&str], name: &str| list.iter().position(|other| *other == name).unwrap_or(0);
    let kept_old: Vec<&str> = old.iter().copied().filter(|name| new.contains(name)).collect();
    let kept_new: Vec<&str> = new.iter().copied().filter(|name| old.contains(name)).collect();
    let in_order = longest_common(&kept_old, &kept_new);
    let moved = kept_old
        .iter()
        .filter(|name| !in_order.contains(*name))
        .map(|name| (*name, position(old, name), position(new, name)))
        .collect();
    let unchanged_prefix = new.len() >= old.len() && new.iter().zip(old).all(|(a, b)| a == b);
    let (appended, inserted) = new
        .iter()
        .enumerate()
        .filter(|(_, name)| !old.contains(name))
        .map(|(index, name)| (index, *name))
        .partition(|(index, _)| unchanged_prefix && *index >= old.len());
    Members {
        removed: old
            .iter()
            .enumerate()
            .filter(|(_, name)| !new.contains(name))
            .map(|(index, name)| (index, *name))
            .collect(),
        moved,
        appended,
        inserted,
    }
}

/// The members of a longest common subsequence of `a` and `b`, two orders of the same distinct names.
fn longest_common<'s>(a: &[&'s str], b: &[&'s str]) -> HashSet<&'s str> {
    if a.len().saturating_mul(b.len()) > SUBSEQUENCE_CELLS {
        return a.iter().zip(b).filter(|(x, y)| x == y).map(|(x, _)| *x).collect();
    }
    let width = b.len() + 1;
    let mut lengths = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i * width + j] = if a[i] == b[j] {
                lengths[(i + 1) * width + j + 1] + 1
            } else {
                lengths[(i + 1) * width + j].max(lengths[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut common = HashSet::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            common.insert(a[i]);
            i += 1;
            j += 1;
        } else if lengths[(i + 1) * width + j] >= lengths[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    common
}

/// The rules and words of one kind of member.
struct MemberRules {
    what: &'static str,
    removed: &'static str,
    reordered: &'static str,
    inserted: &'static str,
    appended: &'static str,
    /// What a moved member breaks.
    moved_breaks: &'static str,
}

const FIELD_RULES: MemberRules = MemberRules {
    what: "field",
    removed: "field-removed",
    reordered: "field-reordered",
    inserted: "field-inserted",
    appended: "field-appended",
    moved_breaks: "its offset changed",
};
const SLOT_RULES: MemberRules = MemberRules {
    what: "slot",
    removed: "slot-removed",
    reordered: "slot-reordered",
    inserted: "slot-inserted",
    appended: "slot-appended",
    moved_breaks: "old plugins call another function through it",
};

/// Reports how the members of `owner` changed; appended members are classified as `appended` says.
fn diff_members(
    promised: bool,
    owner: &str,
    (old, new): (&[&str], &[&str]),
    rules: &MemberRules,
    appended: (ChangeClass, &str),
    diff: &mut Diff,
) -> bool {
    let what = rules.what;
    let changes = members(old, new);
    for (index, name) in &changes.removed {
        let subject = format!("{owner}.{name}");
        diff.push(
            promised,
            ChangeClass::Breaking,
            rules.removed,
            &subject,
            format!("{what} `{subject}` (position {}) was removed", index + 1),
        );
    }
    for (name, from, to) in &changes.moved {
        let subject = format!("{owner}.{name}");
        diff.push(
            promised,
            ChangeClass::Breaking,
            rules.reordered,
            &subject,
            format!(
                "{what} `{subject}` moved from position {} to {}: {}",
                from + 1,
                to + 1,
                rules.moved_breaks
            ),
        );
    }
    for (index, name) in &changes.inserted {
        let subject = format!("{owner}.{name}");
        let instead = old
            .get(*index)
            .map_or(String::new(), |other| format!(", where old plugins expect `{other}`"));
        diff.push(
            promised,
            ChangeClass::Breaking,
            rules.inserted,
            &subject,
            format!("{what} `{subject}` was added at position {}{instead}", index + 1),
        );
    }
    let (class, why) = appended;
    for (index, name) in &changes.appended {
        let subject = format!("{owner}.{name}");
        diff.push(
            promised,
            class,
            rules.appended,
            &subject,
            format!("{what} `{subject}` was appended (position {}): {why}", index + 1),
        );
    }
    !changes.appended.is_empty()
}

fn diff_struct(promised: bool, old: &AbiStruct, new: &AbiStruct, diff: &mut Diff) {
    let name = old.name.as_str();
    fn names(item: &AbiStruct) -> Vec<&str> {
        item.fields.iter().map(|field| field.name.as_str()).collect()
    }
    let held = diff.held.get(name).and_then(|places| places.first()).cloned();
    let appended = if old.primitive || new.primitive {
        (
            ChangeClass::Breaking,
            format!("`{name}` has no Header, so its size is part of the ABI"),
        )
    } else if let Some(place) = held {
        (
            ChangeClass::Breaking,
            format!("{place} holds `{name}` by value, so what follows it moves"),
        )
    } else {
        (
            ChangeClass::Compatible,
            "the Header's StructSize tells readers whether it is there".to_string(),
        )
    };
    diff_members(
        promised,
        name,
        (&names(old), &names(new)),
        &FIELD_RULES,
        (appended.0, &appended.1),
        diff,
    );
    for field in &old.fields {
        let Some(other) = new.fields.iter().find(|other| other.name == field.name) else {
            continue;
        };
        if same_type(&field.ty, &other.ty) {
            continue;
        }
        let subject = format!("{name}.{}", field.name);
        let lengths = match (AbiType::parse(&field.ty), AbiType::parse(&other.ty)) {
            (
                Ok(AbiType::Array {
                    element: before,
                    length: old_length,
                }),
                Ok(AbiType::Array {
                    element: after,
                    length: new_length,
                }),
            ) if before == after => Some((old_length, new_length)),
            _ => None,
        };
        match lengths {
            Some((old_length, new_length)) => diff.push(
                promised,
                ChangeClass::Breaking,
                "array-length",
                &subject,
                format!(
                    "field `{subject}` changed length {old_length} → {new_length} (`{}` → `{}`)",
                    field.ty, other.ty
                ),
            ),
            None => diff.push(
                promised,
                ChangeClass::Breaking,
                "field-type",
                &subject,
                format!("field `{subject}` changed type `{}` → `{}`", field.ty, other.ty),
            ),
        }
    }
}

/// Compares the return type and the parameters of a callback or slot named `subject`.
fn diff_signature(promised: bool, subject: &str, old: &AbiFunction, new: &AbiFunction, diff: &mut Diff) {
    let returns = |function: &AbiFunction| function.returns.clone().unwrap_or_else(|| "Status".to_string());
    let (old_returns, new_returns) = (returns(old), returns(new));
    if !same_type(&old_returns, &new_returns) {
        diff.push(
            promised,
            ChangeClass::Breaking,
            "return-type",
            subject,
            format!("`{subject}` now returns `{new_returns}` instead of `{old_returns}`"),
        );
    }
    let split = |param: &str| -> (String, String) {
        match AbiParam::parse(param) {
            Ok(parsed) => (
                parsed.name,
                param.split_once(':').map_or(param, |(_, ty)| ty).trim().to_string(),
            ),
            Err(_) => (String::new(), param.trim().to_string()),
        }
    };
    for (position, (before, after)) in old.params.iter().zip(&new.params).enumerate() {
        let ((old_name, old_type), (new_name, new_type)) = (split(before), split(after));
        if !same_type(&old_type, &new_type) {
            diff.push(
                promised,
                ChangeClass::Breaking,
                "param-type",
                subject,
                format!(
                    "parameter {} of `{subject}` changed `{before}` → `{after}`",
                    position + 1
                ),
            );
        } else if old_name != new_name {
            diff.push(
                promised,
                ChangeClass::Compatible,
                "param-renamed",
                subject,
                format!(
                    "parameter {} of `{subject}` was renamed `{old_name}` → `{new_name}`",
                    position + 1
                ),
            );
        }
    }
    if old.params.len() != new.params.len() {
        let (longer, how) = if new.params.len() > old.params.len() {
            (&new.params[old.params.len()..], "gained")
        } else {
            (&old.params[new.params.len()..], "lost")
        };
        diff.push(
            promised,
            ChangeClass::Breaking,
            "param-count",
            subject,
            format!(
                "`{subject}` {how} parameter(s) {}: callers and callees disagree",
                longer
                    .iter()
                    .map(|param| format!("`{param}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}

fn diff_api(promised: bool, (old_abi, old): (&Abi, &AbiApi), (new_abi, new): (&Abi, &AbiApi), diff: &mut Diff) {
    let name = old.name.as_str();
    if old.interface != new.interface {
        let text = |interface: &Option<String>| {
            interface
                .as_deref()
                .map_or("none".to_string(), |name| format!("`{name}`"))
        };
        diff.push(
            promised,
            ChangeClass::Breaking,
            "api-interface",
            name,
            format!(
                "`{name}` is now handed out for interface {} instead of {}",
                text(&new.interface),
                text(&old.interface)
            ),
        );
    }
    fn names(item: &AbiApi) -> Vec<&str> {
        item.slots.iter().map(|slot| slot.name.as_str()).collect()
    }
    let grew = diff_members(
        promised,
        name,
        (&names(old), &names(new)),
        &SLOT_RULES,
        (
            ChangeClass::Compatible,
            "the table's Header.StructSize tells plugins whether the host has it",
        ),
        diff,
    );
    for slot in &old.slots {
        if let Some(other) = new.slots.iter().find(|other| other.name == slot.name) {
            diff_signature(promised, &format!("{name}.{}", slot.name), slot, other, diff);
        }
    }
    // A table that grew within one version leaves plugins that need the new slots no version to ask for.
    let interfaces = old
        .interface
        .as_deref()
        .and_then(|interface| Some((old_abi.interface(interface)?, new_abi.interface(interface)?)));
    if let Some((before, after)) = interfaces
        && grew
        && (before.major, before.minor) == (after.major, after.minor)
    {
        diff.push(
            promised,
            ChangeClass::Warning,
            "minor-not-bumped",
            name,
            format!(
                "`{name}` gained slots but interface `{}` stayed at {}.{}: plugins that need them cannot ask \
                 for them by version",
                after.name, after.major, after.minor
            ),
        );
    }
}
