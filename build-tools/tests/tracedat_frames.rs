//! The COM2 frame stream: what the kernel sends decodes to the same
//! transfer, and every kind of damage (flipped bits, cut-off stream, lost
//! frame, wrong totals, stray bytes) is reported as an error, never as data
//! and never as a panic.
mod tracedat_common;

use build_tools::tracedat::crc32::crc32;
use build_tools::tracedat::frame::{
    decode_stream, encode_frame, read_frame, FrameError, FrameType, HEADER_LEN,
};

fn stream() -> (build_tools::tracedat::frame::Transfer, Vec<u8>) {
    let t = tracedat_common::transfer();
    let s = t.encode();
    (t, s)
}

/// Byte offsets of every frame in `s`.
fn frame_offsets(s: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut off = 0;
    while off < s.len() {
        v.push(off);
        off = read_frame(s, off).unwrap().1;
    }
    v
}

#[test]
fn round_trip() {
    let (t, s) = stream();
    let got = decode_stream(&s).unwrap();
    assert_eq!(got, vec![t]);
}

#[test]
fn frame_layout() {
    let f = encode_frame(FrameType::Page, 3, 7, b"abc");
    assert_eq!(&f[..4], b"KTRC");
    assert_eq!(&f[4..6], &3u16.to_le_bytes()); // type PAGE
    assert_eq!(&f[6..8], &3u16.to_le_bytes()); // aux = CPU 3
    assert_eq!(&f[8..12], &7u32.to_le_bytes());
    assert_eq!(&f[12..16], &3u32.to_le_bytes());
    assert_eq!(&f[16..19], b"abc");
    assert_eq!(&f[19..23], &crc32(&f[4..19]).to_le_bytes());
    assert_eq!(f.len(), HEADER_LEN + 3 + 4);
}

#[test]
fn two_transfers_in_one_capture() {
    let (t, mut s) = stream();
    let again = s.clone();
    s.extend_from_slice(&again);
    assert_eq!(decode_stream(&s).unwrap().len(), 2);
    let _ = t;
}

#[test]
fn every_truncation_is_detected() {
    let (_, s) = stream();
    let offsets = frame_offsets(&s);
    // Cuts inside frames (sampled) and at every frame boundary before END.
    let mut cuts: Vec<usize> = (1..s.len()).step_by(61).collect();
    cuts.extend(offsets.iter().copied().filter(|&o| o > 0));
    for cut in cuts {
        let r = decode_stream(&s[..cut]);
        assert!(
            matches!(
                r,
                Err(FrameError::Truncated { .. }) | Err(FrameError::NoEnd { .. })
            ),
            "cut at {cut}: {r:?}"
        );
    }
    assert_eq!(decode_stream(&[]), Err(FrameError::Empty));
}

#[test]
fn flipped_bytes_are_detected() {
    let (_, s) = stream();
    let offsets = frame_offsets(&s);
    let mut positions: Vec<usize> = (0..s.len()).step_by(13).collect();
    // Every byte of the first three frame headers and of the last frame.
    for &o in offsets.iter().take(3).chain(offsets.last()) {
        positions.extend(o..o + HEADER_LEN + 4);
    }
    for i in positions {
        if i >= s.len() {
            continue;
        }
        let mut bad = s.clone();
        bad[i] ^= 0x10;
        assert!(
            decode_stream(&bad).is_err(),
            "flipped byte {i} was accepted"
        );
    }
}

#[test]
fn a_lost_frame_is_detected() {
    let (_, s) = stream();
    let offsets = frame_offsets(&s);
    // Remove one PAGE frame from the middle.
    let i = offsets.len() - 3;
    let mut bad = s[..offsets[i]].to_vec();
    bad.extend_from_slice(&s[offsets[i + 1]..]);
    assert!(
        matches!(decode_stream(&bad), Err(FrameError::Sequence { .. })),
        "{:?}",
        decode_stream(&bad)
    );
}

#[test]
fn end_totals_are_checked() {
    let (t, _) = stream();
    // Re-encode with a wrong page count in END.
    let mut s = Vec::new();
    let good = t.encode();
    let offsets = frame_offsets(&good);
    let end_at = *offsets.last().unwrap();
    s.extend_from_slice(&good[..end_at]);
    let (end, _) = read_frame(&good, end_at).unwrap();
    let mut payload = end.payload.to_vec();
    payload[12] += 1; // CPU 0 page count
    s.extend(encode_frame(FrameType::End, 0, end.seq, &payload));
    assert!(matches!(
        decode_stream(&s),
        Err(FrameError::Mismatch { .. })
    ));
    // A kernel-side failure status.
    let mut s = good[..end_at].to_vec();
    let mut payload = end.payload.to_vec();
    payload[0] = 4; // EINTR
    s.extend(encode_frame(FrameType::End, 0, end.seq, &payload));
    assert_eq!(
        decode_stream(&s),
        Err(FrameError::KernelError { status: 4 })
    );
}

#[test]
fn stray_bytes_and_misplaced_frames_are_detected() {
    let (_, s) = stream();
    let mut bad = b"console noise".to_vec();
    bad.extend_from_slice(&s);
    assert_eq!(decode_stream(&bad), Err(FrameError::BadMagic { offset: 0 }));
    let mut bad = s.clone();
    bad.push(0);
    assert!(decode_stream(&bad).is_err());
    // A page before START.
    let page = encode_frame(FrameType::Page, 0, 0, &[0; 4096]);
    assert!(matches!(
        decode_stream(&page),
        Err(FrameError::Unexpected { .. })
    ));
    // An unknown frame type with a valid CRC.
    let mut f = encode_frame(FrameType::Page, 0, 0, b"");
    f[4] = 9;
    let n = f.len();
    let crc = crc32(&f[4..n - 4]);
    f[n - 4..].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        decode_stream(&f),
        Err(FrameError::BadType { ty: 9, .. })
    ));
    // A length field of 4 GiB.
    let mut f = encode_frame(FrameType::File, 0, 1, b"x\0y");
    f[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(read_frame(&f, 0), Err(FrameError::TooLong { .. })));
}
