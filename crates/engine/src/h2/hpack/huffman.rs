//! The Huffman code of RFC 7541 Appendix B: a bit-packing encoder and a decoder that reads four
//! bits per step through a state table built at compile time from the code table.

use super::HpackError;

/// `(code, length in bits)` per symbol, 256 being EOS, transcribed from RFC 7541 Appendix B (the
/// comment repeats the appendix's symbol and bits so a row can be checked against it by eye).
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), // (  0) 1111111111000
    (0x7fffd8, 23), // (  1) 11111111111111111011000
    (0xfffffe2, 28), // (  2) 1111111111111111111111100010
    (0xfffffe3, 28), // (  3) 1111111111111111111111100011
    (0xfffffe4, 28), // (  4) 1111111111111111111111100100
    (0xfffffe5, 28), // (  5) 1111111111111111111111100101
    (0xfffffe6, 28), // (  6) 1111111111111111111111100110
    (0xfffffe7, 28), // (  7) 1111111111111111111111100111
    (0xfffffe8, 28), // (  8) 1111111111111111111111101000
    (0xffffea, 24), // (  9) 111111111111111111101010
    (0x3ffffffc, 30), // ( 10) 111111111111111111111111111100
    (0xfffffe9, 28), // ( 11) 1111111111111111111111101001
    (0xfffffea, 28), // ( 12) 1111111111111111111111101010
    (0x3ffffffd, 30), // ( 13) 111111111111111111111111111101
    (0xfffffeb, 28), // ( 14) 1111111111111111111111101011
    (0xfffffec, 28), // ( 15) 1111111111111111111111101100
    (0xfffffed, 28), // ( 16) 1111111111111111111111101101
    (0xfffffee, 28), // ( 17) 1111111111111111111111101110
    (0xfffffef, 28), // ( 18) 1111111111111111111111101111
    (0xffffff0, 28), // ( 19) 1111111111111111111111110000
    (0xffffff1, 28), // ( 20) 1111111111111111111111110001
    (0xffffff2, 28), // ( 21) 1111111111111111111111110010
    (0x3ffffffe, 30), // ( 22) 111111111111111111111111111110
    (0xffffff3, 28), // ( 23) 1111111111111111111111110011
    (0xffffff4, 28), // ( 24) 1111111111111111111111110100
    (0xffffff5, 28), // ( 25) 1111111111111111111111110101
    (0xffffff6, 28), // ( 26) 1111111111111111111111110110
    (0xffffff7, 28), // ( 27) 1111111111111111111111110111
    (0xffffff8, 28), // ( 28) 1111111111111111111111111000
    (0xffffff9, 28), // ( 29) 1111111111111111111111111001
    (0xffffffa, 28), // ( 30) 1111111111111111111111111010
    (0xffffffb, 28), // ( 31) 1111111111111111111111111011
    (0x14, 6), // ( 32) 010100 ' '
    (0x3f8, 10), // ( 33) 1111111000 '!'
    (0x3f9, 10), // ( 34) 1111111001 '"'
    (0xffa, 12), // ( 35) 111111111010 '#'
    (0x1ff9, 13), // ( 36) 1111111111001 '$'
    (0x15, 6), // ( 37) 010101 '%'
    (0xf8, 8), // ( 38) 11111000 '&'
    (0x7fa, 11), // ( 39) 11111111010 "'"
    (0x3fa, 10), // ( 40) 1111111010 '('
    (0x3fb, 10), // ( 41) 1111111011 ')'
    (0xf9, 8), // ( 42) 11111001 '*'
    (0x7fb, 11), // ( 43) 11111111011 '+'
    (0xfa, 8), // ( 44) 11111010 ','
    (0x16, 6), // ( 45) 010110 '-'
    (0x17, 6), // ( 46) 010111 '.'
    (0x18, 6), // ( 47) 011000 '/'
    (0x0, 5), // ( 48) 00000 '0'
    (0x1, 5), // ( 49) 00001 '1'
    (0x2, 5), // ( 50) 00010 '2'
    (0x19, 6), // ( 51) 011001 '3'
    (0x1a, 6), // ( 52) 011010 '4'
    (0x1b, 6), // ( 53) 011011 '5'
    (0x1c, 6), // ( 54) 011100 '6'
    (0x1d, 6), // ( 55) 011101 '7'
    (0x1e, 6), // ( 56) 011110 '8'
    (0x1f, 6), // ( 57) 011111 '9'
    (0x5c, 7), // ( 58) 1011100 ':'
    (0xfb, 8), // ( 59) 11111011 ';'
    (0x7ffc, 15), // ( 60) 111111111111100 '<'
    (0x20, 6), // ( 61) 100000 '='
    (0xffb, 12), // ( 62) 111111111011 '>'
    (0x3fc, 10), // ( 63) 1111111100 '?'
    (0x1ffa, 13), // ( 64) 1111111111010 '@'
    (0x21, 6), // ( 65) 100001 'A'
    (0x5d, 7), // ( 66) 1011101 'B'
    (0x5e, 7), // ( 67) 1011110 'C'
    (0x5f, 7), // ( 68) 1011111 'D'
    (0x60, 7), // ( 69) 1100000 'E'
    (0x61, 7), // ( 70) 1100001 'F'
    (0x62, 7), // ( 71) 1100010 'G'
    (0x63, 7), // ( 72) 1100011 'H'
    (0x64, 7), // ( 73) 1100100 'I'
    (0x65, 7), // ( 74) 1100101 'J'
    (0x66, 7), // ( 75) 1100110 'K'
    (0x67, 7), // ( 76) 1100111 'L'
    (0x68, 7), // ( 77) 1101000 'M'
    (0x69, 7), // ( 78) 1101001 'N'
    (0x6a, 7), // ( 79) 1101010 'O'
    (0x6b, 7), // ( 80) 1101011 'P'
    (0x6c, 7), // ( 81) 1101100 'Q'
    (0x6d, 7), // ( 82) 1101101 'R'
    (0x6e, 7), // ( 83) 1101110 'S'
    (0x6f, 7), // ( 84) 1101111 'T'
    (0x70, 7), // ( 85) 1110000 'U'
    (0x71, 7), // ( 86) 1110001 'V'
    (0x72, 7), // ( 87) 1110010 'W'
    (0xfc, 8), // ( 88) 11111100 'X'
    (0x73, 7), // ( 89) 1110011 'Y'
    (0xfd, 8), // ( 90) 11111101 'Z'
    (0x1ffb, 13), // ( 91) 1111111111011 '['
    (0x7fff0, 19), // ( 92) 1111111111111110000 '\\'
    (0x1ffc, 13), // ( 93) 1111111111100 ']'
    (0x3ffc, 14), // ( 94) 11111111111100 '^'
    (0x22, 6), // ( 95) 100010 '_'
    (0x7ffd, 15), // ( 96) 111111111111101 '`'
    (0x3, 5), // ( 97) 00011 'a'
    (0x23, 6), // ( 98) 100011 'b'
    (0x4, 5), // ( 99) 00100 'c'
    (0x24, 6), // (100) 100100 'd'
    (0x5, 5), // (101) 00101 'e'
    (0x25, 6), // (102) 100101 'f'
    (0x26, 6), // (103) 100110 'g'
    (0x27, 6), // (104) 100111 'h'
    (0x6, 5), // (105) 00110 'i'
    (0x74, 7), // (106) 1110100 'j'
    (0x75, 7), // (107) 1110101 'k'
    (0x28, 6), // (108) 101000 'l'
    (0x29, 6), // (109) 101001 'm'
    (0x2a, 6), // (110) 101010 'n'
    (0x7, 5), // (111) 00111 'o'
    (0x2b, 6), // (112) 101011 'p'
    (0x76, 7), // (113) 1110110 'q'
    (0x2c, 6), // (114) 101100 'r'
    (0x8, 5), // (115) 01000 's'
    (0x9, 5), // (116) 01001 't'
    (0x2d, 6), // (117) 101101 'u'
    (0x77, 7), // (118) 1110111 'v'
    (0x78, 7), // (119) 1111000 'w'
    (0x79, 7), // (120) 1111001 'x'
    (0x7a, 7), // (121) 1111010 'y'
    (0x7b, 7), // (122) 1111011 'z'
    (0x7ffe, 15), // (123) 111111111111110 '{'
    (0x7fc, 11), // (124) 11111111100 '|'
    (0x3ffd, 14), // (125) 11111111111101 '}'
    (0x1ffd, 13), // (126) 1111111111101 '~'
    (0xffffffc, 28), // (127) 1111111111111111111111111100
    (0xfffe6, 20), // (128) 11111111111111100110
    (0x3fffd2, 22), // (129) 1111111111111111010010
    (0xfffe7, 20), // (130) 11111111111111100111
    (0xfffe8, 20), // (131) 11111111111111101000
    (0x3fffd3, 22), // (132) 1111111111111111010011
    (0x3fffd4, 22), // (133) 1111111111111111010100
    (0x3fffd5, 22), // (134) 1111111111111111010101
    (0x7fffd9, 23), // (135) 11111111111111111011001
    (0x3fffd6, 22), // (136) 1111111111111111010110
    (0x7fffda, 23), // (137) 11111111111111111011010
    (0x7fffdb, 23), // (138) 11111111111111111011011
    (0x7fffdc, 23), // (139) 11111111111111111011100
    (0x7fffdd, 23), // (140) 11111111111111111011101
    (0x7fffde, 23), // (141) 11111111111111111011110
    (0xffffeb, 24), // (142) 111111111111111111101011
    (0x7fffdf, 23), // (143) 11111111111111111011111
    (0xffffec, 24), // (144) 111111111111111111101100
    (0xffffed, 24), // (145) 111111111111111111101101
    (0x3fffd7, 22), // (146) 1111111111111111010111
    (0x7fffe0, 23), // (147) 11111111111111111100000
    (0xffffee, 24), // (148) 111111111111111111101110
    (0x7fffe1, 23), // (149) 11111111111111111100001
    (0x7fffe2, 23), // (150) 11111111111111111100010
    (0x7fffe3, 23), // (151) 11111111111111111100011
    (0x7fffe4, 23), // (152) 11111111111111111100100
    (0x1fffdc, 21), // (153) 111111111111111011100
    (0x3fffd8, 22), // (154) 1111111111111111011000
    (0x7fffe5, 23), // (155) 11111111111111111100101
    (0x3fffd9, 22), // (156) 1111111111111111011001
    (0x7fffe6, 23), // (157) 11111111111111111100110
    (0x7fffe7, 23), // (158) 11111111111111111100111
    (0xffffef, 24), // (159) 111111111111111111101111
    (0x3fffda, 22), // (160) 1111111111111111011010
    (0x1fffdd, 21), // (161) 111111111111111011101
    (0xfffe9, 20), // (162) 11111111111111101001
    (0x3fffdb, 22), // (163) 1111111111111111011011
    (0x3fffdc, 22), // (164) 1111111111111111011100
    (0x7fffe8, 23), // (165) 11111111111111111101000
    (0x7fffe9, 23), // (166) 11111111111111111101001
    (0x1fffde, 21), // (167) 111111111111111011110
    (0x7fffea, 23), // (168) 11111111111111111101010
    (0x3fffdd, 22), // (169) 1111111111111111011101
    (0x3fffde, 22), // (170) 1111111111111111011110
    (0xfffff0, 24), // (171) 111111111111111111110000
    (0x1fffdf, 21), // (172) 111111111111111011111
    (0x3fffdf, 22), // (173) 1111111111111111011111
    (0x7fffeb, 23), // (174) 11111111111111111101011
    (0x7fffec, 23), // (175) 11111111111111111101100
    (0x1fffe0, 21), // (176) 111111111111111100000
    (0x1fffe1, 21), // (177) 111111111111111100001
    (0x3fffe0, 22), // (178) 1111111111111111100000
    (0x1fffe2, 21), // (179) 111111111111111100010
    (0x7fffed, 23), // (180) 11111111111111111101101
    (0x3fffe1, 22), // (181) 1111111111111111100001
    (0x7fffee, 23), // (182) 11111111111111111101110
    (0x7fffef, 23), // (183) 11111111111111111101111
    (0xfffea, 20), // (184) 11111111111111101010
    (0x3fffe2, 22), // (185) 1111111111111111100010
    (0x3fffe3, 22), // (186) 1111111111111111100011
    (0x3fffe4, 22), // (187) 1111111111111111100100
    (0x7ffff0, 23), // (188) 11111111111111111110000
    (0x3fffe5, 22), // (189) 1111111111111111100101
    (0x3fffe6, 22), // (190) 1111111111111111100110
    (0x7ffff1, 23), // (191) 11111111111111111110001
    (0x3ffffe0, 26), // (192) 11111111111111111111100000
    (0x3ffffe1, 26), // (193) 11111111111111111111100001
    (0xfffeb, 20), // (194) 11111111111111101011
    (0x7fff1, 19), // (195) 1111111111111110001
    (0x3fffe7, 22), // (196) 1111111111111111100111
    (0x7ffff2, 23), // (197) 11111111111111111110010
    (0x3fffe8, 22), // (198) 1111111111111111101000
    (0x1ffffec, 25), // (199) 1111111111111111111101100
    (0x3ffffe2, 26), // (200) 11111111111111111111100010
    (0x3ffffe3, 26), // (201) 11111111111111111111100011
    (0x3ffffe4, 26), // (202) 11111111111111111111100100
    (0x7ffffde, 27), // (203) 111111111111111111111011110
    (0x7ffffdf, 27), // (204) 111111111111111111111011111
    (0x3ffffe5, 26), // (205) 11111111111111111111100101
    (0xfffff1, 24), // (206) 111111111111111111110001
    (0x1ffffed, 25), // (207) 1111111111111111111101101
    (0x7fff2, 19), // (208) 1111111111111110010
    (0x1fffe3, 21), // (209) 111111111111111100011
    (0x3ffffe6, 26), // (210) 11111111111111111111100110
    (0x7ffffe0, 27), // (211) 111111111111111111111100000
    (0x7ffffe1, 27), // (212) 111111111111111111111100001
    (0x3ffffe7, 26), // (213) 11111111111111111111100111
    (0x7ffffe2, 27), // (214) 111111111111111111111100010
    (0xfffff2, 24), // (215) 111111111111111111110010
    (0x1fffe4, 21), // (216) 111111111111111100100
    (0x1fffe5, 21), // (217) 111111111111111100101
    (0x3ffffe8, 26), // (218) 11111111111111111111101000
    (0x3ffffe9, 26), // (219) 11111111111111111111101001
    (0xffffffd, 28), // (220) 1111111111111111111111111101
    (0x7ffffe3, 27), // (221) 111111111111111111111100011
    (0x7ffffe4, 27), // (222) 111111111111111111111100100
    (0x7ffffe5, 27), // (223) 111111111111111111111100101
    (0xfffec, 20), // (224) 11111111111111101100
    (0xfffff3, 24), // (225) 111111111111111111110011
    (0xfffed, 20), // (226) 11111111111111101101
    (0x1fffe6, 21), // (227) 111111111111111100110
    (0x3fffe9, 22), // (228) 1111111111111111101001
    (0x1fffe7, 21), // (229) 111111111111111100111
    (0x1fffe8, 21), // (230) 111111111111111101000
    (0x7ffff3, 23), // (231) 11111111111111111110011
    (0x3fffea, 22), // (232) 1111111111111111101010
    (0x3fffeb, 22), // (233) 1111111111111111101011
    (0x1ffffee, 25), // (234) 1111111111111111111101110
    (0x1ffffef, 25), // (235) 1111111111111111111101111
    (0xfffff4, 24), // (236) 111111111111111111110100
    (0xfffff5, 24), // (237) 111111111111111111110101
    (0x3ffffea, 26), // (238) 11111111111111111111101010
    (0x7ffff4, 23), // (239) 11111111111111111110100
    (0x3ffffeb, 26), // (240) 11111111111111111111101011
    (0x7ffffe6, 27), // (241) 111111111111111111111100110
    (0x3ffffec, 26), // (242) 11111111111111111111101100
    (0x3ffffed, 26), // (243) 11111111111111111111101101
    (0x7ffffe7, 27), // (244) 111111111111111111111100111
    (0x7ffffe8, 27), // (245) 111111111111111111111101000
    (0x7ffffe9, 27), // (246) 111111111111111111111101001
    (0x7ffffea, 27), // (247) 111111111111111111111101010
    (0x7ffffeb, 27), // (248) 111111111111111111111101011
    (0xffffffe, 28), // (249) 1111111111111111111111111110
    (0x7ffffec, 27), // (250) 111111111111111111111101100
    (0x7ffffed, 27), // (251) 111111111111111111111101101
    (0x7ffffee, 27), // (252) 111111111111111111111101110
    (0x7ffffef, 27), // (253) 111111111111111111111101111
    (0x7fffff0, 27), // (254) 111111111111111111111110000
    (0x3ffffee, 26), // (255) 11111111111111111111101110
    (0x3fffffff, 30), // (256) 111111111111111111111111111111 EOS
];

const EOS: u16 = 256;

/// A child in the code tree: an internal node's number, or `LEAF | symbol`.
const LEAF: u16 = 0x8000;

/// The code tree's 256 internal nodes (257 leaves), node 0 the root; 0 marks an unset child, which
/// never survives construction because the code is complete (its Kraft sum is exactly 1).
const fn code_tree() -> [[u16; 2]; 256] {
    let mut nodes = [[0u16; 2]; 256];
    let mut free = 1;
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let mut node = 0;
        let mut bit = len;
        while bit > 1 {
            bit -= 1;
            let side = ((code >> bit) & 1) as usize;
            if nodes[node][side] == 0 {
                assert!(
                    free < 256,
                    "more than 256 internal nodes: a row of CODES is wrong"
                );
                nodes[node][side] = free;
                free += 1;
            }
            assert!(
                nodes[node][side] & LEAF == 0,
                "a code is a prefix of another"
            );
            node = nodes[node][side] as usize;
        }
        let side = (code & 1) as usize;
        assert!(nodes[node][side] == 0, "a code is a prefix of another");
        nodes[node][side] = LEAF | symbol as u16;
        symbol += 1;
    }
    assert!(
        free == 256,
        "the code is not complete: a row of CODES is wrong"
    );
    nodes
}

/// Set when the step completes a symbol (in `symbol`); four bits complete at most one, since the
/// shortest code has five.
const EMIT: u8 = 1;
/// Set when the string may end after this step: at a symbol boundary, or inside a code after at most
/// seven bits that are all ones (a prefix of EOS), the only padding RFC 7541 §5.2 allows.
const ACCEPT: u8 = 2;
/// Set when the step decodes EOS, which a string must not contain.
const FAIL: u8 = 4;

#[derive(Clone, Copy)]
struct Step {
    next: u8,
    flags: u8,
    symbol: u8,
}

/// `STEPS[state][nibble]`: the states are the internal nodes of the code tree.
const fn steps() -> [[Step; 16]; 256] {
    let nodes = code_tree();
    let mut accepting = [false; 256];
    accepting[0] = true;
    let mut node = 0;
    let mut ones = 0;
    while ones < 7 {
        node = nodes[node][1] as usize;
        accepting[node] = true;
        ones += 1;
    }
    let mut table = [[Step {
        next: 0,
        flags: 0,
        symbol: 0,
    }; 16]; 256];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = state;
            let mut flags = 0;
            let mut symbol = 0;
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = nodes[node][(nibble >> bit) & 1];
                if child & LEAF == 0 {
                    node = child as usize;
                } else if child & !LEAF == EOS {
                    flags |= FAIL;
                    break;
                } else {
                    assert!(flags & EMIT == 0, "two symbols in four bits");
                    flags |= EMIT;
                    symbol = child as u8;
                    node = 0;
                }
            }
            if flags & FAIL == 0 && accepting[node] {
                flags |= ACCEPT;
            }
            table[state][nibble] = Step {
                next: node as u8,
                flags,
                symbol,
            };
            nibble += 1;
        }
        state += 1;
    }
    table
}

static STEPS: [[Step; 16]; 256] = steps();

/// Appends the decoding of `src` to `out`.
pub(super) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let mut state = 0;
    let mut accept = true;
    for &byte in src {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = STEPS[state][nibble as usize];
            if step.flags & FAIL != 0 {
                return Err(HpackError::HuffmanEos);
            }
            if step.flags & EMIT != 0 {
                out.push(step.symbol);
            }
            state = step.next as usize;
            accept = step.flags & ACCEPT != 0;
        }
    }
    if accept {
        Ok(())
    } else {
        Err(HpackError::HuffmanPadding)
    }
}

/// The length of `src` once encoded, in bytes.
pub(super) fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends the encoding of `src` to `out`, padded with the most significant bits of EOS (ones).
pub(super) fn encode(src: &[u8], out: &mut Vec<u8>) {
    // Bits above `pending` have already been written; shifting them out of the top is harmless.
    let mut bits: u64 = 0;
    let mut pending = 0;
    for &b in src {
        let (code, len) = CODES[b as usize];
        bits = (bits << len) | u64::from(code);
        pending += u32::from(len);
        while pending >= 8 {
            pending -= 8;
            out.push((bits >> pending) as u8);
        }
    }
    if pending > 0 {
        out.push(((bits << (8 - pending)) as u8) | (0xff >> pending));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, HpackError> {
        let mut out = Vec::new();
        decode(src, &mut out).map(|()| out)
    }

    #[test]
    fn every_byte_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let mut encoded = Vec::new();
        encode(&all, &mut encoded);
        assert_eq!(encoded.len(), encoded_len(&all));
        assert_eq!(decoded(&encoded).unwrap(), all);
        for b in 0..=255u8 {
            encoded.clear();
            encode(&[b, b], &mut encoded);
            assert_eq!(decoded(&encoded).unwrap(), [b, b], "byte {b}");
        }
    }

    #[test]
    fn rfc_7541_c4_1_string() {
        // "www.example.com", RFC 7541 C.4.1.
        let wire = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut encoded = Vec::new();
        encode(b"www.example.com", &mut encoded);
        assert_eq!(encoded, wire);
        assert_eq!(decoded(&wire).unwrap(), b"www.example.com");
    }

    #[test]
    fn empty_string_decodes_to_nothing() {
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn eos_in_a_string_is_refused() {
        // 'a' (00011) then the 30 bits of EOS, then one bit of padding.
        let bits: u64 = (0b00011 << 35) | (0x3fff_ffff << 5) | 0b11111;
        let wire: Vec<u8> = (0..5).rev().map(|i| (bits >> (8 * i)) as u8).collect();
        assert_eq!(decoded(&wire), Err(HpackError::HuffmanEos));
        // EOS alone, padded to 32 bits.
        assert_eq!(
            decoded(&[0xff, 0xff, 0xff, 0xff]),
            Err(HpackError::HuffmanEos)
        );
    }

    #[test]
    fn padding_longer_than_seven_bits_is_refused() {
        // 'a' (00011) + 3 ones is valid; one more byte of ones makes 11 bits of padding.
        assert_eq!(decoded(&[0x1f]).unwrap(), b"a");
        assert_eq!(decoded(&[0x1f, 0xff]), Err(HpackError::HuffmanPadding));
        // A whole byte of ones and nothing else: 8 bits of padding.
        assert_eq!(decoded(&[0xff]), Err(HpackError::HuffmanPadding));
    }

    #[test]
    fn padding_that_is_not_all_ones_is_refused() {
        // 'a' then 110 is not a prefix of EOS.
        assert_eq!(decoded(&[0x1e]), Err(HpackError::HuffmanPadding));
        // 'a' then 000 is the start of another code, cut short.
        assert_eq!(decoded(&[0x18]), Err(HpackError::HuffmanPadding));
    }
}
