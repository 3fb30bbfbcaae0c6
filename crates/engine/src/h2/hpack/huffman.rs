//! The Huffman code of RFC 7541 Appendix B.
