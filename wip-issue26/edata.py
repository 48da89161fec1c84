import sys
for p in sys.argv[1:]:
    s=open(p).read()
    old="""    let mut writable = layout
        .segments
        .iter()
        .filter(|segment| segment.flags.contains(SegmentFlags::WRITE));
    let first_writable = writable.next();
    // The data's file bytes end with the last writable segment's (RELRO data has one of its own).
    let last_writable = writable.next_back().or(first_writable);
"""
    new="""    let writable: Vec<&OutputSegment> = layout
        .segments
        .iter()
        .filter(|segment| segment.flags.contains(SegmentFlags::WRITE))
        .collect();
    let first_writable = writable.first().copied();
    // The data's file bytes end with the last writable segment's that has any (RELRO data has a segment of
    // its own, and a `.bss` aligned beyond the page may have one without file bytes).
    let last_writable = writable
        .iter()
        .rev()
        .find(|segment| segment.file_size > 0)
        .or(writable.last())
        .copied();
"""
    assert old in s, p
    s=s.replace(old,new)
    open(p,'w').write(s)
