//! Adapter thunks: assembly that receives a call in one convention and makes it in another, built only from a
//! target's declared `[lowering]` templates and register data.
//!
//! An adapter works through memory, so that no register permutation can go wrong: every value the caller
//! passes is first written into a slot of the adapter's frame (its *content*: the bytes of the value, or of
//! the object a by-value pointer points at), and everything the callee is given is read from there.
//!
//! The frame has two parts. The first (`U`, below the stack pointer at entry) holds the registers the
//! adapter preserves, the link register, the content slots and the addresses callers pass; every register
//! the caller passes a value in is stored there before any register is touched. The second (`A`, below `U`
//! and aligned to the target's stack alignment, whatever the caller's) holds the callee's stack arguments,
//! the callee's register return values, and the address of `U`. Scratch register 0 holds `U`'s address
//! while `A` is current, scratch registers 1 and 2 carry the data being copied. Registers the callee takes
//! arguments in are loaded last, the one that is also the base register (if any) after all others; after
//! the call the return values are stored before any scratch register is used, and the caller's return
//! registers are loaded when `U` is current again, with no register live but the ones being loaded.

use std::fmt::Write as _;

use neverc_tables::{LoweringRecord, MemoryTemplates, RegisterClassKind, TargetRecord, Template, TemplatePart};

/// What a piece of a value holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Bytes `[offset, offset + size)` of the value's content.
    Content,
    /// The address of the value's content (a by-value copy, a value passed by reference, or the place a
    /// returned value goes).
    Address,
}

/// Where a piece is, seen from one side of the adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A register (an index into the target's registers).
    Register(usize),
    /// A stack slot at this offset from the first stack argument.
    Stack(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SidePiece {
    pub holder: Holder,
    pub role: Role,
    /// Offset in the content (0 for an address).
    pub offset: u64,
    /// Bytes the holder takes (a stack slot may be larger than the content it holds).
    pub size: u64,
}

/// How a narrow integer argument is widened for a callee that relies on it (`zeroext`, `signext`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Extension {
    #[default]
    None,
    Zero,
    Sign,
}

/// One value the adapter carries: its content's size and how each side passes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueMove {
    pub content_size: u64,
    pub extension: Extension,
    /// How the adapter's caller passes (or, for a return, expects) it.
    pub caller: Vec<SidePiece>,
    /// How the adapter passes it to its callee (or receives it back).
    pub callee: Vec<SidePiece>,
}

/// Which convention a side of the adapter follows; the standard one returns the hidden pointer of an
/// indirect return where the target says (`hidden_pointer_result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideKind {
    Plan,
    Standard,
}

/// How the adapter's symbol is bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Binding {
    #[default]
    Global,
    Weak,
    Local,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SymbolVisibility {
    #[default]
    Default,
    Hidden,
    Protected,
}

/// What an adapter calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee<'n> {
    /// A symbol.
    Symbol(&'n str),
    /// The address this register holds at the adapter's entry: an adapter shared by many functions, entered
    /// from a stub (see [`write_stub_macro`]) that loads its function's body into the register.
    Register(usize),
}

/// Everything one adapter needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSpec<'n> {
    /// The adapter's symbol.
    pub symbol: &'n str,
    pub binding: Binding,
    pub visibility: SymbolVisibility,
    pub callee: Callee<'n>,
    pub caller_kind: SideKind,
    pub arguments: Vec<ValueMove>,
    pub returned: Option<ValueMove>,
    /// Registers the adapter saves at entry and restores before it returns (whole registers).
    pub preserve: Vec<usize>,
    /// The argument that is the hidden pointer of an IR-level `sret` return, which a standard callee returns
    /// in the target's `hidden_pointer_result` register.
    pub sret_argument: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    #[error("target {target} declares no adapter templates ([lowering] in its target file)")]
    NoTemplates { target: &'static str },
    #[error("the adapter {symbol} needs an offset of {offset} bytes, beyond what {target}'s templates encode")]
    OffsetTooLarge {
        symbol: String,
        offset: u64,
        target: &'static str,
    },
    #[error("{target} declares no loads and stores of register class `{class}` holding {bits} bits")]
    NoMemoryTemplate {
        target: &'static str,
        class: &'static str,
        bits: u32,
    },
    #[error("the adapter {symbol} cannot move a {size}-byte piece in register {register}")]
    PieceTooWide {
        symbol: String,
        register: String,
        size: u64,
    },
    #[error("the adapter {symbol}: {detail}")]
    Unsupported { symbol: String, detail: String },
}

/// Rounds `value` up to a multiple of `to` (a power of two).
fn round_up(value: u64, to: u64) -> u64 {
    value.div_ceil(to) * to
}

/// The adapter's frames: offsets of every slot.
struct Layout {
    /// Size of `U`.
    upper: u64,
    link_slot: u64,
    /// Where the callee's address is kept, for a callee in a register.
    callee_slot: u64,
    /// Save slot of each preserved register, in `preserve` order.
    save_slots: Vec<u64>,
    /// Content slot of each argument, then the return value's.
    content_slots: Vec<u64>,
    /// Address slot of each value whose caller passes an address.
    address_slots: Vec<Option<u64>>,
    /// Size of `A`.
    lower: u64,
    /// Offset in `A` of the callee's register return values.
    staging: u64,
    /// Offset in `A` of `U`'s address.
    base_slot: u64,
}

const SLOT: u64 = 16;

fn layout(spec: &AdapterSpec<'_>, alignment: u64, has_link: bool) -> Layout {
    let values: Vec<&ValueMove> = spec.arguments.iter().chain(spec.returned.as_ref()).collect();
    // `U` is laid out slot after slot from its bottom.
    let mut upper = 0;
    let mut take = |size: u64| {
        let slot = upper;
        upper += size;
        slot
    };
    let link_slot = take(if has_link { SLOT } else { 0 });
    let callee_slot = take(if matches!(spec.callee, Callee::Register(_)) {
        SLOT
    } else {
        0
    });
    let save_slots = spec.preserve.iter().map(|_| take(SLOT)).collect();
    let address_slots = values
        .iter()
        .map(|value| {
            let addressed = value.caller.iter().any(|piece| piece.role == Role::Address);
            addressed.then(|| take(SLOT))
        })
        .collect();
    // Each content slot has a slot's worth of room past the content: registers are stored whole.
    let content_slots = values
        .iter()
        .map(|value| take(round_up(value.content_size, SLOT) + SLOT))
        .collect();
    let upper = round_up(upper.max(SLOT), alignment);
    let outgoing = spec
        .arguments
        .iter()
        .flat_map(|value| &value.callee)
        .filter_map(|piece| match piece.holder {
            Holder::Stack(offset) => Some(offset + piece.size),
            Holder::Register(_) => None,
        })
        .max()
        .unwrap_or(0);
    let staging = round_up(outgoing, SLOT);
    let returned = spec
        .returned
        .as_ref()
        .map_or(0, |value| round_up(value.content_size, SLOT) + SLOT);
    let base_slot = staging + returned;
    let lower = round_up(base_slot + SLOT, alignment);
    Layout {
        upper,
        link_slot,
        callee_slot,
        save_slots,
        content_slots,
        address_slots,
        lower,
        staging,
        base_slot,
    }
}

/// What fills a template's placeholders.
#[derive(Clone, Copy, Default)]
struct Fill<'n> {
    register: Option<(usize, u32)>,
    source: Option<usize>,
    base: Option<usize>,
    offset: u64,
    size: u64,
    symbol: &'n str,
}

/// Writes instructions from templates, one line each.
struct Writer<'a> {
    target: &'static TargetRecord,
    lowering: &'static LoweringRecord,
    symbol: &'a str,
    out: &'a mut String,
}

impl<'a> Writer<'a> {
    /// A writer of `target`'s templates for the function `symbol` (named in errors).
    fn new(target: &'static TargetRecord, symbol: &'a str, out: &'a mut String) -> Result<Writer<'a>, AdapterError> {
        let lowering = target
            .lowering
            .as_ref()
            .ok_or(AdapterError::NoTemplates { target: target.name })?;
        Ok(Writer {
            target,
            lowering,
            symbol,
            out,
        })
    }

    fn name(&self, register: usize, width: u32) -> &'static str {
        view_name(self.target, register, width)
    }

    fn full_width(&self, register: usize) -> u32 {
        self.target.registers[register].width
    }

    fn emit(&mut self, template: Template<'_>, fill: Fill<'_>) {
        for part in template {
            match *part {
                TemplatePart::Text(text) => self.out.push_str(text),
                TemplatePart::Register(view) => {
                    if let Some((register, width)) = fill.register {
                        let name = self.name(register, if view == 0 { width } else { view });
                        self.out.push_str(name);
                    }
                }
                TemplatePart::Source => {
                    if let Some(source) = fill.source {
                        let name = self.name(source, self.full_width(source));
                        self.out.push_str(name);
                    }
                }
                TemplatePart::Base => {
                    if let Some(base) = fill.base {
                        let name = self.name(base, self.full_width(base));
                        self.out.push_str(name);
                    }
                }
                TemplatePart::Offset => {
                    let _ = write!(self.out, "{}", fill.offset);
                }
                TemplatePart::Size => {
                    let _ = write!(self.out, "{}", fill.size);
                }
                TemplatePart::Symbol => self.out.push_str(fill.symbol),
            }
        }
        self.out.push('\n');
    }

    fn label(&mut self, symbol: &str) {
        self.out.push_str(symbol);
        self.out.push_str(":\n");
    }

    /// The directives before a function's first instruction, and its label; `aligned` for a function whose
    /// entry is aligned as the target's code usually is (a stub is not: it is two instructions long).
    fn open_function(&mut self, symbol: &str, binding: Binding, visibility: SymbolVisibility, aligned: bool) {
        let directives = &self.lowering.directives;
        match binding {
            Binding::Global => self.directive(directives.global, symbol),
            Binding::Weak => self.directive(directives.weak, symbol),
            Binding::Local => {}
        }
        match visibility {
            SymbolVisibility::Default => {}
            SymbolVisibility::Hidden => self.directive(directives.hidden, symbol),
            SymbolVisibility::Protected => self.directive(directives.protected, symbol),
        }
        if aligned {
            self.directive(directives.align, symbol);
        }
        self.directive(directives.function, symbol);
        self.label(symbol);
    }

    fn directive(&mut self, template: Template<'_>, symbol: &str) {
        self.emit(
            template,
            Fill {
                symbol,
                ..Fill::default()
            },
        );
    }

    fn check_offset(&self, offset: u64, aligned: bool) -> Result<(), AdapterError> {
        let limit = if aligned {
            self.lowering.max_offset
        } else {
            self.lowering.max_unaligned_offset
        };
        if offset > limit {
            return Err(AdapterError::OffsetTooLarge {
                symbol: self.symbol.to_string(),
                offset,
                target: self.target.name,
            });
        }
        Ok(())
    }

    fn templates(&self, register: usize, bits: u32) -> Result<&'static MemoryTemplates, AdapterError> {
        let class = self.target.registers[register].class;
        self.lowering
            .memory_holding(class, bits)
            .ok_or_else(|| AdapterError::NoMemoryTemplate {
                target: self.target.name,
                class: self.target.classes.get(class).map_or("?", |class| class.name),
                bits,
            })
    }

    /// The bits a piece of `size` bytes of a value of `content_size` bytes is moved with in `register`: a
    /// power of two, at most the register's width; at least 32 for a general register holding a whole value
    /// (so that the widening of a narrow value survives). A narrow part of a larger value (an element of an
    /// array) is moved at its own width: a wider access at its unaligned offset would reach past it.
    fn piece_bits(&self, register: usize, size: u64, content_size: u64) -> Result<u32, AdapterError> {
        let width = self.full_width(register);
        let general = self
            .target
            .class_of(register)
            .is_some_and(|class| class.kind == RegisterClassKind::General);
        let needed = (size.max(1) * 8).next_power_of_two();
        let floor = if general && size >= content_size { 32 } else { 8 };
        let bits = needed.max(floor).min(u64::from(width));
        if needed > u64::from(width) {
            return Err(AdapterError::PieceTooWide {
                symbol: self.symbol.to_string(),
                register: self.name(register, width).to_string(),
                size,
            });
        }
        Ok(bits as u32)
    }

    fn memory(
        &mut self,
        which: Access,
        register: usize,
        bits: u32,
        base: usize,
        offset: u64,
    ) -> Result<(), AdapterError> {
        let templates = self.templates(register, bits)?;
        let bytes = u64::from(templates.width / 8).max(1);
        self.check_offset(offset, offset % bytes == 0)?;
        let template = match which {
            Access::Load => templates.load,
            Access::LoadSigned => templates.load_signed.unwrap_or(templates.load),
            Access::Store => templates.store,
        };
        self.emit(
            template,
            Fill {
                register: Some((register, templates.width)),
                base: Some(base),
                offset,
                ..Fill::default()
            },
        );
        Ok(())
    }

    fn load(&mut self, register: usize, bits: u32, base: usize, offset: u64) -> Result<(), AdapterError> {
        self.memory(Access::Load, register, bits, base, offset)
    }

    fn store(&mut self, register: usize, bits: u32, base: usize, offset: u64) -> Result<(), AdapterError> {
        self.memory(Access::Store, register, bits, base, offset)
    }

    /// Copies `size` bytes through `data`, in the widest accesses both offsets allow.
    fn copy(&mut self, data: usize, from: (usize, u64), to: (usize, u64), size: u64) -> Result<(), AdapterError> {
        let mut done = 0;
        while done < size {
            let (source, target) = (from.1 + done, to.1 + done);
            let chunk = [8u64, 4, 2, 1]
                .into_iter()
                .find(|chunk| *chunk <= size - done && source % chunk == 0 && target % chunk == 0)
                .unwrap_or(1);
            let bits = (chunk * 8) as u32;
            self.load(data, bits, from.0, source)?;
            self.store(data, bits, to.0, target)?;
            done += chunk;
        }
        Ok(())
    }

    fn address(&mut self, register: usize, base: usize, offset: u64) -> Result<(), AdapterError> {
        self.check_offset(offset, true)?;
        self.emit(
            self.lowering.instructions.address,
            Fill {
                register: Some((register, self.full_width(register))),
                base: Some(base),
                offset,
                ..Fill::default()
            },
        );
        Ok(())
    }

    fn move_register(&mut self, register: usize, source: usize) {
        self.emit(
            self.lowering.instructions.move_register,
            Fill {
                register: Some((register, self.full_width(register))),
                source: Some(source),
                ..Fill::default()
            },
        );
    }

    fn sized(&mut self, template: Template<'_>, size: u64) -> Result<(), AdapterError> {
        self.check_offset(size, true)?;
        self.emit(
            template,
            Fill {
                size,
                ..Fill::default()
            },
        );
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Access {
    Load,
    LoadSigned,
    Store,
}

/// How a narrow `zeroext`/`signext` value is loaded widened: at its own width (bits), zero- or sign-extending.
/// A 32-bit value is one too: a target whose standard convention widens it to the whole register declares a
/// sign-extending 32-bit load (RISC-V's `lw`); elsewhere the plain load is used, as for a copy.
fn widening(value: &ValueMove) -> Option<(u32, Access)> {
    let access = match value.extension {
        Extension::None => return None,
        Extension::Zero => Access::Load,
        Extension::Sign => Access::LoadSigned,
    };
    (value.content_size <= 4).then(|| ((value.content_size.max(1) * 8).next_power_of_two() as u32, access))
}

/// A register piece's load, to be ordered among the callee's argument loads.
struct RegisterLoad {
    register: usize,
    /// The content slot's offset (in `U`) plus the piece's offset, or the slot whose address is loaded.
    offset: u64,
    kind: LoadKind,
}

#[derive(Clone, Copy)]
enum LoadKind {
    Value { bits: u32, access: Access },
    Address,
}

/// The name of `register` at `width` in an instruction: the sub-register of exactly that width where one is
/// declared (AArch64's `q7` for the whole of `v7`, whose canonical name no load or store takes), else the
/// register's own name.
fn view_name(target: &'static TargetRecord, register: usize, width: u32) -> &'static str {
    let Some(record) = target.register(register) else {
        return "?";
    };
    record
        .subregisters
        .iter()
        .find(|sub| sub.width == width)
        .map_or(record.name, |sub| sub.name)
}

/// Writes the directive that switches to the section adapters go to; everything [`write_adapter`] and
/// [`write_stub_macro`] write after it is in that section.
pub fn write_section(target: &'static TargetRecord, out: &mut String) -> Result<(), AdapterError> {
    let mut writer = Writer::new(target, "", out)?;
    writer.directive(writer.lowering.directives.section, "");
    Ok(())
}

/// A register an adapter for `spec` can be entered with, holding its callee's address: a scratch register
/// the caller passes nothing in and expects nothing of (not preserved, not callee-saved in the standard
/// convention). `None` when every scratch register is taken.
pub fn entry_register(target: &'static TargetRecord, spec: &AdapterSpec<'_>) -> Option<usize> {
    let lowering = target.lowering.as_ref()?;
    let values = spec.arguments.iter().chain(spec.returned.as_ref());
    let mut taken: Vec<usize> = values
        .flat_map(|value| &value.caller)
        .filter_map(|piece| match piece.holder {
            Holder::Register(register) => Some(register),
            Holder::Stack(_) => None,
        })
        .collect();
    taken.extend(&spec.preserve);
    taken.extend(target.callee_saved.iter().map(|view| view.register));
    lowering
        .scratch
        .iter()
        .copied()
        .find(|register| !taken.contains(register))
}

/// The stub of one function that shares an adapter: it loads the body's address into a register and jumps to
/// the adapter (written with [`Callee::Register`] of the same register).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub<'n> {
    pub binding: Binding,
    pub visibility: SymbolVisibility,
    pub register: usize,
    /// The shared adapter.
    pub shared: &'n str,
    /// What the body's symbol adds to the function's (`.neverc_body`).
    pub body_suffix: &'n str,
}

/// Writes the assembler macro `name` whose invocation `name SYMBOL` is `SYMBOL`'s stub.
pub fn write_stub_macro(
    target: &'static TargetRecord,
    name: &str,
    stub: &Stub<'_>,
    out: &mut String,
) -> Result<(), AdapterError> {
    let mut writer = Writer::new(target, name, out)?;
    let lowering = writer.lowering;
    let macros = &lowering.macros;
    let symbol = macros.parameter;
    let body = format!("{}{}{}", macros.parameter, macros.join, stub.body_suffix);
    writer.directive(macros.open, name);
    writer.open_function(symbol, stub.binding, stub.visibility, false);
    let width = writer.full_width(stub.register);
    for template in lowering.instructions.address_of {
        writer.emit(
            template,
            Fill {
                register: Some((stub.register, width)),
                symbol: &body,
                ..Fill::default()
            },
        );
    }
    writer.emit(
        lowering.instructions.jump,
        Fill {
            symbol: stub.shared,
            ..Fill::default()
        },
    );
    writer.directive(lowering.directives.size, symbol);
    writer.directive(macros.close, name);
    Ok(())
}

/// Writes the assembly of the adapter `spec` describes for `target` to `out`, a line each.
pub fn write_adapter(
    target: &'static TargetRecord,
    spec: &AdapterSpec<'_>,
    out: &mut String,
) -> Result<(), AdapterError> {
    let mut writer = Writer::new(target, spec.symbol, out)?;
    let lowering = writer.lowering;
    let unsupported = |detail: String| AdapterError::Unsupported {
        symbol: spec.symbol.to_string(),
        detail,
    };
    let [base, data, spare, ..] = *lowering.scratch else {
        return Err(unsupported(
            "the target declares fewer than three scratch registers".into(),
        ));
    };
    let sp = lowering.stack_pointer;
    let alignment = u64::from(target.stack_alignment).max(1);
    let frame = layout(spec, alignment, lowering.link_register.is_some());
    let returned_index = spec.arguments.len();
    let directives = &lowering.directives;
    writer.open_function(spec.symbol, spec.binding, spec.visibility, true);

    // 1. Nothing is clobbered before every register the caller passes is in the frame.
    let instructions = &lowering.instructions;
    writer.sized(instructions.allocate, frame.upper)?;
    if let Some(link) = lowering.link_register {
        writer.store(link, writer.full_width(link), sp, frame.link_slot)?;
    }
    if let Callee::Register(register) = spec.callee {
        writer.store(register, writer.full_width(register), sp, frame.callee_slot)?;
    }
    for (register, slot) in spec.preserve.iter().zip(&frame.save_slots) {
        writer.store(*register, writer.full_width(*register), sp, *slot)?;
    }
    let values: Vec<&ValueMove> = spec.arguments.iter().chain(spec.returned.as_ref()).collect();
    for (index, value) in values.iter().enumerate() {
        // What the caller expects back is written at the end; only where it goes is passed in.
        let mut pieces: Vec<&SidePiece> = value
            .caller
            .iter()
            .filter(|piece| index != returned_index || piece.role == Role::Address)
            .collect();
        pieces.sort_by_key(|piece| piece.offset);
        for piece in pieces {
            let Holder::Register(register) = piece.holder else {
                continue;
            };
            match piece.role {
                Role::Content => {
                    let bits = writer.piece_bits(register, piece.size, value.content_size)?;
                    writer.store(register, bits, sp, frame.content_slots[index] + piece.offset)?;
                }
                Role::Address => {
                    let slot = frame.address_slots[index].unwrap_or_default();
                    writer.store(register, writer.full_width(register), sp, slot)?;
                }
            }
        }
    }

    // 2. `A`, aligned whatever the caller's stack was; `base` holds `U`'s address.
    writer.move_register(base, sp);
    writer.move_register(data, sp);
    writer.emit(
        instructions.align_down,
        Fill {
            register: Some((data, writer.full_width(data))),
            size: alignment,
            ..Fill::default()
        },
    );
    writer.move_register(sp, data);
    writer.sized(instructions.allocate, frame.lower)?;
    writer.store(base, writer.full_width(base), sp, frame.base_slot)?;

    // 3. The caller's stack pieces and addressed contents into the content slots.
    let incoming = frame.upper + u64::from(lowering.incoming_arguments_offset);
    let pointer_bits = target.pointer_width;
    for (index, value) in values.iter().enumerate() {
        let slot = frame.content_slots[index];
        for piece in &value.caller {
            let Holder::Stack(offset) = piece.holder else { continue };
            match piece.role {
                Role::Content if index == returned_index => {}
                Role::Content => {
                    let size = piece.size.min(value.content_size.saturating_sub(piece.offset));
                    writer.copy(data, (base, incoming + offset), (base, slot + piece.offset), size)?;
                }
                Role::Address => {
                    let address_slot = frame.address_slots[index].unwrap_or_default();
                    writer.load(data, pointer_bits, base, incoming + offset)?;
                    writer.store(data, pointer_bits, base, address_slot)?;
                }
            }
        }
        // The return value's address is only written to after the call.
        if index != returned_index
            && let Some(address_slot) = frame.address_slots[index]
        {
            writer.load(data, pointer_bits, base, address_slot)?;
            writer.copy(spare, (data, 0), (base, slot), value.content_size)?;
        }
    }

    // 4. The callee's stack arguments.
    for (index, value) in spec.arguments.iter().enumerate() {
        let slot = frame.content_slots[index];
        for piece in &value.callee {
            let Holder::Stack(offset) = piece.holder else { continue };
            match (piece.role, widening(value)) {
                // The whole slot gets the widened value: a standard convention may widen narrow values on the
                // stack to the slot's width (RISC-V: to 64 bits), and the load extended the whole register.
                (Role::Content, Some((bits, access))) => {
                    writer.memory(access, data, bits, base, slot)?;
                    let width = u64::from(writer.full_width(data));
                    let slot_bits = piece
                        .size
                        .saturating_mul(8)
                        .clamp(32, width)
                        .next_power_of_two()
                        .min(width);
                    writer.store(data, slot_bits as u32, sp, offset)?;
                }
                (Role::Content, None) => {
                    let size = piece.size.min(value.content_size.saturating_sub(piece.offset));
                    writer.copy(data, (base, slot + piece.offset), (sp, offset), size)?;
                }
                (Role::Address, _) => {
                    writer.address(data, base, slot)?;
                    writer.store(data, pointer_bits, sp, offset)?;
                }
            }
        }
    }

    // 5. The callee's registers, the base register's last.
    let mut loads = Vec::new();
    for (index, value) in values.iter().enumerate() {
        let slot = frame.content_slots[index];
        if index == returned_index {
            // A returned value the callee writes through an address it is given: the content slot's.
            for piece in value.callee.iter().filter(|piece| piece.role == Role::Address) {
                match piece.holder {
                    Holder::Register(register) => loads.push(RegisterLoad {
                        register,
                        offset: slot,
                        kind: LoadKind::Address,
                    }),
                    Holder::Stack(_) => {
                        return Err(unsupported("a return address on the stack".into()));
                    }
                }
            }
            continue;
        }
        for piece in &value.callee {
            let Holder::Register(register) = piece.holder else {
                continue;
            };
            let kind = match (piece.role, widening(value)) {
                (Role::Address, _) => LoadKind::Address,
                // A narrow value the callee relies on being widened is loaded at its own width, widening.
                (Role::Content, Some((bits, access))) if piece.offset == 0 => LoadKind::Value { bits, access },
                (Role::Content, _) => LoadKind::Value {
                    bits: writer.piece_bits(register, piece.size, value.content_size)?,
                    access: Access::Load,
                },
            };
            let offset = match kind {
                LoadKind::Address => slot,
                LoadKind::Value { .. } => slot + piece.offset,
            };
            loads.push(RegisterLoad { register, offset, kind });
        }
    }
    let general = |register: usize| {
        target
            .class_of(register)
            .is_some_and(|class| class.kind == RegisterClassKind::General)
    };
    loads.sort_by_key(|load| (load.register == base, general(load.register)));
    // A callee in a register goes to a scratch register that no argument is loaded into.
    let call_through = match spec.callee {
        Callee::Symbol(_) => None,
        Callee::Register(_) => {
            let through = lowering
                .scratch
                .iter()
                .copied()
                .find(|scratch| *scratch != base && loads.iter().all(|load| load.register != *scratch))
                .ok_or_else(|| unsupported("no scratch register is free for the callee's address".into()))?;
            writer.load(through, writer.full_width(through), base, frame.callee_slot)?;
            Some(through)
        }
    };
    for load in &loads {
        match load.kind {
            LoadKind::Address => writer.address(load.register, base, load.offset)?,
            LoadKind::Value { bits, access } => writer.memory(access, load.register, bits, base, load.offset)?,
        }
    }

    // 6. The call.
    match (spec.callee, call_through) {
        (Callee::Symbol(symbol), _) => writer.emit(
            instructions.call,
            Fill {
                symbol,
                ..Fill::default()
            },
        ),
        (Callee::Register(_), Some(through)) => writer.emit(
            instructions.call_register,
            Fill {
                register: Some((through, writer.full_width(through))),
                ..Fill::default()
            },
        ),
        (Callee::Register(_), None) => return Err(unsupported("the callee's address was not loaded".into())),
    }

    // 7. The callee's return registers, then `U` again.
    if let Some(value) = &spec.returned {
        let mut pieces: Vec<&SidePiece> = value
            .callee
            .iter()
            .filter(|piece| piece.role == Role::Content)
            .collect();
        pieces.sort_by_key(|piece| piece.offset);
        for piece in &pieces {
            let Holder::Register(register) = piece.holder else {
                return Err(unsupported("a return value on the stack".into()));
            };
            let bits = writer.piece_bits(register, piece.size, value.content_size)?;
            writer.store(register, bits, sp, frame.staging + piece.offset)?;
        }
        writer.load(base, writer.full_width(base), sp, frame.base_slot)?;
        if !pieces.is_empty() {
            let slot = frame.content_slots[returned_index];
            writer.copy(data, (sp, frame.staging), (base, slot), round_up(value.content_size, 8))?;
        }
    } else {
        writer.load(base, writer.full_width(base), sp, frame.base_slot)?;
    }
    writer.move_register(sp, base);

    // 8. What the caller expects back.
    if let Some(value) = &spec.returned {
        let slot = frame.content_slots[returned_index];
        if let Some(address_slot) = frame.address_slots[returned_index] {
            writer.load(data, pointer_bits, sp, address_slot)?;
            writer.copy(spare, (sp, slot), (data, 0), value.content_size)?;
            if spec.caller_kind == SideKind::Standard
                && let Some(result) = lowering.hidden_pointer_result
            {
                writer.load(result, pointer_bits, sp, address_slot)?;
            }
        }
        for piece in &value.caller {
            if piece.role != Role::Content {
                continue;
            }
            let Holder::Register(register) = piece.holder else {
                return Err(unsupported("a return value on the stack".into()));
            };
            // A narrow value returned `zeroext` or `signext` is widened again, whatever the callee left above it.
            if let (0, Some((bits, access))) = (piece.offset, widening(value)) {
                writer.memory(access, register, bits, sp, slot)?;
            } else {
                let bits = writer.piece_bits(register, piece.size, value.content_size)?;
                writer.load(register, bits, sp, slot + piece.offset)?;
            }
        }
    } else if spec.caller_kind == SideKind::Standard
        && let (Some(result), Some(argument)) = (lowering.hidden_pointer_result, spec.sret_argument)
        && argument < spec.arguments.len()
    {
        // The standard convention returns an `sret` argument's pointer.
        writer.load(result, pointer_bits, sp, frame.content_slots[argument])?;
    }
    for (register, slot) in spec.preserve.iter().zip(&frame.save_slots) {
        writer.load(*register, writer.full_width(*register), sp, *slot)?;
    }
    if let Some(link) = lowering.link_register {
        writer.load(link, writer.full_width(link), sp, frame.link_slot)?;
    }
    writer.sized(instructions.release, frame.upper)?;
    writer.emit(instructions.return_, Fill::default());
    writer.directive(directives.size, spec.symbol);
    Ok(())
}
